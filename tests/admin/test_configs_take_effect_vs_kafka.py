"""Topic configs changed by IncrementalAlterConfigs take effect where the emulator models them, as on Kafka
4.4.0: max.message.bytes (MESSAGE_TOO_LARGE), message.timestamp.type (LogAppendTime), cleanup.policy
(DeleteRecords' POLICY_VIOLATION), and DELETE brings the default back."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from rebalance_lab.protocol import codec
from tests.admin.diff_support import assert_same, create_topic, on_both
from tests.admin.test_delete_records_vs_kafka import delete_records
from tests.integration.wire import RawConnection
from tests.support.kafka_broker import KafkaBroker
from tests.unit.dataplane.batches import make_batch

pytestmark = [pytest.mark.broker]

PRODUCE, INCREMENTAL = 0, 44
_PR = codec.request_type(PRODUCE)
_IA = codec.request_type(INCREMENTAL)


async def _set(conn: RawConnection, topic: str, name: str, value: str | None, op: int = 0) -> Any:
    shape = _IA.AlterConfigsResource
    r = await conn.request(INCREMENTAL, 1, validate_only=False, resources=[shape(resource_type=2, resource_name=topic,
                           configs=[shape.AlterableConfig(name=name, config_operation=op, value=value)])])
    await asyncio.sleep(0.5)  # a real broker applies the controller's config record a moment later
    return r.responses[0].error_code


async def _produce(conn: RawConnection, topic: str, count: int) -> tuple[int, bool]:
    now = int(time.time() * 1000)
    batch = make_batch([b"x" * 20 for _ in range(count)], [now] * count)
    data = [_PR.TopicProduceData(name=topic, partition_data=[
        _PR.TopicProduceData.PartitionProduceData(index=0, records=batch)])]
    response = await conn.request(PRODUCE, 11, transactional_id=None, acks=-1, timeout_ms=5_000, topic_data=data)
    part = response.responses[0].partition_responses[0]
    return part.error_code, part.log_append_time_ms > 0


async def _scenario(conn: RawConnection, s: str) -> list[Any]:
    topic = f"eff-{s}"
    await create_topic(conn, topic, 1)
    return [
        await _set(conn, topic, "max.message.bytes", "200"), await _produce(conn, topic, 20),
        await _produce(conn, topic, 1),
        await _set(conn, topic, "max.message.bytes", None, op=1), await _produce(conn, topic, 20),
        await _set(conn, topic, "message.timestamp.type", "LogAppendTime"), await _produce(conn, topic, 1),
        await _set(conn, topic, "cleanup.policy", "compact"), await delete_records(conn, [(topic, 0, 1)]),
        await _set(conn, topic, "cleanup.policy", "delete", op=2), await delete_records(conn, [(topic, 0, 1)]),
    ]


async def test_altered_topic_configs_take_effect_as_on_kafka_4_4(kafka_broker_4: KafkaBroker) -> None:
    assert_same(*await on_both(kafka_broker_4, _scenario))
