"""The base of every group record (STYLE.md principle 2), shared by both group kinds.

A record is a small frozen value naming one state change; it converts to one row of the
canonical event schema (spec/replay-inputs.md §7.1) with :meth:`GroupRecord.to_event`.
The classic group's records live in ``coordinator/classic/records.py``, the KIP-848
consumer group's in ``coordinator/consumer/records.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

SCHEMA_VERSION = "rbl-event/1"


def _iso(ts_ms: int) -> str:
    from datetime import UTC, datetime  # here: only a recording's events need it, not serve's start (issue 22)

    return datetime.fromtimestamp(ts_ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class GroupRecord:
    event_type: ClassVar[str] = ""
    group_kind: ClassVar[str] = "classic"  # "consumer" for KIP-848 groups (rbl-event/1 group_kind)
    group_id: str
    ts_ms: int

    def fields(self) -> dict[str, Any]:
        """Columns beyond the common ones; each subclass adds its own."""
        return {}

    def to_event(self, seq: int = 0) -> dict[str, Any]:
        row: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "source": "emulator",
            "source_ref": "",
            "seq": seq,
            "ts": _iso(self.ts_ms),
            "ts_kind": "emulated",
            "group_id": self.group_id,
            "group_kind": self.group_kind,
            "event_type": self.event_type,
        }
        row.update(self.fields())
        return row
