"""The what-if replay: the same assignor reproduces what light members recorded, other assignors run their
own chain, cooperative follow-ups are added or dropped, and static membership avoids restarts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_lab.clients.assignors.types import TopicPartition
from rebalance_lab.protocol.consumer_protocol import encode_sticky_user_data
from rebalance_lab.replay.model import WHATIF_MODES
from rebalance_lab.replay.userdata import sticky_user_data
from rebalance_lab.replay.whatif import Spec, WhatIfError

from .light_group import LightGroup
from .model_helpers import Group, at, by, parts, replay, topic_metadata

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")


def test_what_if_names_parse_and_bad_ones_are_refused() -> None:
    assert Spec.parse("range") == Spec("range", False)
    assert Spec.parse("cooperative-sticky+static") == Spec("cooperative-sticky", True)
    assert Spec.parse("static") == Spec(None, True)
    assert set(WHATIF_MODES) >= {"static", "range+static", "sticky+static"}
    for bad in ("uniform", "static+static", "range+dynamic", ""):
        with pytest.raises(WhatIfError):
            Spec.parse(bad)


def churn(group: LightGroup) -> None:
    """Joins, a static member, a leave, partition growth and a static restart."""
    a = group.join()
    group.rebalance()
    group.join()
    group.rebalance()
    s = group.join(instance="static-s")
    group.rebalance()
    c = group.join()
    group.rebalance()
    group.leave(a)
    group.rebalance("member_leave")
    group.grow("t", 9)
    group.rebalance("forced")
    group.restart_static(s)
    group.leave(c)
    group.rebalance("member_leave")
    group.join()
    group.rebalance()


@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_the_recorded_assignor_reproduces_every_generation(assignor: str) -> None:
    group = LightGroup(assignor, {"t": 6, "u": 3})
    churn(group)
    result = replay(group.group.events, group.topics, whatif=[assignor])
    snapshots = {e["generation"]: e for e in group.group.events if e["event_type"] == "GENERATION_SNAPSHOT"}
    rows = by(result["group_generations"], "generation")
    assert set(rows) == set(snapshots)
    for number, snap in snapshots.items():
        assert rows[number]["leader_id"] == snap["leader_id"] and rows[number]["protocol"] == assignor
        assert rows[number]["members"] == snap["members"]
    verdicts = [r["reproduced"] for r in result["whatif_results"]]
    assert verdicts and all(v is True for v in verdicts), result["whatif_results"]


@settings(max_examples=25, deadline=None)
@given(assignor=st.sampled_from(ASSIGNORS),
       ops=st.lists(st.sampled_from(["join", "join", "leave", "grow", "static", "restart"]), min_size=1, max_size=12))
def test_any_membership_history_is_reproduced_by_its_own_assignor(assignor: str, ops: list[str]) -> None:
    group = LightGroup(assignor, {"t": 4, "u": 2})
    members: list[str] = [group.join()]
    statics: list[str] = []
    group.rebalance()
    for op in ops:
        if op == "join" or (op == "leave" and len(members) < 2):
            members.append(group.join())
        elif op == "static":
            statics.append(group.join(instance=f"inst-{len(statics)}"))
            members.append(statics[-1])
        elif op == "leave":
            gone = members.pop(0)
            statics = [s for s in statics if s != gone]
            group.leave(gone)
        elif op == "grow":
            group.grow("u", group.counts["u"] + 2)
        elif op == "restart" and statics:
            new = group.restart_static(statics[0])
            members[members.index(statics[0])] = new
            statics[0] = new
            continue  # no rebalance (KIP-345)
        group.rebalance()
    result = replay(group.group.events, group.topics, whatif=[assignor])
    assert all(r["reproduced"] is True for r in result["whatif_results"]), result["whatif_results"]


def range_history() -> Group:
    g = Group()
    g.generation(0, 1, {"a-1": parts("t", 0, 1, 2, 3, 4, 5)}, took_ms=100)
    g.generation(1000, 2, {"a-1": parts("t", 0, 1, 2), "b-1": parts("t", 3, 4, 5)}, took_ms=100)
    g.generation(2000, 3, {"a-1": parts("t", 0, 1), "b-1": parts("t", 2, 3), "c-1": parts("t", 4, 5)}, took_ms=100)
    return g


TOPICS = [topic_metadata(-1, {"t": 6})]


def test_a_cooperative_what_if_of_an_eager_history_adds_the_follow_up_round() -> None:
    rows = replay(range_history().events, TOPICS, whatif=["cooperative-sticky"])["whatif_results"]
    row = by(rows, "episode_id")[3]
    assert row["mode"] == "cooperative" and row["follow_up_generations"] == 1 and row["reproduced"] is False
    assert row["partitions_moved"] == row["revocations"] == 2
    assert row["est_stw_ms"] == 0.0
    # two withheld partitions wait one follow-up round, estimated as long as the recorded round (100 ms)
    assert row["est_unowned_partition_ms"] == pytest.approx(200.0)
    assert sorted(len(a["partitions"]) for a in row["assignment"]) == [2, 2, 2]


def test_a_member_whose_client_never_sends_a_generation_is_not_reset_by_its_minus_one() -> None:
    """kafka-python and Java before 3.4 write subscription v0/v1, which have no generation: a dump shows -1."""
    g = Group()
    g.generation(0, 1, {"a-1": parts("t", 0, 1, 2, 3, 4, 5)}, took_ms=100, sub_gen=-1)
    g.generation(1000, 2, {"a-1": parts("t", 0, 1, 2), "b-1": parts("t", 3, 4, 5)}, took_ms=100, sub_gen=-1)
    g.generation(2000, 3, {"a-1": parts("t", 0, 1), "b-1": parts("t", 2, 3), "c-1": parts("t", 4, 5)}, took_ms=100,
                 sub_gen=-1)
    minus_one = replay(g.events, TOPICS, whatif=["cooperative-sticky"])["whatif_results"]
    unrecorded = replay(range_history().events, TOPICS, whatif=["cooperative-sticky"])["whatif_results"]
    keep = ("partitions_moved", "revocations", "follow_up_generations", "assignment")
    assert [{k: r[k] for k in keep} for r in minus_one] == [{k: r[k] for k in keep} for r in unrecorded]
    assert by(minus_one, "episode_id")[3]["revocations"] == 2  # a and b kept what they owned but two partitions


def test_a_member_that_recorded_a_generation_and_then_minus_one_was_reset() -> None:
    g = Group()
    g.generation(0, 1, {"a-1": parts("t", 0, 1, 2, 3, 4, 5)}, took_ms=100, sub_gen=-1)
    g.generation(1000, 2, {"a-1": parts("t", 0, 1, 2), "b-1": parts("t", 3, 4, 5)}, took_ms=100,
                 sub_gen={"a-1": 1, "b-1": -1})
    g.generation(2000, 3, {"a-1": parts("t", 0, 1), "b-1": parts("t", 2, 3), "c-1": parts("t", 4, 5)}, took_ms=100,
                 sub_gen={"a-1": -1, "b-1": 2, "c-1": -1})
    row = by(replay(g.events, TOPICS, whatif=["cooperative-sticky"])["whatif_results"], "episode_id")[3]
    # a's -1 after its generation 1 is a reset (Java's resetGenerationOnError): it owns nothing, only b revokes
    assert row["revocations"] == 1


def test_an_eager_what_if_revokes_everything_for_the_whole_round() -> None:
    row = by(replay(range_history().events, TOPICS, whatif=["sticky"])["whatif_results"], "episode_id")[3]
    assert (row["mode"], row["follow_up_generations"], row["revocations"]) == ("eager", 0, 6)
    assert row["est_stw_ms"] == 100.0 and row["est_unowned_partition_ms"] == pytest.approx(600.0)
    # range moved t-2 (a to b) and t-4, t-5 (b to c); sticky takes one from each for c
    assert row["actual_partitions_moved"] == 3 and row["partitions_moved"] == 2 and row["delta_moved"] == -1
    assert row["reproduced"] is False  # sticky keeps a's and b's first partitions: not range's layout


def test_an_eager_what_if_of_a_cooperative_history_drops_the_recorded_follow_up() -> None:
    group = LightGroup("cooperative-sticky", {"t": 6})
    group.join()
    group.rebalance()
    group.join()
    group.rebalance()
    result = replay(group.group.events, group.topics, whatif=["range", "cooperative-sticky"])
    episodes = result["rebalance_episodes"]
    assert [(e["first_gen"], e["last_gen"]) for e in episodes] == [(1, 1), (2, 3)]
    eager = [r for r in result["whatif_results"] if r["assignor"] == "range"]
    cooperative = [r for r in result["whatif_results"] if r["assignor"] == "cooperative-sticky"]
    assert [r["follow_up_generations"] for r in eager] == [0, 0] and eager[1]["generation"] == 3
    assert [r["follow_up_generations"] for r in cooperative] == [0, 1]
    assert all(r["reproduced"] for r in cooperative)


def static_restart_history(back_after_ms: float) -> Group:
    """b restarts: LeaveGroup at 10 s, rejoins under a new member id ``back_after_ms`` later."""
    g = Group()
    g.joined(0, "a-1", session_timeout_ms=10_000)
    g.generation(0, 1, {"a-1": parts("t", 0, 1, 2, 3)})
    g.joined(1000, "b-1", client="b", session_timeout_ms=10_000)
    g.generation(1000, 2, {"a-1": parts("t", 0, 1), "b-1": parts("t", 2, 3)})
    g.left(10_000, "b-1")
    g.generation(10_000, 3, {"a-1": parts("t", 0, 1, 2, 3)}, reason="member_leave")
    back = 10_000 + back_after_ms
    g.joined(back, "b-2", client="b", session_timeout_ms=10_000)
    g.generation(back, 4, {"a-1": parts("t", 0, 1), "b-2": parts("t", 2, 3)}, clients={"b-2": "b"})
    return g


def test_static_membership_avoids_a_restart_within_the_session_timeout() -> None:
    result = replay(static_restart_history(4000).events, [topic_metadata(-1, {"t": 4})],
                    whatif=["range+static", "range"])
    static = by([r for r in result["whatif_results"] if r["mode"] == "eager+static"], "episode_id")
    assert static[3]["est_stw_ms"] == 0.0 and static[4]["est_stw_ms"] == 0.0
    assert static[3]["partitions_moved"] == 0 and static[3]["reproduced"] is None
    assert static[2]["est_stw_ms"] == 100.0
    # after the avoided restart, b-2 carries b-1's partitions (matched by its instance id, client@host)
    assert sorted(tuple(a["partitions"][0].values()) for a in static[4]["assignment"]) == [("t", 0), ("t", 2)]
    dynamic = [r for r in result["whatif_results"] if r["mode"] == "eager"]
    assert all(r["est_stw_ms"] == 100.0 for r in dynamic[1:])


def test_static_membership_does_not_avoid_a_restart_slower_than_the_session_timeout() -> None:
    result = replay(static_restart_history(12_000).events, [topic_metadata(-1, {"t": 4})], whatif=["static"])
    assert all(r["est_stw_ms"] == 100.0 for r in result["whatif_results"][1:])
    assert {r["assignor"] for r in result["whatif_results"]} == {"range"}


def test_a_static_member_replaced_under_a_new_id_keeps_its_simulated_partitions() -> None:
    group = LightGroup("sticky", {"t": 6})
    group.join()
    group.rebalance()
    s = group.join(instance="inst-s")
    group.rebalance()
    group.restart_static(s)
    group.join()
    group.rebalance()
    result = replay(group.group.events, group.topics, whatif=["sticky"])
    assert all(r["reproduced"] for r in result["whatif_results"])
    assert result["group_summary"][0]["static_rejoins_without_rebalance"] == 1


def test_a_topic_without_metadata_is_skipped_as_javas_assignors_skip_it() -> None:
    g = Group()
    g.generation(0, 1, {"a-1": []}, topics=("missing",))
    rows = replay(g.events, [], whatif=["roundrobin", "sticky"])["whatif_results"]
    assert [(r["reproduced"], r["max_load"]) for r in rows] == [(True, 0), (True, 0)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["t", "topic", "t1", "x", "mid", "t10", "orders", "é"]),
                          st.integers(0, 40)), unique=True, max_size=30),
       st.one_of(st.none(), st.integers(-1, 2**31 - 1)))
def test_the_fast_sticky_user_data_is_byte_identical(pairs: list[tuple[str, int]], generation: int | None) -> None:
    partitions = [TopicPartition(t, p) for t, p in pairs]
    assert sticky_user_data(partitions, generation) == encode_sticky_user_data(partitions, generation)


def test_many_topics_take_the_reference_user_data_writer() -> None:
    partitions = [TopicPartition(f"topic-{i}", 0) for i in range(14)]
    assert sticky_user_data(partitions, 3) == encode_sticky_user_data(partitions, 3)


def test_partition_counts_come_from_topic_metadata_at_the_generations_time() -> None:
    g = Group()
    g.generation(0, 1, {"a-1": parts("t", 0, 1)})
    g.generation(5000, 2, {"a-1": parts("t", 0, 1, 2, 3)}, reason="forced")
    topics = [topic_metadata(-10, {"t": 2}), topic_metadata(4000, {"t": 4})]
    result = replay(g.events, topics, whatif=["range"])
    assert [e["partitions_total"] for e in result["rebalance_episodes"]] == [2, 4]
    assert all(r["reproduced"] for r in result["whatif_results"])
    # without metadata the counts are inferred from what was assigned
    inferred = replay(g.events, [], whatif=["range"])
    assert [e["partitions_total"] for e in inferred["rebalance_episodes"]] == [2, 4]


def test_the_first_generation_in_the_data_starts_from_the_recorded_owned_partitions() -> None:
    g = Group(source="offsets_dumplog")
    g.snapshot(0, 7, {"a-1": parts("t", 0, 1), "b-1": parts("t", 2, 3)}, protocol="cooperative-sticky",
               owned={"a-1": parts("t", 0, 1), "b-1": parts("t", 2, 3)}, sub_gen=6)
    row = replay(g.events, [topic_metadata(-1, {"t": 4})], whatif=["cooperative-sticky"])["whatif_results"][0]
    assert row["reproduced"] is True and row["follow_up_generations"] == 0
    assert at(0) == g.events[0]["ts"]
