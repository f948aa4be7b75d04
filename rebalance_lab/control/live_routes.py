"""The live page's routes: ``GET /`` (the page), ``GET /static/NAME`` (its script and style) and ``GET /events``.

They pass the same guard as every other route (loopback Host, no other origin, the token). The page forbids
framing (the buttons must not be clicked through another site's frame) and loads nothing but its own origin's
script and style (``Content-Security-Policy``): no CDN, nothing fetched at run time.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files

from rebalance_lab.control.events import EventStream, LiveFeed
from rebalance_lab.control.http_wire import Raw
from rebalance_lab.control.page import page_html
from rebalance_lab.coordinator.world import World

STATIC_NAME = re.compile(r"[a-z][a-z0-9_-]*\.(js|css)")
_TYPES = {"js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8"}
PAGE_HEADERS = (
    ("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                                "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
)

LiveReply = tuple[int, object, tuple[tuple[str, str], ...]]


@cache
def static_asset(name: str) -> bytes | None:
    """A file shipped in the package's ``control/static`` folder (package data), or None."""
    if STATIC_NAME.fullmatch(name) is None:
        return None
    asset = files("rebalance_lab.control").joinpath("static", name)
    return asset.read_bytes() if asset.is_file() else None


class LiveRoutes:
    def __init__(self, world: World) -> None:
        self.world = world
        self.feed = LiveFeed.install(world)

    def page(self) -> LiveReply:
        body = page_html(self.world, self.feed.model).encode()
        return 200, Raw("text/html; charset=utf-8", body), PAGE_HEADERS

    def static(self, name: str) -> LiveReply | None:
        data = static_asset(name)
        if data is None:
            return None
        return 200, Raw(_TYPES[name.rsplit(".", 1)[1]], data), PAGE_HEADERS[:2]

    def events(self) -> LiveReply:
        return 200, EventStream(self.feed), ()
