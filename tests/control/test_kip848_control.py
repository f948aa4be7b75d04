"""The control endpoint on KIP-848 consumer groups: the group view, its epoch history, fencing a member,
bumping the epoch, an error on ConsumerGroupHeartbeat and the manual clock, all over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.protocol.errors import ErrorCode
from tests.control.test_control_api import http
from tests.support.kip848_light import LightConsumer, reconcile


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with Emulator(topics=[("orders", 4)], manual_clock=True, control_port=0) as running:
        yield running


@pytest.fixture
async def pair(emu: Emulator) -> AsyncIterator[tuple[LightConsumer, LightConsumer]]:
    a = await LightConsumer(emu.bootstrap_servers, "g", ["orders"], client_id="a").open()
    b = await LightConsumer(emu.bootstrap_servers, "g", ["orders"], client_id="b").open()
    await a.heartbeat()
    await http(emu, "POST", "/advance", {"ms": 2_000})
    await b.heartbeat()
    yield a, b
    for m in (a, b):
        await m.close()


def partitions(rows: list[dict[str, object]]) -> list[object]:
    return [row["partition"] for row in rows]


async def test_a_consumer_groups_view_shows_epochs_states_and_each_members_partitions_by_topic_name(
    emu: Emulator, pair: tuple[LightConsumer, LightConsumer]
) -> None:
    a, b = pair
    await a.heartbeat()  # told to revoke half
    status, group = await http(emu, "GET", "/groups/g")
    assert status == 200
    assert (group["type"], group["state"], group["group_epoch"], group["assignment_epoch"], group["assignor"]) == (
        "consumer", "Reconciling", 3, 3, "uniform")
    members = {m["client_id"]: m for m in group["members"]}
    revoking, waiting = members["a"], members["b"]
    assert (revoking["member_epoch"], revoking["state"]) == (2, "UNREVOKED_PARTITIONS")
    assert partitions(revoking["assigned"]) == partitions(revoking["target"]) and len(revoking["assigned"]) == 2
    assert {tp["topic"] for tp in revoking["pending_revocation"]} == {"orders"}
    assert (waiting["member_epoch"], waiting["state"], waiting["assigned"]) == (3, "UNRELEASED_PARTITIONS", [])
    assert partitions(waiting["target"]) == partitions(revoking["pending_revocation"])
    assert waiting["subscribed_topic_names"] == ["orders"] and waiting["member_id"] == b.member_id
    status, groups = await http(emu, "GET", "/groups")
    assert status == 200 and [(g["group_id"], g["type"]) for g in groups] == [("g", "consumer")]


async def test_the_history_of_a_consumer_group_has_one_entry_per_epoch_with_its_reason_and_target(
    emu: Emulator, pair: tuple[LightConsumer, LightConsumer]
) -> None:
    a, b = pair
    await reconcile([a, b])
    status, history = await http(emu, "GET", "/groups/g/history")
    assert status == 200
    assert [(e["epoch"], e["reason"], e["member_id"]) for e in history] == [
        (2, "member_join", a.member_id), (3, "member_join", b.member_id)]
    latest = history[-1]
    assert latest["assignor"] == "uniform" and latest["stable_ms"] is not None
    assert sorted(p for target in latest["target"].values() for p in partitions(target)) == [0, 1, 2, 3]


async def test_fence_and_epoch_routes_act_on_a_consumer_group_and_unknown_ones_are_404(
    emu: Emulator, pair: tuple[LightConsumer, LightConsumer]
) -> None:
    a, _ = pair
    assert await http(emu, "POST", f"/groups/g/members/{a.member_id}/fence") == (200, {"fenced": a.member_id})
    answer = await a.heartbeat()
    assert answer.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert await http(emu, "POST", "/groups/g/epoch") == (200, {"group_id": "g", "group_epoch": 5})
    assert (await http(emu, "GET", "/groups/g"))[1]["state"] == "Assigning"
    assert await http(emu, "POST", "/faults", {"kind": "bump_epoch", "group_id": "g"}) == (
        200, {"group_id": "g", "group_epoch": 6})
    status, body = await http(emu, "POST", "/groups/g/members/nobody/fence")
    assert (status, body) == (404, {"error": "no member 'nobody' in consumer group 'g'"})
    status, body = await http(emu, "POST", "/groups/nope/epoch")
    assert (status, body) == (404, {"error": "no consumer group 'nope'"})
    status, history = await http(emu, "GET", "/groups/g/history")
    assert [(e["epoch"], e["reason"]) for e in history][-3:] == [(4, "other"), (5, "operator"), (6, "operator")]


async def test_an_error_fault_on_consumer_group_heartbeat_and_advance_reach_a_consumer_group(
    emu: Emulator, pair: tuple[LightConsumer, LightConsumer]
) -> None:
    a, b = pair
    fault = {"kind": "error", "api": "ConsumerGroupHeartbeat", "error": "NOT_COORDINATOR", "member_id": b.member_id}
    assert await http(emu, "POST", "/faults", fault) == (200, {"armed": "error"})
    assert (await b.heartbeat()).error_code == ErrorCode.NOT_COORDINATOR
    assert (await a.heartbeat()).error_code == ErrorCode.NONE  # only B's requests match
    assert (await b.heartbeat()).error_code == ErrorCode.NONE  # count 1: spent
    await http(emu, "POST", "/advance", {"ms": 45_000})  # neither heartbeats again: both sessions expire
    status, group = await http(emu, "GET", "/groups/g")
    assert (status, group["state"], group["members"]) == (200, "Empty", [])
