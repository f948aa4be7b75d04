// rebalance-lab's live page: the browser's own EventSource and fetch, no library (see control/events.py).
// The server renders every fragment; this script only swaps them in and posts the buttons' JSON.
"use strict";

const status = (text) => { document.getElementById("status").textContent = text; };

function findGroup(id) {
  return document.querySelector(`section.group[data-group="${CSS.escape(id)}"]`);
}

function placeGroup(id, html) {
  const old = findGroup(id);
  if (!html) { if (old) old.remove(); return; }
  const holder = document.createElement("div");
  holder.innerHTML = html;
  const fresh = holder.firstElementChild;
  if (old) { old.replaceWith(fresh); return; }
  const main = document.getElementById("groups");
  main.querySelector("p.empty")?.remove();
  const after = [...main.querySelectorAll("section.group")].find((s) => s.dataset.group > id);
  main.insertBefore(fresh, after || null);
}

function connect() {
  const events = new EventSource("/events");
  events.addEventListener("open", () => status("live"));
  events.addEventListener("error", () => status("disconnected: reconnecting"));
  events.addEventListener("snapshot", (e) => {
    const data = JSON.parse(e.data);
    document.getElementById("groups").innerHTML = data.html;
    document.getElementById("clock").innerHTML = data.clock;
    status("live");
  });
  events.addEventListener("group", (e) => {
    const data = JSON.parse(e.data);
    placeGroup(data.id, data.html);
  });
}

async function post(button) {
  button.disabled = true;
  try {
    const response = await fetch(button.dataset.post, {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json"}, body: button.dataset.body || "{}",
    });
    const answer = await response.json();
    status(response.ok ? `${button.textContent}: done` : `${button.textContent}: ${answer.error}`);
  } catch (error) {
    status(`${button.textContent}: ${error}`);
  } finally {
    button.disabled = false;
  }
}

document.addEventListener("click", (e) => {
  const button = e.target.closest("button[data-post]");
  if (button) post(button);
});
connect();
