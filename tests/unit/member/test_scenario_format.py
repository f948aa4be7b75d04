"""The scenario format, normalisation and expectations, without any broker.

(These test ``rebalance_lab.scenarios``; they live here until that package gets its own
unit-test folder.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_lab.clients.assignors.types import Assignment, TopicPartition
from rebalance_lab.protocol import consumer_protocol as cp
from rebalance_lab.scenarios import ScenarioBuilder, ScenarioError, Transcript, diff_transcripts, load_scenario
from rebalance_lab.scenarios.library import LIBRARY
from rebalance_lab.scenarios.loader import scenario_from_dict
from rebalance_lab.scenarios.normalise import Identities, Normaliser, assignment_text
from rebalance_lab.scenarios.requests import assignment_bytes, protocol_metadata
from rebalance_lab.scenarios.transcript import Entry, StepRecord
from rebalance_lab.scenarios.verify import check_expectations, primary_error

SCENARIOS = LIBRARY


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_example_scenario_loads_and_validates(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.name == path.stem and scenario.steps


def test_yaml_and_dsl_describe_the_same_scenario() -> None:
    from_yaml = scenario_from_dict({
        "name": "s",
        "topics": {"t": 2},
        "members": {"a": {"topics": ["t"], "protocols": ["range", {"name": "x", "hex": "00ff"}]}},
        "steps": [{"join": "a", "expect": "MEMBER_ID_REQUIRED"}, {"join": ["a"], "wait": "parked"},
                  {"describe": "g"}, {"wait_ms": 5}, {"commit": "a", "offsets": {"t": {0: 1}}}],
    })
    from_dsl = (
        ScenarioBuilder("s", topics={"t": 2})
        .member("a", topics=["t"], protocols=["range", {"name": "x", "hex": "00ff"}])
        .join("a", expect="MEMBER_ID_REQUIRED")
        .join("a", wait="parked")
        .describe("g")
        .wait_ms(5)
        .commit("a", offsets={"t": {0: 1}})
        .build()
    )
    assert from_yaml == from_dsl


def test_protocols_are_consumer_subscriptions_unless_given_as_hex() -> None:
    scenario = scenario_from_dict({"members": {"a": {"topics": ["t"], "protocols": [
        {"assignor": "range"}, {"name": "raw", "hex": "0001 02"},
        {"assignor": "sticky", "topics": ["u"], "owned": {"u": [1]}, "generation": 4, "version": 1}]}}})
    range_, raw, sticky = scenario.members["a"].protocols
    assert cp.decode_subscription(protocol_metadata(range_)).topics == ("t",)
    assert protocol_metadata(raw) == b"\x00\x01\x02"
    decoded = cp.decode_subscription(protocol_metadata(sticky))
    assert protocol_metadata(sticky)[:2] == b"\x00\x01"
    assert decoded.owned_partitions == (TopicPartition("u", 1),) and decoded.generation_id is None  # v1 has none


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"steps": [{"jump": "a"}]}, "exactly one action"),
        ({"members": {"a": {}}, "steps": [{"join": "b"}]}, "unknown member"),
        ({"members": {"a": {}}, "steps": [{"join": "a", "wait": "soon"}]}, "wait must be"),
        ({"members": {"a": {}}, "steps": [{"join": "a", "colour": 1}]}, "unknown options"),
        ({"members": {"a": {"colour": 1}}}, "unknown keys"),
        ({"steps": [{"join": []}]}, "at least one member"),
    ],
)
def test_bad_scenarios_are_rejected_with_a_reason(data: dict[str, object], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        scenario_from_dict(data)


def test_member_ids_become_stable_aliases() -> None:
    ids = Identities()
    ids.learn("a", "client-a-1111")
    ids.learn("b", "client-b-2222")
    ids.learn("a", "client-a-3333")  # e.g. a static member replaced
    ids.literal("unknown-member-id")
    assert [ids.label(x) for x in ("client-a-1111", "client-a-3333", "client-b-2222", "unknown-member-id", "")] == [
        "<a>", "<a#2>", "<b>", "unknown-member-id", ""]
    assert ids.current["a"] == "client-a-3333"
    assert ids.label("someone-else") == "<?1>"


def test_normalisation_drops_timing_and_sorts_hash_ordered_members() -> None:
    ids = Identities()
    ids.learn("a", "A")
    ids.learn("b", "B")
    norm = Normaliser(ids, {"g-123": "g"})
    raw = {"throttle_time_ms": 7, "error_code": 0, "generation_id": 1, "protocol_type": "consumer",
           "protocol_name": "range", "leader": "A", "skip_assignment": False, "member_id": "A",
           "members": [{"member_id": "B", "group_instance_id": None, "metadata": b"\x01"},
                       {"member_id": "A", "group_instance_id": None, "metadata": b"\x02"}]}
    out = norm.response("JoinGroup", raw)
    assert "throttle_time_ms" not in out
    assert out["error_code"] == "NONE" and out["leader"] == "<a>" and out["is_leader"] is True
    assert [m["member_id"] for m in out["members"]] == ["<a>", "<b>"]
    assert out["members"][0]["metadata"] == "02"


def test_list_groups_keeps_only_this_runs_groups_by_scenario_name() -> None:
    norm = Normaliser(Identities(), {"g-123": "g"})
    raw = {"error_code": 0, "groups": [{"group_id": "other", "protocol_type": ""},
                                       {"group_id": "g-123", "protocol_type": "consumer"}]}
    assert norm.response("ListGroups", raw)["groups"] == [{"group_id": "g", "protocol_type": "consumer"}]


def test_assignments_read_as_partitions_only_when_that_is_exact() -> None:
    exact = cp.encode_assignment(Assignment((TopicPartition("t", 1), TopicPartition("t", 0))))
    assert assignment_text(exact) == "v3 t:[1, 0]"
    assert assignment_text(b"") == ""
    assert assignment_text(b"\x01\x02\x03").startswith("hex:")
    assert assignment_bytes({"t": [0]}) == cp.encode_assignment(Assignment((TopicPartition("t", 0),)))
    assert assignment_bytes("00ff") == b"\x00\xff" and assignment_bytes(None) == b""


def test_expectations_use_the_first_error_found() -> None:
    assert primary_error({"error_code": "NONE", "members": [{"error_code": "NONE"}, {"error_code": "X"}]}) == "X"
    assert primary_error({"error_code": "Y", "members": [{"error_code": "X"}]}) == "Y"
    step = scenario_from_dict({"members": {"a": {}, "b": {}},
                               "steps": [{"join": ["a", "b"], "expect": {"a": "NONE", "b": "parked"}}]}).steps[0]
    record = StepRecord(1, step.label(), [Entry("a", "JoinGroup", 9, fields={"error_code": "NONE"}),
                                          Entry("b", "JoinGroup", 9, outcome="parked")])
    assert check_expectations(step, record) == []
    record.entries[0].fields["error_code"] = "UNKNOWN_MEMBER_ID"
    assert check_expectations(step, record) == [
        "step 1 (join [a, b]): a JoinGroup expected NONE, got UNKNOWN_MEMBER_ID"]


def test_diff_is_empty_for_equal_transcripts_and_readable_otherwise() -> None:
    def transcript(target: str, error: str) -> Transcript:
        entry = Entry("a", "Heartbeat", 4, fields={"error_code": error})
        return Transcript("s", target, [StepRecord(1, "heartbeat [a]", [entry])])

    assert diff_transcripts(transcript("emulator", "NONE"), transcript("kafka", "NONE")) == []
    diff = diff_transcripts(transcript("emulator", "NONE"), transcript("kafka", "REBALANCE_IN_PROGRESS"))
    assert diff[:2] == ["--- emulator", "+++ kafka"]
    assert "-    error_code: NONE" in diff and "+    error_code: REBALANCE_IN_PROGRESS" in diff
