"""The sans-I/O state machine of one classic-protocol group member.

It mirrors what Java's ``AbstractCoordinator``/``ConsumerCoordinator`` do with each
response, without sockets or clocks: every method takes a response (or nothing) and
returns the next thing to send or to do (:mod:`.calls`). The asyncio driver in
:mod:`.member` performs the I/O.

Phases: ``UNJOINED -> JOINING -> (ASSIGNING, leader only) -> SYNCING -> STABLE``.
Error reactions follow Java (clients ``AbstractCoordinator``, Kafka 3.x/4.x):

* JoinGroup ``MEMBER_ID_REQUIRED`` (KIP-394): adopt the id from the response, join again.
* ``UNKNOWN_MEMBER_ID``: forget member id and generation, rejoin.
* ``ILLEGAL_GENERATION``: forget the generation but keep the member id (Java keeps it
  "since the member ID is still valid"), rejoin.
* ``REBALANCE_IN_PROGRESS``: rejoin with the same id and generation.
* ``COORDINATOR_NOT_AVAILABLE`` / ``NOT_COORDINATOR``: rediscover the coordinator.
* ``FENCED_INSTANCE_ID`` and every unexpected error: fatal.

Partitions (KIP-429): an eager member revokes everything before each join; a
cooperative one keeps its partitions, lists them as owned in its subscription, revokes
only those missing from the new assignment and, if it revoked any, rejoins at once. A
cooperative member whose generation was reset loses all partitions (Java
``onPartitionsLost``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum

from rebalance_lab.clients.assignors.types import TopicPartition
from rebalance_lab.clients.member import calls as c
from rebalance_lab.clients.member.subscription import SubscriptionSpec, build_protocols, is_cooperative
from rebalance_lab.protocol import consumer_protocol as cp
from rebalance_lab.protocol.errors import ErrorCode

E = ErrorCode
_COORDINATOR_LOST = frozenset({E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR})
_RETRIABLE_JOIN = frozenset({E.REBALANCE_IN_PROGRESS, E.COORDINATOR_LOAD_IN_PROGRESS})


class Phase(Enum):
    UNJOINED = "unjoined"
    JOINING = "joining"
    ASSIGNING = "assigning"  # leader: the driver is running the assignor
    SYNCING = "syncing"
    STABLE = "stable"
    FAILED = "failed"  # terminal: a fatal error was reported

    def can_move_to(self, target: Phase) -> bool:
        return target in _TRANSITIONS[self]


_TRANSITIONS: dict[Phase, frozenset[Phase]] = {
    Phase.UNJOINED: frozenset({Phase.JOINING, Phase.UNJOINED}),
    Phase.JOINING: frozenset({Phase.JOINING, Phase.ASSIGNING, Phase.SYNCING, Phase.UNJOINED, Phase.FAILED}),
    Phase.ASSIGNING: frozenset({Phase.SYNCING, Phase.UNJOINED, Phase.FAILED}),
    Phase.SYNCING: frozenset({Phase.STABLE, Phase.JOINING, Phase.UNJOINED, Phase.FAILED}),
    Phase.STABLE: frozenset({Phase.JOINING, Phase.UNJOINED, Phase.FAILED}),
    Phase.FAILED: frozenset(),
}


class IllegalTransition(RuntimeError):
    """A method was called in a phase that does not allow it; nothing changed."""


class MemberState:
    """Protocol state of one member. Not thread-safe; one driver owns it."""

    def __init__(
        self,
        *,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        subscription: SubscriptionSpec | None = None,
        protocols: c.Protocols | None = None,
        group_instance_id: str | None = None,
        protocol_type: str = cp.PROTOCOL_TYPE,
    ) -> None:
        if (subscription is None) == (protocols is None):
            raise ValueError("give exactly one of subscription (consumer protocol) or raw protocols")
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.subscription = subscription
        self.raw_protocols = protocols
        self.group_instance_id = group_instance_id
        self.protocol_type = protocol_type
        self.cooperative = subscription is not None and is_cooperative(subscription.assignors)
        self.phase = Phase.UNJOINED
        self.member_id = ""
        self.generation_id = -1
        self.protocol_name: str | None = None
        self.leader_id = ""
        self.owned: tuple[TopicPartition, ...] = ()
        self.assignment_raw = b""
        self.has_assignment = False
        # what Java's assignors keep from onAssignment: the last assignment and its generation
        self.last_assignment: tuple[TopicPartition, ...] = ()
        self.last_assignment_generation = -1
        self.failure: ErrorCode | None = None
        self._revoked_before_join: tuple[TopicPartition, ...] = ()

    # -- bookkeeping ---------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.leader_id == self.member_id

    def _move(self, target: Phase) -> None:
        if not self.phase.can_move_to(target):
            raise IllegalTransition(f"cannot go from {self.phase.value} to {target.value}")
        self.phase = target

    def _require(self, *phases: Phase) -> None:
        if self.phase not in phases:
            names = "/".join(p.value for p in phases)
            raise IllegalTransition(f"expected phase {names}, member is {self.phase.value}")

    def _reset_generation(self, forget_member_id: bool) -> None:
        self.generation_id = -1
        self.protocol_name = None
        self.leader_id = ""
        if forget_member_id:
            self.member_id = ""

    def _fail(self, error: ErrorCode) -> c.Failed:
        self._move(Phase.FAILED)
        self.failure = error
        return c.Failed(error)

    # -- join ------------------------------------------------------------------------

    def protocols(self) -> c.Protocols:
        if self.raw_protocols is not None:
            return self.raw_protocols
        assert self.subscription is not None
        return build_protocols(self.subscription, self.owned, self.generation_id, self.has_assignment,
                               last_assignment=self.last_assignment,
                               last_assignment_generation=self.last_assignment_generation)

    def join_call(self, reason: str | None = None) -> c.JoinGroupCall:
        """The JoinGroup to send now (also used to retry after a back-off or rediscovery)."""
        self._require(Phase.JOINING)
        return c.JoinGroupCall(
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            protocol_type=self.protocol_type,
            protocols=self.protocols(),
            session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            reason=reason,
        )

    def start_join(self, reason: str | None = None) -> c.JoinGroupCall:
        """Begin a (re)join: Java ``onJoinPrepare`` revokes partitions first."""
        self._require(Phase.UNJOINED, Phase.STABLE, Phase.JOINING, Phase.SYNCING)
        if self.owned and (not self.cooperative or self.generation_id < 0):
            # eager: revoke all; cooperative with a reset generation: all are lost
            self._revoked_before_join += self.owned
            self.owned = ()
        self._move(Phase.JOINING)
        return self.join_call(reason)

    def on_join_result(self, result: c.JoinGroupResult) -> c.JoinStep:
        self._require(Phase.JOINING)
        handler = _JOIN_HANDLERS.get(result.error)
        if handler is not None:
            return handler(self, result)
        if result.error in _COORDINATOR_LOST:
            return c.Rediscover(result.error)
        if result.error in _RETRIABLE_JOIN:
            return c.Retry(result.error)
        return self._fail(result.error)

    def _join_ok(self, result: c.JoinGroupResult) -> c.JoinStep:
        self.member_id = result.member_id
        self.generation_id = result.generation_id
        self.protocol_name = result.protocol_name
        self.leader_id = result.leader
        if self.is_leader and not result.skip_assignment:
            self._move(Phase.ASSIGNING)
            return c.RunAssignor(result.generation_id, result.protocol_name or "", result.members)
        # KIP-814: a returning static leader told to skip assignment syncs like a follower
        self._move(Phase.SYNCING)
        return c.SendSync(self._sync_call(()))

    def _join_member_id_required(self, result: c.JoinGroupResult) -> c.JoinStep:
        self.member_id = result.member_id  # KIP-394: the second JoinGroup carries this id
        return c.SendJoin(self.join_call())

    def _join_unknown_member(self, result: c.JoinGroupResult) -> c.JoinStep:
        self._reset_generation(forget_member_id=True)
        return c.SendJoin(self.join_call())

    def _join_illegal_generation(self, result: c.JoinGroupResult) -> c.JoinStep:
        self._reset_generation(forget_member_id=False)
        return c.SendJoin(self.join_call())

    # -- assignment and sync ---------------------------------------------------------------

    def _sync_call(self, assignments: tuple[tuple[str, bytes], ...]) -> c.SyncGroupCall:
        return c.SyncGroupCall(
            generation_id=self.generation_id,
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name or "",
            assignments=assignments,
        )

    def on_assignment(self, assignments: Mapping[str, bytes]) -> c.SyncGroupCall:
        """The leader's computed assignment (member id -> consumer-protocol bytes)."""
        self._require(Phase.ASSIGNING)
        self._move(Phase.SYNCING)
        return self._sync_call(tuple(assignments.items()))

    def assignment_failed(self, error: ErrorCode = E.UNKNOWN_SERVER_ERROR) -> c.Failed:
        self._require(Phase.ASSIGNING)
        return self._fail(error)

    def on_sync_result(self, result: c.SyncGroupResult) -> c.SyncStep:
        self._require(Phase.SYNCING)
        if result.error == E.NONE:
            return self._sync_ok(result)
        if result.error == E.REBALANCE_IN_PROGRESS:
            return c.SendJoin(self.start_join())
        if result.error in (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION):
            self._reset_generation(forget_member_id=result.error == E.UNKNOWN_MEMBER_ID)
            return c.SendJoin(self.start_join())
        if result.error in _COORDINATOR_LOST:
            self._move(Phase.JOINING)
            return c.Rediscover(result.error)
        return self._fail(result.error)

    def _sync_ok(self, result: c.SyncGroupResult) -> c.Assigned:
        partitions = decode_partitions(result.assignment)
        previous = self.owned
        self._move(Phase.STABLE)
        self.assignment_raw = result.assignment
        self.has_assignment = True
        self.last_assignment, self.last_assignment_generation = partitions, self.generation_id
        self.owned = partitions
        if self.cooperative:
            revoked = tuple(tp for tp in previous if tp not in set(partitions))
            added = tuple(tp for tp in partitions if tp not in set(previous))
        else:
            revoked, added = self._revoked_before_join, partitions
        self._revoked_before_join = ()
        return c.Assigned(
            generation_id=self.generation_id,
            partitions=partitions,
            added=added,
            revoked=revoked,
            raw=result.assignment,
            rejoin_needed=self.cooperative and bool(revoked),
        )

    # -- heartbeat ---------------------------------------------------------------------------

    def heartbeat_call(self) -> c.HeartbeatCall | None:
        """A heartbeat is due only while stable (a parked Join/Sync blocks the connection)."""
        if self.phase is not Phase.STABLE:
            return None
        return c.HeartbeatCall(self.generation_id, self.member_id, self.group_instance_id)

    def on_heartbeat_result(self, call: c.HeartbeatCall, result: c.HeartbeatResult) -> c.HeartbeatStep:
        if self.phase is not Phase.STABLE or call.generation_id != self.generation_id:
            return c.Ignored("the generation changed while the heartbeat was in flight")
        error = result.error
        if error == E.NONE:
            return c.HeartbeatOk()
        if error == E.REBALANCE_IN_PROGRESS:
            return c.RejoinNeeded(error)
        if error in (E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID):
            self._reset_generation(forget_member_id=error == E.UNKNOWN_MEMBER_ID)
            self._move(Phase.UNJOINED)
            return c.RejoinNeeded(error)
        if error in _COORDINATOR_LOST:
            return c.Rediscover(error)
        return self._fail(error)

    # -- leaving -------------------------------------------------------------------------------

    def leave_call(self, reason: str | None = None) -> c.LeaveGroupCall | None:
        """The LeaveGroup to send, or None if the member holds no id. The state is reset
        at once, as Java's ``resetGenerationOnLeaveGroup`` does."""
        if self.phase is Phase.FAILED or not self.member_id:
            self.reset()
            return None
        call = c.LeaveGroupCall(self.member_id, self.group_instance_id, reason)
        self.reset()
        return call

    def reset(self) -> None:
        """Forget the membership (after a leave, or when the connection is dropped)."""
        if self.phase is Phase.FAILED:
            return
        self._reset_generation(forget_member_id=True)
        self.owned = ()
        self.has_assignment = False
        self.last_assignment, self.last_assignment_generation = (), -1
        self.assignment_raw = b""
        self._revoked_before_join = ()
        self._move(Phase.UNJOINED)


def decode_partitions(raw: bytes) -> tuple[TopicPartition, ...]:
    """Partitions of a consumer-protocol assignment; empty bytes (a member the leader left
    out, spec coordinator.md §8.2) and undecodable bytes mean "nothing assigned"."""
    if not raw:
        return ()
    try:
        return cp.decode_assignment(raw).partitions
    except cp.ConsumerProtocolError:
        return ()


_JoinHandler = Callable[[MemberState, c.JoinGroupResult], c.JoinStep]
_JOIN_HANDLERS: dict[ErrorCode, _JoinHandler] = {
    E.NONE: MemberState._join_ok,
    E.MEMBER_ID_REQUIRED: MemberState._join_member_id_required,
    E.UNKNOWN_MEMBER_ID: MemberState._join_unknown_member,
    E.ILLEGAL_GENERATION: MemberState._join_illegal_generation,
}
