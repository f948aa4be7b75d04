"""The codec's facts file is exactly what Kafka 4.4.0's own message schemas say (see ``schema_facts.py``)."""

from __future__ import annotations

import subprocess

from tests.unit.protocol import schema_facts


def _jar() -> None:
    """kafka-clients 4.4.0 from Maven Central into ``~/.m2`` if the Java oracle's build has not put it there."""
    if not schema_facts.JAR.exists():
        subprocess.run(["mvn", "-q", "-B", "dependency:get", "-Dartifact=org.apache.kafka:kafka-clients:4.4.0",
                        "-Dtransitive=false"], check=True, timeout=600)


def test_the_shipped_facts_are_what_kafka_4_4_0s_schemas_give() -> None:
    _jar()
    assert schema_facts.OUTPUT.read_text() == schema_facts.render(), (
        "rebalance_lab/protocol/schemas/kafka_messages.json is stale: run python -m tests.unit.protocol.schema_facts")


def test_the_facts_keep_no_prose() -> None:
    text = schema_facts.OUTPUT.read_text()
    assert '"about"' not in text and "//" not in text
