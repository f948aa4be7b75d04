"""The timer queue moves a deadline later without a heap push (issue 22: a heartbeat re-arms its member's
session timer), and still fires exactly what a queue pushing on every schedule fires, in the same order."""

from __future__ import annotations

import heapq
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_lab.coordinator.timers import TimerQueue


class PushEverySchedule:
    """The reference: every schedule pushes; stale heap entries are skipped when they surface."""

    def __init__(self) -> None:
        self.entries: dict[str, tuple[int, int, int]] = {}
        self.heap: list[tuple[int, int, str]] = []
        self.seq = itertools.count()

    def schedule(self, key: str, at: int, payload: int) -> None:
        seq = next(self.seq)
        self.entries[key] = (at, seq, payload)
        heapq.heappush(self.heap, (at, seq, key))

    def cancel(self, key: str) -> None:
        self.entries.pop(key, None)

    def pop_due(self, now: int) -> list[tuple[str, int, int]]:
        due = []
        while self.heap:
            at, seq, key = self.heap[0]
            entry = self.entries.get(key)
            if entry is None or entry[1] != seq:
                heapq.heappop(self.heap)
                continue
            if at > now:
                break
            heapq.heappop(self.heap)
            due.append((key, at, self.entries.pop(key)[2]))
        return due

    def next_deadline(self) -> int | None:
        self.pop_due(-(2**62))  # drops stale tops only
        return self.heap[0][0] if self.heap else None


OPS = st.lists(st.one_of(
    st.tuples(st.just("schedule"), st.sampled_from("abcde"), st.integers(0, 40)),
    st.tuples(st.just("cancel"), st.sampled_from("abcde"), st.just(0)),
    st.tuples(st.just("advance"), st.just(""), st.integers(0, 15)),
), max_size=120)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_random_schedules_cancels_and_advances_fire_as_a_queue_pushing_on_every_schedule(
        ops: list[tuple[str, str, int]]) -> None:
    queue: TimerQueue[str, int] = TimerQueue()
    reference = PushEverySchedule()
    now = 0
    for number, (kind, key, value) in enumerate(ops):
        if kind == "schedule":
            queue.schedule(key, now + value, number)
            reference.schedule(key, now + value, number)
        elif kind == "cancel":
            queue.cancel(key)
            reference.cancel(key)
        else:
            now += value
            assert [(d.key, d.at, d.payload) for d in queue.pop_due(now)] == reference.pop_due(now)
        bound, exact = queue.deadline_bound(), reference.next_deadline()
        assert (bound is None) == (exact is None) and (bound is None or exact is None or bound <= exact)
        assert queue.next_deadline() == exact
        assert {k: queue.deadline(k) for k in "abcde"} == {
            k: (reference.entries[k][0] if k in reference.entries else None) for k in "abcde"}


def test_a_timer_moved_later_over_and_over_keeps_one_heap_entry() -> None:
    queue: TimerQueue[str, None] = TimerQueue()
    for beat in range(1000):  # a member heartbeating every 3 s with a 45 s session
        queue.schedule("member", 45_000 + beat * 3_000, None)
    assert len(queue._heap) == 1
    assert queue.pop_due(45_000 + 998 * 3_000) == []
    assert [d.at for d in queue.pop_due(45_000 + 999 * 3_000)] == [45_000 + 999 * 3_000]
