"""``kafka-console-consumer`` JSON of ``__consumer_offsets`` (4.x ``GroupMetadataMessageFormatter``, §4.5).

One JSON object per record: ``{"key":{"type":2,"data":{"group":G}},"value":{"version":3,"data":{…}}}``
(trunk of late 2024 printed ``"key":{"version":2,…}``; both are read, numbers or strings). The objects
may also come concatenated on one line (``…}{…``), and both layouts are read. ``subscription`` and
``assignment`` are base64 of the raw ConsumerProtocol bytes, decoded with our codec
(:mod:`rebalance_lab.protocol.consumer_protocol`).

The formatter prints no record timestamp, so every event is timed by the value's
``currentStateTimestamp`` (``ts_kind`` ``current_state``):

=========================================  =======================================================
record                                     events
=========================================  =======================================================
GroupMetadata (key 2), members             JOIN_COMPLETE then GENERATION_SNAPSHOT, both at
                                           currentStateTimestamp; the columns are those of the
                                           dump-log adapter (:mod:`.dump_log_values`), which builds them
GroupMetadata, no members                  GROUP_EMPTY then GENERATION_SNAPSHOT
GroupMetadata tombstone (``"value":null``)  GROUP_DEAD, timed by the group's latest
                                           currentStateTimestamp seen earlier in the input (a lower
                                           bound: the deletion came later); without one there is no
                                           time to give it, and the line is counted unparsable
=========================================  =======================================================

``source_ref`` is ``file:line``; ``coord_partition`` is only known when
``ctx.options["offsets_partitions"]`` gives the offsets topic's partition count.

Ignored: offset commits (keys 0/1) and every other record type: the KIP-848 records of
``ConsumerGroupMessageFormatter`` carry no time at all in this format, so they cannot be placed on
the timeline (use dump-log for them); blank lines.

Unparsable: broken JSON (the rest of the line is re-synchronised at the next ``{"key"``), an object
that is not a coordinator record, a GroupMetadata value that is not an object or has no
currentStateTimestamp (v0/v1 values), and, while still emitting the snapshot, undecodable base64 or
ConsumerProtocol bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from rebalance_lab.replay.event_rows import SCHEMA_VERSION
from rebalance_lab.replay.sources import Format, SourceContext, register
from rebalance_lab.replay.sources.broker_log import partition_for
from rebalance_lab.replay.sources.dump_log import key_type
from rebalance_lab.replay.sources.dump_log_values import BadRecord, group_metadata_events, no_lone_surrogate

FORMAT_NAME = "console-json"
SOURCE = "offsets_console"

Event = dict[str, Any]

_DECODER = json.JSONDecoder()
_RESYNC = '{"key"'


class _Parser:
    def __init__(self, ctx: SourceContext) -> None:
        self.ctx = ctx
        self.report = ctx.report
        self.num_partitions: int | None = ctx.options.get("offsets_partitions")
        self.last_state: dict[str, int] = {}  # group -> latest currentStateTimestamp (µs) seen
        self.number = 0
        self.text = ""
        self.failed = False

    def run(self, lines: Iterable[str]) -> Iterator[Event]:
        report = self.report
        for number, raw in enumerate(lines, 1):
            report.line()
            self.number, self.text, self.failed = number, raw.strip(), False
            produced = 0
            for event in self.objects(self.text):
                produced += 1
                report.event(FORMAT_NAME)
                yield event
            if not produced and not self.failed:
                report.ignore()

    def bad(self, reason: str, text: str | None = None) -> None:
        self.failed = True
        self.report.unparsable(self.ctx.ref(self.number), reason, self.text if text is None else text)

    def objects(self, text: str) -> Iterator[Event]:
        """Every JSON object of one line, in order; a broken one is reported and skipped."""
        pos, size = 0, len(text)
        while pos < size:
            try:
                obj, end = _DECODER.raw_decode(text, pos)
            except ValueError:
                self.bad("broken JSON", text[pos:])
                pos = text.find(_RESYNC, pos + 1)
                if pos < 0:
                    return
                continue
            try:
                no_lone_surrogate(text[pos:end], obj)
                yield from self.record(obj)
            except BadRecord as exc:
                self.bad(str(exc), text[pos:end])
            pos = end
            while pos < size and text[pos] in " \t,":
                pos += 1

    def record(self, obj: Any) -> list[Event]:
        if not isinstance(obj, dict) or not isinstance(obj.get("key"), dict):
            raise BadRecord("not a coordinator record")
        key = obj["key"]
        if key_type(key) != 2:
            return []
        data = key.get("data")
        group = data.get("group") if isinstance(data, dict) else None
        if not isinstance(group, str):
            raise BadRecord("key without a group")
        value = obj.get("value")
        base = self.base(group)
        if value is None:
            return self.tombstone(base, group)
        if not isinstance(value, dict) or "data" not in value:
            raise BadRecord("malformed value")
        events = group_metadata_events(value["data"], base, None, self.bad)
        self.last_state[group] = events[0]["ts"]
        return events

    def tombstone(self, base: Event, group: str) -> list[Event]:
        last = self.last_state.get(group)
        if last is None:
            raise BadRecord("tombstone with no earlier record of its group to time it")
        return [{**base, "ts": last, "ts_kind": "current_state", "event_type": "GROUP_DEAD"}]

    def base(self, group: str) -> Event:
        partition = partition_for(group, self.num_partitions) if self.num_partitions else None
        return {"schema_version": SCHEMA_VERSION, "source": SOURCE, "source_ref": self.ctx.ref(self.number),
                "seq": self.number, "cluster_id": self.ctx.cluster_id, "broker_id": self.ctx.broker_id,
                "coord_partition": partition, "group_id": group, "group_kind": "classic"}


def parse(lines: Iterable[str], ctx: SourceContext) -> Iterator[Event]:
    return _Parser(ctx).run(lines)


def sniff(lines: list[str]) -> bool:
    first = next((line.strip() for line in lines if line.strip()), "")
    compact = first.replace(" ", "")
    return first.startswith("{") and '"key":' in compact and '"schema_version"' not in compact


FORMAT = register(Format(
    name=FORMAT_NAME, source=SOURCE, parse=parse, sniff=sniff,
    description="kafka-console-consumer JSON of __consumer_offsets (4.x GroupMetadataMessageFormatter)",
))
