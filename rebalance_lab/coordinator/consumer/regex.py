"""Regular-expression subscriptions (KIP-848, Kafka 4.4.0; spec/kip848.md §4.6).

Kafka compiles ``SubscribedTopicRegex`` with Google's RE2/J and matches it against whole topic
names. We use the RE2 C++ library through ``google-re2`` (the same syntax; Python's ``re``
accepts and rejects other patterns) and translate its error texts into RE2/J's descriptions,
which Kafka puts in the INVALID_REGULAR_EXPRESSION message.

Kafka 4.4.0 (``GroupMetadataManager.maybeUpdateRegularExpressions``,
``TopicRegexResolver``): a regex is compiled only when it is new to the group; resolution runs
off the request path, at most once per 10 s per group (and every
``group.consumer.regex.refresh.interval.ms``, or when topics were created since the last
one), over *all* topic names of the image (internal topics are not excluded; ACLs filter
them, and the emulator has none). Its result lands as a separate write: if the topics of a
regex changed, or the group's metadata hash did, the group epoch is bumped and the next
heartbeat computes a new target. The emulator models the asynchronous step as a timer due at
the heartbeat's own time: it fires right after the heartbeat, so the joining member's response
does not yet count the regex's topics, as on a real broker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

from rebalance_lab.coordinator.consumer.model import ConsumerGroup, ConsumerMember, ResolvedRegex
from rebalance_lab.coordinator.consumer.topics import TopicsImage
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

MIN_REFRESH_INTERVAL_MS = 10_000  # GroupMetadataManager: a group's regexes are resolved at most once per 10 s

# RE2 (C++) error text -> RE2/J's description of the same error
_RE2J_DESCRIPTIONS = {
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "missing closing )",
    "trailing \\": "trailing backslash at end of expression",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition size": "invalid repeat count",
    "no argument for repetition operator": "missing argument to repetition operator",
    "missing argument to repetition operator": "missing argument to repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid named capture group": "invalid named capture",
    "invalid character class": "invalid character class range",
}

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print every rejected pattern to stderr


class CompiledRegex(Protocol):
    def fullmatch(self, text: str) -> object | None: ...


class RegexStatus(Enum):
    """``UpdateRegularExpressionStatus``."""

    NO_CHANGE = 0
    REGEX_UPDATED = 1
    REGEX_UPDATED_AND_RESOLVED = 2


def compile_regex(regex: str) -> CompiledRegex:
    """``Utils.throwIfRegularExpressionIsInvalid``."""
    try:
        compiled: CompiledRegex = re2.compile(regex, _OPTIONS)
        return compiled
    except re2.error as exc:
        raise KafkaError(ErrorCode.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex `{regex}` is not a valid "
                         f"regular expression: {re2j_description(exc)}.") from exc


def re2j_description(exc: Exception) -> str:
    text = exc.args[0] if exc.args else str(exc)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    code = str(text).split(": ", 1)[0]
    return _RE2J_DESCRIPTIONS.get(code, code)


def resolve(regexes: Iterable[str], topics: TopicsImage, now_ms: int,
            may_describe: Callable[[str], bool] | None = None) -> dict[str, ResolvedRegex]:
    """``TopicRegexResolver.resolveRegularExpressions``: full matches over every topic name; a regex that
    does not compile matches nothing; with an authorizer only the topics the asking member may DESCRIBE
    (4.4.0's ``filterTopicDescribeAuthorizedTopics``)."""
    result: dict[str, ResolvedRegex] = {}
    for regex in regexes:
        try:
            pattern = compile_regex(regex)
        except KafkaError:
            result[regex] = ResolvedRegex(frozenset(), topics.version, now_ms)
            continue
        matched = frozenset(n for n in topics.names() if pattern.fullmatch(n) is not None
                            and (may_describe is None or may_describe(n)))
        result[regex] = ResolvedRegex(matched, topics.version, now_ms)
    return result


@dataclass(frozen=True)
class RegexUpdate:
    status: RegexStatus
    removed: str | None  # a regex no member will use any more (its record is deleted)
    resolve: frozenset[str] | None  # the group's regexes to resolve now (None: no resolution)

    @property
    def updated(self) -> bool:
        return self.status is not RegexStatus.NO_CHANGE


NO_UPDATE = RegexUpdate(RegexStatus.NO_CHANGE, None, None)


@dataclass(frozen=True)
class RefreshPolicy:
    now_ms: int
    refresh_interval_ms: int
    new_topics_version: int
    job_pending: bool


def update_regexes(group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember,
                   policy: RefreshPolicy) -> RegexUpdate:
    """``maybeUpdateRegularExpressions``: whether the member's regex changed, and whether to resolve."""
    old, new = member.subscribed_topic_regex, updated.subscribed_topic_regex
    status, removed, require = RegexStatus.NO_CHANGE, None, False
    if old != new:
        status = RegexStatus.REGEX_UPDATED
        if old and group.num_subscribed_members(old) == 1:
            removed = old
        if new:
            if group.num_subscribed_members(new) == 0:
                compile_regex(new)
                require = True
            elif new in group.resolved_regexes:
                status = RegexStatus.REGEX_UPDATED_AND_RESOLVED
        elif old:
            status = RegexStatus.REGEX_UPDATED_AND_RESOLVED
    to_resolve = _to_resolve(group, old, new, require, policy)
    return RegexUpdate(status, removed, to_resolve)


def _to_resolve(group: ConsumerGroup, old: str, new: str, require: bool,
                policy: RefreshPolicy) -> frozenset[str] | None:
    if not require and not group.subscribed_regexes:
        return None
    last = group.last_regex_refresh_ms()
    if policy.job_pending or (last is not None and policy.now_ms <= last + MIN_REFRESH_INTERVAL_MS):
        return None
    counts = dict(group.subscribed_regexes)
    if old:
        counts[old] = counts.get(old, 0) - 1
    if new:
        counts[new] = counts.get(new, 0) + 1
    regexes = frozenset(r for r, n in counts.items() if n > 0)
    require = (require or len(regexes) != len(group.resolved_regexes)
               or group.last_regex_version() < policy.new_topics_version
               or last is None or policy.now_ms > last + policy.refresh_interval_ms)
    return regexes if require and regexes else None
