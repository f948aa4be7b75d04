"""The delay-0 join race: when an expired timer runs, relative to the requests already arriving.

On a real broker no timer runs at the instant it expires. Kafka 4.4.0's group coordinator runs on the
``CoordinatorRuntime``: ``CoordinatorTimerImpl.schedule`` adds a ``TimerTask`` to a ``SystemTimer``
(a timing wheel of 1 ms ticks advanced by the ``SystemTimerReaper`` thread); a task that is already due,
as a zero ``group.initial.rebalance.delay.ms`` makes it, is handed to the timer's executor thread, whose
``run`` schedules the expiration as a write operation (a ``CoordinatorWriteEvent`` queued last) behind
every event already queued for the group's partition. Kafka 3.9's Scala coordinator does the same through
``DelayedOperationPurgatory``: the ``InitialDelayedJoin`` goes to the same kind of ``SystemTimer``, and its
``onComplete`` runs on the executor thread and must take the group's lock, which the request handler
threads serving the other rejoins contend for. Either way the first rejoin's zero delay expires some
tens of microseconds to a few milliseconds later (thread hand-offs, a stale wheel clock that sends the
task through the reaper first, a loaded machine), and the other members' rejoins that reach the
coordinator in that window join the same generation; a rejoin that got in sets ``newMemberAdded`` and the
expiration schedules another zero delay (``tryCompleteInitialRebalanceElseSchedule``), another window.

The emulator decides this with ``GroupConfig.join_race``:

* ``sampled`` (default): an expired timer runs only after an *expiration latency* drawn from a seeded
  distribution fitted to measurements on real 4.4.0 and 3.9.2 brokers (tests/race/, FIDELITY.md), while the
  loop keeps serving the requests that arrive: requests received before the expiration's time are handled
  before it, those received after it after it (the shell fires a timer already due when bytes arrive, as the
  loop's own timer turn can come up to its 1 ms poll resolution late); a timer set while timers run waits
  for the next turn (it went through the executor and the queue again);
* ``separate``: the expiration runs at once, at the end of the request that made it due (the emulator's
  behaviour before issue 18): a zero delay always completes generation 1 with the first rejoin alone;
* ``together``: a zero initial delay that expires while members that were handed an id (KIP-394's
  MEMBER_ID_REQUIRED) have not joined yet waits for them (at most the rest of the rebalance timeout, as
  the delayed join itself), so members that start together always share generation 1.

On a manual clock there is no wall time to draw a latency in: ``sampled`` acts as ``separate`` there.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

SAMPLED, SEPARATE, TOGETHER = "sampled", "separate", "together"

# The model's two numbers, fitted so that the emulator's shares match raw-protocol runs on Kafka 4.4.0 and 3.9.2
# on an idle 2-core machine (tests/race/, FIDELITY.md; brokers: all three rejoins of a burst in generation 1 in
# 30-32 runs of 40, 0.25 ms apart in 7-10, 0.5 ms apart in 0-1, 1 ms apart never): how often the expiration
# overtakes the rejoins already received (the executor queued it before the request handler threads queued
# them), and the mean of the exponential latency otherwise, from the request that made the timer due to the
# expiration. An earlier fit (three numbers, most expirations on the loop's next turn) was made with a client
# that busy-waited between rejoins; traced, that client held the core the kernel woke the emulator on, so the
# emulator read the first rejoin late and the fit compensated for the scheduler (FIDELITY.md).
OVERTAKE_SHARE = 0.05
MEAN_LATENCY_MS = 0.25
MAX_LATENCY_MS = 20.0  # a cap: even a loaded broker's executor runs the task within a few ms


def effective_mode(mode: str, manual_clock: bool) -> str:
    """The mode the coordinator runs in: ``sampled`` needs wall time, so a manual clock gets ``separate``."""
    return SEPARATE if mode == SAMPLED and manual_clock else mode


@dataclass
class ExpirationLatency:
    """Seeded draws: does an expiration overtake the requests in flight, else how late does it run."""

    rng: random.Random
    overtake_share: float = OVERTAKE_SHARE
    mean_ms: float = MEAN_LATENCY_MS

    @classmethod
    def seeded(cls, seed: int | None) -> ExpirationLatency:
        return cls(random.Random() if seed is None else random.Random(f"rebalance-lab-expiration-latency-{seed}"))

    def overtakes(self) -> bool:
        """Whether a timer a request made due runs at once, before the requests already received."""
        return self.rng.random() < self.overtake_share

    def sample_s(self) -> float:
        """How long after its deadline the expiration runs, letting the requests received meanwhile in first."""
        return min(self.rng.expovariate(1.0 / self.mean_ms), MAX_LATENCY_MS) / 1000.0


def no_latency() -> float:
    """The expiration latency of ``separate`` and ``together``: none."""
    return 0.0
