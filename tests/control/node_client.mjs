// A non-Python client of the control endpoint (Node 20: global fetch).
// Usage: node node_client.mjs BASE_URL GROUP_ID
// Injects one REBALANCE_IN_PROGRESS on the group's next Heartbeat, reads the group, checks
// that an unknown group is a JSON 404, and prints one JSON object for the test to check.
const [base, group] = process.argv.slice(2);

async function call(method, path, body) {
  const response = await fetch(base + path, {
    method,
    headers: body ? { "content-type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: response.status, body: await response.json() };
}

const fault = await call("POST", "/faults", { kind: "error", api: "Heartbeat", error: "REBALANCE_IN_PROGRESS",
                                               group_id: group, count: 1 });
const read = await call("GET", `/groups/${encodeURIComponent(group)}`);
const missing = await call("GET", "/groups/no-such-group");
const bad = await call("POST", "/faults", { kind: "latency" });
console.log(JSON.stringify({ fault, read, missing, bad }));
