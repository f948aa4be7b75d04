"""What each kind of evidence can answer (rebalance_lab.replay.coverage): the gaps a report shows and their hints."""

from __future__ import annotations

from rebalance_lab.replay import coverage
from rebalance_lab.replay.events import SOURCES


def _levels(sources: list[str]) -> dict[str, str]:
    return {c.field: c.level for c in coverage.coverage(sources)}


def test_every_canonical_source_has_a_capability_entry() -> None:
    assert set(coverage.CAPABILITIES) == set(SOURCES)


def test_a_broker_log_alone_leaves_the_whatif_unknown_and_says_to_add_the_offsets_dump() -> None:
    rows = {c.field: c for c in coverage.coverage(["broker-log"])}
    assert rows["whatif"].level == coverage.UNKNOWN
    assert rows["whatif"].line().startswith("what-if replays unknown: add the offsets dump")
    assert rows["times"].level == coverage.MEASURED and rows["times"].hint is None
    assert rows["assignments"].level == coverage.UNKNOWN


def test_a_dump_alone_gives_estimated_times_and_measured_assignments() -> None:
    levels = _levels(["offsets_dumplog"])
    assert levels["times"] == coverage.ESTIMATED
    assert levels["unavailability"] == coverage.ESTIMATED
    assert levels["assignments"] == coverage.MEASURED
    assert coverage.times_estimated(["dump-log"])


def test_a_log_and_a_dump_together_answer_every_field() -> None:
    levels = _levels(["broker_log", "offsets_dumplog"])
    assert all(level == coverage.MEASURED for level in levels.values()), levels
    assert not coverage.times_estimated(["broker-log", "dump-log"])
    assert coverage.gap_hints(["broker_log", "offsets_dumplog"]) == []


def test_a_java_client_log_alone_gives_measured_times_and_partial_members() -> None:
    levels = _levels(["client_log"])
    assert levels["times"] == coverage.MEASURED
    assert levels["members"] == coverage.PARTIAL
    assert levels["whatif"] == coverage.UNKNOWN


def test_no_known_source_leaves_everything_unknown_with_a_hint() -> None:
    rows = coverage.coverage(["something-else"])
    assert [c.field for c in rows] == list(coverage.FIELD_KEYS)
    assert all(c.level == coverage.UNKNOWN and c.hint for c in rows)


def test_group_sources_reads_the_generations_sources_column() -> None:
    rows = [{"sources": ["broker_log"]}, {"sources": ["offsets_dumplog", "broker_log"]}, {"sources": None}]
    assert coverage.group_sources(rows) == ("broker_log", "offsets_dumplog")
    assert coverage.coverage_rows(["emulator"])[0] == {"field": "generations", "label": "generations and episodes",
                                                        "level": "measured", "sources": ["emulator"], "hint": None}


def test_a_dump_alone_leaves_the_triggers_unknown_and_names_the_log() -> None:
    rows = {c.field: c for c in coverage.coverage(["offsets_dumplog"])}
    assert rows["triggers"].level == coverage.UNKNOWN
    assert rows["triggers"].hint == "add the coordinator's server.log"
