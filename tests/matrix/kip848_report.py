"""The KIP-848 section of ``docs/client-matrix.md``, written from a run of ``test_kip848_matrix.py``.

The classic matrix rewrites the whole document; this section lives between two markers, which
``report.write`` carries over and :func:`write` replaces, so either run leaves the other's table.
"""

from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.matrix.report import DOC_PATH

if TYPE_CHECKING:
    from tests.matrix.kip848_run import Run

__all__ = ["BEGIN", "DOC_PATH", "END", "Result", "render", "result_of", "write"]

BEGIN = "<!-- kip848:begin (tests/matrix/test_kip848_matrix.py writes this section) -->"
END = "<!-- kip848:end -->"


@dataclass(frozen=True)
class Result:
    client: str
    target: str
    version: str
    assignor: str  # what the members asked for
    assignors: tuple[str, ...]  # what ConsumerGroupDescribe named
    api_versions: dict[str, list[int]]
    heartbeat: dict[str, Any]  # what the members' ConsumerGroupHeartbeats carried (heartbeat_facts)
    failure: str | None
    timings: dict[str, float]
    produced: int
    consumed: int
    reads: int
    build_s: float
    notes: str

    @property
    def passed(self) -> bool:
        return self.failure is None


def heartbeat_facts(run: Run) -> dict[str, Any]:
    """The joining request of each member (epoch 0) and the error codes the members were answered."""
    beats = run.tap.heartbeats_of(run.prefix)
    joins = [h for h in beats if h.request.get("member_epoch") == 0]
    first = joins[0].request if joins else {}
    leaves = [h.request for h in beats if (h.request.get("member_epoch") or 0) < 0]
    errors = sorted({int(h.response["error_code"]) for h in beats if h.response and h.response.get("error_code")})
    return {
        "versions": sorted({h.version for h in beats}),
        "own_member_id_on_join": bool(joins) and all(j.request.get("member_id") for j in joins),
        "first_epoch": joins[0].response.get("member_epoch") if joins and joins[0].response else None,
        "server_assignor": first.get("server_assignor"),
        "rebalance_timeout_ms": first.get("rebalance_timeout_ms"),
        "regex": first.get("subscribed_topic_regex"),
        "owned_on_join": first.get("topic_partitions"),
        "leave_epochs": sorted({int(h["member_epoch"]) for h in leaves}),
        "leave_owned": leaves[0].get("topic_partitions") if leaves else None,
        "errors": errors,
    }


def result_of(run: Run, client: str, notes: str, build_s: float, failure: str | None) -> Result:
    started = next((m.started for m in run.members.values() if m.started), None) or {}
    consumed = run.consumed_set()
    return Result(client=client, target=run.target.name, version=str(started.get("version", "?")),
                  assignor=run.assignor, assignors=tuple(run.assignors), api_versions=run.api_versions(),
                  heartbeat=heartbeat_facts(run), failure=failure, timings=dict(run.timings),
                  produced=len(run.produced), consumed=len(run.produced & consumed), reads=sum(run.consumed.values()),
                  build_s=build_s, notes=notes)


def _seconds(result: Result, step: str) -> str:
    value = result.timings.get(step)
    return "—" if value is None else f"{value:.1f} s"


