"""``serve --explain``: one readable line per coordinator step, for people learning the protocol.

It tells who joined and with which protocols (in preference order), why a
rebalance started, the candidate protocols, each member's vote and the winner,
the leader and generation, who got which partitions, and who left or expired.
Member ids are shortened to ``<client or instance id>-<first 8 hex of the uuid>``.
KIP-848 consumer groups are told by :mod:`.narrate_consumer` (epoch bumps and their reasons,
targets, revocations), wrapped at :data:`WIDTH` columns.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from collections.abc import Callable
from typing import IO

from rebalance_lab.coordinator.classic import records as r
from rebalance_lab.coordinator.consumer.records import ConsumerRecord
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.transactions.service import transactions_of
from rebalance_lab.coordinator.world import World
from rebalance_lab.observe import decode
from rebalance_lab.observe.narrate_consumer import ConsumerNarration

WIDTH = 120  # a consumer group's lines are wrapped to this many columns

_UUID_TAIL = re.compile(r"-([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def short(member_id: str | None) -> str:
    if not member_id:
        return "-"
    match = _UUID_TAIL.search(member_id)
    return member_id[: match.start()] + "-" + match.group(1) if match else member_id


def _partitions(data: bytes, protocol_type: str | None) -> str:
    tps = decode.assignment(data, protocol_type)
    if tps is None:
        return f"{len(data)} bytes"
    if not tps:
        return "nothing"
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp["topic"], []).append(tp["partition"])
    return "; ".join(f"{t}[{','.join(map(str, ps))}]" for t, ps in by_topic.items())


def _tally(votes: tuple[tuple[str, str], ...]) -> str:
    counts = Counter(v for _, v in votes)
    return " to ".join(str(n) for _, n in counts.most_common())


class Narrator:
    def __init__(self, out: IO[str], now_ms: Callable[[], int]) -> None:
        self._out = out
        self._start = now_ms()
        self._protocol_type: dict[str, str | None] = {}
        self._consumer = ConsumerNarration()

    def say(self, ts_ms: int, group: str, text: str) -> None:
        self._out.write(f"[{(ts_ms - self._start) / 1000:8.3f}s] {group}: {text}\n")
        self._out.flush()

    def say_wrapped(self, ts_ms: int, group: str, text: str) -> None:
        """One step in lines of at most :data:`WIDTH` columns, continuations indented under the time."""
        first = f"[{(ts_ms - self._start) / 1000:8.3f}s] {group}: "
        lines = textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=" " * 12, break_on_hyphens=False)
        self._out.write("".join(line + "\n" for line in lines))
        self._out.flush()

    def on_record(self, record: r.GroupRecord) -> None:
        if isinstance(record, ConsumerRecord):
            for line in self._consumer.describe(record):
                self.say_wrapped(record.ts_ms, record.group_id, line)
            return
        text = self._describe(record)
        if text:
            self.say(record.ts_ms, record.group_id, text)

    def _describe(self, rec: r.GroupRecord) -> str | None:
        handlers: dict[type, Callable[[r.GroupRecord], str | None]] = {
            r.PendingMemberAdded: self._pending,
            r.MemberJoined: self._joined,
            r.MemberRejoined: self._rejoined,
            r.StaticMemberReplaced: self._replaced,
            r.RebalancePrepared: self._rebalance,
            r.MemberLeft: self._left,
            r.MemberExpired: self._expired,
            r.PendingMemberExpired: self._pending_expired,
            r.MembersDroppedNotRejoined: self._dropped,
            r.GenerationStarted: self._generation,
            r.AssignmentStored: self._assigned,
            r.GroupEmpty: self._empty,
            r.GroupDeleted: self._deleted,
        }
        handler = handlers.get(type(rec))
        return handler(rec) if handler else None

    def _pending(self, rec: r.GroupRecord) -> str:
        assert isinstance(rec, r.PendingMemberAdded)
        return (f"{rec.client_id or '(no client id)'} asks to join; given member id {short(rec.member_id)} "
                "and told to rejoin with it (MEMBER_ID_REQUIRED, KIP-394)")

    def _joined(self, rec: r.GroupRecord) -> str:
        assert isinstance(rec, r.MemberJoined)
        self._protocol_type[rec.group_id] = rec.protocol_type
        static = f", static instance {rec.group_instance_id}" if rec.group_instance_id else ""
        offers = ", ".join(name for name, _ in rec.protocols)
        leader = "; it is the first member, so it becomes leader" if rec.became_leader else ""
        return (f"member {short(rec.member_id)} joined (client {rec.client_id}{static}, session "
                f"{rec.session_timeout_ms} ms) offering [{offers}]{leader}")

    def _rejoined(self, rec: r.GroupRecord) -> str:
        assert isinstance(rec, r.MemberRejoined)
        change = "with changed protocols" if rec.metadata_changed else "with the same protocols"
        return f"member {short(rec.member_id)} rejoins {change} (group {rec.state})"

    def _replaced(self, rec: r.GroupRecord) -> str:
        assert isinstance(rec, r.StaticMemberReplaced)
        return (f"static instance {rec.group_instance_id} came back: member {short(rec.old_member_id)} is "
                f"replaced by {short(rec.new_member_id)}, generation stays {rec.generation}")

    def _rebalance(self, rec: r.GroupRecord) -> str:
        assert isinstance(rec, r.RebalancePrepared)
        delay = f"; waiting {rec.initial_delay_ms} ms for more members (initial delay)" \
            if rec.initial_delay_ms else ""
        return f"rebalance starts from {rec.from_state} at generation {rec.generation}: {rec.reason}{delay}"

    def _left(self, rec: r.GroupRecord) -> str:
        assert isinstance(rec, r.MemberLeft)
        leader = f"; new leader {short(rec.new_leader_id)}" if rec.new_leader_id else ""
        return f"member {short(rec.member_id)} left ({rec.cause}){leader}"

    def _expired(self, rec: r.GroupRecord) -> str:
        assert isinstance(rec, r.MemberExpired)
        return (f"member {short(rec.member_id)} expired: no heartbeat within its session timeout "
                f"({rec.cause}); it is removed")

    def _pending_expired(self, rec: r.GroupRecord) -> str:
        assert isinstance(rec, r.PendingMemberExpired)
        return f"pending member {short(rec.member_id)} dropped ({rec.cause})"

    def _dropped(self, rec: r.GroupRecord) -> str:
        assert isinstance(rec, r.MembersDroppedNotRejoined)
        names = ", ".join(short(m) for m in rec.member_ids)
        return f"members that did not rejoin in time are removed: {names}"

    def _generation(self, rec: r.GroupRecord) -> str:
        assert isinstance(rec, r.GenerationStarted)
        self._protocol_type[rec.group_id] = rec.protocol_type
        votes = ", ".join(f"{short(m)} votes {p}" for m, p in rec.votes)
        candidates = ", ".join(sorted(rec.candidates))
        return (f"generation {rec.generation}: candidate protocols (offered by every member) {{{candidates}}}; "
                f"{votes}; {rec.protocol} wins {_tally(rec.votes)}; leader {short(rec.leader_id)} "
                f"of {len(rec.members)} member(s) must now assign")

    def _assigned(self, rec: r.GroupRecord) -> str:
        assert isinstance(rec, r.AssignmentStored)
        ptype = self._protocol_type.get(rec.group_id, "consumer")
        parts = "; ".join(f"{short(m)} gets {_partitions(a, ptype)}" for m, a in rec.assignments)
        return f"leader {short(rec.leader_id)} assigned generation {rec.generation} ({rec.protocol}): {parts}"

    def _empty(self, rec: r.GroupRecord) -> str:
        assert isinstance(rec, r.GroupEmpty)
        return f"group is empty now (generation {rec.generation})"

    def _deleted(self, rec: r.GroupRecord) -> str:
        return "group deleted"


def install(world: World, out: IO[str]) -> Narrator:
    narrator = Narrator(out, world.now_ms)
    service_of(world).subscribe(narrator.on_record)
    transactions_of(world).listeners.append(lambda e: narrator.say(e.ts_ms, e.transactional_id, e.narration()))
    return narrator
