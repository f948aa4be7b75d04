"""The collector pause of a big rebalance (collector_pause.py, issue 22): off while many replies are parked, on
again when they are answered, bounded, and never turning on a collector the embedding program turned off."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from rebalance_lab.config import EmulatorConfig, GroupConfig
from rebalance_lab.coordinator import collector_pause
from rebalance_lab.coordinator.classic.messages import JoinGroupInput, ProtocolEntry, SyncGroupInput
from rebalance_lab.coordinator.clock import ManualClock
from rebalance_lab.coordinator.cluster import BrokerInfo
from rebalance_lab.coordinator.collector_pause import HOLD_AT, MAX_HOLD_MS, RELEASE_BELOW, CollectorPause, for_process
from rebalance_lab.coordinator.group_service import GroupService, service_of
from rebalance_lab.coordinator.handlers.base import Parked
from rebalance_lab.coordinator.world import World
from rebalance_lab.protocol.errors import ErrorCode


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def _still(group_id: str) -> int:
    return HOLD_AT  # the held group still rebalances, with that many members


def _done(group_id: str) -> int:
    return 0  # the held group's rebalance is over (or the group is gone)


def test_a_hold_begins_at_hold_at_parked_replies_and_ends_when_they_fall_below_release_below() -> None:
    pause = CollectorPause()
    for count in range(1, HOLD_AT):
        pause.parked(count, 0, "g", _done)
    assert gc.isenabled() and not pause.held
    pause.parked(HOLD_AT, 0, "g", _done)
    assert not gc.isenabled() and pause.held and pause.holds == 1
    pause.parked(RELEASE_BELOW, 0, "g", _done)  # still a rebalance's worth parked
    assert not gc.isenabled()
    pause.parked(RELEASE_BELOW - 1, 0, None, _done)
    assert gc.isenabled() and not pause.held


def test_a_hold_lasts_while_its_group_rebalances_whatever_is_parked_and_asks_about_that_group() -> None:
    pause = CollectorPause()
    asked: list[str] = []

    def rebalancing(group_id: str) -> int:
        asked.append(group_id)
        return 10 if len(asked) < 3 else 0

    pause.parked(HOLD_AT, 0, "big", rebalancing)
    pause.parked(0, 10, "other", rebalancing)  # the joins answered: the group completes its rebalance
    pause.parked(0, 20, None, rebalancing)  # the followers' SyncGroups, answered at arrival
    assert not gc.isenabled() and pause.held
    pause.parked(0, 30, "other", rebalancing)  # every member synced
    assert gc.isenabled() and not pause.held and asked == ["big", "big", "big"]


def test_a_rebalance_of_a_group_of_hold_at_members_begins_a_hold_and_a_smaller_one_does_not() -> None:
    pause = CollectorPause()
    pause.began("small", 0, lambda group_id: HOLD_AT - 1)
    assert gc.isenabled() and pause.holds == 0
    pause.began("big", 0, lambda group_id: HOLD_AT)
    assert not gc.isenabled() and pause.held and pause.holds == 1
    pause.began("other", 0, lambda group_id: HOLD_AT)  # held already: still one hold, of the first group
    pause.parked(0, 0, None, lambda group_id: 0 if group_id == "big" else HOLD_AT)
    assert gc.isenabled() and not pause.held and pause.holds == 1


def test_a_collector_turned_off_by_the_embedding_program_stays_off_after_a_hold() -> None:
    gc.disable()
    pause = CollectorPause()
    pause.parked(HOLD_AT, 0, "g", _done)
    pause.parked(0, 0, "g", _done)
    assert not gc.isenabled()


def test_a_hold_past_max_held_objects_ends_and_none_begins_until_the_parked_replies_fall(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collector_pause, "MAX_HELD_OBJECTS", 1_000)
    pause = CollectorPause()
    pause.parked(HOLD_AT, 0, "g", _still)
    kept = [[n] for n in range(5_000)]  # tracked objects made while held
    pause.parked(HOLD_AT + 1, 0, "g", _still)
    assert gc.isenabled() and not pause.held and len(kept) == 5_000
    pause.parked(HOLD_AT + 2, 0, "g", _still)
    assert gc.isenabled() and pause.holds == 1  # the stalled rebalance starts no new hold
    pause.parked(0, 0, "g", _still)
    pause.parked(HOLD_AT, 0, "g", _still)
    assert not gc.isenabled() and pause.holds == 2


def test_a_hold_ends_after_max_hold_ms_of_a_rebalance_that_never_ends() -> None:
    pause = CollectorPause()
    pause.parked(HOLD_AT, 1_000, "g", _still)
    pause.parked(0, 1_000 + MAX_HOLD_MS, "g", _still)
    assert not gc.isenabled() and pause.held
    pause.parked(HOLD_AT, 1_001 + MAX_HOLD_MS, "g", _still)
    assert gc.isenabled() and not pause.held and pause.holds == 1  # spent: no new hold at once
    pause.parked(0, 2_000 + MAX_HOLD_MS, "g", _still)
    pause.parked(HOLD_AT, 2_000 + MAX_HOLD_MS, "g", _still)
    assert not gc.isenabled() and pause.holds == 2


def test_close_ends_a_hold_and_the_pause_exists_only_in_serve_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    pause = CollectorPause()
    pause.parked(HOLD_AT, 0, "g", _still)
    pause.close()
    assert gc.isenabled()
    assert for_process() is None  # a test run embeds the emulator: no pause
    monkeypatch.setattr(collector_pause, "_SERVE_PROCESS", False)
    collector_pause.serve_process()  # what serve's own process does first (cli.main)
    assert isinstance(for_process(), CollectorPause)


def _service() -> GroupService:
    config = EmulatorConfig(port=0, seed=3, group=GroupConfig(initial_rebalance_delay_ms=100, join_race="separate"))
    service = service_of(World(config, [BrokerInfo(0, "127.0.0.1", 9092, None)], ManualClock(1_000)))
    service.collector_pause = CollectorPause()
    return service


def _join(service: GroupService, member_id: str) -> Parked:
    inp = JoinGroupInput("g", member_id, "consumer", (ProtocolEntry("range", b""),), 10_000, 10_000)
    return service.call(service.routing.join_group, inp, lambda result: result)


def _sync(service: GroupService, member_id: str, generation: int, assignments: Any = ()) -> Parked:
    inp = SyncGroupInput("g", member_id, generation, assignments=assignments)
    return service.call(service.routing.sync_group, inp, lambda result: result)


def _joined(service: GroupService, ids: list[str], formed: bool) -> tuple[list[Parked], int, str]:
    """Every member (re)joins (the initial delay, if any, then ends): the answers, the generation, the leader.
    A group of HOLD_AT members or more is held from its first JoinGroup of the rebalance."""
    joins = [_join(service, ids[0])]
    assert _held(service) == formed  # a formed group's rebalance begins: held; a forming one waits for HOLD_AT
    joins += [_join(service, member_id) for member_id in ids[1:]]
    clock = service._world.clock
    assert isinstance(clock, ManualClock)
    while not joins[0].done:  # the initial delay, extended while members arrived
        clock.advance(100)
        service._world.fire_timers()
    assert all(p.done and p.value.error is ErrorCode.NONE for p in joins)
    return joins, joins[0].value.generation_id, joins[0].value.leader


def _held(service: GroupService) -> bool:
    pause = service.collector_pause
    assert pause is not None
    return pause.held and not gc.isenabled()


def _rebalance(service: GroupService, ids: list[str], *, leader_first: bool, formed: bool = True) -> None:
    """A full rebalance: every member joins, then syncs; the leader's SyncGroup with every assignment first (the
    followers' are answered at arrival) or last (theirs are parked until it comes). Held from the joins to the
    last SyncGroup."""
    _, generation, leader = _joined(service, ids, formed)
    assert _held(service)  # every join answered: the group completes its rebalance
    followers = [member_id for member_id in ids if member_id != leader]
    syncs: list[Parked] = []
    if leader_first:
        syncs.append(_sync(service, leader, generation, tuple((m, b"x") for m in ids)))
    for member_id in followers:
        assert _held(service)
        syncs.append(_sync(service, member_id, generation))
    if not leader_first:
        assert _held(service)
        syncs.append(_sync(service, leader, generation, tuple((m, b"x") for m in ids)))
    assert all(p.done and p.value.error is ErrorCode.NONE for p in syncs)
    assert gc.isenabled() and service.pending_replies == 0


def test_a_big_groups_rebalance_is_held_from_its_joins_to_its_last_sync_group_and_the_collector_is_on_after() -> None:
    service = _service()
    ids = [_join(service, "").value.member_id for _ in range(HOLD_AT + 10)]  # MEMBER_ID_REQUIRED: nothing parked
    pause = service.collector_pause
    assert pause is not None and pause.holds == 0
    _rebalance(service, ids, leader_first=False, formed=False)  # the group forms: held from HOLD_AT joins
    assert pause.holds == 1
    _rebalance(service, ids, leader_first=True)  # a full rebalance, the followers' SyncGroups after the leader's
    assert pause.holds == 2
    _rebalance(service, ids, leader_first=False)
    assert pause.holds == 3


def test_a_hold_ends_when_the_members_that_never_sync_are_removed_by_their_timeouts() -> None:
    service = _service()
    ids = [_join(service, "").value.member_id for _ in range(HOLD_AT + 10)]
    _, generation, leader = _joined(service, ids, False)
    _sync(service, leader, generation, tuple((m, b"x") for m in ids))  # Stable; no follower ever syncs
    clock = service._world.clock
    assert isinstance(clock, ManualClock) and _held(service)
    clock.advance(9_999)  # the rebalance timeout (pending sync) and session timeouts are 10 s
    service._world.fire_timers()
    assert _held(service)
    clock.advance(1)
    service._world.fire_timers()
    assert gc.isenabled() and not service.coordinator.rebalancing("g")


def _parked_answered(answers: list[Any]) -> weakref.ref[Parked]:
    """A reply parked and resolved as the shell's arrival path does it: its callback, a closure, holds the reply."""
    parked = Parked()

    def resolved(body: Any) -> None:
        answers.append((parked.done, body))

    parked.on_resolve = resolved
    parked.resolve("answer")
    parked.resolve("again")  # resolved once
    return weakref.ref(parked)


def test_a_resolved_parked_reply_drops_its_callback_so_a_closure_holding_it_is_freed_without_the_collector() -> None:
    gc.disable()
    answers: list[Any] = []
    alive = _parked_answered(answers)
    assert answers == [(True, "answer")]
    assert alive() is None  # freed by reference counting: no cycle left for the cyclic collector


def test_serve_s_own_process_says_so_before_anything_else() -> None:
    """cli.main marks serve's own process (argv from the command line) before parsing: its group services pause."""
    script = ("import sys\nfrom rebalance_lab import cli\nfrom rebalance_lab.coordinator import collector_pause\n"
              "sys.argv = ['rebalance-lab', 'serve', '--port', 'not-a-port']\n"
              "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
              "print(collector_pause.for_process() is not None)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["True"]
    called = subprocess.run([sys.executable, "-c", script.replace("cli.main()", "cli.main(['serve', '--port', 'x'])")],
                            capture_output=True, text=True, timeout=60, check=True)
    assert called.stdout.split() == ["False"]  # a caller's main(argv), e.g. a test: no pause
