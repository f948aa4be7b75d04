"""The narration that explains (issue 19, item 1), driven by the classic coordinator on a manual clock.

Each test plays a situation through the sans-I/O coordinator (tests/unit/coordinator/group_context.py),
feeds every record to the narrator, and checks both the structured story (what the live page shows)
and the sentence the narration says for that situation.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.classic.messages import LeaveMember, ProtocolEntry
from rebalance_lab.coordinator.classic.records import JoinRefused, RebalanceNotified, RebalancePrepared
from rebalance_lab.observe.explain import NOTES_KEPT, RebalanceStory
from rebalance_lab.observe.export import export, read_events
from rebalance_lab.observe.narrator import WIDTH, Narrator
from rebalance_lab.protocol.assignment_types import Assignment, Subscription, TopicPartition
from rebalance_lab.protocol.consumer_protocol import encode_assignment, encode_subscription
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.replay.events import from_json
from tests.unit.coordinator.group_context import GroupContext


class Told:
    """A classic coordinator whose every record is narrated into a string, on a manual clock."""

    def __init__(self, flavor: Flavor = Flavor.KAFKA_4, delay_ms: int = 0) -> None:
        self.ctx = GroupContext(flavor, delay_ms=delay_ms)
        self.out = io.StringIO()
        self.narrator = Narrator(self.out, lambda: 0, str(flavor), colour=False)
        self._fed = 0

    def text(self) -> str:
        """Everything said so far, wrapped lines joined into one line each (for sentence checks)."""
        for record in self.ctx.records[self._fed:]:
            self.narrator.on_record(record)
        self._fed = len(self.ctx.records)
        return " ".join(self.out.getvalue().split())

    def stories(self) -> list[RebalanceStory]:
        self.text()
        return self.narrator.explainer.group("g").stories()


def join_all(t: Told, offers: list[tuple[str, ...]]) -> list[str]:
    """Members join (v3: added at once) with these protocol lists, the join completes; ids in join order."""
    calls = [t.ctx.join(version=3, names=names, client_id=f"c{i}") for i, names in enumerate(offers)]
    t.ctx.run_until_done(calls, step_ms=1)
    return [c.result.member_id for c in calls]


def test_a_rebalance_block_has_states_the_vote_table_candidates_votes_and_the_leader() -> None:
    t = Told()
    ids = join_all(t, [("range", "roundrobin", "custom"), ("range", "roundrobin", "sticky"),
                       ("roundrobin", "range", "sticky")])
    [story] = t.stories()
    assert [(s.before, s.after) for s in story.states] == [("Empty", "PreparingRebalance"),
                                                           ("PreparingRebalance", "CompletingRebalance")]
    # one row per member, in the coordinator's member iteration order (the order the votes are counted in)
    assert {b.member_id: (b.protocols, b.vote) for b in story.ballots} == {
        ids[0]: (("range", "roundrobin", "custom"), "range"), ids[1]: (("range", "roundrobin", "sticky"), "range"),
        ids[2]: (("roundrobin", "range", "sticky"), "roundrobin")}
    assert set(story.candidates) == {"range", "roundrobin"}
    assert story.tally == (("range", 2), ("roundrobin", 1)) and story.winner == "range" and story.tie is None
    text = t.text()
    assert "state Empty -> PreparingRebalance" in text and "state PreparingRebalance -> CompletingRebalance" in text
    assert "range*, roundrobin, custom" in text and "roundrobin*, range, sticky" in text
    assert "candidates (offered by every member): range, roundrobin" in text
    assert "votes: range 2, roundrobin 1: range wins 2 to 1" in text
    assert "leader: c0-00000000 (the first member to join)" in text  # ids shortened to <client>-<8 hex>
    assert sorted(b["vote"] for b in story.to_dict()["ballots"]) == ["range", "range", "roundrobin"]


# The winners are the real brokers' (scenarios tie_range_roundrobin_2_2 and tie_cooperative_roundrobin gave these
# on Kafka 4.4.0 and 3.9.2, identical to the emulator's transcripts); the narration says the rule behind them.
@pytest.mark.parametrize(("flavor", "names", "winner", "rule"), [
    (Flavor.KAFKA_4, ("range", "roundrobin"), "range", "java.util.HashMap"),
    (Flavor.KAFKA_3, ("range", "roundrobin"), "roundrobin", "Scala immutable.HashMap"),
    (Flavor.KAFKA_4, ("cooperative-sticky", "roundrobin"), "roundrobin", "java.util.HashMap"),
    (Flavor.KAFKA_3, ("cooperative-sticky", "roundrobin"), "cooperative-sticky", "Scala immutable.HashMap"),
])
def test_a_one_one_tie_names_the_flavors_tie_break_rule(flavor: Flavor, names: tuple[str, str], winner: str,
                                                         rule: str) -> None:
    t = Told(flavor)
    join_all(t, [names, names[::-1]])
    [story] = t.stories()
    tied = (winner, *(n for n in names if n != winner))
    assert story.winner == winner and story.tie is not None and story.tie.tied == tied
    text = t.text()
    assert "wins 1 to 1" in text and f"tie between {', '.join(sorted(names))}: {flavor}" in text
    assert rule in text and f"{' > '.join(tied)}" in text


def test_the_leader_is_said_unchanged_when_it_stays_and_new_when_it_left() -> None:
    t = Told()
    leader, follower = t.ctx.stable_group(2)
    t.ctx.join(version=3, client_id="late")
    t.ctx.join(leader)
    t.ctx.join(follower)
    assert t.stories()[-1].leader_unchanged
    assert "leader unchanged: client-" in t.text()
    third = t.ctx.view().members[-1].member_id
    t.ctx.sync_all([leader, follower, third])
    t.ctx.leave(LeaveMember(leader))
    t.ctx.join(follower)
    t.ctx.join(third)
    story = t.stories()[-1]
    assert not story.leader_unchanged and story.previous_leader_id == leader
    assert "it was the leader, the new leader is" in t.text() and "new leader: " in t.text()


def test_an_extended_initial_delay_is_told_with_how_much_longer_the_group_waits() -> None:
    t = Told(delay_ms=3_000)
    first = t.ctx.join(version=3, client_id="a")
    t.ctx.sleep(1_000)
    second = t.ctx.join(version=3, client_id="b")  # a new member inside the delay: Kafka waits again
    t.ctx.run_until_done([first, second], step_ms=500)
    [story] = t.stories()
    assert story.initial_delay_ms == 3_000 and story.extensions_ms == [3_000]
    assert story.completed_ms is None and t.ctx.now == 6_000
    text = t.text()
    assert "waiting 3000 ms for more members (group.initial.rebalance.delay.ms)" in text
    assert "new members joined during the initial delay, so it is extended by 3000 ms (6000 ms in all" in text


def test_a_followers_rejoin_with_unchanged_metadata_causes_no_rebalance_and_says_why() -> None:
    t = Told()
    _leader, follower = t.ctx.stable_group(2)
    t.text()
    t.ctx.join(follower)
    assert t.ctx.state() == "Stable" and not t.ctx.records_of(RebalancePrepared)[1:]
    assert "rejoins with unchanged metadata during Stable: a follower with nothing new causes no rebalance" \
        in t.text()


def test_a_static_restart_fences_the_old_id_without_a_rebalance_and_static_members_skip_kip_394() -> None:
    t = Told()
    old, _other = t.ctx.stable_group(2, static=True)
    text = t.text()
    assert "a static member skips KIP-394's MEMBER_ID_REQUIRED round" in text and "asks to join" not in text
    restarted = t.ctx.join(instance=t.ctx.view().member(old).group_instance_id, version=9)  # type: ignore[union-attr]
    assert restarted.error is ErrorCode.NONE and t.ctx.state() == "Stable"
    text = t.text()
    old_short = old.split("-")[0] + "-" + old.split("-")[1] + "-" + old.split("-")[2][:8]
    assert f"old id {old_short} is now fenced: a request with it gets FENCED_INSTANCE_ID" in text
    assert "no rebalance: a static member back within its session timeout with the same protocols" in text
    assert len(t.stories()) == 1  # no second rebalance


def test_a_refused_join_is_recorded_and_told_with_what_the_group_offers() -> None:
    t = Told()
    t.ctx.stable_group(2, names=("range", "roundrobin"))
    refused = t.ctx.join(version=3, names=("cooperative-sticky",), client_id="rolling")
    assert refused.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    [record] = t.ctx.records_of(JoinRefused)
    assert (record.error, record.protocols, record.group_protocols) == (
        "INCONSISTENT_GROUP_PROTOCOL", ("cooperative-sticky",), ("range", "roundrobin"))
    row = record.to_event()
    assert row["event_type"] == "MEMBER_JOIN_REFUSED" and row["reason_code"] == "INCONSISTENT_GROUP_PROTOCOL"
    assert from_json(json.dumps(row))["event_type"] == "MEMBER_JOIN_REFUSED"  # the replay reads it
    text = t.text()
    assert "join refused with INCONSISTENT_GROUP_PROTOCOL: client rolling (new member) offers " \
           "[cooperative-sticky]" in text
    assert "every member offers {range, roundrobin} and a joiner must share one of them" in text


def test_heartbeats_answered_rebalance_in_progress_are_told_once_per_member_per_rebalance() -> None:
    t = Told()
    leader, follower = t.ctx.stable_group(2)
    t.ctx.join(version=3, client_id="late")  # PreparingRebalance: the others learn it from their heartbeats
    for _ in range(3):
        assert t.ctx.heartbeat(leader, 1) is ErrorCode.REBALANCE_IN_PROGRESS
        assert t.ctx.heartbeat(follower, 1) is ErrorCode.REBALANCE_IN_PROGRESS
    assert len(t.ctx.records_of(RebalanceNotified)) == 6  # recorded as answered ...
    text = t.text()
    assert text.count("heartbeat is answered REBALANCE_IN_PROGRESS") == 2  # ... told once per member
    assert t.stories()[-1].notified == [leader, follower]
    assert from_json(json.dumps(t.ctx.records_of(RebalanceNotified)[0].to_event()))["member_id"] == leader


def _coop(owned: list[int]) -> tuple[ProtocolEntry, ...]:
    sub = Subscription(("t",), owned_partitions=tuple(TopicPartition("t", p) for p in owned), generation_id=1)
    return (ProtocolEntry("cooperative-sticky", encode_subscription(sub)),)


def _assign(partitions: list[int]) -> bytes:
    return encode_assignment(Assignment(tuple(TopicPartition("t", p) for p in partitions)))


def test_a_cooperative_rebalance_shows_owned_assigned_revoked_withheld_and_names_its_second_round() -> None:
    t = Told()
    a = t.ctx.join(version=3, protos=_coop([]), client_id="a")
    t.ctx.run_until_done([a], step_ms=1)
    a_id = a.result.member_id
    t.ctx.sync(a_id, 1, assignments={a_id: _assign([0, 1, 2, 3])})
    b = t.ctx.join(version=3, protos=_coop([]), client_id="b")
    t.ctx.join(a_id, protos=_coop([0, 1, 2, 3]))
    b_id = b.result.member_id
    # round 1: the leader keeps a's 0-1 and withholds 2-3 (still owned by a): b gets nothing yet
    t.ctx.sync(a_id, 2, assignments={a_id: _assign([0, 1]), b_id: _assign([])})
    t.ctx.sync(b_id, 2)
    first = t.stories()[-1]
    share = {s.member_id: s for s in first.shares}
    assert share[a_id].owned == {("t", p) for p in range(4)} and share[a_id].revoked == {("t", 2), ("t", 3)}
    assert first.withheld == {("t", 2), ("t", 3)} and first.round == 1
    text = t.text()
    assert "owned t[0-3] -> assigned t[0-1]; revokes t[2-3]" in text
    assert "withheld: t[2-3] (revoked, given to nobody yet: the members that revoked them rejoin for round 2)" \
        in text
    # round 2: a rejoins owning 0-1: only its owned partitions changed, not its protocols
    t.ctx.join(a_id, protos=_coop([0, 1]))
    t.ctx.join(b_id, protos=_coop([]))
    text = t.text()
    assert "rejoins with the same protocols; its owned partitions changed" in text
    assert "rejoins with changed protocols" not in text
    assert "rebalance to generation 3 (round 2 of a cooperative rebalance)" in text
    t.ctx.sync(a_id, 3, assignments={a_id: _assign([0, 1]), b_id: _assign([2, 3])})
    second = t.stories()[-1]
    assert second.round == 2 and not second.withheld and second.released == {("t", 2), ("t", 3)}
    assert "round 2 done: the withheld t[2-3] are given out" in t.text()


def test_a_rejoin_with_other_protocols_says_changed_protocols() -> None:
    t = Told()
    _leader, follower = t.ctx.stable_group(2, names=("range", "roundrobin"))
    t.ctx.join(follower, names=("roundrobin", "range"))
    assert "rejoins with changed protocols during Stable: that starts a rebalance" in t.text()


def test_every_line_fits_the_width_and_colour_is_only_for_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    t = Told()
    join_all(t, [("range", "roundrobin", "cooperative-sticky", "sticky", "custom-a", "custom-b")] * 3)
    t.text()
    assert all(len(line) <= WIDTH for line in t.out.getvalue().splitlines())
    assert "\033[" not in t.out.getvalue()

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    tty = Terminal()
    Narrator(tty, lambda: 0).say(0, "g", "hello")
    assert "\033[" in tty.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    plain = Terminal()
    Narrator(plain, lambda: 0).say(0, "g", "hello")
    assert plain.getvalue() == "[   0.000s] g: hello\n"


def test_the_new_rows_load_in_the_replay_and_every_export_format(tmp_path: Path) -> None:
    t = Told(delay_ms=3_000)
    first = t.ctx.join(version=3, client_id="a")
    t.ctx.sleep(1_000)
    second = t.ctx.join(version=3, client_id="b")
    t.ctx.run_until_done([first, second], step_ms=500)
    leader, follower = first.result.member_id, second.result.member_id
    t.ctx.sync_all([leader, follower])
    t.ctx.join(version=3, names=("roundrobin",), client_id="refused")
    t.ctx.join(version=3, client_id="late")
    t.ctx.heartbeat(follower, 1)
    path = tmp_path / "rec.jsonl"
    path.write_text("".join(json.dumps(r.to_event(seq=i + 1)) + "\n" for i, r in enumerate(t.ctx.records)))
    kinds = {json.loads(line)["event_type"] for line in path.read_text().splitlines()}
    assert {"MEMBER_JOIN_REFUSED", "MEMBER_REBALANCE_NOTIFIED", "REBALANCE_DELAY_EXTENDED"} <= kinds
    assert all(from_json(line) for line in path.read_text().splitlines())  # the replay accepts every row
    events = read_events(path)
    for fmt in ("broker-log-scala", "broker-log-java", "dump-log", "console-json", "client-log"):
        assert export(events, fmt, io.StringIO()) > 0, fmt


def test_what_the_explainer_keeps_is_bounded_refusals_and_deleted_groups() -> None:
    t = Told()
    leader, follower = t.ctx.stable_group(2)
    for _ in range(NOTES_KEPT + 50):  # a misconfigured client retrying for ever
        t.ctx.join(version=3, names=("cooperative-sticky",), client_id="rolling")
    assert len(t.stories()[-1].notes) == NOTES_KEPT
    t.ctx.leave(LeaveMember(leader), LeaveMember(follower))
    assert t.ctx.delete("g") == {"g": ErrorCode.NONE}
    t.text()
    assert "g" not in t.narrator.explainer.groups
