"""The Java AdminClient (kafka-clients 4.4.0) calls the admin APIs against the emulator; a share-group call
fails at once with the client's final UnsupportedVersionException (share groups are not served)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from rebalance_lab.api import Emulator
from tests.support import kafka_tools

PROGRAM = Path(__file__).resolve().parent / "java" / "AdminCalls.java"


def test_the_java_admin_client_alters_describes_deletes_elects_and_reassigns() -> None:
    with Emulator(port=0) as emu:
        started = time.monotonic()
        done = subprocess.run(["java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", kafka_tools.classpath(), str(PROGRAM),
                               emu.bootstrap_servers, "java-admin"], capture_output=True, text=True, timeout=180,
                              check=False)
        elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if ": " in line]
    assert lines == [
        "describeConfigs: 98765 DYNAMIC_TOPIC_CONFIG delete,compact",
        "badConfig: InvalidConfigurationException Invalid value soon for configuration retention.ms: "
        "Not a number of type LONG",
        "describeCluster: 1 nodes, controller 0, cluster id set true",
        "describeTopics: 2 partitions",
        "deleteRecords: done",
        "electLeaders: ElectionNotNeededException",
        "alterPartitionReassignments: done, in progress 0",
        "describeShareGroups: UnsupportedVersionException",
    ]
    assert elapsed < 60  # nothing waited for a timeout
