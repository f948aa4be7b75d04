"""``GET /events``: the live page's server-sent events, one bounded queue per browser.

Every group change (a coordinator record) is rendered once, on the loop, and offered to every open
stream. A browser that reads slowly must not hold memory or the loop: each stream has a queue of at
most ``QUEUE_LIMIT`` messages; when it is full the queue is emptied and the stream is marked for a
*resync* (one ``snapshot`` event of every group, rendered when the stream can take it), so a slow
reader costs one queue and one message in the socket's buffer at most, and loses only intermediate
frames. Changes are rendered at most once per ``FRAME_S``, or per five times the last frame's rendering time
when that is longer (a burst of records becomes one frame; rendering takes at most a fifth of the loop). Browsers
reconnect on their own (``EventSource``); a comment line every ``KEEPALIVE_S`` seconds finds streams whose
browser went away.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from rebalance_lab.control import page
from rebalance_lab.control.live_model import LiveModel
from rebalance_lab.coordinator.classic.records import GroupRecord
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.world import World

log = logging.getLogger("rebalance_lab.control")

QUEUE_LIMIT = 64  # messages waiting per stream before it is resynced instead
MAX_STREAMS = 16  # open /events streams; more are answered 503
KEEPALIVE_S = 15.0
FRAME_S = 0.05  # at most one rendering of the changed groups per 50 ms: a big group's rebalance is thousands of
# records, and rendering it per record would hold the loop; a person sees 20 frames a second as live
RENDER_SHARE_INVERSE = 5  # frames wait 5x their rendering time: rendering takes at most a fifth of the loop
FEED_KEY = "live_feed"

def sse_message(event: str, data: Any) -> bytes:
    """One server-sent event; the JSON data is one line, so it needs one ``data:`` field."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


class Subscriber:
    """One stream's queue (no I/O): messages in order, or a resync once it overflowed."""

    def __init__(self, limit: int = QUEUE_LIMIT, wake: Callable[[], None] = lambda: None) -> None:
        self.limit = limit
        self.queue: deque[bytes] = deque()
        self.resync = True  # a new stream starts with a snapshot
        self.resyncs = 0  # how many times it overflowed
        self._wake = wake

    def offer(self, message: bytes) -> None:
        if not self.resync:
            if len(self.queue) >= self.limit:
                self.queue.clear()  # drop what it could not take; the snapshot tells the present
                self.resync = True
                self.resyncs += 1
            else:
                self.queue.append(message)
        self._wake()

    def take(self) -> bytes | None:
        """The next message; None for 'send a snapshot now' (then the stream is up to date again)."""
        if self.resync:
            self.resync = False
            self.queue.clear()
            return None
        return self.queue.popleft()

    def request_resync(self) -> None:
        self.resync = True
        self.queue.clear()
        self._wake()

    @property
    def pending(self) -> bool:
        return self.resync or bool(self.queue)


