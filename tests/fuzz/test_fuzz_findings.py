"""Crashes the fuzz test (``test_fuzz_every_api.py``) found, each kept as a deterministic regression test."""

from __future__ import annotations

import uuid

from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from tests.unit.dataplane.harness import HANDLERS, make_world

CONSUMER_GROUP_HEARTBEAT = 68


def _context(api_key: int, version: int) -> RequestContext:
    world = make_world()
    return RequestContext(api_key, version, 1, "fuzz", "/127.0.0.1", 1, world.nodes[0], world)


def test_a_heartbeat_owning_partitions_of_the_zero_topic_id_is_answered_not_crashed() -> None:
    # kafka-python's generic decoder reads Kafka's Uuid.ZERO_UUID as None; the handler made uuid.UUID("None").
    shape = codec.request_type(CONSUMER_GROUP_HEARTBEAT).TopicPartitions
    request = codec.new_request(CONSUMER_GROUP_HEARTBEAT, 0, group_id="g", member_id="m", member_epoch=0,
                                rebalance_timeout_ms=5000, subscribed_topic_names=["t"],
                                topic_partitions=[shape(topic_id=uuid.UUID(int=0), partitions=[0])])
    body = codec.decode_request_generic(codec.encode_request(request, 1)[4:]).body
    assert body.topic_partitions[0].topic_id is None
    response = HANDLERS[CONSUMER_GROUP_HEARTBEAT].handle(_context(CONSUMER_GROUP_HEARTBEAT, 0), body)
    assert codec.generic(response).error_code >= 0
