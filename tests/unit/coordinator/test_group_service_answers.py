"""GroupService.call: an answer ready at once and a parked one take different paths, with the same outcome."""

from __future__ import annotations

from typing import Any

from rebalance_lab.config import EmulatorConfig, GroupConfig
from rebalance_lab.coordinator.classic.messages import (
    HeartbeatInput,
    JoinGroupInput,
    ProtocolEntry,
    SyncGroupInput,
)
from rebalance_lab.coordinator.classic.records import GroupRecord
from rebalance_lab.coordinator.clock import ManualClock
from rebalance_lab.coordinator.cluster import BrokerInfo
from rebalance_lab.coordinator.group_service import GroupService, service_of
from rebalance_lab.coordinator.handlers.base import Parked
from rebalance_lab.coordinator.world import World
from rebalance_lab.protocol.errors import ErrorCode


def _service() -> tuple[World, GroupService, list[GroupRecord]]:
    config = EmulatorConfig(port=0, seed=3, group=GroupConfig(initial_rebalance_delay_ms=0, join_race="separate"))
    world = World(config, [BrokerInfo(0, "127.0.0.1", 9092, None)], ManualClock(1_000))
    service = service_of(world)
    records: list[GroupRecord] = []
    service.subscribe(records.append)
    return world, service, records


def _tagged(tag: str) -> Any:
    return lambda result: (tag, result)


def _join(service: GroupService, member_id: str, tag: str) -> Parked:
    inp = JoinGroupInput("g", member_id, "consumer", (ProtocolEntry("range", b""),), 10_000, 10_000)
    return service.call(service.routing.join_group, inp, _tagged(tag))


def test_a_heartbeat_answered_at_once_is_built_by_its_own_builder_and_leaves_nothing_pending() -> None:
    _world, service, records = _service()
    member_id = _join(service, "", "first").value[1].member_id
    joined = _join(service, member_id, "join")
    assert joined.done and joined.value[1].error is ErrorCode.NONE  # the zero delay fired within the call
    generation = joined.value[1].generation_id
    synced = service.call(service.routing.sync_group,
                          SyncGroupInput("g", member_id, generation, assignments=((member_id, b"a"),)),
                          _tagged("sync"))
    assert synced.done and synced.value == ("sync", synced.value[1]) and synced.value[1].assignment == b"a"
    seen = len(records)
    beat = service.call(service.routing.heartbeat, HeartbeatInput("g", member_id, generation), _tagged("beat"))
    assert beat.done and beat.value[0] == "beat" and beat.value[1].error is ErrorCode.NONE
    assert service.pending_replies == 0 and len(records) == seen  # no record: the fast path has none to pass on


def test_a_parked_join_is_answered_by_the_request_that_completes_the_rebalance_and_records_reach_subscribers(
) -> None:
    world, service, records = _service()
    first = _join(service, "", "a").value[1].member_id
    _join(service, first, "a")  # generation 1, alone (join_race "separate")
    second = _join(service, "", "b").value[1].member_id
    parked_second = _join(service, second, "b")  # a rebalance starts; this JoinGroup waits for the first member
    assert not parked_second.done and service.pending_replies == 1
    rejoined = _join(service, first, "a")
    assert rejoined.done and rejoined.value[0] == "a"
    assert parked_second.done and parked_second.value[0] == "b"  # resolved through the pending table, own builder
    assert parked_second.value[1].generation_id == rejoined.value[1].generation_id == 2
    assert service.pending_replies == 0 and records  # the rebalance's records reached the subscriber
    beat = service.call(service.routing.heartbeat, HeartbeatInput("g", second, 1), _tagged("beat"))
    assert beat.done and beat.value[1].error is ErrorCode.ILLEGAL_GENERATION and world.next_deadline() is not None
