"""Kafka message schemas for the codec (:mod:`rebalance_lab.protocol.codec`).

``kafka_messages.json`` holds the facts (field names, types, versions, nullable and tagged versions, tags,
defaults) of Kafka 4.4.0's ``common/message/*.json`` for every API the codec serves, one message a line,
made by ``tests/unit/protocol/schema_facts.py`` from the kafka-clients 4.4.0 jar (no prose). The
ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) files are our own, written field by field
(spec/kip848.md §1) in Kafka's JSON schema format; ``tests/unit/protocol/test_codec_vs_kio.py`` proves them
byte-identical to kio, an independent codec generated from Kafka's published schemas.
"""
