"""DescribeConfigs, IncrementalAlterConfigs and AlterConfigs: the same raw requests to the emulator and to
Kafka 4.4.0 (``kafka_broker_4``) and 3.9.2 (``kafka_broker_3``), answers compared field by field.

Normalised: the broker's node id (the emulator's first broker is 0, the real one 1) in resource names and
messages, and the order of configs in a DescribeConfigs result (Kafka lists them in a HashMap's order, the
emulator by name). Broker-level dynamic configs set here are removed again at the end of each run.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rebalance_lab.config import Flavor
from rebalance_lab.protocol import codec
from tests.admin.diff_support import assert_same, create_topic, on_both
from tests.integration.wire import RawConnection
from tests.support.kafka_broker import KafkaBroker

pytestmark = [pytest.mark.broker]

DESCRIBE, ALTER, INCREMENTAL, METADATA = 32, 33, 44, 3
_DC = codec.request_type(DESCRIBE)
_IA = codec.request_type(INCREMENTAL)
_AC = codec.request_type(ALTER)
_CT = codec.request_type(19)
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
# Broker configs whose default a real broker reports, compared by value, source, type, flags and synonyms.
BROKER_KEYS = ["log.retention.hours", "log.retention.ms", "message.max.bytes", "log.cleaner.threads",
               "num.io.threads", "compression.type", "min.insync.replicas", "log.cleanup.policy",
               "ssl.key.password", "sasl.enabled.mechanisms", "unclean.leader.election.enable"]


async def _node_id(conn: RawConnection) -> str:
    response = await conn.request(METADATA, 1, topics=[])
    return str(response.brokers[0].node_id)


def _normal(text: Any, node: str) -> Any:
    """A resource name or message with the broker's own id as <id>."""
    if text == node:
        return "<id>"
    return text.replace(f"expected {node}", "expected <id>") if isinstance(text, str) else text


async def _describe(conn: RawConnection, resources: list[tuple[int, str, list[str] | None]], node: str,
                    synonyms: bool = True, version: int = 4) -> list[Any]:
    request = [_DC.DescribeConfigsResource(resource_type=t, resource_name=n, configuration_keys=k)
               for t, n, k in resources]
    response = await conn.request(DESCRIBE, version, resources=request, include_synonyms=synonyms,
                                  include_documentation=False)
    return [(r.error_code, _normal(r.error_message, node), r.resource_type, _normal(r.resource_name, node),
             sorted((c.name, c.value, c.read_only, c.config_source, c.is_sensitive, c.config_type,
                     [(s.name, s.value, s.source) for s in c.synonyms]) for c in r.configs))
            for r in response.results]


async def _incremental(conn: RawConnection, resources: list[tuple[int, str, list[tuple[str, int, str | None]]]],
                       node: str, validate_only: bool = False) -> list[Any]:
    shape = _IA.AlterConfigsResource
    request = [shape(resource_type=t, resource_name=n, configs=[
        shape.AlterableConfig(name=a, config_operation=o, value=v) for a, o, v in cs]) for t, n, cs in resources]
    response = await conn.request(INCREMENTAL, 1, resources=request, validate_only=validate_only)
    return [(r.resource_type, _normal(r.resource_name, node), r.error_code, _normal(r.error_message, node))
            for r in response.responses]


async def _alter(conn: RawConnection, resources: list[tuple[int, str, list[tuple[str, str | None]]]],
                 node: str) -> list[Any]:
    shape = _AC.AlterConfigsResource
    request = [shape(resource_type=t, resource_name=n, configs=[
        shape.AlterableConfig(name=a, value=v) for a, v in cs]) for t, n, cs in resources]
    response = await conn.request(ALTER, 2, resources=request, validate_only=False)
    return [(r.resource_type, _normal(r.resource_name, node), r.error_code, _normal(r.error_message, node))
            for r in response.responses]


