"""Canonical events -> the 4.x console consumer's ``GroupMetadataMessageFormatter`` JSON.

``kafka-console-consumer.sh --topic __consumer_offsets --formatter
org.apache.kafka.tools.consumer.GroupMetadataMessageFormatter`` prints one object per
record (spec §4.5)::

    {"key":{"type":2,"data":{"group":"g"}},"value":{"version":3,"data":{"protocolType":"consumer",
     "generation":1,"protocol":"range","leader":"m1","currentStateTimestamp":1234,"members":[{"memberId":"m1",
     "groupInstanceId":null,"clientId":"c","clientHost":"/127.0.0.1","rebalanceTimeout":300000,
     "sessionTimeout":45000,"subscription":"AAMAAAAB...","assignment":"AAMAAAAB..."}]}}}

(one line). ``subscription``/``assignment`` are base64 of the raw ``ConsumerProtocol`` bytes,
encoded with our encoder (``rebalance_lab.protocol.consumer_protocol``, version 3); a
tombstone prints ``"value":null``; the record timestamp is not printed. Kafka's trunk of
October 2024 printed ``"version"`` instead of ``"type"`` in the key; 4.0 and later print
``"type"``, as here.

Rendered and skipped event types are those of ``dump_log``: ``GENERATION_SNAPSHOT``,
``GROUP_EMPTY`` after a join phase, ``GROUP_DEAD`` (tombstone); nothing else writes a
GroupMetadata record.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from typing import Any

from rebalance_lab.observe.formats._common import Event
from rebalance_lab.observe.formats._offsets_records import (
    KEY_VERSION,
    VALUE_VERSION,
    MemberRecord,
    MetadataRecord,
    RecordBuilder,
    value_json,
)


def _member_fields(member: MemberRecord, _protocol_type: str) -> dict[str, Any]:
    return {"subscription": base64.b64encode(member.subscription).decode(),
            "assignment": base64.b64encode(member.assignment).decode()}


def line(record: MetadataRecord) -> str:
    value = None if record.value is None else {"version": VALUE_VERSION, "data": value_json(record, _member_fields)}
    obj = {"key": {"type": KEY_VERSION, "data": {"group": record.group_id}}, "value": value}
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def render(events: Iterable[Event]) -> Iterator[str]:
    """One JSON object per GroupMetadata record ``events`` imply, in event order."""
    for record in RecordBuilder().records(events):
        yield line(record)
