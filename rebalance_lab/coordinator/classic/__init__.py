"""The classic group coordinator as a sans-I/O core (spec/coordinator.md §3-§12, §15-§16).

Nothing here imports asyncio or sockets or reads a clock: every entry point of
:class:`~rebalance_lab.coordinator.classic.coordinator.GroupCoordinator` takes ``now_ms``
and returns :class:`~rebalance_lab.coordinator.effects.Effects` (replies, including
replies to parked requests of other members, and records).
"""
