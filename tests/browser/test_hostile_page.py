"""A web page from another origin, loaded in a real browser, cannot use the control endpoint (issue 17, defect 5).

The page is served from another loopback port (another origin, so no Private Network Access rule stands in the
way) and tries what a hostile site would: a plain cross-origin ``fetch`` POST, a ``no-cors`` POST with a JSON body
sent as ``text/plain``, a JSON POST that needs a CORS preflight, and an HTML form posting JSON-looking
``text/plain`` to ``/faults`` in a hidden frame. Before the endpoint's guard, the first of these took broker 0
down; now every one is refused and the brokers stay up. Headless chromium runs the page (installed on demand;
without it the test fails rather than skips).
"""

from __future__ import annotations

import http.server
import json
import logging
import re
import threading
from collections.abc import Iterator

import pytest

from rebalance_lab.api import Emulator
from tests.support.browser import BrowserUnavailable, dump_dom

PAGE = """<!doctype html>
<html><body>
<iframe name="sink" id="sink"></iframe>
<form id="form" method="POST" target="sink" enctype="text/plain" action="CONTROL/faults">
  <input type="hidden" name='{"kind": "broker_down", "broker": 0, "pad": "' value='"}'>
</form>
<pre id="out">running</pre>
<script>
const control = "CONTROL";
const results = {};
async function attempt(name, url, init) {
  try {
    const response = await fetch(url, init);
    results[name] = response.type === "opaque" ? "opaque" : "status " + response.status;
  } catch (error) {
    results[name] = "rejected: " + error.name;
  }
}
async function main() {
  await attempt("cors_post", control + "/brokers/0/down", {method: "POST"});
  await attempt("no_cors_post", control + "/faults", {method: "POST", mode: "no-cors",
    headers: {"Content-Type": "text/plain"}, body: JSON.stringify({kind: "broker_down", broker: 1})});
  await attempt("preflighted_post", control + "/brokers/1/down", {method: "POST",
    headers: {"Content-Type": "application/json"}, body: "{}"});
  await new Promise((resolve) => {
    document.getElementById("sink").onload = resolve;
    document.getElementById("form").submit();
  });
  results.form_post = "submitted";
  document.getElementById("out").textContent = "RESULTS " + JSON.stringify(results);
}
main();
</script>
</body></html>
"""


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator(brokers=2, control_port=0) as running:
        yield running


@pytest.fixture
def hostile_site(emu: Emulator) -> Iterator[str]:
    """A page on another loopback port (another origin) aimed at the emulator's control endpoint."""
    assert emu.control_url is not None
    page = PAGE.replace("CONTROL", emu.control_url).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_a_page_from_another_origin_in_a_real_browser_cannot_take_a_broker_down(
    emu: Emulator, hostile_site: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="rebalance_lab.control")
    try:
        dom = dump_dom(hostile_site)
    except BrowserUnavailable as exc:
        pytest.fail(f"this test needs a real browser: {exc}", pytrace=False)
    found = re.search(r"RESULTS (\{.*\})", dom)
    assert found is not None, f"the page's script did not finish: {dom[-2000:]}"
    results = json.loads(found.group(1).replace("&quot;", '"'))
    assert [b["up"] for b in emu.brokers()] == [True, True], results
    # the browser did send them: the guard refused each (the preflight stops the JSON POST before it is sent)
    refused = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert any("POST /brokers/0/down" in m for m in refused) and any("OPTIONS /brokers/1/down" in m for m in refused)
    assert sum("POST /faults" in m for m in refused) == 2, refused
    assert results["preflighted_post"] == "rejected: TypeError"  # no CORS grant: the browser never sent it
