"""What the transaction coordinator tells recordings and narration (``TXN_*`` rows, docs/event-schema.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rebalance_lab.coordinator.classic.records import SCHEMA_VERSION


@dataclass(frozen=True)
class TxnEvent:
    """One step of a transactional id: a state change, the markers of an end, or a timeout."""

    kind: str  # TXN_STATE | TXN_MARKERS | TXN_TIMED_OUT
    ts_ms: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    partitions: tuple[tuple[str, int], ...]
    commit: bool | None = None  # TXN_MARKERS: COMMIT or ABORT

    def to_event(self, ts: str) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION, "source": "emulator", "source_ref": "", "seq": 0, "ts": ts,
            "ts_kind": "emulated", "group_id": None, "event_type": self.kind,
            "transactional_id": self.transactional_id, "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch, "txn_state": self.state,
            "partitions": [list(p) for p in self.partitions],
            **({} if self.commit is None else {"marker": "COMMIT" if self.commit else "ABORT"}),
        }

    def narration(self) -> str:
        parts = ", ".join(f"{t}-{p}" for t, p in self.partitions) or "no partitions"
        who = f"producer {self.producer_id} epoch {self.producer_epoch}"
        if self.kind == "TXN_MARKERS":
            return f"{'COMMIT' if self.commit else 'ABORT'} markers written to {parts} ({who})"
        if self.kind == "TXN_TIMED_OUT":
            return f"transaction timed out: fenced ({who}) and aborted"
        return f"{self.state} ({who}; {parts})"
