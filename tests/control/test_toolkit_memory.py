"""The fault controller forgets closed connections (issue 17, defect 6): on 03701b1 it kept one entry per
connection ever opened, so a churn of clients grew the emulator's memory forever."""

from __future__ import annotations

import asyncio
import struct

from rebalance_lab.api import Emulator
from rebalance_lab.protocol import codec


async def api_versions_once(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(codec.encode_request(codec.new_request(18, 3, client_software_name="t",
                                                        client_software_version="1"), 1, "churn"))
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    await reader.readexactly(size)
    writer.close()
    await writer.wait_closed()


async def test_a_churn_of_short_connections_leaves_only_the_open_ones_tracked() -> None:
    async with Emulator() as emu:
        port = int(emu.bootstrap_servers.rsplit(":", 1)[1])
        for _ in range(1_200):
            await api_versions_once(port)
        assert emu.faults.tracked_connections <= 1_024  # pruned each time the map reaches 1,024
        assert emu.request_counts("ApiVersions") == {0: 1_200}
