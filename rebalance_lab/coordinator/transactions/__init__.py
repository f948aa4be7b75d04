"""The transaction coordinator (KIP-98, KIP-360, KIP-447): sans-I/O state machine, its service and records."""
