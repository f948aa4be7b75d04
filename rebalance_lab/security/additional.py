"""Several listeners at once: ``--additional-listener PROTOCOL[:PORT]`` beside the main ``--listener``.

Kafka can serve one broker on several listeners (``listeners=PLAINTEXT://:9092,SASL_SSL://:9093``) and
answers Metadata, FindCoordinator and the KIP-951 leader endpoints with the addresses of the listener the
request came in on, so a client stays on the protocol it bootstrapped with. Here every additional listener
is one more socket per emulated broker (broker i on PORT+i; PORT 0 or none: free ports), with the same
SASL users and TLS files as the main one, and ``world.services[ADDRESSES]`` maps (listener, node id) to
the address to give; the main listener keeps the brokers' own addresses.
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, cast

from rebalance_lab.security.listeners import ListenerConfigError, ListenerSecurity, SecurityOptions

ADDRESSES = "listener_addresses"  # world.services key: {(listener, node id): (host, port)}

Bound = list[tuple[ListenerSecurity, list[socket.socket]]]


class _Broker(Protocol):
    @property
    def node_id(self) -> int: ...
    @property
    def host(self) -> str: ...


B = TypeVar("B", bound=_Broker)


def parse(spec: str) -> tuple[str, int]:
    """``SASL_SSL`` or ``SASL_SSL:9192`` -> (protocol, first broker's port; 0 = free ports)."""
    name, _, port = spec.partition(":")
    if port and (not port.isdigit() or int(port) > 65535):
        raise ListenerConfigError(f"additional listener {spec!r} is not PROTOCOL[:PORT]")
    return name.upper(), int(port or 0)


def additional_listeners(options: SecurityOptions) -> list[tuple[ListenerSecurity, int]]:
    listeners: list[tuple[ListenerSecurity, int]] = []
    seen = {options.listener.upper()}
    for spec in options.additional_listeners:
        protocol, port = parse(spec)
        if protocol in seen:
            raise ListenerConfigError(f"listener {protocol} is given twice (each protocol at most once)")
        seen.add(protocol)
        listeners.append((ListenerSecurity.build(options, protocol), port))
    return listeners


def bind(listeners: Sequence[tuple[ListenerSecurity, int]], host: str, brokers: int,
         bind_one: Callable[[str, int], socket.socket], primary: Sequence[socket.socket]) -> Bound:
    """One listening socket per broker and listener; on failure every socket bound so far is closed."""
    bound: Bound = []
    try:
        for security, base in listeners:
            sockets: list[socket.socket] = []
            bound.append((security, sockets))
            for i in range(brokers):
                sockets.append(bind_one(host, base + i if base else 0))
    except OSError:
        for sock in [*primary, *(s for _, socks in bound for s in socks)]:
            sock.close()
        raise
    return bound


def addresses(bound: Bound, brokers: Sequence[_Broker]) -> dict[tuple[str, int], tuple[str, int]]:
    """What to advertise per (listener, node id): the broker's advertised host, this listener's port."""
    return {
        (security.protocol.value, broker.node_id): (broker.host, int(sock.getsockname()[1]))
        for security, sockets in bound for broker, sock in zip(brokers, sockets, strict=True)
    }


def advertised(services: Mapping[str, Any], listener: str, info: B) -> B:
    """A broker's info (``BrokerInfo``) with the address a request on ``listener`` must be given: the same
    object on the main listener (and always, when there is no additional listener)."""
    extra = services.get(ADDRESSES)
    found = None if extra is None else extra.get((listener, info.node_id))
    if found is None:
        return info
    return cast(B, dataclasses.replace(cast(Any, info), host=found[0], port=found[1]))


def bootstrap_of(services: Mapping[str, Any], listener: str) -> str:
    extra: dict[tuple[str, int], tuple[str, int]] = services.get(ADDRESSES) or {}
    found = [f"{host}:{port}" for (name, _), (host, port) in sorted(extra.items()) if name == listener.upper()]
    if not found:
        raise KeyError(f"no additional listener {listener}")
    return ",".join(found)


def check(options: SecurityOptions) -> None:
    """Every listener's settings, as the server will build them (the CLI's usage errors)."""
    ListenerSecurity.build(options)
    additional_listeners(options)
