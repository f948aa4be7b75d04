"""Everything one emulator process serves: the cluster, the data plane, the groups.

The asyncio shell (``server.py``) owns sockets and one timer handle; everything
it dispatches to lives here and is free of I/O. Components with timers register
as :class:`Timed`; the shell asks for the earliest deadline after each request
and calls :meth:`World.fire_timers` when it arrives (or when a test advances a
manual clock).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator.clock import Clock, ManualClock, SystemClock
from rebalance_lab.coordinator.cluster import BrokerInfo, ClusterMetadata
from rebalance_lab.protocol.versions import VersionTable
from rebalance_lab.security.authorizer import authorizer_for


class Timed(Protocol):
    def next_deadline(self) -> int | None: ...

    def fire_timers(self, now_ms: int) -> None: ...


@dataclass
class BrokerNode:
    """One emulated broker: its identity and whether it is up."""

    info: BrokerInfo
    up: bool = True

    @property
    def node_id(self) -> int:
        return self.info.node_id


class World:
    def __init__(self, config: EmulatorConfig, brokers: list[BrokerInfo], clock: Clock | None = None) -> None:
        self.config = config
        self.clock: Clock = clock or (ManualClock() if config.manual_clock else SystemClock())
        self.cluster = ClusterMetadata(config, brokers)
        self.nodes = {b.node_id: BrokerNode(b) for b in brokers}
        self.versions = VersionTable({})
        self.services: dict[str, Any] = {}
        # Kafka's authorizer.class.name: None (no authorizer, the ACL APIs answer SECURITY_DISABLED) without an ACL file
        self.authorizer = authorizer_for(config.acl_file, config.super_users, config.allow_everyone_if_no_acl_found)
        self._timed: list[Timed] = []
        self._bounds: list[Callable[[], int | None]] = []  # each component's deadline_bound, or its next_deadline
        # How long after its deadline the shell runs a timer turn (seconds): 0 unless the group service
        # models a broker's expiration latency (coordinator/join_race.py, join_race="sampled").
        self.timer_latency_s: Callable[[], float] = lambda: 0.0
        self._wakers: list[Callable[[], None]] = []

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def register_timed(self, component: Timed) -> None:
        self._timed.append(component)
        self._bounds.append(getattr(component, "deadline_bound", component.next_deadline))

    def on_wake(self, waker: Callable[[], None]) -> None:
        """The shell re-arms its timer when a component's deadlines change outside a request."""
        self._wakers.append(waker)

    def wake(self) -> None:
        for waker in self._wakers:
            waker()

    def deadline_bound(self) -> int | None:
        """At most the earliest deadline of any component, None only when none is pending: what the shell arms its
        timer at after every request (a timer armed early fires nothing and arms again; timers.py)."""
        return _earliest(self._bounds)

    def next_deadline(self) -> int | None:
        """The earliest deadline of any component."""
        return _earliest([component.next_deadline for component in self._timed])

    def timer_delay_s(self, deadline: int) -> float:
        """Seconds until a shell runs the timers due at ``deadline``: a broker runs an expired timer only once its
        executor thread has queued the expiration behind the requests already received (coordinator/join_race.py),
        so a shell keeps serving them meanwhile."""
        return max(0.0, (deadline - self.now_ms()) / 1000.0) + self.timer_latency_s()

    def fire_timers(self, now_ms: int | None = None) -> None:
        now = self.now_ms() if now_ms is None else now_ms
        for component in self._timed:
            component.fire_timers(now)


def _earliest(deadlines: list[Callable[[], int | None]]) -> int | None:
    """The earliest of what ``deadlines`` give (None: no deadline), no list made of them."""
    earliest = None
    for deadline_of in deadlines:
        deadline = deadline_of()
        if deadline is not None and (earliest is None or deadline < earliest):
            earliest = deadline
    return earliest
