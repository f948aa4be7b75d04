"""Run the evidence scenario on a real broker and keep what production would have: server.log and the offsets dump.

``python -m tests.replay_evidence.capture OUT_DIR [--flavor 4|3]`` writes ``server.log``,
``offsets.dump.txt`` and ``truth.json`` (the clients' record) for a look by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tests.replay_evidence import scenario
from tests.support.kafka_broker import BrokerPool, KafkaBroker
from tests.support.kafka_tools import copy_from_container, dump_log

OFFSETS_SEGMENT = "/tmp/kraft-combined-logs/__consumer_offsets-0/00000000000000000000.log"


@dataclass
class Evidence:
    flavor: str
    group: str
    truth: scenario.Truth
    server_log: str
    dump: str

    def write(self, out: Path) -> dict[str, Path]:
        out.mkdir(parents=True, exist_ok=True)
        paths = {"broker-log": out / "server.log", "dump-log": out / "offsets.dump.txt"}
        paths["broker-log"].write_text(self.server_log)
        paths["dump-log"].write_text(self.dump)
        (out / "truth.json").write_text(json.dumps(asdict(self.truth), indent=1, default=str))
        return paths


def _create_topic(bootstrap: str, topic: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin: Any = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="replay-evidence")
    try:
        admin.create_topics([NewTopic(topic, num_partitions=scenario.TOPIC_PARTITIONS, replication_factor=1)])
        admin.wait_for_topics([topic], timeout_ms=30000)
    finally:
        admin.close()


def dump_offsets(broker: KafkaBroker) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        target = Path(scratch) / Path(OFFSETS_SEGMENT).parent.name
        target.mkdir()
        return dump_log(copy_from_container(broker.container, OFFSETS_SEGMENT, target))


def broker_lines(log: str) -> str:
    """The broker's own lines (the start script's output left out), as in its server.log."""
    return "".join(line for line in log.splitlines(keepends=True) if line.startswith(("[", "\t", " ")))


def capture(broker: KafkaBroker, flavor: str) -> Evidence:
    suffix = uuid.uuid4().hex[:8]
    group, topic = f"evidence-{flavor}-{suffix}", f"evidence-{suffix}"
    _create_topic(broker.bootstrap, topic)
    truth = scenario.run(broker.bootstrap, group, topic)
    time.sleep(1.0)  # the last records and lines reach the log
    return Evidence(flavor, group, truth, broker_lines(broker.logs()), dump_offsets(broker))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--flavor", default="4", choices=("4", "3"))
    args = parser.parse_args(argv)
    pool = BrokerPool()
    try:
        evidence = capture(pool.get(args.flavor), args.flavor)
    finally:
        pool.close()
    evidence.write(args.out)
    print(f"wrote {args.out} (group {evidence.group})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
