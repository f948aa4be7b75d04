"""The HTTP/JSON control endpoint: reads, every action, errors; and a Node.js client driving it."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.clients.member import GroupMember
from rebalance_lab.control.http import check_loopback

NODE_CLIENT = Path(__file__).with_name("node_client.mjs")


async def http(emu: Emulator, method: str, path: str, body: Any = None, raw: bytes | None = None) -> tuple[int, Any]:
    """One HTTP/1.1 request over a fresh connection (a tiny client, so the loop is never blocked)."""
    assert emu.control_url is not None
    host, port = emu.control_url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
    kind = "Content-Type: application/json\r\n" if data else ""
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{kind}Content-Length: {len(data)}\r\n"
                 "Connection: close\r\n\r\n".encode() + data)
    response = await reader.read()
    writer.close()
    head, _, payload = response.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(payload)


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with Emulator(topics=[("t", 2)], brokers=2, initial_rebalance_delay_ms=0, control_port=0) as running:
        yield running


@pytest.fixture
async def member(emu: Emulator) -> AsyncIterator[GroupMember]:
    m = GroupMember(emu.bootstrap_servers, "g", ["t"], client_id="m", session_timeout_ms=10_000,
                    rebalance_timeout_ms=10_000, heartbeat_interval_ms=50)
    await m.join()
    yield m
    await m.close(leave=True)


async def test_reads_show_groups_members_decoded_assignments_offsets_history_and_brokers(
    emu: Emulator, member: GroupMember
) -> None:
    status, groups = await http(emu, "GET", "/groups")
    assert status == 200 and [g["group_id"] for g in groups] == ["g"]
    status, group = await http(emu, "GET", "/groups/g")
    assert (status, group["state"], group["generation"], group["protocol"]) == (200, "Stable", 1, "range")
    (only,) = group["members"]
    assert only["client_id"] == "m" and only["subscription"]["topics"] == ["t"]
    assert sorted(p["partition"] for p in only["assignment"]) == [0, 1]
    assert await http(emu, "GET", "/groups/g/offsets") == (200, [])
    status, history = await http(emu, "GET", "/groups/g/history")
    assert status == 200 and [h["generation"] for h in history] == [1]
    status, brokers = await http(emu, "GET", "/brokers")
    assert [(b["node_id"], b["up"]) for b in brokers] == [(0, True), (1, True)]


async def test_every_action_is_accepted_and_changes_the_world(emu: Emulator, member: GroupMember) -> None:
    assert (await http(emu, "POST", "/faults", {"kind": "latency", "ms": 1, "api": "Fetch"}))[0] == 200
    assert (await http(emu, "POST", "/faults", {"kind": "throttle", "ms": 1, "count": 1}))[0] == 200
    assert (await http(emu, "POST", "/faults", {"kind": "error", "api": 12, "error": 27}))[0] == 200
    await member.wait_for_generation(2, timeout_s=10)  # the injected REBALANCE_IN_PROGRESS made it rejoin
    assert (await http(emu, "DELETE", "/faults"))[0] == 200
    assert await http(emu, "POST", "/groups/g/rebalance") == (200, {"rebalancing": "g"})
    await member.wait_for_generation(3, timeout_s=10)
    assert await http(emu, "POST", "/groups/g/coordinator", {"broker": 1}) == (200, {"group_id": "g",
                                                                                    "coordinator": 1})
    assert (await http(emu, "GET", "/groups/g"))[1]["coordinator"] == 1
    assert (await http(emu, "POST", "/brokers/0/down"))[0] == 200
    assert (await http(emu, "GET", "/brokers"))[1][0]["up"] is False
    assert (await http(emu, "POST", "/brokers/0/up"))[0] == 200
    assert (await http(emu, "POST", "/faults", {"kind": "close_connections", "client_id": "m"}))[0] == 200
    assert (await http(emu, "POST", "/faults", {"kind": "load_in_progress", "ms": 10}))[0] == 200
    status, _ = await http(emu, "POST", f"/groups/g/members/{member.member_id}/expire")
    assert status in (200, 409)  # 409 when the member happens to be parked in a rejoin right now


async def test_advance_moves_a_manual_clock_and_is_refused_on_the_real_one(emu: Emulator) -> None:
    status, body = await http(emu, "POST", "/advance", {"ms": 5})
    assert status == 409 and "manual clock" in body["error"]
    async with Emulator(manual_clock=True, control_port=0) as manual:
        status, body = await http(manual, "POST", "/advance", {"ms": 1_500})
        assert status == 200 and body["now_ms"] == 1_500


@pytest.mark.parametrize(("method", "path", "body", "status", "message"), [
    ("GET", "/groups/nope", None, 404, "no group 'nope'"),
    ("GET", "/groups/nope/history", None, 404, "no group"),
    ("GET", "/nothing", None, 404, "no such resource"),
    ("POST", "/brokers/7/down", None, 404, "no broker 7"),
    ("POST", "/groups/nope/rebalance", None, 404, "no group"),
    ("PUT", "/groups", None, 405, "use GET"),
    ("POST", "/faults", {"kind": "meteor"}, 400, "unknown fault kind 'meteor'"),
    ("POST", "/faults", {"kind": "latency"}, 400, "'ms' is required"),
    ("POST", "/faults", {"kind": "latency", "ms": "slow"}, 400, "'ms' must be an integer"),
    ("POST", "/faults", {"kind": "error", "api": "Hartbeat", "error": 27}, 400, "unknown api 'Hartbeat'"),
    ("POST", "/faults", {"kind": "error", "api": "Heartbeat"}, 400, "needs 'api'"),
    ("POST", "/faults", {"kind": "broker_down", "broker": 9}, 400, "no broker 9"),
    ("POST", "/faults", [1, 2], 400, "a JSON object"),
    ("POST", "/advance", {"ms": -1}, 400, "negative"),
])
async def test_bad_input_and_unknown_resources_get_json_errors_with_clear_messages(
    emu: Emulator, method: str, path: str, body: Any, status: int, message: str
) -> None:
    got_status, got = await http(emu, method, path, body)
    assert got_status == status and message in got["error"]


async def test_a_body_that_is_not_json_is_a_400(emu: Emulator) -> None:
    status, body = await http(emu, "POST", "/faults", raw=b"{nope")
    assert status == 400 and "not valid JSON" in body["error"]


async def test_a_rebalance_of_a_group_that_cannot_rebalance_is_a_409(emu: Emulator, member: GroupMember) -> None:
    member.stop_heartbeats()  # it will not learn about the rebalance, so the group stays Preparing
    assert (await http(emu, "POST", "/groups/g/rebalance"))[0] == 200
    status, body = await http(emu, "POST", "/groups/g/rebalance")
    assert status == 409 and "PreparingRebalance" in body["error"]


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com"])
def test_the_endpoint_refuses_a_non_loopback_host(host: str) -> None:
    with pytest.raises(ValueError, match="loopback only"):
        check_loopback(host)
    with pytest.raises(ValueError, match="loopback only"), Emulator(control_port=0, control_host=host):
        pass


def test_the_endpoint_is_off_by_default() -> None:
    with Emulator() as emu:
        assert emu.control_url is None


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
async def test_a_node_js_client_injects_a_fault_and_reads_the_group(emu: Emulator, member: GroupMember) -> None:
    assert emu.control_url is not None
    proc = await asyncio.create_subprocess_exec("node", str(NODE_CLIENT), emu.control_url, "g",
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    result = json.loads(out)
    assert result["fault"] == {"status": 200, "body": {"armed": "error"}}
    assert result["read"]["status"] == 200 and result["read"]["body"]["state"] in ("Stable", "PreparingRebalance",
                                                                                  "CompletingRebalance")
    assert result["read"]["body"]["members"][0]["client_id"] == "m"
    assert result["missing"] == {"status": 404, "body": {"error": "no group 'no-such-group'"}}
    assert result["bad"]["status"] == 400 and "'ms' is required" in result["bad"]["body"]["error"]
    await member.wait_for_generation(2, timeout_s=10)  # the fault Node injected made the member rejoin
