"""Kafka message schemas the codec lacks, in Kafka's own JSON schema format.

kafka-python 3.0.12 ships no ConsumerGroupHeartbeat (68) or ConsumerGroupDescribe (69);
these files describe them field by field (spec/kip848.md §1) for kafka-python's schema
loader, so they are encoded and decoded by the same generated codec as every other API.
``tests/unit/protocol/test_codec_vs_kio.py`` proves them byte-identical to kio's, an
independent codec generated from Kafka's published schemas.
"""
