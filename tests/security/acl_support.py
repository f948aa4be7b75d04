"""An emulator with an ACL file, and one raw connection to it, for the authorization tests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator.server import EmulatorServer
from tests.integration.wire import RawConnection


@asynccontextmanager
async def raw_emulator(config: EmulatorConfig) -> AsyncIterator[RawConnection]:
    """An emulator started with ``config``, and a raw connection to its first broker (both closed after)."""
    async with EmulatorServer(config) as server:
        host, port = server.bootstrap_servers.split(",")[0].rsplit(":", 1)
        conn = await RawConnection.open(host, int(port))
        try:
            yield conn
        finally:
            await conn.close()


@asynccontextmanager
async def acl_emulator(tmp_path: Path, acls: list[dict[str, str]], **options: Any) -> AsyncIterator[RawConnection]:
    """:func:`raw_emulator` with ``acls`` written to an ACL file (``--acl-file``) and the other config ``options``."""
    path = tmp_path / "acls.json"
    path.write_text(json.dumps({"acls": acls}))
    async with raw_emulator(EmulatorConfig(port=0, acl_file=str(path), **options)) as conn:
        yield conn
