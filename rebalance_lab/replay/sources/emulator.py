"""The emulator's own recordings (``serve --record``): canonical JSONL already, read tolerantly.

A bad line (not JSON, not an object, an unknown event type or schema version, a
truncated last line) is counted in the report with its ``file:line`` and skipped;
the rest of the recording is still read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from rebalance_lab.replay.event_rows import SCHEMA_MAJOR, EventError, from_json
from rebalance_lab.replay.sources import Format, SourceContext, register


def parse(lines: Iterable[str], ctx: SourceContext) -> Iterator[dict[str, Any]]:
    report = ctx.report
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        report.line()
        try:
            event = from_json(text)
        except EventError as exc:
            report.unparsable(ctx.ref(number), _reason(exc), text)
            continue
        if not event.get("source_ref"):
            event["source_ref"] = ctx.ref(number)
        report.event("emulator")
        yield event


def _reason(exc: EventError) -> str:
    message = str(exc)
    for prefix in ("not JSON", "schema_version", "unknown event_type", "unknown column", "ts ", "bad value"):
        if message.startswith(prefix):
            return prefix.strip()
    return "invalid event"


def sniff(lines: list[str]) -> bool:
    first = next((line.strip() for line in lines if line.strip()), "")
    return first.startswith("{") and f'"schema_version":"{SCHEMA_MAJOR}' in first.replace(" ", "")


FORMAT = register(Format(
    name="emulator", source="emulator", parse=parse, sniff=sniff,
    description="canonical rbl-event/1 JSON Lines (rebalance-lab serve --record)",
))
