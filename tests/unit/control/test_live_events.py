"""The live page's event streams: a bounded queue per browser, resynced when it overflows (issue 19, item 2).

The queue logic is tested on its own; the stream's pump with a fake writer whose ``drain`` never returns (a
browser that stopped reading), on a running emulator, so the test shows the loop goes on serving meanwhile.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.control import page
from rebalance_lab.control.diagram import LANES_SHOWN
from rebalance_lab.control.events import QUEUE_LIMIT, EventStream, LiveFeed, Subscriber, sse_message
from rebalance_lab.control.live_model import GROUPS_KEPT, LABELS_KEPT, STEPS_KEPT, LiveModel
from rebalance_lab.coordinator.classic.records import GroupCreated, PendingMemberAdded, PendingMemberExpired
from tests.control.raw_http import call
from tests.support.kip848_light import LightConsumer, reconcile


def test_a_new_stream_starts_with_a_snapshot_then_gets_messages_in_order() -> None:
    subscriber = Subscriber(limit=3)
    subscriber.offer(b"lost: the snapshot tells it")
    assert subscriber.take() is None  # None: send a snapshot
    subscriber.offer(b"a")
    subscriber.offer(b"b")
    assert [subscriber.take(), subscriber.take()] == [b"a", b"b"]
    assert not subscriber.pending


def test_a_full_queue_is_dropped_for_one_resync_and_never_grows_past_its_limit() -> None:
    woken: list[int] = []
    subscriber = Subscriber(limit=3, wake=lambda: woken.append(1))
    assert subscriber.take() is None
    for i in range(10):
        subscriber.offer(f"m{i}".encode())
        assert len(subscriber.queue) <= 3
    assert subscriber.resyncs == 1 and subscriber.resync
    assert subscriber.take() is None  # the snapshot replaces everything dropped
    subscriber.offer(b"next")
    assert subscriber.take() == b"next"
    assert len(woken) == 11


def test_an_event_is_one_data_line_of_json() -> None:
    message = sse_message("group", {"id": "g", "html": "<p>\n two lines</p>"})
    lines = message.decode().split("\n")
    assert lines[0] == "event: group" and lines[1].startswith("data: ") and lines[2:] == ["", ""]
    assert json.loads(lines[1].removeprefix("data: "))["html"] == "<p>\n two lines</p>"


class StalledWriter:
    """A browser that read the response head and the first snapshot, then nothing: later drains wait forever."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.unblock = asyncio.Event()
        self.drains = 0

    def write(self, data: bytes) -> None:
        self.written.append(data)

    async def drain(self) -> None:
        self.drains += 1
        if self.drains > 1:
            await self.unblock.wait()


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with Emulator(topics=[("orders", 2)], control_port=0, manual_clock=True) as running:
        yield running


async def test_a_stalled_browser_holds_one_bounded_queue_and_not_the_loop(emu: Emulator) -> None:
    world = emu.server.world
    feed = LiveFeed.install(world)
    members = [await LightConsumer(emu.bootstrap_servers, group, ["orders"]).open() for group in ("a", "b", "c")]
    for member in members:
        await member.heartbeat()  # three groups on the page
    writer = StalledWriter()
    stream = asyncio.create_task(EventStream(feed).serve(writer))  # type: ignore[arg-type]
    while len(writer.written) < 2:  # the head, then the first snapshot; later drains wait forever
        await asyncio.sleep(0)
    (subscriber,) = feed.subscribers
    for i in range(20 * QUEUE_LIMIT):
        feed.on_record(GroupCreated("abc"[i % 3], world.now_ms(), "join"))
        feed.flush()  # a frame of what changed (the loop renders one every FRAME_S)
        if i % 50 == 0:
            await asyncio.sleep(0)
    assert len(subscriber.queue) <= QUEUE_LIMIT
    assert subscriber.resyncs >= 1
    assert len(writer.written) == 3  # the head, the snapshot, the one frame whose drain never ends
    assert emu.control_url is not None
    assert (await _get(emu.control_url, "/groups"))[0] == 200  # the endpoint serves others meanwhile
    writer.unblock.set()
    while len(writer.written) < 4:
        await asyncio.sleep(0)
    assert writer.written[3].startswith(b"event: snapshot\n")  # what it missed, as one snapshot
    stream.cancel()
    await asyncio.gather(stream, return_exceptions=True)
    assert not feed.subscribers
    for member in members:
        await member.close()


# -- over HTTP ---------------------------------------------------------------------------------------------------


