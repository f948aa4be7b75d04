"""The sans-I/O fault plan: counts, filters, precedence; names of APIs and error codes."""

from __future__ import annotations

import pytest

from rebalance_lab.faults.plan import DelayRule, ErrorRule, FaultPlan, RequestInfo, api_key_of, error_code_of
from rebalance_lab.protocol.errors import ErrorCode

HEARTBEAT, JOIN = 12, 11


def hb(group: str = "g", member: str = "m1", broker: int = 0) -> RequestInfo:
    return RequestInfo(HEARTBEAT, broker, "client", group, member)


def test_an_error_rule_answers_exactly_the_next_n_matching_requests() -> None:
    plan = FaultPlan()
    plan.add_error(ErrorRule(HEARTBEAT, remaining=2, error=ErrorCode.REBALANCE_IN_PROGRESS))
    verdicts = [plan.decide(hb()).error for _ in range(3)]
    assert verdicts == [ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.REBALANCE_IN_PROGRESS, None]
    assert plan.errors == []


def test_requests_of_other_apis_groups_members_or_brokers_do_not_use_up_a_rule() -> None:
    plan = FaultPlan()
    plan.add_error(ErrorRule(HEARTBEAT, broker_id=0, group_id="g", member_id="m1", error=ErrorCode.NOT_COORDINATOR))
    for other in (RequestInfo(JOIN, 0, "c", "g", "m1"), hb(group="h"), hb(member="m2"), hb(broker=1)):
        assert plan.decide(other).untouched
    assert plan.decide(hb()).error is ErrorCode.NOT_COORDINATOR


def test_the_first_matching_error_rule_wins_and_the_next_waits_its_turn() -> None:
    plan = FaultPlan()
    plan.add_error(ErrorRule(HEARTBEAT, error=ErrorCode.NOT_COORDINATOR))
    plan.add_error(ErrorRule(HEARTBEAT, error=ErrorCode.ILLEGAL_GENERATION))
    assert [plan.decide(hb()).error for _ in range(3)] == [ErrorCode.NOT_COORDINATOR, ErrorCode.ILLEGAL_GENERATION,
                                                           None]


def test_latency_and_throttle_rules_add_up_and_rules_without_a_count_stay_until_cleared() -> None:
    plan = FaultPlan()
    plan.add_delay(DelayRule(None, remaining=None, delay_ms=100))
    plan.add_delay(DelayRule(HEARTBEAT, remaining=None, delay_ms=50))
    plan.add_delay(DelayRule(HEARTBEAT, remaining=1, delay_ms=30, throttle=True))
    first, second = plan.decide(hb()), plan.decide(hb())
    assert (first.delay_ms, first.throttle_ms) == (150, 30)
    assert (second.delay_ms, second.throttle_ms) == (150, 0)
    plan.clear()
    assert plan.decide(hb()).untouched


def test_a_rule_must_fire_at_least_once_and_a_delay_cannot_be_negative() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        FaultPlan().add_error(ErrorRule(HEARTBEAT, remaining=0))
    with pytest.raises(ValueError, match="negative"):
        FaultPlan().add_delay(DelayRule(delay_ms=-1))


@pytest.mark.parametrize("name", ["Heartbeat", "heartbeat", "HEARTBEAT", 12])
def test_apis_are_named_by_their_kafka_name_or_key(name: str | int) -> None:
    assert api_key_of(name) == HEARTBEAT


@pytest.mark.parametrize("value", [27, "27", "REBALANCE_IN_PROGRESS", "rebalance_in_progress"])
def test_error_codes_are_named_by_number_or_name(value: str | int) -> None:
    assert error_code_of(value) is ErrorCode.REBALANCE_IN_PROGRESS


def test_unknown_apis_and_error_codes_are_refused_with_the_value_in_the_message() -> None:
    with pytest.raises(ValueError, match="Hartbeat"):
        api_key_of("Hartbeat")
    with pytest.raises(ValueError, match="NO_SUCH"):
        error_code_of("NO_SUCH")
