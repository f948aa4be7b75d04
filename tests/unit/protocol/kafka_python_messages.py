"""Message classes for the APIs whose schemas we ship (``protocol/schemas``).

Imported only by :mod:`tests.unit.protocol.kafka_python_codec` (the test-time oracle): each class is
kafka-python's ``ApiMessage`` built from our JSON, and registers itself like theirs.
"""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from rebalance_lab.protocol import schemas


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=schemas):  # type: ignore[call-arg,misc]
    pass


class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=schemas):  # type: ignore[call-arg,misc]
    pass


class ConsumerGroupDescribeRequest(ApiMessage, load_json=schemas):  # type: ignore[call-arg,misc]
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=schemas):  # type: ignore[call-arg,misc]
    pass
