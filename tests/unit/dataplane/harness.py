"""Call data-plane handlers as the server does, without sockets.

Requests are encoded and decoded by the codec (so a handler sees exactly what it
would see from a client) and responses are encoded and decoded back (so a test
also proves the response is valid on the wire at that version).
"""

from __future__ import annotations

import inspect
from typing import Any

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator.clock import ManualClock
from rebalance_lab.coordinator.cluster import BrokerInfo
from rebalance_lab.coordinator.handlers import load_handlers
from rebalance_lab.coordinator.handlers.base import RequestContext, Stepped
from rebalance_lab.coordinator.world import World
from rebalance_lab.protocol import codec

HANDLERS = load_handlers()


def make_world(brokers: int = 1, **config: Any) -> World:
    cfg = EmulatorConfig(port=0, brokers=brokers, **config)
    racks = cfg.racks or (None,) * brokers
    infos = [BrokerInfo(i, "127.0.0.1", 9092 + i, racks[i]) for i in range(brokers)]
    return World(cfg, infos, ManualClock(1_000_000))


def decoded_request(api_key: int, version: int, **fields: Any) -> Any:
    frame = codec.encode_request(codec.new_request(api_key, version, **fields), correlation_id=1)
    return codec.decode_request(frame[4:]).body


async def call(world: World, api_key: int, version: int, broker: int = 0, **fields: Any) -> Any:
    request = decoded_request(api_key, version, **fields)
    ctx = RequestContext(api_key, version, 1, "test", "/127.0.0.1", 1, world.nodes[broker], world)
    result = HANDLERS[api_key].handle(ctx, request)
    if isinstance(result, Stepped):
        result = result.run()  # the server runs it a few milliseconds at a time; here all at once
    if inspect.isawaitable(result):
        result = await result
    if result is None:
        return None
    frame = codec.encode_response(result, correlation_id=1)
    return codec.decode_response(api_key, version, frame[4:])


def request_class(api_key: int, name: str) -> Any:
    """A nested request data class by its JSON name, e.g. ``request_class(1, 'FetchTopic')``."""
    found = _find(codec.request_type(api_key), name)
    if found is None:
        raise KeyError(name)
    return found


def _find(cls: Any, name: str) -> Any:
    for attr in dir(cls):
        if attr[:1].isupper():
            inner = getattr(cls, attr)
            if attr == name:
                return inner
            deeper = _find(inner, name)
            if deeper is not None:
                return deeper
    return None
