"""The record written for every fault: armed (``FAULT_INJECTED``) and applied to a request (``FAULT_FIRED``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rebalance_lab.coordinator.classic.records import GroupRecord
from rebalance_lab.protocol.errors import ErrorCode


@dataclass(frozen=True)
class FaultInjected(GroupRecord):
    """A fault was armed or applied at once. ``group_id`` is "" for cluster-wide faults."""

    event_type: ClassVar[str] = "FAULT_INJECTED"
    kind: str
    detail: tuple[tuple[str, Any], ...]

    def fields(self) -> dict[str, Any]:
        return {"fault": self.kind, "detail": dict(self.detail)}

    def to_event(self, seq: int = 0) -> dict[str, Any]:
        row = super().to_event(seq)
        # a fault is of no group kind: the replay takes a group's kind from its first row that names one,
        # and a fault armed before a KIP-848 group exists must not make it "classic"
        del row["group_kind"]
        if not self.group_id:
            row["group_id"] = None  # a cluster-level event, like TOPIC_METADATA
        return row


def _name(key: str, value: Any) -> Any:
    """Error codes by Kafka's names (issue 19: ``error=27`` told a reader nothing)."""
    if key != "error" or not isinstance(value, int):
        return value
    try:
        return ErrorCode(value).name
    except ValueError:
        return value


@dataclass(frozen=True)
class FaultFired(FaultInjected):
    """An armed request fault changed the answer to one request."""

    event_type: ClassVar[str] = "FAULT_FIRED"


def describe(record: FaultInjected) -> str:
    """One narration line: ``fault injected: error (api=Heartbeat, error=REBALANCE_IN_PROGRESS, count=1)``."""
    verb = "fired" if isinstance(record, FaultFired) else "injected"
    detail = ", ".join(f"{k}={_name(k, v)}" for k, v in record.detail if v is not None)
    return f"fault {verb}: {record.kind}" + (f" ({detail})" if detail else "")
