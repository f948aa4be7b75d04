"""The sans-I/O fault plan: which requests get an error, extra latency or a throttle.

No clock, no asyncio: :meth:`FaultPlan.decide` takes a :class:`RequestInfo` and returns a
:class:`Verdict`, consuming one use of every rule that matched. Rules with a count fire for
the next N matching requests (like librdkafka's ``push_request_errors``); rules without one
stay until :meth:`FaultPlan.clear`. For one request, the first matching error rule wins
(rules are consulted in the order they were added); latency and throttle rules add up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode


def api_key_of(api: int | str) -> int:
    """An API key from its number or its name (``"Heartbeat"``, ``"heartbeat"``, ``"JoinGroup"``)."""
    if isinstance(api, int):
        if api not in codec.API_NAMES:
            raise ValueError(f"unknown api key {api}")
        return api
    wanted = api.replace("_", "").replace("-", "").lower()
    for key, name in codec.API_NAMES.items():
        if name.lower() == wanted:
            return key
    raise ValueError(f"unknown api {api!r}; use a name such as 'Heartbeat' or a key such as 12")


def error_code_of(error: int | str) -> ErrorCode:
    """An error code from its number or its name (``27``, ``"REBALANCE_IN_PROGRESS"``)."""
    try:
        if isinstance(error, int) or error.lstrip("-").isdigit():
            return ErrorCode(int(error))
        return ErrorCode[error.upper()]
    except (KeyError, ValueError):
        raise ValueError(f"unknown error code {error!r}") from None


@dataclass(frozen=True)
class RequestInfo:
    api_key: int
    broker_id: int
    client_id: str
    group_id: str | None = None
    member_id: str | None = None


@dataclass
class Rule:
    """Matches requests; ``None`` in a filter means any. ``remaining`` None: until cleared."""

    api_key: int | None = None
    broker_id: int | None = None
    group_id: str | None = None
    member_id: str | None = None
    remaining: int | None = 1

    def matches(self, req: RequestInfo) -> bool:
        return (
            (self.api_key is None or self.api_key == req.api_key)
            and (self.broker_id is None or self.broker_id == req.broker_id)
            and (self.group_id is None or self.group_id == req.group_id)
            and (self.member_id is None or self.member_id == req.member_id)
        )

    def use(self) -> None:
        if self.remaining is not None:
            self.remaining -= 1

    @property
    def spent(self) -> bool:
        return self.remaining is not None and self.remaining <= 0


@dataclass
class ErrorRule(Rule):
    error: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR


@dataclass
class DelayRule(Rule):
    """Extra latency (``throttle`` False) or a throttle reported in ``throttle_time_ms`` and waited."""

    delay_ms: int = 0
    throttle: bool = False


@dataclass(frozen=True)
class Verdict:
    error: ErrorCode | None = None
    delay_ms: int = 0  # added latency, then the answer
    throttle_ms: int = 0  # set in the response's throttle_time_ms and waited before answering
    fired: tuple[Rule, ...] = ()

    @property
    def untouched(self) -> bool:
        return not self.fired


@dataclass
class FaultPlan:
    errors: list[ErrorRule] = field(default_factory=list)
    delays: list[DelayRule] = field(default_factory=list)

    def add_error(self, rule: ErrorRule) -> None:
        if rule.remaining is not None and rule.remaining < 1:
            raise ValueError("count must be at least 1")
        self.errors.append(rule)

    def add_delay(self, rule: DelayRule) -> None:
        if rule.delay_ms < 0:
            raise ValueError("a delay cannot be negative")
        self.delays.append(rule)

    def clear(self) -> None:
        self.errors.clear()
        self.delays.clear()

    def decide(self, req: RequestInfo) -> Verdict:
        fired: list[Rule] = []
        error_rule = next((r for r in self.errors if r.matches(req)), None)
        if error_rule is not None:
            error_rule.use()
            fired.append(error_rule)
        delay = throttle = 0
        for rule in self.delays:
            if rule.matches(req):
                rule.use()
                fired.append(rule)
                if rule.throttle:
                    throttle += rule.delay_ms
                else:
                    delay += rule.delay_ms
        self.errors = [r for r in self.errors if not r.spent]
        self.delays = [r for r in self.delays if not r.spent]
        return Verdict(error_rule.error if error_rule else None, delay, throttle, tuple(fired))
