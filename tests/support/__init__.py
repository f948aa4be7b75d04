"""Test support that is not part of the rebalance_lab package: container engine, real brokers."""
