"""Regex subscriptions (spec/kip848.md §4.6; 4.4.0 ``maybeUpdateRegularExpressions``, ``TopicRegexResolver``)."""

from __future__ import annotations

import uuid

from rebalance_lab.coordinator.consumer.regex import compile_regex
from rebalance_lab.coordinator.consumer.topics import TopicImage
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

from .context import BAR, FOO, REBALANCE_TIMEOUT, Ctx, kinds

OFFSETS = TopicImage(uuid.UUID(int=0x0FF5), "__consumer_offsets", 2)


def regex_join(ctx: Ctx, member_id: str, regex: str) -> int:
    r = ctx.hb(member_id, 0, rebalance_timeout_ms=REBALANCE_TIMEOUT, subscribed_topic_regex=regex,
               topic_partitions=())
    assert r.error == ErrorCode.NONE
    return r.member_epoch


def test_a_regex_is_resolved_after_the_join_and_bumps_the_epoch() -> None:
    """Kafka resolves off the request path: the join's answer does not count the regex's topics yet."""
    ctx = Ctx()
    assert regex_join(ctx, "A", "fo+") == 1
    fired = ctx.advance(0)
    assert kinds(fired) == ["RegexResolved", "GroupEpochBumped"]
    assert ctx.view().group_epoch == 2
    r = ctx.hb("A", 1)
    assert (r.member_epoch, ctx.names(r.assignment)) == (2, {"foo": set(range(6))})


def test_a_regex_matches_whole_names_only() -> None:
    ctx = Ctx(topics=(FOO, BAR, TopicImage(uuid.UUID(int=7), "food", 1)))
    regex_join(ctx, "A", "fo.")
    ctx.advance(0)
    assert ctx.names(ctx.hb("A", 1).assignment) == {"foo": set(range(6))}


def test_a_regex_also_matches_internal_topics_as_in_4_4() -> None:
    """``TopicRegexResolver`` scans every topic name of the image (only ACLs filter)."""
    ctx = Ctx(topics=(FOO, OFFSETS))
    regex_join(ctx, "A", "__.*")
    ctx.advance(0)
    assert ctx.names(ctx.hb("A", 1).assignment) == {"__consumer_offsets": {0, 1}}


def test_a_second_member_with_the_same_regex_is_counted_at_once() -> None:
    ctx = Ctx()
    regex_join(ctx, "A", "fo+")
    ctx.advance(1_000)
    assert regex_join(ctx, "B", "fo+") == 3  # REGEX_UPDATED_AND_RESOLVED: bump in the heartbeat


def test_a_new_topic_matching_the_regex_is_picked_up_after_ten_seconds() -> None:
    ctx = Ctx()
    regex_join(ctx, "A", "ba.*")
    ctx.advance(0)
    ctx.hb("A", 1)
    baz = TopicImage(uuid.UUID(int=0xBA3), "baz", 2)
    ctx.set_topics(FOO, BAR, baz)
    ctx.advance(5_000)
    assert ctx.hb("A", 2).member_epoch == 2 and ctx.advance(0) == []  # rate-limited: within 10 s
    ctx.advance(5_001)
    ctx.hb("A", 2)
    assert kinds(ctx.advance(0)) == ["RegexResolved", "GroupEpochBumped"]
    r = ctx.hb("A", 2)
    assert ctx.names(r.assignment) == {"bar": {0, 1, 2}, "baz": {0, 1}}


def test_re2_syntax_decides_what_is_valid() -> None:
    compile_regex(r"(?i)foo\pN")  # RE2 classes Python's re lacks
    for bad in ("(?<=a)b", "a)", "x{2,1}"):
        try:
            compile_regex(bad)
        except KafkaError as exc:
            assert exc.code == ErrorCode.INVALID_REGULAR_EXPRESSION
        else:
            raise AssertionError(f"{bad!r} compiled")
