"""Every benchmark script the README names runs end to end (at toy sizes) and prints its figures.

The figures themselves are measured by running the scripts by hand (see the README); these
tests only keep the scripts working.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.big_requests import BUILDERS as BIG_REQUESTS

ROOT = Path(__file__).resolve().parents[2]


def _run(script: str, *args: str, timeout: int = 300) -> str:
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], capture_output=True,
                            text=True, timeout=timeout, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_the_startup_and_throughput_benchmark_prints_its_figures() -> None:
    out = _run("startup_and_throughput.py", "--records", "300", "--runs", "2")
    assert "process start -> first ApiVersions answer" in out
    assert "kafka-python produce 300 records" in out and "kafka-python consume 300 records" in out


def test_the_coordinator_scale_benchmark_prints_the_emulator_and_kfake_side_by_side_with_exponents() -> None:
    out = _run("coordinator_scale.py", "--sizes", "10,20", "--targets", "emulator,kfake", "--big-heartbeat-seconds",
               "0.3", "--groups", "30", "--in-flight", "10", "--heartbeat-seconds", "0.5", timeout=900)
    assert out.count("emulator N=    20: full rebalance") == 2 and "kfake    N=    20: full rebalance" in out
    assert "emulator growth exponent N=10->20: wall" in out and "ratio N=    20: kfake/emulator" in out
    assert "heartbeats/s (server CPU" in out and "30 groups of 3 members stabilised" in out and "peak memory" in out


def test_the_coordinator_scale_benchmark_alternates_two_checkouts_and_prints_their_medians() -> None:
    out = _run("coordinator_scale.py", "--sizes", "10", "--targets", "emulator", "--compare", str(ROOT),
               "--rounds", "2", "--big-heartbeat-seconds", "0", "--groups", "0", timeout=600)
    assert out.count("-- round ") == 4 and "== medians of 2 rounds ==" in out
    assert out.count(f"emulator@{ROOT} N=    10: full rebalance") == 3  # two rounds and the median
    assert f"ratio N=    10: emulator@{ROOT}/emulator full rebalance" in out
    # the generator's own CPU in the round (it shares the cores) and when the leader's answer came
    assert out.count("driver CPU") == 6 and out.count("the leader's JoinGroup answer read at") == 6


def test_the_heartbeat_benchmark_drives_each_target_with_the_raw_driver_and_prints_both_cpu_figures() -> None:
    out = _run("coordinator_heartbeats.py", "--members", "20", "--seconds", "0.3", "--rounds", "2",
               "--targets", "emulator,kfake", "--compare", str(ROOT), timeout=600)
    for target in ("emulator ", f"emulator@{ROOT} ", "kfake "):
        assert sum(line.startswith(target) and "heartbeats/s, server CPU" in line and "driver CPU" in line
                   for line in out.splitlines()) == 3, out  # two rounds and the median
    assert "errors" not in out


def test_the_classic_core_benchmark_prints_cpu_per_heartbeat_and_per_join_and_sync() -> None:
    out = _run("classic_core.py", "--members", "30", "--heartbeats", "100", "--rounds", "2")
    assert "join phase" in out and "sync phase" in out and "us/member" in out
    assert out.count("us CPU/heartbeat  load") == 2 and "heartbeat min" in out


def test_the_classic_core_benchmark_times_full_rebalances_through_the_codec_and_the_handlers() -> None:
    out = _run("classic_core.py", "--members", "30", "--rebalances", "2")
    assert out.count("us CPU/member  load") == 2 and "rebalance min" in out


def test_the_classic_core_benchmark_rebalances_with_serve_s_collector_pause_unless_told_not_to() -> None:
    out = _run("classic_core.py", "--members", "300", "--rebalances", "1")
    # one hold per rebalance, from its joins to its last SyncGroup: the formation's, then the timed rebalance's
    assert "collector pause: 2 holds" in out
    out = _run("classic_core.py", "--members", "300", "--rebalances", "1", "--no-collector-pause")
    assert "collector pause: off" in out


def test_the_classic_core_benchmark_counts_a_rebalance_s_instructions_under_callgrind() -> None:
    out = _run("classic_core.py", "--members", "10", "--rebalances", "1", "--callgrind")
    assert out.count("k instructions/member") == 2 and "rebalance min" in out


@pytest.mark.broker
def test_the_coordinator_scale_benchmark_compares_the_emulator_with_a_kafka_4_broker() -> None:
    out = _run("coordinator_scale.py", "--sizes", "10,20", "--targets", "emulator,kafka", "--big-heartbeat-seconds",
               "0.3", "--groups", "0", timeout=900)
    assert "kafka    N=    20: full rebalance" in out and "ratio N=    20: kafka/emulator" in out


def test_the_startup_benchmark_prints_the_median_start_the_rss_and_the_import_top_10() -> None:
    out = _run("startup.py", "--runs", "2", "--top", "10")
    assert "start -> first accepted JoinGroup: min" in out and "RSS median" in out and "server CPU min" in out
    assert out.count("ms cumulative") == 10
    assert "bare asyncio server -> first answer: min" in out  # the floor beside serve's figures
    assert "warm-up after listening: " in out and "longest step" in out  # what a request may wait for once it listens
    assert "early shell: " in out and "requests answered before asyncio was ready" in out  # and before it


def test_the_startup_benchmark_counts_the_main_threads_instructions_to_the_first_answer_under_callgrind() -> None:
    out = _run("startup.py", "--runs", "1", "--top", "1", "--callgrind")
    assert "callgrind: serve's main thread to its first accepted JoinGroup" in out and "M instructions" in out


def test_the_kip848_scale_benchmark_prints_the_core_exponents_and_the_emulator_figures() -> None:
    out = _run("kip848_scale.py", "--members", "20,40", "--partitions", "60", "--heartbeat-seconds", "0.5",
               "--plain-heartbeats", "500", "--skip-broker")
    assert "growth exponent N=20 -> N=40" in out and "plain heartbeat" in out
    assert out.count("emulator  N=") == 2 and "reconciled in" in out and "heartbeats/s" in out


@pytest.mark.broker
def test_the_kip848_scale_benchmark_compares_the_emulator_with_a_kafka_4_broker() -> None:
    out = _run("kip848_scale.py", "--members", "10,20", "--partitions", "30", "--heartbeat-seconds", "0.5",
               "--skip-core", timeout=600)
    assert out.count("kafka     N=") == 2 and "ratio N=   20" in out


@pytest.mark.broker
def test_the_emulator_versus_broker_benchmark_prints_both_times_and_the_ratio() -> None:
    out = _run("emulator_vs_broker.py", "--runs", "1", timeout=600)
    assert "ratio" in out.lower()


def test_the_sasl_listeners_benchmark_prints_reconnection_rates_and_logins_per_second() -> None:
    out = _run("sasl_listeners.py", "--seconds", "1", "--logins", "3")
    assert "SASL consumer on a PLAINTEXT listener: emulator" in out and "connections/s" in out
    assert out.count("logins/s") == 6


def test_the_misbehaviour_benchmark_prints_the_canary_latencies_and_the_server_rss_per_scenario() -> None:
    # A 6 s canary session: this only shows the script runs, on however busy a CI machine
    out = _run("misbehaviour.py", "--topics", "2000", "--pipelined", "50", "--clients", "2", "--window-seconds", "0.3",
               "--session-ms", "6000")
    for scenario in ("none", "metadata-huge", "pipeline-1", "pipeline-N", "trickle", "idle"):
        line = next(line for line in out.splitlines() if line.startswith(scenario + " "))
        assert "p99" in line and "rebalances 0 lost 0 errors 0" in line and "peak" in line, line


def test_the_soak_benchmark_prints_rss_and_the_slope_and_fails_when_memory_grows_past_its_bound() -> None:
    args = ("soak.py", "--generations", "120", "--report-every", "40", "--warmup", "40", "--groups", "2",
            "--consumer-groups", "1")
    out = _run(*args, "--max-growth-mib", "1e9")
    assert "generations" in out and "RSS" in out and "KiB per 1,000 generations" in out and "recording:" in out
    failed = subprocess.run([sys.executable, str(ROOT / "benchmarks" / args[0]), *args[1:], "--max-growth-mib", "-1"],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert failed.returncode == 1 and "keeps growing" in failed.stderr


def test_the_durability_benchmark_prints_each_mode_and_the_restart_time() -> None:
    out = _run("durability.py", "--records", "200", "--sequential", "5", "--runs", "1")
    assert "memory only" in out and "--data-dir --flush-messages 1" in out
    assert out.count("sequential acks=all p50") == 3 and out.count("restart on the directory") == 2


def test_the_acl_authorizer_benchmark_prints_decision_rates_and_metadata_times() -> None:
    out = _run("acl_authorizer.py", "--acls", "100,1000", "--checks", "2000", "--topics", "50")
    assert out.count("decisions/s") == 2 and "no authorizer" in out and out.count("shown") == 3


def test_the_consumer_compaction_benchmark_prints_the_group_log_size_and_rss_per_report() -> None:
    out = _run("consumer_compaction.py", "--cycles", "20", "--report-every", "10", "--steady", "2",
               "--compaction-kib", "16")
    assert out.count("records a reload folds    7") == 2 and "group log" in out and "RSS" in out


def test_the_join_race_benchmark_prints_the_share_of_one_generation_runs() -> None:
    out = _run("join_race.py", "--runs", "2", "--spacings", "0,1", "--join-race", "together")
    assert "emulator (together): spacing 0 ms: together 2/2" in out and "spacing 1 ms: together 2/2" in out


def test_the_peer_kfake_benchmark_prints_the_emulator_and_kfake_side_by_side() -> None:
    out = _run("peer_kfake.py", "--records", "200", "--runs", "1", timeout=900)
    words = " ".join(out.split())  # the columns are padded
    assert "emulator produce 200 records median" in words and "kfake produce 200 records median" in words
    assert words.count("join + consume 200 median") == 2


def test_the_loop_stalls_benchmark_prints_the_longest_stall_per_api() -> None:
    out = _run("loop_stalls.py", "--entries", "300")
    lines = [line for line in out.splitlines() if "loop stall max" in line]
    assert len(lines) == len(BIG_REQUESTS) and all(
        "entries      300" in line and "p99" in line and "longest turn CPU" in line for line in lines), out


def test_the_codec_benchmark_prints_both_codecs_figures_and_the_ratio() -> None:
    out = _run("codec.py", "--iterations", "20", "--repeats", "1",
               "--seam", "tests.unit.protocol.kafka_python_codec", "--seam", "rebalance_lab.protocol.codec")
    assert "JoinGroup v9, 100 members (round trip)" in out and "Fetch v13 response, 1 MB" in out
    assert out.count("us/op") == 10 and "ratio rebalance_lab.protocol.codec" in out


def test_the_replay_cpu_split_benchmark_prints_each_stage_for_both_checkouts_and_the_stages_add_up(
        tmp_path: Path) -> None:
    out = _run("replay_cpu_split.py", "--events", "3000", "--groups", "20", "--work", str(tmp_path),
               "--compare", str(ROOT))
    runs = [line for line in out.splitlines() if line.startswith("run 1 ")]
    assert len(runs) == 2 and all("0 failed" in line and "us/event" in line for line in runs), out
    for stage in ("assignor", "subscriptions", "what-if rest", "fold", "partition moves", "model"):
        assert out.count(f"    {stage} ") == 4, out  # each run's split, then each checkout's median share
    shares = [float(line.split("CPU-s")[1].split("%")[0]) for line in out.splitlines()
              if line.startswith("    ") and "us/event" in line]
    assert abs(sum(shares[:6]) - 100) < 0.5 and shares[0] > 0, out  # the split is exclusive; an assignor ran
