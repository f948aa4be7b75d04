"""Replay of production evidence (see replay/cli.py)."""

from rebalance_lab import compiled  # noqa: F401  (first: loads the compiled build when usable)
