"""The what-if builds at most MAX_WHATIF_PARTITIONS partitions of a topic: an input naming partition 2147483000 (a
valid int32) or a topic of that many partitions no longer makes it build them all (a hang, then memory exhausted);
the replay goes on and each episode's what-if row says why it is unknown, the report counts them.

Each damaged replay runs in a subprocess with a time and memory limit, so the code before the bound fails these
tests instead of hanging the suite."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from rebalance_lab.replay.counts import MAX_WHATIF_PARTITIONS, Inferred, TopicCounts, counts_at

SAMPLE = Path(__file__).parent / "samples" / "demo-recording.jsonl"
HUGE = 2_147_483_000
LIMIT_S = 60

_REPLAY = """
import json, sys
from rebalance_lab.replay.local import run_local
result = run_local([sys.argv[1]], "emulator", whatif=["range", "cooperative-sticky"])
print(json.dumps({"errors": result.errors, "unparsed": result.report.unparsed,
                  "generations": len(result.tables["group_generations"]),
                  "episodes": len(result.tables["rebalance_episodes"]),
                  "whatif": [{k: row.get(k) for k in ("whatif", "reproduced", "unknown_reason", "assignment")}
                             for row in result.tables["whatif_results"]]}))
"""


def _limit_memory() -> None:  # the unbounded what-if exhausts memory rather than the machine's
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(args), capture_output=True, text=True, timeout=LIMIT_S, check=False,
                              preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the replay did not finish within {LIMIT_S} s (the what-if built every partition)")


def _damaged(tmp_path: Path, old: str, new: str) -> Path:
    text = SAMPLE.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "damaged.jsonl"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def _replay(path: Path) -> dict[str, object]:
    done = _run(sys.executable, "-c", _REPLAY, str(path))
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize(("old", "new"), [
    ('{"demo":6}', f'{{"demo":{HUGE}}}'),  # TOPIC_METADATA's count
    ('"partition":5}', f'"partition":{HUGE}}}'),  # an assigned partition id (the recorded floor of the count)
], ids=["metadata-count", "assigned-partition-id"])
def test_a_topic_counted_in_billions_leaves_the_whatif_unknown_with_its_reason_and_the_rest_replayed(
        tmp_path: Path, old: str, new: str) -> None:
    intact = _replay(SAMPLE)
    damaged = _replay(_damaged(tmp_path, old, new))
    assert damaged["errors"] == [] and damaged["unparsed"] == 0
    assert (damaged["generations"], damaged["episodes"]) == (intact["generations"], intact["episodes"])
    rows = damaged["whatif"]
    assert isinstance(rows, list) and len(rows) == 10  # 5 episodes x 2 what-ifs, as when intact
    for row in rows:
        assert row["reproduced"] is None and row["assignment"] is None
        assert "beyond the what-if's bound of 100,000 per topic: 'demo' (2,147,483," in row["unknown_reason"]
    assert all(row["unknown_reason"] is None for row in intact["whatif"])  # type: ignore[attr-defined]


def test_the_cli_report_counts_the_episodes_whose_whatif_is_unknown(tmp_path: Path) -> None:
    damaged = _damaged(tmp_path, '{"demo":6}', f'{{"demo":{HUGE}}}')
    done = _run(sys.executable, "-m", "rebalance_lab.cli", "replay", "--engine", "local", "--what-if", "range",
                "--out", str(tmp_path / "out"), str(damaged))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "range: reproduced n/a (0/0) of the recorded assignments; 5 episode(s) unknown: partition count " \
           "beyond the what-if's bound of 100,000 per topic: 'demo' (2,147,483,000)" in done.stdout
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "range: 5 episode(s) unknown: partition count beyond" in page


def test_a_count_at_the_bound_is_replayed_and_one_past_it_is_set_aside() -> None:
    inferred = Inferred()
    inferred.add((("a", MAX_WHATIF_PARTITIONS - 1), ("b", MAX_WHATIF_PARTITIONS)))
    metadata = TopicCounts([{"ts": 1, "topic_partitions": {"c": MAX_WHATIF_PARTITIONS + 1, "d": 3}}])
    too_large: dict[str, int] = {}
    counts = counts_at(["a", "b", "c", "d"], 5, metadata, inferred, too_large)
    assert counts == {"a": MAX_WHATIF_PARTITIONS, "d": 3}
    assert too_large == {"b": MAX_WHATIF_PARTITIONS + 1, "c": MAX_WHATIF_PARTITIONS + 1}
    assert counts_at(["a", "b", "c", "d"], 5, metadata, inferred) == counts  # without the out-parameter
