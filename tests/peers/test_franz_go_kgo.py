"""franz-go's own kgo integration suite, run against the emulator (issue 18, item 4).

The kgo package's ``*_test.go`` files ship inside the franz-go Go module, so ``go test
github.com/twmb/franz-go/pkg/kgo`` from tests/go/kgo (a go.mod of ours pinning franz-go v1.22.2, with
go.sum) builds and runs exactly that version's tests. They read (kgo/helpers_test.go):

- ``KGO_SEEDS``: the brokers (here: an emulator with 3 brokers, flavor kafka-4; the suite creates
  topics with replication factor ``KGO_TEST_RF``, 3 by default);
- ``KGO_TEST_RECORDS``: records per produce/consume ETL chain (500000 by default; bounded here);
- ``KGO_TEST_SCRAM`` / ``KGO_TEST_SCRAM_SEEDS``: a SCRAM-SHA-256 user and listener (an additional
  SASL_PLAINTEXT listener of the same emulator), so the two SCRAM tests run instead of skipping.

The run must be green except what FIDELITY.md ("Client suites") names: the share-group tests skip
themselves because the emulator does not advertise ShareFetch/ShareAcknowledge v2 (share groups are not
emulated). Every other skip or failure fails this test, with the Go test's own output.

The Go toolchain is required (no skip); the module comes from GOMODCACHE or the Go proxy. A cold build
of the kgo test binary takes minutes on a loaded machine; after that the Go build cache makes it instant.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from rebalance_lab.api import Emulator
from tests.peers.gotest import GoTestRun, parse

pytestmark = pytest.mark.clients

GO_MODULE = Path(__file__).resolve().parents[1] / "go" / "kgo"
KGO_PACKAGE = "github.com/twmb/franz-go/pkg/kgo"
RECORDS = 2000  # per ETL chain; kgo's default is 500000
SCRAM_USER, SCRAM_PASSWORD = "kgo", "kgo-secret"

# kgo tests that skip themselves against a broker without stable share groups (ShareFetch/ShareAcknowledge v2,
# Kafka 4.2+): FIDELITY.md lists share groups as not emulated.
SHARE_GROUP_TESTS = {
    "TestShareGroup", "TestShareGroupETL", "TestShareGroupAckOnClose", "TestShareGroupOffsetsAdmin",
    "TestConsumeRegexShareSkipsInternal",
}
# Failures allowed while a named feature is unfinished (FIDELITY.md "Client suites" says why); empty when none.
EXCLUDED_FAILURES: dict[str, str] = {}


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    with Emulator(port=0, brokers=3, initial_rebalance_delay_ms=0, additional_listeners=("SASL_PLAINTEXT:0",),
                  sasl_mechanisms=("SCRAM-SHA-256",), users=(f"{SCRAM_USER}:{SCRAM_PASSWORD}",)) as emu:
        yield emu


def _go_test(emulator: Emulator) -> GoTestRun:
    go = shutil.which("go")
    assert go is not None, "the Go toolchain is required for franz-go's kgo suite (https://go.dev/dl/)"
    env = dict(os.environ, GOFLAGS="-mod=mod", KGO_SEEDS=emulator.bootstrap_servers, KGO_TEST_RECORDS=str(RECORDS),
               KGO_LOG_LEVEL="none", KGO_TEST_SCRAM=f"{SCRAM_USER}:{SCRAM_PASSWORD}:256",
               KGO_TEST_SCRAM_SEEDS=emulator.bootstrap_servers_of("SASL_PLAINTEXT"))
    done = subprocess.run([go, "test", "-json", "-count=1", "-timeout=300s", KGO_PACKAGE], cwd=GO_MODULE, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    run = parse(done.stdout)
    run.package_output.append(done.stderr)
    return run


def _report(run: GoTestRun, tests: set[str]) -> str:
    return "\n".join(f"--- {name} {run.failed_subtests.get(name, [])}\n{run.tail(name)}" for name in sorted(tests))


def test_franz_go_kgo_integration_suite_is_green_against_the_emulator(emulator: Emulator) -> None:
    run = _go_test(emulator)
    assert run.outcomes, "go test ran nothing: " + "".join(run.package_output)[-3000:]
    print(f"kgo suite: {len(run.tests_with('pass'))} passed, {len(run.tests_with('fail'))} failed, "
          f"{len(run.tests_with('skip'))} skipped")
    failed = run.tests_with("fail") - set(EXCLUDED_FAILURES)
    assert not failed, _report(run, failed)
    assert run.tests_with("skip") == SHARE_GROUP_TESTS, _report(run, run.tests_with("skip") ^ SHARE_GROUP_TESTS)
    assert {"TestGroupETL", "TestTxnEtl", "TestSCRAMAuth", "TestSCRAMAuthBadCredentials"} <= set(run.outcomes)
    if not EXCLUDED_FAILURES:
        assert run.package_action == "pass", "".join(run.package_output)[-3000:]


def test_a_go_test_json_stream_is_read_per_top_level_test() -> None:
    stream = "\n".join([
        '{"Action":"run","Test":"TestA"}', '{"Action":"output","Test":"TestA/x","Output":"boom\\n"}',
        '{"Action":"fail","Test":"TestA/x"}', '{"Action":"fail","Test":"TestA"}',
        '{"Action":"skip","Test":"TestB"}', "# build noise", '{"Action":"fail"}',
    ])
    run = parse(stream)
    assert run.outcomes == {"TestA": "fail", "TestB": "skip"}
    assert run.failed_subtests == {"TestA": ["TestA/x"]} and run.tail("TestA") == "boom\n"
    assert run.package_action == "fail" and run.package_output == ["# build noise\n"]
