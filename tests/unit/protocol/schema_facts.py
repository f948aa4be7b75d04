"""Make ``rebalance_lab/protocol/schemas/kafka_messages.json`` from Kafka 4.4.0's message schemas.

Kafka's ``kafka-clients`` jar (Maven Central, in ``~/.m2`` once ``./dev test`` has fetched the Java oracle's
artifacts) carries its message definitions as ``common/message/*.json``. The runtime codec needs only their
facts: field names, types, versions, nullable and tagged versions, tags and defaults. This module keeps
exactly those (no ``about`` prose, no comments) for the APIs the codec serves, in one file.

    .venv/bin/python -m tests.unit.protocol.schema_facts    # rewrite the file
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

JAR = Path.home() / ".m2/repository/org/apache/kafka/kafka-clients/4.4.0/kafka-clients-4.4.0.jar"
OUTPUT = Path(__file__).resolve().parents[3] / "rebalance_lab/protocol/schemas/kafka_messages.json"

# The request/response pairs the codec serves, by Kafka's message name (without Request/Response). 68 and 69
# come from our own schema files (rebalance_lab/protocol/schemas), so they are not taken from the jar.
MESSAGES = (
    "Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch", "FindCoordinator", "JoinGroup",
    "Heartbeat", "LeaveGroup", "SyncGroup", "DescribeGroups", "ListGroups", "SaslHandshake", "ApiVersions",
    "CreateTopics", "DeleteTopics", "DeleteRecords", "InitProducerId", "OffsetForLeaderEpoch", "AddPartitionsToTxn",
    "AddOffsetsToTxn", "EndTxn", "WriteTxnMarkers", "TxnOffsetCommit", "DescribeAcls", "CreateAcls", "DeleteAcls",
    "DescribeConfigs", "AlterConfigs", "AlterReplicaLogDirs", "DescribeLogDirs", "SaslAuthenticate",
    "CreatePartitions", "DeleteGroups", "ElectLeaders", "IncrementalAlterConfigs", "AlterPartitionReassignments",
    "ListPartitionReassignments", "OffsetDelete", "DescribeClientQuotas", "AlterClientQuotas",
    "DescribeUserScramCredentials", "AlterUserScramCredentials", "DescribeQuorum", "UpdateFeatures",
    "DescribeCluster", "DescribeProducers", "DescribeTransactions", "ListTransactions", "ListConfigResources",
    "DescribeTopicPartitions",
)
# Versions Kafka 4.4.0 defines beyond those the handlers were written and tested for: not served yet.
SERVED_MAX = {"ApiVersions": 4, "TxnOffsetCommit": 5, "DeleteGroups": 2}

_FIELD_KEYS = ("name", "type", "versions", "nullableVersions", "taggedVersions", "tag", "default",
               "flexibleVersions", "fields")
_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)


def _field(raw: dict[str, Any]) -> dict[str, Any]:
    kept = {key: raw[key] for key in _FIELD_KEYS if key in raw}
    if "fields" in kept:
        kept["fields"] = [_field(f) for f in kept["fields"]]
    return kept


def _message(raw: dict[str, Any], served_max: int | None) -> dict[str, Any]:
    low, _, high = raw["validVersions"].partition("-")
    valid = raw["validVersions"] if served_max is None else f"{low}-{min(int(high or low), served_max)}"
    kept = {"apiKey": raw["apiKey"], "type": raw["type"], "name": raw["name"], "validVersions": valid,
            "flexibleVersions": raw["flexibleVersions"], "fields": [_field(f) for f in raw["fields"]]}
    if raw.get("commonStructs"):
        kept["commonStructs"] = [{"name": s["name"], "versions": s["versions"],
                                  "fields": [_field(f) for f in s["fields"]]} for s in raw["commonStructs"]]
    return kept


def facts(jar: Path = JAR) -> dict[str, Any]:
    """Every served message's facts, keyed by message name (``JoinGroupRequest``), in a stable order."""
    out: dict[str, Any] = {}
    with zipfile.ZipFile(jar) as archive:
        for base in MESSAGES:
            for kind in ("Request", "Response"):
                text = archive.read(f"common/message/{base}{kind}.json").decode()
                out[base + kind] = _message(json.loads(_COMMENT.sub("", text)), SERVED_MAX.get(base))
    return out


def render(jar: Path = JAR) -> str:
    header = {"_source": "Kafka 4.4.0 kafka-clients common/message/*.json, facts only "
                         "(tests/unit/protocol/schema_facts.py)"}
    entries = {**header, **facts(jar)}
    lines = [f"{json.dumps(name)}:{json.dumps(value, separators=(',', ':'))}" for name, value in entries.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"  # one message a line: a schema change is a one-line diff


if __name__ == "__main__":
    OUTPUT.write_text(render())
    print(f"wrote {OUTPUT} ({OUTPUT.stat().st_size} bytes)")
