"""A test context for the classic group coordinator, after Kafka's GroupMetadataManagerTestContext.

A manual clock (``sleep`` moves it and fires due timers), deterministic member-id UUIDs,
every reply remembered by token, every record kept, and scenario helpers.
Defaults follow GMMT (spec §18.0): min session 10 ms, max 600000 ms, D = 3000.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from rebalance_lab.config import Flavor, GroupConfig
from rebalance_lab.coordinator.classic.admin_messages import (
    DeleteGroupsInput,
    DeleteGroupsResult,
    DescribedGroup,
    DescribeGroupsInput,
    DescribeGroupsResult,
    ListGroupsInput,
    ListGroupsResult,
    Result,
)
from rebalance_lab.coordinator.classic.coordinator import GroupCoordinator
from rebalance_lab.coordinator.classic.messages import (
    HeartbeatInput,
    HeartbeatResult,
    JoinGroupInput,
    JoinGroupResult,
    LeaveGroupInput,
    LeaveGroupResult,
    LeaveMember,
    ProtocolEntry,
    SyncGroupInput,
    SyncGroupResult,
)
from rebalance_lab.coordinator.classic.view import GroupView
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.protocol.errors import ErrorCode
from tests.support.effects_log import EffectsLog

G = "g"


def protocols(*names: str, metadata: bytes = b"meta") -> tuple[ProtocolEntry, ...]:
    return tuple(ProtocolEntry(n, metadata) for n in names)


@dataclass
class Call:
    """A request sent to the coordinator; its reply may come later (parked)."""

    ctx: GroupContext
    token: Hashable

    @property
    def done(self) -> bool:
        return self.token in self.ctx.replies

    @property
    def result(self) -> Any:
        assert self.token in self.ctx.replies, "no reply yet (the request is parked)"
        return self.ctx.replies[self.token]

    @property
    def error(self) -> ErrorCode:
        return self.result.error  # type: ignore[no-any-return]


class GroupContext(EffectsLog[Result]):
    def __init__(self, flavor: Flavor = Flavor.KAFKA_4, *, min_session_ms: int = 10,
                 max_session_ms: int = 600_000, delay_ms: int = 3_000, max_size: int = 2_147_483_647) -> None:
        self.config = GroupConfig(min_session_timeout_ms=min_session_ms, max_session_timeout_ms=max_session_ms,
                                  initial_rebalance_delay_ms=delay_ms, max_size=max_size)
        counter = itertools.count(1)
        self.coordinator = GroupCoordinator(self.config, flavor,
                                            new_uuid=lambda: f"00000000-0000-4000-8000-{next(counter):012d}")
        super().__init__()

    # -- plumbing ----------------------------------------------------------------------

    def _send(self, method: str, inp: Any) -> Call:
        token = self.next_token()
        self._apply(getattr(self.coordinator, method)(self.now, inp, token))
        return Call(self, token)

    def _apply(self, fx: Effects) -> None:
        super()._apply(fx)
        self.coordinator.check_counts()  # every step of every test also checks the kept counts against a scan

    def sleep(self, ms: int) -> None:
        self.now += ms
        self._apply(self.coordinator.fire_timers(self.now))

    # -- requests ------------------------------------------------------------------------

    def join(self, member_id: str = "", *, group: str = G, version: int = 9, instance: str | None = None,
             protocol_type: str = "consumer", names: tuple[str, ...] = ("range",),
             protos: tuple[ProtocolEntry, ...] | None = None, session_ms: int = 5_000,
             rebalance_ms: int = 10_000, client_id: str = "client", reason: str | None = None) -> Call:
        inp = JoinGroupInput(group, member_id, protocol_type, protos if protos is not None else protocols(*names),
                             session_ms, rebalance_ms, version, instance, client_id, "/127.0.0.1", reason)
        return self._send("join_group", inp)

    def sync(self, member_id: str, generation: int, *, group: str = G, instance: str | None = None,
             assignments: dict[str, bytes] | None = None, protocol_type: str | None = None,
             protocol_name: str | None = None) -> Call:
        inp = SyncGroupInput(group, member_id, generation, instance, protocol_type, protocol_name,
                             tuple((assignments or {}).items()))
        return self._send("sync_group", inp)

    def heartbeat(self, member_id: str, generation: int, *, group: str = G,
                  instance: str | None = None) -> ErrorCode:
        result = self._send("heartbeat", HeartbeatInput(group, member_id, generation, instance)).result
        assert isinstance(result, HeartbeatResult)
        return result.error

    def leave(self, *members: LeaveMember, group: str = G, version: int = 5) -> LeaveGroupResult:
        result = self._send("leave_group", LeaveGroupInput(group, tuple(members), version)).result
        assert isinstance(result, LeaveGroupResult)
        return result

    def describe(self, group: str = G, *, version: int = 5, ops: bool = False) -> DescribedGroup:
        result = self._send("describe_groups", DescribeGroupsInput((group,), ops, version)).result
        assert isinstance(result, DescribeGroupsResult)
        return result.groups[0]

    def list_groups(self, states: tuple[str, ...] = (), types: tuple[str, ...] = ()) -> ListGroupsResult:
        result = self._send("list_groups", ListGroupsInput(states, types)).result
        assert isinstance(result, ListGroupsResult)
        return result

    def delete(self, *groups: str) -> dict[str, ErrorCode]:
        result = self._send("delete_groups", DeleteGroupsInput(tuple(groups))).result
        assert isinstance(result, DeleteGroupsResult)
        return dict(result.results)

    def view(self, group: str = G) -> GroupView:
        view = self.coordinator.group(group)
        assert view is not None, f"group {group} does not exist"
        return view

    def state(self, group: str = G) -> str:
        return self.view(group).state

    # -- scenario helpers ------------------------------------------------------------------

    def join_v4_two_step(self, **kw: Any) -> Call:
        """MEMBER_ID_REQUIRED, then the second join with the given id (parks or answers)."""
        first = self.join(version=kw.pop("version", 9), **kw)
        assert first.error is ErrorCode.MEMBER_ID_REQUIRED, first.result
        return self.join(first.result.member_id, **kw)

    def stable_group(self, n: int = 1, *, static: bool = False, names: tuple[str, ...] = ("range",),
                     session_ms: int = 5_000, rebalance_ms: int = 10_000,
                     group: str = G) -> list[str]:
        """n members joined in one generation, all synced, Stable; returns ids, leader first."""
        ids = self.completing_group(n, static=static, names=names, session_ms=session_ms,
                                    rebalance_ms=rebalance_ms, group=group)
        view = self.view(group)
        gen = view.generation_id
        assignment = {m: m.encode() for m in ids}
        self.sync(ids[0], gen, group=group, instance=self._instance(ids[0]), assignments=assignment)
        for m in ids[1:]:
            self.sync(m, gen, group=group, instance=self._instance(m))
        assert self.state(group) == "Stable"
        return ids

    def completing_group(self, n: int = 1, *, static: bool = False, names: tuple[str, ...] = ("range",),
                         session_ms: int = 5_000, rebalance_ms: int = 10_000, group: str = G) -> list[str]:
        """n members joined (v3 joins, so each is added at once), the initial delay passed."""
        calls = [
            self.join(version=5 if static else 3, instance=f"instance-{i}" if static else None, names=names,
                      session_ms=session_ms, rebalance_ms=rebalance_ms, group=group)
            for i in range(n)
        ]
        self.run_until_done(calls)
        results = [c.result for c in calls]
        assert all(isinstance(r, JoinGroupResult) and r.error is ErrorCode.NONE for r in results), results
        leader = results[0].leader
        others = [r.member_id for r in results if r.member_id != leader]
        assert self.state(group) == "CompletingRebalance"
        return [leader, *others]

    def run_until_done(self, calls: list[Call], step_ms: int | None = None, limit_ms: int = 600_000) -> None:
        """Advance the clock step by step (default: the initial delay) until every call has a reply."""
        step = step_ms or self.config.initial_rebalance_delay_ms or 1
        waited = 0
        while not all(c.done for c in calls) and waited < limit_ms:
            self.sleep(step)
            waited += step

    def _instance(self, member_id: str) -> str | None:
        for view in self.coordinator.groups():
            member = view.member(member_id)
            if member is not None:
                return member.group_instance_id
        return None

    def sync_all(self, ids: list[str], group: str = G) -> dict[str, SyncGroupResult]:
        gen = self.view(group).generation_id
        calls = [self.sync(m, gen, group=group, instance=self._instance(m),
                           assignments={x: x.encode() for x in ids} if i == 0 else None)
                 for i, m in enumerate(ids)]
        return {m: c.result for m, c in zip(ids, calls, strict=True)}