def _topic_alterations(t: str) -> list[list[tuple[int, str, list[tuple[str, int, str | None]]]]]:
    return [
        [(TOPIC, t, [("retention.ms", SET, "5000")])],
        [(TOPIC, t, [("retention.ms", SET, "abc")])],
        [(TOPIC, t, [("nope.config", SET, "1")])],
        [(TOPIC, t, [("cleanup.policy", APPEND, "compact")])],
        [(TOPIC, t, [("cleanup.policy", SUBTRACT, "delete")])],
        [(TOPIC, t, [("cleanup.policy", SET, "bogus")])],
        [(TOPIC, t, [("retention.ms", APPEND, "5")])],
        [(TOPIC, t, [("retention.ms", SET, None)])],
        [(TOPIC, t, [("retention.ms", SET, "1"), ("retention.ms", SET, "2")])],
        [(TOPIC, "missing-" + t, [("retention.ms", SET, "1")])],
        [(TOPIC, t, [("max.message.bytes", SET, "-5")])],
        [(TOPIC, t, [("min.cleanable.dirty.ratio", SET, "2")])],
        [(TOPIC, t, [("unclean.leader.election.enable", SET, "maybe")])],
        [(TOPIC, t, [("message.timestamp.type", SET, "Foo")])],
        [(TOPIC, t, [("compression.type", SET, "zip")])],
        [(TOPIC, t, [("segment.bytes", SET, "10")])],
        [(TOPIC, t, [("segment.index.bytes", SET, "3"), ("flush.messages", SET, "0")])],
        [(TOPIC, t, [("retention.ms", SET, "-2")])],
        [(TOPIC, t, [("min.insync.replicas", SET, "0")])],
        [(TOPIC, t, [("max.compaction.lag.ms", SET, "0")])],
        [(TOPIC, t, [("message.timestamp.after.max.ms", SET, "-1")])],
        [(TOPIC, t, [("cleanup.policy", SET, "compact,bogus")])],
        [(TOPIC, t, [("preallocate", SET, " TRUE ")])],
        [(TOPIC, t, [("retention.bytes", SET, "99999999999999999999")])],
        [(TOPIC, t, [("segment.ms", SET, "99")]), (TOPIC, t, [("segment.ms", SET, "98")])],
        [(TOPIC, t, [("max.message.bytes", SET, "2000"), ("segment.ms", SET, "60000")])],
        [(TOPIC, t, [("retention.ms", DELETE, None)])],
        [(3, "9", [("a", SET, "b")])],
    ]


async def _topic_scenario(conn: RawConnection, s: str) -> list[Any]:
    node, t = await _node_id(conn), f"cfg-{s}"
    await create_topic(conn, t, 2, {"retention.ms": "1000"})
    steps: list[Any] = [await _describe(conn, [(TOPIC, t, ["retention.ms", "cleanup.policy", "nope"]),
                                               (TOPIC, f"missing-{s}", None), (TOPIC, "bad name!", None)], node)]
    steps.append(await _describe(conn, [(TOPIC, t, None)], node))
    steps.append(await _describe(conn, [(TOPIC, t, [])], node, synonyms=False, version=1))
    for alteration in _topic_alterations(t):
        steps.append(await _incremental(conn, alteration, node))
    steps.append(await _incremental(conn, [(TOPIC, t, [("segment.ms", SET, "7")])], node, validate_only=True))
    steps.append(await _describe(conn, [(TOPIC, t, None)], node))
    steps.append(await _alter(conn, [(TOPIC, t, [("segment.ms", "1234")])], node))
    steps.append(await _alter(conn, [(TOPIC, t, [("segment.ms", "x"), ("nope", "1")])], node))
    steps.append(await _alter(conn, [(TOPIC, t, [("retention.ms", None)])], node))
    return steps


async def _settled(conn: RawConnection, node: str, dynamic: bool) -> list[Any]:
    """The broker's answer once its dynamic configs reached every view: a real broker applies the
    controller's records a moment after answering the alteration (the value is briefly stale or null)."""
    for _ in range(50):
        answer = await _describe(conn, [(BROKER, node, ["log.cleaner.threads", "log.retention.ms"])], node)
        configs = answer[0][4]
        if all(c[1] is not None for c in configs) == dynamic and all((c[3] != 5) == dynamic for c in configs):
            break
        await asyncio.sleep(0.1)
    return answer


