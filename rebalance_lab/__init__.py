"""rebalance-lab: a protocol-level emulator of Apache Kafka's consumer group coordinator."""

__version__ = "0.1.0"