class LiveFeed:
    """The world's record stream turned into rendered frames for every open ``/events`` stream."""

    def __init__(self, world: World, model: LiveModel) -> None:
        self.world = world
        self.model = model
        self.subscribers: set[Subscriber] = set()
        self._dirty: set[str] = set()
        self._flush_scheduled = False
        self._last_flush = float("-inf")
        self._gap = FRAME_S
        self._version = 0  # records seen (and clock moves): a cached snapshot is good while it has not changed
        self._snapshot: tuple[int, bytes] | None = None
        self._shown: list[str] = []  # the groups the browsers' pages show (as of the last snapshot), by id

    @classmethod
    def install(cls, world: World) -> LiveFeed:
        existing = world.services.get(FEED_KEY)
        if isinstance(existing, LiveFeed):
            return existing
        feed = cls(world, LiveModel(world))
        world.services[FEED_KEY] = feed
        service_of(world).subscribe(feed.on_record)
        return feed

    def on_record(self, record: GroupRecord) -> None:
        self.model.on_record(record)
        self._version += 1
        if not self.subscribers or not record.group_id:
            return
        self._dirty.add(record.group_id)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop = asyncio.get_running_loop()
            loop.call_later(max(0.0, self._last_flush + self._gap - loop.time()), self.flush)

    def flush(self) -> None:
        """Render each changed group once and offer the frame to every stream."""
        self._flush_scheduled = False
        started = time.perf_counter()
        try:
            self._frame()
        finally:
            # the next frame waits RENDER_SHARE_INVERSE times as long as this one took to render (FRAME_S at least)
            self._gap = max(FRAME_S, RENDER_SHARE_INVERSE * (time.perf_counter() - started))
            with contextlib.suppress(RuntimeError):  # no running loop: a direct call (tests)
                self._last_flush = asyncio.get_running_loop().time()

    def _frame(self) -> None:
        dirty, self._dirty = sorted(self._dirty), set()
        for group_id in dirty:
            if group_id not in self._shown:
                if len(self._shown) < page.GROUPS_SHOWN or group_id < self._shown[-1]:
                    self.touch()  # a group joins the page's list (sorted by id): every browser gets a snapshot
                    return
                continue  # a group past the page's list changed: nothing the page shows
            html = page.group_html(self.world, self.model, group_id)
            if not html:
                self._shown.remove(group_id)  # gone: the page removes its section
            message = sse_message("group", {"id": group_id, "html": html})
            for subscriber in list(self.subscribers):
                subscriber.offer(message)

    def snapshot(self) -> bytes:
        """Every shown group and the clock; rendered once per change however many streams resync."""
        if self._snapshot is None or self._snapshot[0] != self._version:
            self._shown, _ = page.shown_groups(self.world)
            body = sse_message("snapshot", {"html": page.groups_html(self.world, self.model),
                                            "clock": page.clock_html(self.world)})
            self._snapshot = (self._version, body)
        return self._snapshot[1]

    def touch(self) -> None:
        """Something outside the records changed (the clock moved): resend the page's state."""
        self._version += 1
        for subscriber in self.subscribers:
            subscriber.request_resync()


class EventStream:
    """The reply to ``GET /events``: the HTTP server hands it the connection's writer."""

    def __init__(self, feed: LiveFeed) -> None:
        self.feed = feed

    async def serve(self, writer: asyncio.StreamWriter) -> None:
        feed = self.feed
        if len(feed.subscribers) >= MAX_STREAMS:
            writer.write(_head(503, "text/plain; charset=utf-8", f"at most {MAX_STREAMS} open event streams\n"))
            await writer.drain()
            return
        ready = asyncio.Event()
        subscriber = Subscriber(wake=ready.set)
        feed.subscribers.add(subscriber)
        try:
            writer.write(_head(200, "text/event-stream", None))
            await self._pump(writer, subscriber, ready)
        finally:
            feed.subscribers.discard(subscriber)

    async def _pump(self, writer: asyncio.StreamWriter, subscriber: Subscriber, ready: asyncio.Event) -> None:
        while True:
            if not subscriber.pending:
                ready.clear()
                try:
                    await asyncio.wait_for(ready.wait(), KEEPALIVE_S)
                except TimeoutError:
                    writer.write(b": keep-alive\n\n")
                    await writer.drain()
                    continue
            message = subscriber.take()
            writer.write(self.feed.snapshot() if message is None else message)
            await writer.drain()  # a slow browser waits here; its queue overflows into a resync meanwhile


def _head(status: int, content_type: str, body: str | None) -> bytes:
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Service Unavailable'}",
             f"Content-Type: {content_type}", "Cache-Control: no-store", "X-Content-Type-Options: nosniff",
             "Connection: close"]
    if body is not None:
        lines.append(f"Content-Length: {len(body.encode())}")
    return ("\r\n".join(lines) + "\r\n\r\n" + (body or "")).encode()


def feed_of(world: World) -> LiveFeed:
    return LiveFeed.install(world)
