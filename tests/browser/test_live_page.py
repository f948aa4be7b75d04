"""The live page in a real browser, with real clients forming and rebalancing a group (issue 19, item 2).

Debian's chromium, driven by Selenium through Debian's chromedriver (both installed with apt-get when missing;
without them the test fails, it never skips), opens the page of an emulator on a manual clock, once with the
control token in its address (kept as a cookie from then on). kafka-python consumers, each in its own process,
join the group: the page is never reloaded, yet it shows the group appear in PreparingRebalance, the join wait
for its initial delay until the "to the next group timer" button fires it, the members, a 1-1 vote with the
flavor's tie-break, the timeline and the sequence diagram (with the Heartbeat answered REBALANCE_IN_PROGRESS),
the clock moved by the +100 ms and +1 s buttons, a crashed member expired with its row's button, a forced
rebalance, and the last member's LeaveGroup leaving the group Empty. Screenshots of each step are saved under
the test's tmp dir (the path is printed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

from rebalance_lab.api import Emulator
from tests.clients.harness import Member, MemberSpec
from tests.support.browser import BrowserUnavailable, chromium

GROUP = "live"
TOKEN = "s3cret"
WAIT_S = 45.0


def chromedriver() -> str:
    """Debian's chromedriver (built with that chromium), installed with apt-get when missing."""
    chromium()
    if shutil.which("chromedriver") is None:
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            raise BrowserUnavailable("chromedriver is missing: run apt-get install -y chromium-driver")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for cmd in (["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium-driver"]):
            proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if proc.returncode != 0:
                raise BrowserUnavailable(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}")
    path = shutil.which("chromedriver")
    if path is None:
        raise BrowserUnavailable("no chromedriver executable on PATH after installing chromium-driver")
    return path


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    try:
        binary, driver_path = chromium(), chromedriver()
    except BrowserUnavailable as exc:
        pytest.fail(f"this test needs a real browser: {exc}", pytrace=False)
    options = Options()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--window-size=1400,1800", f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(arg)
    try:
        driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    except WebDriverException as exc:
        pytest.fail(f"chromium did not start under chromedriver: {exc.msg}", pytrace=False)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def emu() -> Iterator[Emulator]:
    # the default initial delay (3 s) holds the first join until a button fires it: the clock is manual
    with Emulator(topics=[("orders", 6)], manual_clock=True, control_port=0, control_token=TOKEN) as running:
        yield running


