"""Canonical events -> ``kafka-dump-log.sh --files <segment> --offsets-decoder`` output, Kafka >= 3.8.

One section per ``__consumer_offsets`` partition the groups live on, as dump-log prints
each file it is given: ``Dumping <file>``, ``Log starting offset: 0``, then for each batch
its header line (``baseOffset: ... crc: ... isvalid: true``) and its record line::

    | offset: 0 CreateTime: 1740787202833 keySize: 10 valueSize: 188 sequence: 0 headerKeys: []
      key: {"type":"2","data":{"group":"g"}} payload: {"version":"3","data":{...}}

(one line in the output). The coordinator appends each group record in a batch of its own.
Sizes, positions and CRCs are those of real v2 batches holding these records, so a parser
that skips the header lines sees what it would on a broker's disk. Subscriptions and
assignments of ``consumer`` groups are decoded JSON, as ``OffsetsMessageParser`` prints them.

``dump-log`` writes what a Kafka 4.x broker's segments hold (its coordinator runtime's batches
carry base sequence 0, and a record is written when a JoinGroup creates a group), ``dump-log-3``
what a 3.8/3.9 broker's hold (sequence -1, no record at creation): both as the real brokers'
dumps show them (tests/unit/observe/test_dump_log_real_samples.py compares every line).

Rendered: ``GENERATION_SNAPSHOT`` (a GroupMetadata record; ``currentStateTimestamp`` = the
generation's ``JOIN_COMPLETE`` time, ``CreateTime`` = the snapshot's ts), ``GROUP_EMPTY``
after a join phase or, on 4.x, at a JoinGroup's creation of the group (an empty-group record)
and ``GROUP_DEAD`` (a tombstone, ``payload: <DELETE>``). Every other event type is skipped: the
coordinator writes no GroupMetadata record for it (offset commits are not rendered).
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Iterable, Iterator
from typing import Any

from rebalance_lab.coordinator.record_batch import crc32c
from rebalance_lab.observe.formats._common import DEFAULT_OFFSETS_PARTITIONS, Event, coord_partition
from rebalance_lab.observe.formats._offsets_records import (
    KEY_VERSION,
    VALUE_VERSION,
    MemberRecord,
    MetadataRecord,
    RecordBuilder,
    assignment_json,
    subscription_json,
    value_json,
)
from rebalance_lab.protocol.consumer_protocol import PROTOCOL_TYPE, ConsumerProtocolError
from rebalance_lab.protocol.wire_primitives import varint

DEFAULT_LOG_DIR = "/var/lib/kafka/data"
_BATCH_OVERHEAD = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
_LOG_OVERHEAD = 12  # baseOffset + length


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def batch_bytes(key: bytes, value: bytes | None, base_offset: int, timestamp: int, leader_epoch: int,
                base_sequence: int = -1) -> bytes:
    """A magic v2 batch holding one uncompressed record, as the coordinator appends it (4.x's coordinator
    runtime writes base sequence 0, 3.x's -1: both seen in the real brokers' dumps)."""
    body = b"".join([b"\x00", varint(0), varint(0), varint(len(key)), key,
                     varint(-1 if value is None else len(value)), value or b"", varint(0)])
    record = varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, 0, timestamp, timestamp, -1, -1, base_sequence, 1) + record
    length = _BATCH_OVERHEAD - _LOG_OVERHEAD + len(record)
    return struct.pack(">qiibI", base_offset, length, leader_epoch, 2, crc32c(after_crc)) + after_crc


def _member_fields(member: MemberRecord, protocol_type: str) -> dict[str, Any]:
    """Decoded for ``consumer`` groups; base64 where decoding fails or the type is another."""
    if protocol_type == PROTOCOL_TYPE:
        try:
            return {"subscription": subscription_json(member.subscription),
                    "assignment": assignment_json(member.assignment)}
        except ConsumerProtocolError:
            pass
    return {"subscription": base64.b64encode(member.subscription).decode(),
            "assignment": base64.b64encode(member.assignment).decode()}


def key_text(record: MetadataRecord) -> str:
    return _json({"type": str(KEY_VERSION), "data": {"group": record.group_id}})


def payload_text(record: MetadataRecord) -> str:
    if record.value is None:
        return "<DELETE>"
    return _json({"version": str(VALUE_VERSION), "data": value_json(record, _member_fields)})


class _Segment:
    """One partition's segment file, dumped from offset 0."""

    def __init__(self, path: str, leader_epoch: int, sequence: int) -> None:
        self.path = path
        self.leader_epoch = leader_epoch
        self.sequence = sequence
        self.lines: list[str] = [f"Dumping {path}", "Log starting offset: 0"]
        self._offset = 0
        self._position = 0

    def append(self, record: MetadataRecord) -> None:
        key, value, ts = record.key_bytes(), record.value_bytes(), record.create_time
        seq = self.sequence
        batch = batch_bytes(key, value, self._offset, ts, self.leader_epoch, seq)
        crc = struct.unpack_from(">I", batch, 17)[0]
        self.lines.append(
            f"baseOffset: {self._offset} lastOffset: {self._offset} count: 1 baseSequence: {seq} lastSequence: {seq} "
            f"producerId: -1 producerEpoch: -1 partitionLeaderEpoch: {self.leader_epoch} isTransactional: false "
            f"isControl: false deleteHorizonMs: OptionalLong.empty position: {self._position} CreateTime: {ts} "
            f"size: {len(batch)} magic: 2 compresscodec: none crc: {crc} isvalid: true")
        self.lines.append(
            f"| offset: {self._offset} CreateTime: {ts} keySize: {len(key)} "
            f"valueSize: {-1 if value is None else len(value)} sequence: {seq} headerKeys: [] "
            f"key: {key_text(record)} payload: {payload_text(record)}")
        self._offset += 1
        self._position += len(batch)


def render(events: Iterable[Event], *, log_dir: str = DEFAULT_LOG_DIR,
           offsets_partitions: int = DEFAULT_OFFSETS_PARTITIONS, leader_epoch: int = 0,
           kafka: int = 4) -> Iterator[str]:
    """dump-log output for the group records ``events`` imply on a Kafka ``kafka`` (4 or 3) broker, one
    section per offsets partition (in order of first appearance)."""
    segments: dict[int, _Segment] = {}
    sequence = 0 if kafka >= 4 else -1
    for record in RecordBuilder(kafka).records(events):
        partition = coord_partition(record.event, offsets_partitions)
        if partition not in segments:
            path = f"{log_dir.rstrip('/')}/__consumer_offsets-{partition}/00000000000000000000.log"
            segments[partition] = _Segment(path, leader_epoch, sequence)
        segments[partition].append(record)
    for segment in segments.values():
        yield from segment.lines


def render_kafka_3(events: Iterable[Event], **options: Any) -> Iterator[str]:
    """As a Kafka 3.8/3.9 broker's segments dump (the old coordinator: no sequence, no record at creation)."""
    return render(events, kafka=3, **options)
