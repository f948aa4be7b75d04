"""The KIP-848 scenario steps (cg_heartbeat, cg_describe, metadata steps), without any broker.

(These test ``rebalance_lab.scenarios``; they live beside test_scenario_format.py.)
"""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rebalance_lab.config import Flavor
from rebalance_lab.scenarios import ScenarioError, load_scenario
from rebalance_lab.scenarios.compare import emulator_config
from rebalance_lab.scenarios.consumer_actions import cg_heartbeat
from rebalance_lab.scenarios.consumer_model import epoch_value
from rebalance_lab.scenarios.context import RunContext
from rebalance_lab.scenarios.library import LIBRARY
from rebalance_lab.scenarios.loader import scenario_from_dict
from rebalance_lab.scenarios.normalise import Identities, Normaliser

KIP848 = LIBRARY / "kip848"
FOO = uuid.UUID("00000000-0000-0000-0000-0000000000f0")


@pytest.mark.parametrize("path", sorted(KIP848.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_kip848_scenario_loads_and_validates(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.steps and scenario.description


def _run(steps: list[dict[str, Any]], **extra: Any) -> RunContext:
    scenario = scenario_from_dict({"name": "s", "topics": {"foo": 6}, "steps": steps, **extra})
    ctx = RunContext(scenario)
    ctx.topic_ids["foo"] = FOO
    return ctx


def _sent(ctx: RunContext, index: int, version: int = 1) -> Any:
    return cg_heartbeat(ctx, ctx.scenario.steps[index])[0].build(version)


def test_an_undeclared_alias_is_a_consumer_with_default_values() -> None:
    ctx = _run([{"cg_heartbeat": "A", "epoch": "join"}])
    spec = ctx.scenario.consumers["A"]
    assert (spec.client_id, spec.group, spec.rebalance_timeout_ms) == ("A", "g", 300_000)


def test_epoch_words_and_relative_epochs() -> None:
    assert [epoch_value(v, 3) for v in ("join", "leave", "static-leave", None, "current", "+2", "-1", 7)] == [
        0, -1, -2, 3, 3, 5, 2, 7]
    with pytest.raises(ScenarioError):
        epoch_value("later", 3)


def test_a_join_sends_the_declared_values_and_a_plain_heartbeat_sends_nulls() -> None:
    ctx = _run([{"cg_heartbeat": "A", "epoch": "join"}, {"cg_heartbeat": "A"}],
               consumers={"A": {"topics": ["foo"], "instance_id": "i1", "rack_id": "r1", "server_assignor": "range"}})
    join = _sent(ctx, 0)
    assert (join.member_id, join.member_epoch, join.instance_id, join.rack_id, join.server_assignor) == (
        "A", 0, "i1", "r1", "range")
    assert join.rebalance_timeout_ms == 300_000 and join.topic_partitions == []
    assert join.subscribed_topic_names == [ctx.topic("foo")]
    ctx.consumers.epochs["A"] = 2
    plain = _sent(ctx, 1)
    assert (plain.member_epoch, plain.instance_id, plain.rack_id, plain.rebalance_timeout_ms) == (2, None, None, -1)
    assert plain.subscribed_topic_names is None and plain.topic_partitions is None and plain.server_assignor is None


def test_owned_partitions_are_named_by_topic_or_taken_from_the_last_assignment() -> None:
    ctx = _run([{"cg_heartbeat": "A", "owned": {"foo": [0, 1]}}, {"cg_heartbeat": "A", "owned": "assigned"},
                {"cg_heartbeat": "A", "owned": {"nope": [0]}}])
    assert [(tp.topic_id, tp.partitions) for tp in _sent(ctx, 0).topic_partitions] == [(FOO, [0, 1])]
    ctx.consumers.assigned["A"] = [(FOO, [3])]
    assert [(tp.topic_id, tp.partitions) for tp in _sent(ctx, 1).topic_partitions] == [(FOO, [3])]
    with pytest.raises(ScenarioError, match="no topic id"):
        _sent(ctx, 2)


def test_a_v0_join_leaves_the_member_id_to_the_coordinator_and_a_regex_gets_the_run_suffix() -> None:
    ctx = _run([{"cg_heartbeat": "A", "epoch": "join", "regex": "re[12]"}])
    assert _sent(ctx, 0, version=0).member_id == ""
    assert _sent(ctx, 0).subscribed_topic_regex == "re[12]" + ctx.suffix


def test_kip848_answers_are_normalised_to_names_sorted_sets_and_suffix_free_messages() -> None:
    identities = Identities()
    identities.learn("A", "generated-id-22-chars-x")
    for chosen in ("A", "B"):  # v1 ids the scenario chose stay as written
        identities.literal(chosen)
    normaliser = Normaliser(identities, {"g-x1": "g"}, {"foo-x1": "foo"}, {FOO: "foo"}, "-x1")
    bar = uuid.UUID(int=7)
    answer = {"error_code": 0, "error_message": "Member generated-id-22-chars-x is not a member of group g-x1.",
              "member_id": "generated-id-22-chars-x",
              "assignment": {"topic_partitions": [{"topic_id": bar, "partitions": [2]},
                                                  {"topic_id": FOO, "partitions": [5, 1]}]}}
    out = normaliser.response("ConsumerGroupHeartbeat", answer)
    assert out["error_message"] == "Member <A> is not a member of group g."
    assert out["member_id"] == "<A>"
    assert out["assignment"] == "<unknown topic id>:[2] foo:[1, 5]"
    described = normaliser.response("ConsumerGroupDescribe", {"groups": [{"members": [
        {"member_id": "B", "subscribed_topic_names": ["foo-x1", "bar"], "subscribed_topic_regex": "re.*-x1",
         "assignment": {"topic_partitions": []}},
        {"member_id": "A", "subscribed_topic_names": [], "subscribed_topic_regex": "",
         "assignment": {"topic_partitions": [{"topic_id": bar, "topic_name": "bar", "partitions": [0]}]}}]}]})
    first, second = described["groups"][0]["members"]
    assert (first["member_id"], first["assignment"]) == ("A", "bar:[0]")
    assert (second["subscribed_topic_names"], second["subscribed_topic_regex"], second["assignment"]) == (
        ["bar", "foo"], "re.*", "")


def test_a_scenarios_broker_properties_configure_the_emulator_alike() -> None:
    config = emulator_config(0, Flavor.KAFKA_4, 6_000, {
        "group.consumer.session.timeout.ms": "3000", "group.consumer.min.session.timeout.ms": "1000",
        "group.consumer.heartbeat.interval.ms": "1000", "group.consumer.min.heartbeat.interval.ms": "500",
        "group.max.size": "7"})
    assert (config.consumer_group.session_timeout_ms, config.consumer_group.heartbeat_interval_ms) == (3000, 1000)
    assert config.group.max_size == 7
    with pytest.raises(ScenarioError, match="no emulator setting"):
        emulator_config(0, Flavor.KAFKA_4, 6_000, {"group.consumer.no.such.thing": "1"})


def test_a_learnt_answer_gives_the_member_its_id_epoch_and_assignment() -> None:
    ctx = _run([{"cg_heartbeat": "A", "epoch": "join"}], consumers={"A": {"topics": ["foo"], "version": 0}})
    out = cg_heartbeat(ctx, ctx.scenario.steps[0])[0]
    assert out.on_response is not None
    answer = SimpleNamespace(error_code=0, member_id="made-by-the-coordinator", member_epoch=2,
                             assignment=SimpleNamespace(topic_partitions=[SimpleNamespace(topic_id=FOO,
                                                                                          partitions=[0, 1])]))
    out.on_response(answer)
    assert ctx.consumers.ids["A"] == "made-by-the-coordinator" and ctx.consumers.epochs["A"] == 2
    assert ctx.consumers.assigned["A"] == [(FOO, [0, 1])]
    assert ctx.identities.labels["made-by-the-coordinator"] == "<A>"


def test_yaml_and_dsl_describe_the_same_kip848_scenario() -> None:
    from rebalance_lab.scenarios import ScenarioBuilder

    from_yaml = scenario_from_dict({
        "name": "s", "topics": {"foo": 2}, "consumers": {"A": {"topics": ["foo"], "instance_id": "i1"}},
        "steps": [{"cg_heartbeat": "A", "epoch": "join"}, {"cg_heartbeat": "B", "epoch": "join", "topics": ["foo"]},
                  {"create_partitions": {"topic": "foo", "count": 4}}, {"cg_describe": "g"},
                  {"api_versions": [68, 69]}],
    })
    from_dsl = (
        ScenarioBuilder("s", topics={"foo": 2})
        .consumer("A", topics=["foo"], instance_id="i1")
        .cg_heartbeat("A", epoch="join").cg_heartbeat("B", epoch="join", topics=["foo"])
        .create_partitions("foo", 4).cg_describe().api_versions(68, 69)
        .build()
    )
    assert from_dsl == from_yaml
