"""KIP-848 (``consumer`` protocol) groups in the per-group replay: one generation per group epoch, reconciled
when every member reports STABLE at it (rebalance_lab/replay/epochs.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.unit.replay.model_helpers import Group, at, by, parts, replay, topic_metadata, tp_rows

Parts = Sequence[tuple[str, int]]
SIX = parts("t", 0, 1, 2, 3, 4, 5)


class ConsumerGroup(Group):
    """The events a Kafka 4.x coordinator logs for a consumer group (``source`` broker_log unless given)."""

    def __init__(self, source: str = "broker_log") -> None:
        super().__init__(source=source)

    def ev(self, ms: float, event_type: str, *, source: str | None = None, **fields: Any) -> dict[str, Any]:
        event = super().ev(ms, event_type, source=source, **fields)
        event["group_kind"] = "consumer"
        return event

    def member_joins(self, ms: float, member: str, *, instance: str | None = None, topics: Sequence[str] = ("t",),
                     assignor: str | None = None, **fields: Any) -> dict[str, Any]:
        subscription = {"topics": list(topics), "owned": None, "generation": None, "rack": None}
        return self.ev(ms, "MEMBER_JOINED", member_id=member, group_instance_id=instance, client_id=f"client-{member}",
                       client_host="/10.0.0.1", subscription=subscription, protocol=assignor, **fields)

    def bump(self, ms: float, epoch: int, **fields: Any) -> dict[str, Any]:
        return self.ev(ms, "K848_EPOCH_BUMP", generation=epoch, **fields)

    def target(self, ms: float, epoch: int, assignor: str | None = "uniform", **fields: Any) -> dict[str, Any]:
        return self.ev(ms, "K848_TARGET_COMPUTED", generation=epoch, protocol=assignor, **fields)

    def state(self, ms: float, member: str, epoch: int, state: str, assigned: Parts,
              pending: Parts = (), **fields: Any) -> dict[str, Any]:
        return self.ev(ms, "K848_MEMBER_STATE", member_id=member, generation=epoch, prev_generation=epoch - 1,
                       raw=state, partitions=tp_rows(assigned), partitions_pending_revocation=tp_rows(pending),
                       **fields)

    def left(self, ms: float, member: str, temporary: bool = False, **fields: Any) -> dict[str, Any]:
        code = "static_temporary_leave" if temporary else "member_leave"
        return self.ev(ms, "K848_MEMBER_LEFT", member_id=member, reason_code=code, **fields)

    def fenced(self, ms: float, member: str, code: str = "session_timeout", **fields: Any) -> dict[str, Any]:
        return self.ev(ms, "K848_MEMBER_FENCED", member_id=member, reason_code=code,
                       reason_raw="the member session expired", **fields)


def two_members() -> ConsumerGroup:
    """m1 joins (epoch 1), m2 joins (epoch 2: m1 revokes three partitions, m2 gets them once released)."""
    g = ConsumerGroup()
    g.member_joins(0, "m1")
    g.bump(0, 1)
    g.target(2, 1)
    g.state(500, "m1", 1, "STABLE", SIX)
    g.member_joins(10_000, "m2")
    g.bump(10_000, 2)
    g.target(10_003, 2)
    g.state(10_003, "m2", 2, "UNRELEASED_PARTITIONS", ())
    g.state(10_800, "m1", 1, "UNREVOKED_PARTITIONS", SIX[:3], SIX[3:])
    g.state(11_500, "m1", 2, "STABLE", SIX[:3])
    g.state(12_000, "m2", 2, "STABLE", SIX[3:])
    return g


def test_each_epoch_is_a_generation_that_ends_when_its_last_member_is_stable_at_it() -> None:
    out = replay(two_members().events)
    gens = by(out["group_generations"], "generation")
    assert sorted(gens) == [1, 2]
    second = gens[2]
    assert (second["group_kind"], second["protocol_type"], second["protocol"]) == ("consumer", "consumer", "uniform")
    assert (second["t_prepare"], second["t_join_done"], second["t_sync_done"]) == (at(10_000), at(10_003), at(12_000))
    assert second["completed"] is True and second["n_members"] == 2
    assignment = {m["member_id"]: [(p["topic"], p["partition"]) for p in m["assignment"]] for m in second["members"]}
    assert assignment == {"m1": SIX[:3], "m2": SIX[3:]}


def test_an_epoch_is_an_episode_timed_from_its_bump_to_its_reconciliation() -> None:
    episodes = by(replay(two_members().events)["rebalance_episodes"], "episode_id")
    second = episodes[2]
    assert (second["first_gen"], second["last_gen"], second["trigger_code"], second["trigger_member"]) == (
        2, 2, "member_join", "m2")
    assert (second["join_ms"], second["sync_ms"], second["total_ms"]) == (3.0, 1997.0, 2000.0)
    assert (second["members_before"], second["members_after"], second["members_in"], second["members_out"]) == (
        1, 2, ["m2"], [])
    # incremental: only the three partitions that changed owner were revoked
    assert (second["partitions_moved"], second["partitions_revoked"], second["max_load"], second["min_load"]) == (
        3, 3, 3, 3)


def test_a_partition_is_unowned_from_its_revocation_by_one_member_to_its_assignment_to_the_next() -> None:
    out = replay(two_members().events)
    moves = sorted(((r["topic"], r["partition"]), r["owner_before"], r["owner_after"], r["moved"], r["revoked_at"],
                    r["assigned_at"], r["gap_ms"]) for r in out["partition_moves"])
    # m1 held 3-5 (pending revocation) until its state at 11.5 s no longer listed them; m2 got them at 12 s
    assert moves == [(tp, "m1", "m2", True, at(11_500), at(12_000), 500.0) for tp in SIX[3:]]
    assert by(out["rebalance_episodes"], "episode_id")[2]["unowned_partition_ms"] == 1500.0


def test_a_fence_in_a_broker_log_bumps_the_epoch_the_log_does_not_mention() -> None:
    g = two_members()
    g.fenced(60_000, "m2")  # Kafka writes epoch 3 without a "Bumped group epoch" line
    g.target(61_000, 3)
    g.state(61_000, "m1", 3, "STABLE", SIX)
    out = replay(g.events)
    third = by(out["group_generations"], "generation")[3]
    assert (third["t_prepare"], third["t_join_done"], third["t_sync_done"]) == (at(60_000), at(61_000), at(61_000))
    assert third["trigger_codes"] == ["session_timeout"]
    episode = by(out["rebalance_episodes"], "first_gen")[3]
    assert (episode["trigger_code"], episode["trigger_member"], episode["members_out"]) == (
        "session_timeout", "m2", ["m2"])
    # a departed member's partitions are handed over, not moved; they waited from the fence to m1's state
    assert episode["partitions_moved"] == 0 and episode["unowned_partition_ms"] == 3 * 1000.0
    assert by(out["group_summary"], "group_id")["g"]["members_left"] == 1


def test_a_dump_records_the_fences_bump_itself_and_a_static_replacement_has_none() -> None:
    g = ConsumerGroup(source="offsets_dumplog")
    g.member_joins(0, "m1", instance="inst-1")
    g.bump(0, 1)
    g.target(0, 1)
    g.state(300, "m1", 1, "STABLE", SIX)
    # a static replacement: the old member's records are deleted and the new one's written, no epoch record
    g.left(20_000, "m1")
    g.member_joins(20_000, "m1b", instance="inst-1")
    g.state(20_000, "m1b", 1, "STABLE", SIX)
    out = replay(g.events)
    assert [r["generation"] for r in out["group_generations"]] == [1]
    assert len(out["rebalance_episodes"]) == 1


def test_an_epoch_overtaken_before_its_members_reconciled_merges_into_the_next_episode() -> None:
    g = two_members()
    g.member_joins(30_000, "m3")
    g.bump(30_000, 3)
    g.target(30_001, 3)
    g.state(30_500, "m1", 2, "UNREVOKED_PARTITIONS", SIX[:2], SIX[2:3])
    g.member_joins(31_000, "m4")  # before m1 revoked: epoch 3 never reconciles
    g.bump(31_000, 4)
    g.target(31_001, 4)
    for ms, member, assigned in ((32_000, "m1", SIX[:2]), (32_100, "m2", SIX[3:4]), (32_200, "m3", SIX[2:3]),
                                 (33_000, "m2", SIX[3:4]), (33_500, "m4", SIX[4:])):
        g.state(ms, member, 4, "STABLE", assigned)
    g.state(32_000, "m2", 2, "UNREVOKED_PARTITIONS", SIX[3:4], SIX[4:])
    out = replay(g.events)
    gens = by(out["group_generations"], "generation")
    assert (gens[3]["completed"], gens[3]["t_sync_done"], gens[4]["completed"]) == (False, None, True)
    episode = by(out["rebalance_episodes"], "first_gen")[3]
    assert (episode["last_gen"], episode["n_generations"], episode["t_end"]) == (4, 2, at(33_500))
    assert (episode["members_in"], episode["trigger_member"]) == (["m3", "m4"], "m3")


def test_without_member_states_epochs_are_episodes_of_unknown_end() -> None:
    g = ConsumerGroup()
    for epoch, member in enumerate(("m1", "m2", "m3"), start=1):
        g.member_joins(epoch * 10_000, member)
        g.bump(epoch * 10_000, epoch)
        g.target(epoch * 10_000 + 4, epoch)
    out = replay(g.events)
    assert [(r["generation"], r["completed"], r["t_sync_done"]) for r in out["group_generations"]] == [
        (1, None, None), (2, None, None), (3, None, None)]
    assert [(r["first_gen"], r["join_ms"], r["total_ms"], r["trigger_code"]) for r in out["rebalance_episodes"]] == [
        (1, 4.0, None, "member_join"), (2, 4.0, None, "member_join"), (3, 4.0, None, "member_join")]
    assert [r["members_after"] for r in out["rebalance_episodes"]] == [1, 2, 3]


def test_a_static_members_temporary_leave_keeps_it_in_the_group() -> None:
    g = two_members()
    g.left(40_000, "m2", temporary=True)
    g.fenced(50_000, "m2")  # it did not come back within its session timeout
    g.target(50_001, 3)
    g.state(50_400, "m1", 3, "STABLE", SIX)
    out = replay(g.events)
    third = by(out["group_generations"], "generation")[3]
    assert third["t_prepare"] == at(50_000)
    assert by(out["group_summary"], "group_id")["g"]["members_left"] == 1


def test_a_bump_without_a_membership_change_is_a_metadata_change_and_grown_partitions_are_new() -> None:
    g = two_members()
    g.bump(70_000, 3)
    g.target(70_001, 3)
    g.state(70_500, "m1", 3, "STABLE", [*SIX[:3], ("t", 6)])
    g.state(70_600, "m2", 3, "STABLE", [*SIX[3:], ("t", 7)])
    out = replay(g.events, [topic_metadata(0, {"t": 6}), topic_metadata(69_000, {"t": 8})])
    episode = by(out["rebalance_episodes"], "first_gen")[3]
    assert (episode["trigger_code"], episode["trigger_member"], episode["partitions_total"]) == (
        "metadata_change", None, 8)
    moves = [(r["partition"], r["owner_before"], r["owner_after"], r["moved"]) for r in out["partition_moves"]
             if r["generation"] == 3]
    assert sorted(moves) == [(6, None, "m1", False), (7, None, "m2", False)]


def test_a_log_and_a_dump_of_the_same_epochs_give_the_same_generations_as_the_log() -> None:
    log = two_members()
    dump = two_members()
    for e in dump.events:
        e["source"] = "offsets_dumplog"
    both = replay(log.events + dump.events)["group_generations"]
    alone = replay(log.events)["group_generations"]
    keep = ("generation", "t_prepare", "t_join_done", "t_sync_done", "completed", "n_members", "members",
            "trigger_codes")
    assert [{k: r[k] for k in keep} for r in both] == [{k: r[k] for k in keep} for r in alone]
    assert [(r["has_log"], r["has_snapshot"]) for r in both] == [(True, True), (True, True)]


def test_what_ifs_replay_a_consumer_groups_epochs_with_our_assignors_but_not_its_server_assignor() -> None:
    out = replay(two_members().events, [topic_metadata(0, {"t": 6})], whatif=("range", "static"))
    rows = out["whatif_results"]
    assert {r["assignor"] for r in rows} == {"range"}
    second = by(rows, "episode_id")[2]
    assert (second["mode"], second["actual_partitions_moved"], second["imbalance"]) == ("eager", 3, 0)


def test_one_members_client_log_judges_only_that_member() -> None:
    """A client log has its own member's states (no partitions): an epoch it reached is not overtaken because of
    members whose logs are missing, and one it skipped is."""
    g = ConsumerGroup()
    for epoch, member in enumerate(("m1", "m2", "m3"), start=1):
        g.member_joins(epoch * 10_000, member)
        g.bump(epoch * 10_000, epoch)
        g.target(epoch * 10_000 + 4, epoch)
    for ms, epoch in ((10_500, 1), (20_700, 2)):  # m1 reached epochs 1 and 2, then skipped 3 for 4
        g.ev(ms, "K848_MEMBER_STATE", source="client_log", member_id="m1", generation=epoch, raw="STABLE")
    g.member_joins(30_100, "m4")
    g.bump(30_100, 4)
    g.ev(31_000, "K848_MEMBER_STATE", source="client_log", member_id="m1", generation=4, raw="STABLE")
    gens = by(replay(g.events)["group_generations"], "generation")
    assert [(n, gens[n]["completed"], gens[n]["t_sync_done"]) for n in sorted(gens)] == [
        (1, True, at(10_500)), (2, None, None), (3, False, None), (4, None, None)]
    assert gens[1]["members"][0].get("assignment") is None  # reached, with partitions unknown