class Page:
    """The page as a person sees it, read with small scripts (no element survives a live swap)."""

    def __init__(self, driver: webdriver.Chrome, shots: Path) -> None:
        self.driver = driver
        self.shots = shots
        self.count = 0

    def js(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def group(self, css: str) -> Any:
        return self.js("const g = document.querySelector(`section.group[data-group=\"${arguments[0]}\"]`);"
                       "const e = g && g.querySelector(arguments[1]); return e && e.textContent;", GROUP, css)

    def texts(self, css: str) -> list[str]:
        return list(self.js("return [...document.querySelectorAll(arguments[0])].map((e) => e.textContent)", css))

    def lit(self) -> str | None:
        found = self.group("li.state.lit")
        return None if found is None else str(found)

    def wait(self, what: str, condition: Callable[[], Any]) -> Any:
        try:
            return WebDriverWait(self.driver, WAIT_S, poll_frequency=0.1).until(lambda _d: condition())
        except Exception as exc:
            self.shot(f"failed-{what}")
            raise AssertionError(f"the page never showed {what}; status {self.texts('#status')}, "
                                 f"state {self.lit()}") from exc

    def click(self, css: str, label: str) -> None:
        clicked = self.js("const b = [...document.querySelectorAll(arguments[0])].find((b) => b.textContent === "
                          "arguments[1]); if (b) b.click(); return !!b;", css, label)
        assert clicked, f"no button {label!r} under {css}"

    def shot(self, name: str) -> None:
        self.count += 1
        path = self.shots / f"{self.count:02d}-{name}.png"
        self.driver.save_screenshot(str(path))
        print(f"[live page] screenshot {path}")


def _member(emu: Emulator, tmp_path: Path, client_id: str, strategies: list[str]) -> Member:
    spec = MemberSpec(client="kafka-python", bootstrap=emu.bootstrap_servers, group=GROUP, topic="orders",
                      client_id=client_id, strategies=strategies)
    return Member(spec, tmp_path)


def test_the_live_page_follows_real_clients_and_its_buttons_step_the_clock_and_expire_a_member(
    emu: Emulator, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    assert emu.control_url is not None
    shots = tmp_path / "screenshots"
    shots.mkdir()
    print(f"[live page] screenshots in {shots}")
    page = Page(browser, shots)
    browser.get(f"{emu.control_url}/?token={TOKEN}")  # kept as a cookie: the address becomes /
    page.wait("the live stream", lambda: page.texts("#status") == ["live"])
    assert browser.current_url == f"{emu.control_url}/" and "no groups yet" in page.texts("main")[0]
    page.js("window.notReloaded = true")
    page.shot("empty")
    members: list[Member] = []
    try:
        _first_join(page, members, emu, tmp_path)
        _second_member_and_a_tie(page, members, emu, tmp_path)
        _clock_buttons(page)
        _crash_and_expire(page, members)
        _forced_rebalance(page)
        _clean_leave(page, members)
        assert page.js("return window.notReloaded") is True  # every change arrived live, with no reload
    finally:
        for member in members:
            member.dispose()


def _first_join(page: Page, members: list[Member], emu: Emulator, tmp_path: Path) -> None:
    members.append(_member(emu, tmp_path, "c0", ["range", "roundrobin"]))
    page.wait("the group in PreparingRebalance", lambda: page.lit() == "PreparingRebalance")
    page.shot("waiting-for-the-initial-delay")
    page.click("button.advance", "to the next group timer")  # group.initial.rebalance.delay.ms, 3 s
    page.wait("generation 1 Stable", lambda: page.lit() == "Stable" and page.texts(".vote-block caption"))
    assert page.texts("tr.member td.client") == ["c0"]
    assert "generation 1" in page.texts(".vote-block caption")[0]
    page.shot("generation-1")


def _second_member_and_a_tie(page: Page, members: list[Member], emu: Emulator, tmp_path: Path) -> None:
    members.append(_member(emu, tmp_path, "c1", ["roundrobin", "range"]))

    def two_members_voted() -> bool:
        captions = page.texts(".vote-block caption")
        return page.lit() == "Stable" and len(page.texts("tr.member")) == 2 and bool(captions) and \
            "generation 2" in captions[0]

    page.wait("generation 2 with both members", two_members_voted)
    caption = page.texts(".vote-block caption")[0]
    candidates = caption.split("candidates {", 1)[1].split("}", 1)[0]
    assert sorted(candidates.split(", ")) == ["range", "roundrobin"], caption  # in the members' order
    assert "range 1" in caption and "roundrobin 1" in caption
    assert "kafka-4 counts votes in a java.util.HashMap" in page.texts(".vote-block p.tie")[0]
    assert sorted(page.texts("tr.member td.client")) == ["c0", "c1"]
    moves = page.texts("tr.member td.moves")
    assert all("\u2192 orders[" in m for m in moves), moves  # owned -> assigned
    apis = page.js("return [...document.querySelectorAll('svg.sequence g.seq-msg')].map((g) => g.dataset.api)")
    assert {"JoinGroup", "SyncGroup", "Heartbeat"} <= set(apis), apis  # c0 learnt of it from a heartbeat
    assert [t.split(":")[0] for t in page.texts("ol.timeline li.gen b")] == ["generation 1", "generation 2"]
    page.shot("generation-2-tie")


def _clock_buttons(page: Page) -> None:
    def now() -> int:
        return int(page.js("return Number(document.querySelector('.clock .now').dataset.now)"))

    before = now()
    page.click("button.advance", "+100 ms")
    page.wait("the clock 100 ms on", lambda: now() == before + 100)
    page.click("button.advance", "+1 s")
    page.wait("the clock 1.1 s on", lambda: now() == before + 1100)
    assert page.lit() == "Stable"  # heartbeats keep both sessions alive


def _crash_and_expire(page: Page, members: list[Member]) -> None:
    members[1].kill()  # a crash: no LeaveGroup, and on a manual clock its session never runs out by itself
    clicked = page.js("const row = [...document.querySelectorAll('tr.member')].find((r) => "
                      "r.querySelector('td.client').textContent === 'c1'); const b = row && row.querySelector("
                      "'button'); if (b) b.click(); return !!b;")
    assert clicked
    page.wait("generation 3 with c0 alone", lambda: page.lit() == "Stable" and
              page.texts("tr.member td.client") == ["c0"] and "generation 3" in page.texts(".vote-block caption")[0])
    notes = page.texts("svg.sequence g.seq-note title")
    assert any("expired" in n or "removed" in n for n in notes), notes
    page.shot("c1-expired")


def _forced_rebalance(page: Page) -> None:
    page.click("section.group h2 button", "force a rebalance")
    page.wait("generation 4", lambda: page.lit() == "Stable" and "generation 4" in page.texts(".vote-block caption")[0])
    page.shot("forced-rebalance")


def _clean_leave(page: Page, members: list[Member]) -> None:
    members[0].close()  # kafka-python's close sends LeaveGroup: the group is left Empty
    page.wait("the group Empty", lambda: page.lit() == "Empty" and not page.texts("tr.member td.client"))
    apis = page.js("return [...document.querySelectorAll('svg.sequence g.seq-msg')].map((g) => g.dataset.api)")
    assert "LeaveGroup" in apis, apis
    assert "generation 4" in page.texts(".vote-block caption")[0]  # the Empty generation 5 had no vote
    page.shot("left-empty")


def test_the_live_page_shows_a_cooperative_rebalance_in_two_rounds_with_owned_partitions(
    emu: Emulator, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    assert emu.control_url is not None
    shots = tmp_path / "screenshots"
    shots.mkdir()
    print(f"[live page] screenshots in {shots}")
    page = Page(browser, shots)
    browser.get(f"{emu.control_url}/?token={TOKEN}")
    page.wait("the live stream", lambda: page.texts("#status") == ["live"])
    members = [_member(emu, tmp_path, "c0", ["cooperative-sticky"])]
    try:
        page.wait("the group in PreparingRebalance", lambda: page.lit() == "PreparingRebalance")
        page.click("button.advance", "to the next group timer")
        page.wait("generation 1 Stable", lambda: page.lit() == "Stable" and page.texts(".vote-block caption"))
        members.append(_member(emu, tmp_path, "c1", ["cooperative-sticky"]))

        def second_round_done() -> bool:
            captions = page.texts(".vote-block caption")
            return page.lit() == "Stable" and bool(captions) and "second, cooperative round" in captions[0]

        page.wait("the second, cooperative round", second_round_done)
        page.shot("cooperative-second-round")
        # the first round is the generation before the second: not always generation 2, since a client may rejoin
        # alone once before c1 joins (its first metadata refresh), which makes a generation with nothing revoked
        second = int(page.js("return document.querySelector('.vote-block').dataset.generation"))
        first = f'.vote-block[data-generation="{second - 1}"]'
        first_round = page.js("return document.querySelector(arguments[0]).querySelector('tbody').textContent", first)
        assert "orders[0,1,2,3,4,5]" in first_round, first_round  # c0 owned everything when it rejoined
        told = page.js("return document.querySelector(arguments[0] + ' p.revoked').textContent", first)
        assert told.startswith("revoked: c0 orders[") and "withheld for a second round: orders[" in told, told
        moves = dict(zip(page.texts("tr.member td.client"), page.texts("tr.member td.moves"), strict=True))
        assert moves["c1"].startswith("none \u2192 orders["), moves  # c1 got the withheld partitions in round 2
    finally:
        for member in members:
            member.dispose()
