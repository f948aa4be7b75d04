"""Fixtures of the coordinator's unit tests."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest


class SocketPairs:
    """Connected socket pairs a test makes (its own end non-blocking, as a server's), all closed when it ends."""

    def __init__(self) -> None:
        self.made: list[tuple[socket.socket, socket.socket]] = []

    def make(self) -> tuple[socket.socket, socket.socket]:
        ours, peer = socket.socketpair()
        ours.setblocking(False)
        self.made.append((ours, peer))
        return ours, peer

    def close(self) -> None:
        for ours, peer in self.made:
            ours.close()
            peer.close()


@pytest.fixture
def pairs() -> Iterator[SocketPairs]:
    made = SocketPairs()
    yield made
    made.close()
