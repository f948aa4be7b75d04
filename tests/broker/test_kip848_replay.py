"""The replay of a KIP-848 consumer group that a live Kafka 4.x broker ran (tests/support/kip848_capture.py).

The history is known (joins, a leave, a static restart, a kill, a partition increase); its timing is
the broker's and the clients' own, so the assertions are on what must hold whatever the timing: one
episode per change with its cause and membership, every reconciled epoch's assignment covering the
topic's partitions exactly once, and the broker's log and its offsets dump telling the same story.
``tests/unit/replay/test_kip848_samples.py`` pins one such recording exactly.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.replay.diagnostics import ParseReport
from rebalance_lab.replay.model import replay_group
from rebalance_lab.replay.sources import SourceContext, parse_file
from tests.conftest import Brokers
from tests.support.kip848_capture import GROUP, SETTINGS, Capture, broker_lines, capture

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def recorded(kafka_brokers: Brokers, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Capture, Path]]:
    broker = kafka_brokers.get("4", SETTINGS)
    if broker.source == "external":
        pytest.skip("an existing broker has its operator's settings and logs")
    result = capture(broker)
    folder = tmp_path_factory.mktemp("kip848")
    (folder / "server.log").write_text(broker_lines(result.log))
    (folder / "dump.txt").write_text(result.dump)
    yield result, folder


def _replay(*paths: Path) -> dict[str, Any]:
    events: list[dict[str, Any]] = []
    for path in paths:
        report = ParseReport()
        events += [e for e in parse_file(str(path), "auto", SourceContext(name=path.name, report=report))
                   if e.get("group_id") == GROUP]
        assert report.unparsed == 0, report.to_dict()
    return dict(replay_group(events, [], whatif=("cooperative-sticky",)))


EXPECTED_TRIGGERS = ["member_join", "member_join", "member_join", "member_leave", "member_join",
                     "session_timeout", "metadata_change", "member_leave"]
EXPECTED_MEMBERS_AFTER = [1, 2, 3, 2, 3, 2, 2, 1]


def test_each_change_of_a_live_consumer_group_is_one_episode_with_its_cause(recorded: tuple[Capture, Path]) -> None:
    _, folder = recorded
    out = _replay(folder / "server.log")
    episodes = out["rebalance_episodes"]
    assert [e["trigger_code"] for e in episodes] == EXPECTED_TRIGGERS
    assert [e["members_after"] for e in episodes] == EXPECTED_MEMBERS_AFTER
    summary = out["group_summary"][0]
    assert (summary["group_kind"], summary["members_joined"], summary["members_left"],
            summary["static_rejoins_without_rebalance"]) == ("consumer", 4, 3, 1)


def test_every_reconciled_epoch_assigns_each_partition_once(recorded: tuple[Capture, Path]) -> None:
    _, folder = recorded
    gens = _replay(folder / "server.log", folder / "dump.txt")["group_generations"]
    grown = next(g["generation"] for g in gens if g["trigger_codes"] == ["metadata_change"])
    reconciled = [g for g in gens if g["completed"]]
    assert len(reconciled) >= 7
    for g in reconciled:
        owned = sorted((p["topic"], p["partition"]) for m in g["members"] for p in m.get("assignment") or ())
        # every partition of "orders" once: 6 of them, 8 from the epoch its growth started
        assert owned == [("orders", p) for p in range(8 if g["generation"] >= grown else 6)], g
        assert g["t_prepare"] <= g["t_sync_done"]


def test_the_live_brokers_log_and_dump_tell_the_same_history(recorded: tuple[Capture, Path]) -> None:
    _, folder = recorded
    from_log, from_dump = _replay(folder / "server.log"), _replay(folder / "dump.txt")

    def shape(out: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [(g["generation"], sorted((m["member_id"], tuple(p["partition"] for p in m.get("assignment") or ()))
                                         for m in g["members"])) for g in out["group_generations"]]

    assert shape(from_dump) == shape(from_log)
    moved = [(r["generation"], r["partition"]) for r in from_log["partition_moves"]]
    assert [(r["generation"], r["partition"]) for r in from_dump["partition_moves"]] == moved