async def _get(url: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    fields = {"Host": f"{host}:{port}", **(headers or {})}
    head = "".join(f"{k}: {v}\r\n" for k, v in fields.items())
    writer.write(f"GET {path} HTTP/1.1\r\n{head}Connection: close\r\n\r\n".encode())
    raw = await reader.readuntil(b"\r\n\r\n")
    lines = raw.decode("latin-1").split("\r\n")
    got = {n.lower(): v.strip() for n, _, v in (line.partition(":") for line in lines[1:] if line)}
    body = await reader.readexactly(int(got["content-length"])) if "content-length" in got else b""
    if got.get("content-type") == "text/event-stream":
        body = await reader.readuntil(b"\n\n")
    writer.close()
    return int(lines[0].split()[1]), got, body


async def test_the_page_its_assets_and_its_stream_are_served_with_a_strict_policy(emu: Emulator) -> None:
    url = emu.control_url
    assert url is not None
    status, headers, body = await _get(url, "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'none'" in headers["content-security-policy"] and headers["x-frame-options"] == "DENY"
    assert b'<script src="/static/live.js"' in body and b"no groups yet" in body
    status, headers, body = await _get(url, "/static/live.js")
    assert status == 200 and headers["content-type"].startswith("text/javascript") and b"EventSource" in body
    assert (await _get(url, "/static/..%2Fhttp.py"))[0] == 404
    status, headers, body = await _get(url, "/events")
    assert status == 200 and body.startswith(b"event: snapshot\ndata: ")


async def test_advance_to_the_next_timer_needs_one_pending_and_a_known_target(emu: Emulator) -> None:
    url = emu.control_url
    assert url is not None
    assert (await call(url, "POST", "/advance", body={"to": "the end"})).status == 400
    answer = await call(url, "POST", "/advance", body={"to": "next_timer"})
    assert answer.status == 409 and "no group timer" in answer.error


@pytest.fixture
async def guarded() -> AsyncIterator[Emulator]:
    async with Emulator(control_port=0, control_token="s3cret") as running:
        yield running


async def test_the_page_address_with_the_token_sets_a_strict_cookie_that_the_page_and_stream_use(
    guarded: Emulator,
) -> None:
    url = guarded.control_url
    assert url is not None
    assert (await _get(url, "/"))[0] == 401
    assert (await _get(url, "/?token=wrong"))[0] == 401
    assert (await _get(url, "/events?token=s3cret"))[0] == 401  # only the page's address takes the token
    status, headers, _ = await _get(url, "/?token=s3cret")
    assert status == 303 and headers["location"] == "/"
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    pair = cookie.split(";", 1)[0]
    assert (await _get(url, "/", {"Cookie": pair}))[0] == 200
    status, _, body = await _get(url, "/events", {"Cookie": pair})
    assert status == 200 and body.startswith(b"event: snapshot")
    assert (await _get(url, "/events", {"Cookie": pair, "Origin": "http://evil.example"}))[0] == 403


async def test_a_kip_848_group_shows_its_own_state_machine_and_assigned_to_target() -> None:
    async with Emulator(topics=[("orders", 4)], manual_clock=True, control_port=0) as emu:
        url = emu.control_url
        assert url is not None
        a = await LightConsumer(emu.bootstrap_servers, "k848", ["orders"], client_id="a").open()
        b = await LightConsumer(emu.bootstrap_servers, "k848", ["orders"], client_id="b").open()
        try:
            await a.heartbeat()
            await call(url, "POST", "/advance", body={"ms": 2_000})  # group.consumer.assignment.interval.ms
            await b.heartbeat()
            await a.heartbeat()  # told to revoke half: the group reconciles
            section = await _section(url, "k848")
            states = [part.split('"', 1)[0] for part in section.split('data-state="')[2:7]]
            assert states == ["Empty", "Assigning", "Reconciling", "Stable", "Dead"]
            assert 'class="state lit" data-state="Reconciling"' in section and "assigned &rarr; target" in section
            assert section.count('<tr class="member"') == 2 and "&rarr; orders[" in section
            await reconcile([a, b])
            assert 'class="state lit" data-state="Stable"' in await _section(url, "k848")
        finally:
            for member in (a, b):
                await member.close()


async def _section(url: str, group_id: str) -> str:
    status, _, body = await _get(url, "/")
    assert status == 200
    page = body.decode()
    return page[page.index(f'data-group="{group_id}"'):]


async def test_what_the_page_remembers_is_bounded_for_churning_members_and_groups(emu: Emulator) -> None:
    model = LiveModel(emu.server.world)
    now = emu.server.world.now_ms()
    for i in range(3 * LABELS_KEPT):  # one group, a new member id each cycle (benchmarks/soak.py churns so)
        model.on_record(PendingMemberAdded("churn", now, f"m{i}", "c", "/127.0.0.1", 10_000, ("range",)))
        model.on_record(PendingMemberExpired("churn", now, f"m{i}", "timeout"))
    state = model.sequences._states["churn"]
    assert len(state.labels) <= LABELS_KEPT and max(len(state.tail), len(state.current.steps)) <= STEPS_KEPT
    for i in range(GROUPS_KEPT + 50):
        model.on_record(GroupCreated(f"g{i}", now, "join"))
    assert len(model.sequences.sequences) <= GROUPS_KEPT and len(model.explainer.groups) <= GROUPS_KEPT
    assert "churn" not in model.sequences.sequences  # the least recently changed went first


async def test_a_group_new_to_the_page_resyncs_every_browser_and_a_big_group_draws_a_bounded_frame(
    emu: Emulator,
) -> None:
    world = emu.server.world
    feed = LiveFeed.install(world)
    subscriber = Subscriber()
    feed.subscribers.add(subscriber)
    assert subscriber.take() is None
    feed.snapshot()  # what the browser shows: no group yet
    members = [await LightConsumer(emu.bootstrap_servers, "big", ["orders"], client_id=f"m{i}").open()
               for i in range(page.MEMBERS_SHOWN + 5)]
    try:
        for member in members:
            await member.heartbeat()
        feed.flush()
        assert subscriber.resync  # "big" is new on the page: a snapshot, not a frame
        html = page.group_html(world, feed.model, "big")
        assert html.count('<tr class="member"') == page.MEMBERS_SHOWN and "and 5 more members" in html
        assert html.count('class="seq-lane"') <= LANES_SHOWN + 1
    finally:
        for member in members:
            await member.close()
