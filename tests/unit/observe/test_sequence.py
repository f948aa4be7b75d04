"""The sequence-diagram model (observe/sequence.py) built from hand-written rbl-event/1 rows."""

from __future__ import annotations

from typing import Any

from rebalance_lab.observe.sequence import COORDINATOR, Message, Note, SequenceBuilder, build

A = "client-a-11111111-2222-3333-4444-555555555555"
B = "client-b-aaaaaaaa-2222-3333-4444-555555555555"


def _row(seq: int, event: str, **fields: Any) -> dict[str, Any]:
    return {"seq": seq, "ts": f"2026-01-01T00:00:{seq:02d}.000+00:00", "group_id": "g", "group_kind": "classic",
            "event_type": event, **fields}


def _two_generations() -> list[dict[str, Any]]:
    snapshot_a = [{"member_id": A, "client_id": "client-a", "assignment": [{"topic": "t", "partition": 0}]}]
    return [
        _row(1, "GROUP_EMPTY", generation=0, reason_code="group_created"),
        _row(2, "MEMBER_JOINED", member_id=A, client_id="client-a", supported_protocols=["range"], generation=0),
        _row(3, "REBALANCE_PREPARE", generation=1, reason_raw="Adding new member"),
        _row(4, "JOIN_COMPLETE", generation=1, protocol="range", leader_id=A, supported_protocols=["range"]),
        _row(5, "SYNC_LEADER_ASSIGNMENT", generation=1, leader_id=A, n_members=1),
        _row(6, "GENERATION_SNAPSHOT", generation=1, members=snapshot_a),
        _row(7, "MEMBER_JOINED", member_id=B, client_id="client-b", supported_protocols=["range"], generation=1),
        _row(8, "REBALANCE_PREPARE", generation=2, reason_raw="Adding new member"),
        _row(9, "MEMBER_JOIN_REQUEST", member_id=A, supported_protocols=["range"], reason_code="member_rejoin"),
        _row(10, "JOIN_COMPLETE", generation=2, protocol="range", leader_id=A, supported_protocols=["range"]),
        _row(11, "SYNC_LEADER_ASSIGNMENT", generation=2, leader_id=A, n_members=2),
        _row(12, "MEMBER_LEFT", member_id=B, reason_code="member_leave", leader_id=A),
    ]


def test_each_generation_starts_with_the_rows_that_caused_it() -> None:
    sequence = build(_two_generations())["g"]
    assert [g.number for g in sequence.generations] == [1, 2]
    first, second = sequence.generations
    assert isinstance(first.steps[0], Note) and "created" in first.steps[0].text
    joins = [s for s in second.steps if isinstance(s, Message) and s.api == "JoinGroup" and not s.reply]
    assert joins[0].sender == B  # b's join (written after generation 1 settled) opens generation 2


def test_lanes_are_the_coordinator_then_members_in_order_of_appearance() -> None:
    second = build(_two_generations())["g"].generations[1]
    assert [lane.label for lane in second.lanes] == [COORDINATOR, "client-b-aaaaaaaa", "client-a-11111111"]


def test_a_member_of_the_previous_generation_learns_of_the_rebalance_by_an_inferred_heartbeat() -> None:
    second = build(_two_generations())["g"].generations[1]
    heartbeats = [s for s in second.steps if isinstance(s, Message) and s.api == "Heartbeat"]
    assert [(h.sender, h.text, h.inferred) for h in heartbeats] == [
        (A, "Heartbeat", True), (COORDINATOR, "REBALANCE_IN_PROGRESS", True)]


def test_join_answers_name_the_leader_and_followers_sync_without_assignments() -> None:
    second = build(_two_generations())["g"].generations[1]
    answers = [(s.receiver, s.text) for s in second.steps if isinstance(s, Message) and s.reply
               and s.api == "JoinGroup"]
    assert answers == [(A, "generation 2 range (leader, gets the members)"), (B, "generation 2 range (follower)")]
    syncs = [(s.sender, s.inferred) for s in second.steps if isinstance(s, Message) and s.api == "SyncGroup"]
    assert syncs == [(B, True), (A, False)]


def test_rows_after_the_last_generation_settled_stay_in_it() -> None:
    second = build(_two_generations())["g"].generations[1]
    last = second.steps[-1]
    assert isinstance(last, Message) and (last.sender, last.api) == (B, "LeaveGroup")


def test_a_live_builder_gives_the_same_json_as_a_whole_recording() -> None:
    builder = SequenceBuilder()
    for row in _two_generations()[:6]:
        builder.add(row)
    data = builder.sequences["g"].to_dict()
    assert [g["generation"] for g in data["generations"]] == [1]
    steps = data["generations"][0]["steps"]
    assert steps[-1] == {"type": "message", "seq": 6, "ts": "2026-01-01T00:00:06.000+00:00", "from": COORDINATOR,
                         "to": A, "api": "SyncGroup", "text": "assigned t[0]", "reply": True, "inferred": False}


def test_a_consumer_group_is_drawn_per_group_epoch() -> None:
    rows = [
        {**_row(1, "MEMBER_JOINED", member_id="A", client_id="A", subscription={"topics": ["foo"]}),
         "group_kind": "consumer"},
        {**_row(2, "K848_EPOCH_BUMP", generation=2, reason_code="member_join", member_id="A"),
         "group_kind": "consumer"},
        {**_row(3, "K848_TARGET_COMPUTED", generation=2, protocol="uniform",
                members=[{"member_id": "A", "assignment": [{"topic": "foo", "partition": 0}]}]),
         "group_kind": "consumer"},
        {**_row(4, "K848_MEMBER_STATE", member_id="A", generation=2, raw="STABLE",
                partitions=[{"topic": "foo", "partition": 0}]), "group_kind": "consumer"},
    ]
    sequence = build(rows)["g"]
    assert sequence.kind == "consumer"
    (epoch,) = sequence.generations
    assert epoch.number == 2 and epoch.protocol == "uniform"
    texts = [s.text for s in epoch.steps]
    assert texts == ["ConsumerGroupHeartbeat epoch 0, topics [foo]", "group epoch 2 (member_join)",
                     "target of epoch 2 (uniform): A foo[0]", "epoch 2 STABLE: foo[0]"]


def test_rows_without_a_group_are_ignored() -> None:
    assert build([{"seq": 1, "group_id": None, "event_type": "TOPIC_METADATA"}]) == {}


def test_a_forgotten_group_starts_afresh() -> None:
    builder = SequenceBuilder()
    for row in _two_generations():
        builder.add(row)
    builder.forget("g")
    assert builder.sequences == {}
    builder.add(_two_generations()[2])  # a rebalance of a group it no longer knows
    assert [g.number for g in builder.finish()["g"].generations] == [1]

