"""Initial rebalance delay (spec §6, §18.2; trap §16.7; flavor differences §15 #3-#4)."""

from __future__ import annotations

import pytest

from rebalance_lab.config import Flavor
from rebalance_lab.protocol.errors import ErrorCode

from .group_context import GroupContext

E = ErrorCode


@pytest.mark.parametrize("flavor", list(Flavor))
def test_new_member_during_initial_delay_extends_it(flavor: Flavor) -> None:  # 18.2 #12
    ctx = GroupContext(flavor)
    a = ctx.join(version=3, rebalance_ms=9000)
    ctx.sleep(2999)
    b = ctx.join(version=3, rebalance_ms=9000)
    ctx.sleep(4502 - 2999)
    assert not a.done and not b.done
    ctx.sleep(6000 - 4502 - 1)
    assert not a.done
    ctx.sleep(1)
    assert a.error is E.NONE and b.error is E.NONE
    assert a.result.generation_id == b.result.generation_id == 1


@pytest.mark.parametrize("flavor", list(Flavor))
def test_initial_delay_extension_stops_at_the_rebalance_timeout(flavor: Flavor) -> None:  # 18.2 #13
    ctx = GroupContext(flavor)
    calls = [ctx.join(version=3, rebalance_ms=6000) for _ in range(2)]
    ctx.sleep(3001)
    calls.append(ctx.join(version=3, rebalance_ms=6000))
    ctx.sleep(6000 - 3001 - 1)
    assert not any(c.done for c in calls)
    ctx.sleep(1)
    assert all(c.error is E.NONE and c.result.generation_id == 1 for c in calls)


def test_initial_delay_longer_than_the_rebalance_timeout_is_not_capped() -> None:  # 18.2 #14, trap 7
    ctx = GroupContext()
    a = ctx.join(version=3, rebalance_ms=1000, session_ms=1000)
    ctx.sleep(2999)
    assert not a.done
    ctx.sleep(1)
    assert a.error is E.NONE


def test_zero_initial_delay_completes_the_first_join_immediately() -> None:
    ctx = GroupContext(delay_ms=0)
    a = ctx.join(version=3)
    assert not a.done  # the zero-length timer fires on the next timer pass
    ctx.sleep(0)
    assert a.error is E.NONE


def test_continuous_arrivals_extend_in_delay_steps_up_to_the_rebalance_timeout() -> None:  # §6.2
    ctx = GroupContext()
    first = ctx.join(version=3, rebalance_ms=10_000)
    for _ in range(3):
        ctx.sleep(2000)
        ctx.join(version=3, rebalance_ms=10_000)
        ctx.sleep(1000)
    assert ctx.now == 9000 and not first.done
    ctx.join(version=3, rebalance_ms=10_000)
    ctx.sleep(999)
    assert not first.done
    ctx.sleep(1)
    assert first.error is E.NONE


def _restart_empty_group(ctx: GroupContext) -> None:
    """A group that was Stable and emptied (generation >= 1) gets two members again."""
    from rebalance_lab.coordinator.classic.messages import LeaveMember

    [m] = ctx.stable_group(1, rebalance_ms=9000)
    ctx.leave(LeaveMember(m))
    assert ctx.state() == "Empty" and ctx.view().generation_id == 2


def test_java_extends_the_initial_delay_of_a_group_that_emptied_before() -> None:  # §15 #3
    ctx = GroupContext(Flavor.KAFKA_4)
    _restart_empty_group(ctx)
    a = ctx.join(version=3, rebalance_ms=9000)
    ctx.sleep(2000)
    ctx.join(version=3, rebalance_ms=9000)
    ctx.sleep(1000)
    assert not a.done  # extended at the first expiry
    ctx.sleep(3000)
    assert a.error is E.NONE


def test_scala_does_not_extend_the_initial_delay_after_generation_zero() -> None:  # §15 #3
    ctx = GroupContext(Flavor.KAFKA_3)
    _restart_empty_group(ctx)
    a = ctx.join(version=3, rebalance_ms=9000)
    ctx.sleep(2000)
    ctx.join(version=3, rebalance_ms=9000)
    ctx.sleep(1000)
    assert a.error is E.NONE and a.result.generation_id == 3




def test_java_completes_at_once_when_a_pending_member_expires_during_the_initial_delay() -> None:  # §15 #4
    ctx = GroupContext(Flavor.KAFKA_4)
    a = ctx.join(version=3, rebalance_ms=60_000)
    ctx.join(version=4, session_ms=1000)
    ctx.sleep(1000)
    assert a.done and a.result.generation_id == 1


def test_scala_waits_for_the_delay_when_a_pending_member_expires_during_it() -> None:  # §15 #4
    ctx = GroupContext(Flavor.KAFKA_3)
    a = ctx.join(version=3, rebalance_ms=60_000)
    ctx.join(version=4, session_ms=1000)
    ctx.sleep(1000)
    assert not a.done
    ctx.sleep(2000)
    assert a.error is E.NONE


def test_rejoin_during_the_initial_delay_does_not_complete_the_join_early() -> None:  # §6.1 step 3
    ctx = GroupContext()
    first = ctx.join(version=4)
    member_id = first.result.member_id
    call = ctx.join(member_id, version=4)
    again = ctx.join(member_id, version=4)
    ctx.sleep(2999)
    assert not call.done and not again.done
    ctx.sleep(1)
    assert again.error is E.NONE
    assert not call.done  # orphaned by the duplicate join (trap §16.10)