def _summary(results: list[Result]) -> list[str]:
    lines = ["| Client | Version | Target | Server assignor (described) | Result | Records consumed (distinct / "
             "produced; deliveries) | 3 members up | Leave → 2 | Crash → 1 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        outcome = "pass" if r.passed else f"**FAIL**: {r.failure}"
        lines.append(f"| {r.client} | {r.version} | {r.target} | {r.assignor} ({', '.join(r.assignors) or '—'}) | "
                     f"{outcome} | {r.consumed} / {r.produced}; {r.reads} | {_seconds(r, 'join')} | "
                     f"{_seconds(r, 'leave')} | {_seconds(r, 'crash')} |")
    return lines


def _field(value: Any) -> str:
    """A request field as the wire has it: null, an empty string and an empty list are different things."""
    return "null" if value is None else f"`{json.dumps(value)}`"


def _wire(results: list[Result]) -> list[str]:
    lines = ["| Client | Target | ConsumerGroupHeartbeat | Own member id on join (v1) | First join → epoch | "
             "ServerAssignor | RebalanceTimeoutMs | Regex on join | Leave epoch (TopicPartitions) | Errors answered | "
             "Other APIs |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        h = r.heartbeat
        others = ", ".join(f"{api} {'/'.join(f'v{v}' for v in vs)}" for api, vs in r.api_versions.items()
                           if api != "ConsumerGroupHeartbeat")
        lines.append(f"| {r.client} | {r.target} | {', '.join(f'v{v}' for v in h.get('versions', [])) or '—'} | "
                     f"{'yes' if h.get('own_member_id_on_join') else 'no'} | {h.get('first_epoch')} | "
                     f"{h.get('server_assignor')} | {h.get('rebalance_timeout_ms')} | {_field(h.get('regex'))} | "
                     f"{', '.join(map(str, h.get('leave_epochs', []))) or '—'} ({_field(h.get('leave_owned'))}) | "
                     f"{', '.join(map(str, h.get('errors', []))) or '—'} | {others} |")
    return lines


def render(results: list[Result], not_speaking: dict[str, str], when: datetime.datetime | None = None) -> str:
    when = when or datetime.datetime.now(datetime.UTC)
    notes = sorted({f"- **{r.client}**: {r.notes}." for r in results if r.notes})
    return "\n".join([
        BEGIN,
        "## KIP-848: `group.protocol=consumer`",
        "",
        f"Generated from a run of `tests/matrix/test_kip848_matrix.py` on {when:%Y-%m-%d %H:%M} UTC.",
        "",
        "The same scenario (3 members, `a` leaves, `b` is SIGKILLed, every record consumed) with the clients "
        "whose pinned release speaks the consumer protocol, against the emulator (flavor kafka-4) and a real "
        "Kafka 4.4.0 broker. The broker assigns (`uniform`, and `range` for one more confluent-kafka run) and "
        "owns the timing: both targets run with "
        "`group.consumer.session.timeout.ms=6000` (minimum 3000) and `group.consumer.heartbeat.interval.ms=500` "
        "(minimum 500), so `b` is fenced 6 s after its last heartbeat. A client passes when ConsumerGroupDescribe "
        "shows a Stable group of 3, 2 and then 1 members, each at the group epoch, the members' own assignments "
        "partition the topic, every record is consumed, and the members sent ConsumerGroupHeartbeat and never "
        "JoinGroup. The members reach each target through a recording relay (`tests/matrix/wiretap.py`), which "
        "gives the second table on both targets.",
        "",
        *_summary(results),
        "",
        "### What the members sent",
        "",
        "From their ConsumerGroupHeartbeats: the joining requests (epoch 0) for the member id, assignor, "
        "rebalance timeout and regex, and the first one's answer for the epoch; the leaving request; every "
        "response for the errors. A fresh group's first member gets epoch 2 on Kafka 4.4.0 (a new group starts at "
        "epoch 1).",
        "",
        *_wire(results),
        "",
        "### Notes",
        "",
        *notes,
        "- Times are wall-clock (two shared cores): *3 members up* from starting the processes until the group is "
        "settled and the first batch consumed; *Crash → 1* from the SIGKILL until the group of one is settled "
        "(it includes the 6 s session timeout).",
        "",
        "### Clients without KIP-848 in their pinned release",
        "",
        *[f"- **{name}**: {why}." for name, why in not_speaking.items()],
        END,
    ])


def carry_over(existing: str) -> str:
    """The KIP-848 section of an existing document, or ''."""
    match = re.search(re.escape(BEGIN) + ".*?" + re.escape(END), existing, re.DOTALL)
    return match.group(0) if match else ""


def write(path: Path, results: list[Result], not_speaking: dict[str, str]) -> None:
    text = path.read_text() if path.exists() else "# Client compatibility matrix\n"
    section = render(results, not_speaking)
    old = carry_over(text)
    text = text.replace(old, section) if old else text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)
