"""Connections of one scenario run: found through FindCoordinator, never assumed.

Each member alias gets its own connection(s) to its group's coordinator (a parked
JoinGroup blocks the connection it came on, as on a real broker); ``admin`` requests
(describe, list, delete, offsets without a member) use a separate one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from rebalance_lab.clients.member import wire
from rebalance_lab.clients.member.connection import Connection, split_bootstrap
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.scenarios.requests import API_KEYS, PREFERRED

_COORDINATOR_RETRIES = 300  # a fresh broker answers COORDINATOR_NOT_AVAILABLE while it creates its offsets topic
_RETRY_S = 0.1


class CoordinatorNotFound(RuntimeError):
    pass


class Session:
    def __init__(self, bootstrap: str, versions: Mapping[str, int]) -> None:
        self.bootstrap = split_bootstrap(bootstrap)[0]
        self.preferred = {**PREFERRED, **versions}
        self._bootstrap_conn: Connection | None = None
        self._coordinators: dict[str, tuple[str, int]] = {}
        self._conns: dict[tuple[str, str, str], Connection] = {}

    async def open(self, host: str, port: int, client_id: str) -> Connection:
        conn = await Connection.open(host, port, client_id)
        await conn.negotiate()
        return conn

    async def bootstrap_connection(self) -> Connection:
        if self._bootstrap_conn is None or not self._bootstrap_conn.is_open:
            self._bootstrap_conn = await self.open(*self.bootstrap, "rebalance-lab-scenario")
        return self._bootstrap_conn

    async def coordinator(self, group_id: str) -> tuple[str, int]:
        if group_id in self._coordinators:
            return self._coordinators[group_id]
        conn = await self.bootstrap_connection()
        version = self.version(conn, "FindCoordinator")
        error = ErrorCode.NONE
        for _ in range(_COORDINATOR_RETRIES):
            info = wire.coordinator_info(await conn.request(wire.find_coordinator_request(group_id, version)), version)
            if info.error == ErrorCode.NONE:
                self._coordinators[group_id] = (info.host, info.port)
                return info.host, info.port
            error = info.error
            await asyncio.sleep(_RETRY_S)
        raise CoordinatorNotFound(f"FindCoordinator for {group_id!r} kept answering {error.name}")

    async def connection(self, who: str, group_id: str, client_id: str, name: str = "main") -> Connection:
        key = (who, group_id, name)
        conn = self._conns.get(key)
        if conn is None or not conn.is_open:
            host, port = await self.coordinator(group_id)
            conn = await self.open(host, port, client_id)
            self._conns[key] = conn
        return conn

    def version(self, conn: Connection, api: str, requested: int | None = None) -> int:
        """An explicit version is sent as is (to test old or removed versions); otherwise the
        highest version <= the preferred one that both sides support."""
        if requested is not None:
            return requested
        return conn.pick(API_KEYS[api], self.preferred[api])

    def close_member(self, who: str) -> None:
        for key in [k for k in self._conns if k[0] == who]:
            self._conns.pop(key).close()

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()
        if self._bootstrap_conn is not None:
            self._bootstrap_conn.close()
            self._bootstrap_conn = None
