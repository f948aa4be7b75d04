"""What an adapter could not read: counted per reason, with samples, never silently dropped.

An adapter calls :meth:`ParseReport.line` for every input line it looks at,
:meth:`ParseReport.event` for every event it yields, :meth:`ParseReport.ignore`
for lines that are well-formed but not about groups (other loggers, other
coordinator lines), and :meth:`ParseReport.unparsable` for lines it should have
understood and could not (a truncated line, a bad number, broken JSON). Reports
from many files or Spark tasks merge with :meth:`merge`; they serialise to plain
dicts so a Spark task can send its report back to the driver.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_SAMPLES = 5


@dataclass
class ParseReport:
    lines: int = 0
    events: int = 0
    ignored: int = 0
    unparsed: int = 0
    files: int = 0
    by_format: dict[str, int] = field(default_factory=dict)  # events per format
    reasons: dict[str, int] = field(default_factory=dict)  # unparsed lines per reason
    samples: list[dict[str, str]] = field(default_factory=list)  # {ref, reason, text}

    def line(self, count: int = 1) -> None:
        self.lines += count

    def event(self, fmt: str, count: int = 1) -> None:
        self.events += count
        self.by_format[fmt] = self.by_format.get(fmt, 0) + count

    def ignore(self, count: int = 1) -> None:
        self.ignored += count

    def unparsable(self, ref: str, reason: str, text: str) -> None:
        self.unparsed += 1
        self.reasons[reason] = self.reasons.get(reason, 0) + 1
        if len(self.samples) < MAX_SAMPLES:
            self.samples.append({"ref": ref, "reason": reason, "text": text[:300]})

    def merge(self, other: ParseReport) -> ParseReport:
        self.lines += other.lines
        self.events += other.events
        self.ignored += other.ignored
        self.unparsed += other.unparsed
        self.files += other.files
        for fmt, count in other.by_format.items():
            self.by_format[fmt] = self.by_format.get(fmt, 0) + count
        for reason, count in other.reasons.items():
            self.reasons[reason] = self.reasons.get(reason, 0) + count
        self.samples.extend(other.samples[: max(0, MAX_SAMPLES - len(self.samples))])
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "lines": self.lines, "events": self.events, "ignored": self.ignored, "unparsed": self.unparsed,
            "files": self.files, "by_format": dict(self.by_format), "reasons": dict(self.reasons),
            "samples": list(self.samples),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ParseReport:
        return cls(
            lines=data["lines"], events=data["events"], ignored=data["ignored"], unparsed=data["unparsed"],
            files=data["files"], by_format=dict(data["by_format"]), reasons=dict(data["reasons"]),
            samples=list(data["samples"]),
        )

    def summary(self) -> str:
        text = (f"{self.files} file(s), {self.lines} line(s): {self.events} event(s), "
                f"{self.ignored} unrelated line(s) skipped, {self.unparsed} unparseable")
        if self.unparsed:
            reasons = ", ".join(f"{reason}: {count}" for reason, count in sorted(self.reasons.items()))
            text += f" ({reasons})"
        return text
