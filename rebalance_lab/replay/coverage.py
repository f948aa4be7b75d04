"""What each kind of evidence can answer, and which file would fill a gap (issue 20 item 5).

The replay leaves a field null where its sources cannot say (never a guess presented as a fact);
this module says *why* it is null and what to add. It is static knowledge about the sources,
established on real 4.4.0 and 3.9.2 brokers by tests/replay_evidence/ (a scripted scenario whose
clients' own record is the truth, replayed from each source alone and from all together):

* ``broker_log`` — the coordinator's ``server.log`` at the levels the distribution ships (INFO):
  every rebalance with measured prepare/join/sync times, triggers, the leader (3.0+), member and
  static counts ("K of which are static"), leaves and expiries. It names a member that joins an
  ongoing rebalance only at DEBUG (3.9's "Pending dynamic member … Adding to the group now"), so its
  member lists can miss members; it never shows assignments or subscriptions.
* ``offsets_dumplog`` / ``offsets_console`` — the ``__consumer_offsets`` group-metadata records
  (``kafka-dump-log.sh --offsets-decoder``, or the console consumer's formatter): every
  generation's members, leader, protocol, subscriptions and assignments, static ids, and static
  rejoins without a rebalance (a new member id under the same instance id in the same generation).
  It records no reason for a rebalance, so the triggers are unknown.
  Its times are the records' append times: the sync is the record's time, the start of a
  rebalance is not recorded, so stop-the-world and unavailability derived from a dump alone are
  *estimated*.
* ``client_log`` — a Java consumer's log (INFO): its own join/sync times, generation, leader
  (whether it is), protocol and its own assignment: episodes with measured times, but only the
  members whose logs were given.
* ``emulator`` — the emulator's own recording: everything, measured.

:func:`coverage` combines the sources a group (or a whole run) was replayed from into one
:class:`FieldCoverage` per :data:`FIELDS` entry: ``measured`` / ``estimated`` / ``partial`` /
``unknown``, the sources that answer it, and for anything short of ``measured`` the hint naming
the file that would fill the gap (``"what-if unknown: add the offsets dump"``). The report
(:mod:`rebalance_lab.replay.report`) renders :func:`coverage_rows`; the terminal summary may print
:func:`gap_hints`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: The replay's answers, in the order the report lists them: (key, label).
FIELDS: tuple[tuple[str, str], ...] = (
    ("generations", "generations and episodes"),
    ("times", "join/sync/stop-the-world times"),
    ("triggers", "rebalance triggers"),
    ("leader", "leader"),
    ("protocol", "protocol (assignor)"),
    ("members", "members per generation"),
    ("members_in_out", "members in/out per episode"),
    ("n_static", "static members"),
    ("static_rejoins", "static rejoins without a rebalance"),
    ("assignments", "assignments"),
    ("moves", "partitions moved and revoked"),
    ("unavailability", "partition-unavailability"),
    ("whatif", "what-if replays"),
)
FIELD_KEYS: tuple[str, ...] = tuple(key for key, _ in FIELDS)
LABELS: dict[str, str] = dict(FIELDS)

#: Levels, best first. ``partial``: some generations or members only; ``estimated``: derived, not observed.
MEASURED, ESTIMATED, PARTIAL, UNKNOWN = "measured", "estimated", "partial", "unknown"
LEVELS: tuple[str, ...] = (MEASURED, ESTIMATED, PARTIAL, UNKNOWN)
_RANK = {level: rank for rank, level in enumerate(LEVELS)}

#: The canonical ``source`` values (events.SOURCES) and how the report names them.
SOURCE_LABELS: dict[str, str] = {
    "broker_log": "broker server.log",
    "offsets_dumplog": "offsets dump (kafka-dump-log --offsets-decoder)",
    "offsets_console": "offsets console dump",
    "client_log": "Java client log",
    "emulator": "emulator recording",
}
#: ``--format`` names (what a run's meta lists) to canonical sources.
FORMAT_SOURCES: dict[str, str] = {
    "broker-log": "broker_log", "dump-log": "offsets_dumplog", "console-json": "offsets_console",
    "client-log": "client_log", "emulator": "emulator",
}

_M, _E, _P = MEASURED, ESTIMATED, PARTIAL
_DUMP: dict[str, str] = {
    "generations": _M, "times": _E, "leader": _M, "protocol": _M, "members": _M,
    "members_in_out": _M, "n_static": _M, "static_rejoins": _M, "assignments": _M, "moves": _M,
    "unavailability": _E, "whatif": _M,
}
#: What each source answers on its own; a field it does not list it cannot answer.
CAPABILITIES: dict[str, dict[str, str]] = {
    "broker_log": {
        "generations": _M, "times": _M, "triggers": _M, "leader": _M, "members": _P, "members_in_out": _P,
        "n_static": _M, "static_rejoins": _M, "unavailability": _E,
    },
    "offsets_dumplog": _DUMP,
    "offsets_console": dict(_DUMP),
    "client_log": {
        "generations": _P, "times": _M, "leader": _M, "protocol": _M, "members": _P, "assignments": _P,
        "moves": _P, "unavailability": _P,
    },
    "emulator": {key: _M for key in FIELD_KEYS},
}
#: Fields whose time component comes from another field: a dump's exact moves with a log's measured times.
_MEASURED_WITH = {"unavailability": ("times", "assignments")}

#: The file to add when a field is short of measured, by field.
_ADD_DUMP = "add the offsets dump (kafka-dump-log.sh --offsets-decoder on the __consumer_offsets segments)"
_ADD_LOG = "add the coordinator's server.log"
HINTS: dict[str, str] = {
    "generations": _ADD_LOG,
    "times": _ADD_LOG + " (or the consumers' logs) for measured times",
    "triggers": _ADD_LOG,
    "leader": _ADD_LOG + " or " + _ADD_DUMP.removeprefix("add "),
    "protocol": _ADD_DUMP,
    "members": _ADD_DUMP,
    "members_in_out": _ADD_DUMP,
    "n_static": _ADD_LOG + " or " + _ADD_DUMP.removeprefix("add "),
    "static_rejoins": _ADD_DUMP,
    "assignments": _ADD_DUMP,
    "moves": _ADD_DUMP,
    "unavailability": _ADD_DUMP + " and " + _ADD_LOG.removeprefix("add "),
    "whatif": _ADD_DUMP,
}


@dataclass(frozen=True)
class FieldCoverage:
    field: str
    label: str
    level: str  # one of LEVELS
    sources: tuple[str, ...]  # the given sources that answer it at that level
    hint: str | None  # what to add; None when measured

    def line(self) -> str:
        """``"what-if replays unknown: add the offsets dump (...)"``, or ``"<label> measured"``."""
        text = f"{self.label} {self.level}"
        return f"{text}: {self.hint}" if self.hint else text


def canonical_sources(names: Iterable[str]) -> tuple[str, ...]:
    """Canonical sources from canonical names or ``--format`` names (unknown names are dropped), sorted."""
    found = {FORMAT_SOURCES.get(name, name) for name in names}
    return tuple(sorted(name for name in found if name in CAPABILITIES))


def _level(field: str, sources: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    best: str = UNKNOWN
    by: tuple[str, ...] = ()
    for source in sources:
        level = CAPABILITIES[source].get(field, UNKNOWN)
        if _RANK[level] < _RANK[best]:
            best, by = level, (source,)
        elif level == best and level != UNKNOWN:
            by = (*by, source)
    parts = _MEASURED_WITH.get(field)
    if best != MEASURED and parts and all(_level(part, sources)[0] == MEASURED for part in parts):
        return MEASURED, sources
    return best, by


def coverage(sources: Iterable[str]) -> list[FieldCoverage]:
    """One :class:`FieldCoverage` per :data:`FIELDS` entry for evidence of these kinds (canonical or format names)."""
    given = canonical_sources(sources)
    rows = []
    for key, label in FIELDS:
        level, by = _level(key, given)
        rows.append(FieldCoverage(key, label, level, by, None if level == MEASURED else HINTS[key]))
    return rows


def coverage_rows(sources: Iterable[str]) -> list[dict[str, object]]:
    """:func:`coverage` as plain rows (``field``, ``label``, ``level``, ``sources``, ``hint``) for HTML/JSON."""
    return [{"field": c.field, "label": c.label, "level": c.level, "sources": list(c.sources), "hint": c.hint}
            for c in coverage(sources)]


def gap_hints(sources: Iterable[str]) -> list[str]:
    """The lines for fields short of measured, e.g. ``"what-if replays unknown: add the offsets dump (...)"``."""
    return [c.line() for c in coverage(sources) if c.level != MEASURED]


def times_estimated(sources: Iterable[str]) -> bool:
    """True when durations (join, sync, stop-the-world) come from record append times only (a dump alone)."""
    return _level("times", canonical_sources(sources))[0] != MEASURED


def group_sources(generations: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The canonical sources of one group's ``group_generations`` rows (their ``sources`` column)."""
    found: set[str] = set()
    for row in generations:
        found.update(str(s) for s in (row.get("sources") or ()))
    return canonical_sources(found)