async def _broker_scenario(conn: RawConnection, s: str) -> list[Any]:
    node = await _node_id(conn)
    steps: list[Any] = [await _describe(conn, [(BROKER, node, BROKER_KEYS), (BROKER, "", None),
                                               (BROKER, "7", None), (BROKER, "x", None)], node)]
    try:
        steps.append(await _incremental(conn, [(BROKER, node, [("log.cleaner.threads", SET, "2")])], node))
        steps.append(await _incremental(conn, [(BROKER, "", [("log.retention.ms", SET, "6000")])], node))
        steps.append(await _incremental(conn, [(BROKER, node, [("node.id", SET, "3")])], node))
        steps.append(await _incremental(conn, [(BROKER, "7", [("log.cleaner.threads", SET, "2")])], node))
        steps.append(await _incremental(conn, [(BROKER, "x", [("log.cleaner.threads", SET, "2")])], node))
        steps.append(await _settled(conn, node, dynamic=True))
    finally:
        steps.append(await _incremental(conn, [(BROKER, node, [("log.cleaner.threads", DELETE, None)]),
                                               (BROKER, "", [("log.retention.ms", DELETE, None)])], node))
    steps.append(await _settled(conn, node, dynamic=False))
    return steps


async def _create_scenario(conn: RawConnection, s: str) -> list[Any]:
    shape = _CT.CreatableTopic
    answers = []
    for configs in ([("retention.ms", "abc")], [("segment.bytes", "10")], [("cleanup.policy", "compact,bogus")],
                    [("nope", "1")], [("retention.ms", None)], [("message.timestamp.type", "Foo")],
                    [("retention.ms", "5"), ("preallocate", "TRUE")]):
        topic = shape(name=f"ct-{s}", num_partitions=1, replication_factor=1, assignments=[], configs=[
            shape.CreatableTopicConfig(name=n, value=v) for n, v in configs])
        response = await conn.request(19, 7, topics=[topic], timeout_ms=30_000, validate_only=True)
        answers.append([(t.error_code, t.error_message) for t in response.topics])
    return answers


async def test_create_topics_validates_config_values_as_kafka_4_4_does(kafka_broker_4: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_4, _create_scenario))


async def test_create_topics_validates_config_values_as_kafka_3_9_does(kafka_broker_3: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_3, _create_scenario, Flavor.KAFKA_3))


async def _other_resources_scenario(conn: RawConnection, s: str) -> list[Any]:
    node, plain = await _node_id(conn), [(TOPIC, f"missing-{s}", ["retention.ms"])]
    steps = [await _describe(conn, [(3, "x", None), *plain], node)]  # an unknown type fails the whole request
    for resources in ([(BROKER_LOGGER, node, ["a"])], [(BROKER_LOGGER, "", None)], [(BROKER_LOGGER, "7", None)],
                      [(BROKER_LOGGER, "x", None)], [(16, f"sub-{s}", None)], [(16, "", None)]):
        steps.append(await _describe(conn, resources + plain, node))
    logger = "kafka.server.KafkaApis"  # set to INFO, the level it has anyway, so the broker is left as it was
    steps.append(await _incremental(conn, [(BROKER_LOGGER, node, [(logger, SET, "INFO")])], node))
    steps.append(await _describe(conn, [(BROKER_LOGGER, node, [logger])], node))
    return steps


async def _group_scenario(conn: RawConnection, s: str) -> list[Any]:
    node = await _node_id(conn)
    return [await _describe(conn, [(32, f"g-{s}", None), (32, "", None)], node),
            await _describe(conn, [(32, f"g-{s}", ["consumer.session.timeout.ms", "nope"])], node, synonyms=False)]


async def test_other_config_resources_are_answered_as_kafka_4_4_does(kafka_broker_4: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_4, _other_resources_scenario))
    assert_same(*await on_both(kafka_broker_4, _group_scenario))


async def test_other_config_resources_are_answered_as_kafka_3_9_does(kafka_broker_3: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_3, _other_resources_scenario, Flavor.KAFKA_3))
    assert_same(*await on_both(kafka_broker_3, _group_scenario, Flavor.KAFKA_3))  # no group configs in 3.9


async def test_topic_configs_are_described_altered_and_refused_as_kafka_4_4_does(kafka_broker_4: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_4, _topic_scenario))


async def test_topic_configs_are_described_altered_and_refused_as_kafka_3_9_does(kafka_broker_3: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_3, _topic_scenario, Flavor.KAFKA_3))


async def test_broker_configs_report_kafka_4_4_defaults_and_take_dynamic_values(kafka_broker_4: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_4, _broker_scenario))


async def test_broker_configs_report_kafka_3_9_defaults_and_take_dynamic_values(kafka_broker_3: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_3, _broker_scenario, Flavor.KAFKA_3))
