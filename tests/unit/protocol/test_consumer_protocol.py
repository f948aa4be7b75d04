"""Golden bytes and round trips for the embedded consumer protocol (spec assignors.md §1, §6.9)."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_lab.clients.assignors.types import Assignment, Subscription, TopicPartition
from rebalance_lab.protocol.consumer_protocol import (
    ConsumerProtocolError,
    StickyMemberData,
    decode_assignment,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    decode_subscription,
    encode_assignment,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    encode_subscription,
)


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def TP(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


SUB_A = Subscription(topics=("foo", "bar"))
SUB_B = Subscription(
    topics=("t1", "t0"),
    user_data=b"\x01\x02",
    owned_partitions=(TP("t1", 0), TP("t0", 1), TP("t0", 0)),
    generation_id=5,
    rack_id="r1",
)
SUB_B_V0 = "0000 00000002 00027430 00027431 00000002 0102"
SUB_B_V1_TAIL = "00000002 00027430 00000002 00000000 00000001 00027431 00000001 00000000"
SUB_B_V3 = (
    "000300000002000274300002743100000002010200000002000274300000000200000000000000010002743100000001"
    "000000000000000500027231"
)


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (0, "0000 00000002 0003626172 0003666f6f ffffffff"),
        (1, "0001 00000002 0003626172 0003666f6f ffffffff 00000000"),
        (2, "0002 00000002 0003626172 0003666f6f ffffffff 00000000 ffffffff"),
        (3, "0003 00000002 0003626172 0003666f6f ffffffff 00000000 ffffffff ffff"),
    ],
)
def test_subscription_a_matches_kafka_bytes_with_topics_sorted(version: int, expected: str) -> None:
    assert encode_subscription(SUB_A, version) == h(expected)


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (0, SUB_B_V0),
        (1, "0001" + SUB_B_V0[4:] + SUB_B_V1_TAIL),
        (2, "0002" + SUB_B_V0[4:] + SUB_B_V1_TAIL + "00000005"),
        (3, SUB_B_V3),
    ],
)
def test_subscription_b_matches_kafka_bytes_with_owned_sorted_and_grouped(version: int, expected: str) -> None:
    assert encode_subscription(SUB_B, version) == h(expected)


def test_subscription_defaults_to_version_3() -> None:
    assert encode_subscription(SUB_B) == h(SUB_B_V3)


def test_subscription_version_above_3_is_clamped_to_3() -> None:
    assert encode_subscription(SUB_B, 7) == h(SUB_B_V3)


def test_negative_version_is_refused_by_writer_and_reader() -> None:
    with pytest.raises(ConsumerProtocolError):
        encode_subscription(SUB_A, -1)
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(h("ffff 00000000 ffffffff"))


def test_subscription_c_empty_user_data_is_not_null() -> None:
    sub = Subscription(topics=("t",), user_data=b"")
    data = encode_subscription(sub)
    assert data == h("0003 00000001 000174 00000000 00000000 ffffffff ffff")
    assert decode_subscription(data).user_data == b""


def test_subscription_d_empty_rack_parses_back_as_absent() -> None:
    data = h("0003 00000001 000174 ffffffff 00000000 ffffffff 0000")
    assert encode_subscription(Subscription(topics=("t",), rack_id="")) == data
    decoded = decode_subscription(data)
    assert decoded.rack_id is None
    assert decoded.user_data is None


def test_subscription_b_round_trips_with_owned_flattened_in_wire_order() -> None:
    decoded = decode_subscription(h(SUB_B_V3))
    assert decoded == Subscription(
        topics=("t0", "t1"),
        user_data=b"\x01\x02",
        owned_partitions=(TP("t0", 0), TP("t0", 1), TP("t1", 0)),
        generation_id=5,
        rack_id="r1",
    )


def test_future_version_parses_as_v3_and_ignores_trailing_bytes() -> None:
    data = bytearray(h(SUB_B_V3))
    data[0:2] = struct.pack(">h", 7)
    decoded = decode_subscription(bytes(data) + b"\xde\xad\xbe\xef")
    assert decoded.topics == ("t0", "t1")
    assert decoded.owned_partitions == (TP("t0", 0), TP("t0", 1), TP("t1", 0))
    assert decoded.generation_id == 5
    assert decoded.rack_id == "r1"


def test_version_100_with_an_extra_field_parses() -> None:
    data = struct.pack(">h", 100) + h(SUB_B_V3)[2:] + h("0005 68656c6c6f")
    assert decode_subscription(data).rack_id == "r1"


def test_v3_bytes_read_as_version_0_yield_topics_and_user_data_only() -> None:
    decoded = decode_subscription(h(SUB_B_V3), version=0)
    assert decoded == Subscription(topics=("t0", "t1"), user_data=b"\x01\x02")


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_fields_missing_from_old_versions_take_defaults(version: int) -> None:
    decoded = decode_subscription(encode_subscription(SUB_B, version))
    assert decoded.owned_partitions == ((TP("t0", 0), TP("t0", 1), TP("t1", 0)) if version >= 1 else ())
    assert decoded.generation_id == (5 if version >= 2 else None)
    assert decoded.rack_id == ("r1" if version >= 3 else None)


def test_negative_generation_decodes_as_absent() -> None:
    data = encode_subscription(Subscription(topics=("t",), generation_id=-1), 2)
    assert decode_subscription(data).generation_id is None


def test_assignment_a_groups_by_first_appearance_keeping_list_order() -> None:
    expected = "00000002 00027431 00000002 00000001 00000000 00027430 00000001 00000000 ffffffff"
    assignment = Assignment(partitions=(TP("t1", 1), TP("t0", 0), TP("t1", 0)))
    for version in range(4):
        assert encode_assignment(assignment, version) == struct.pack(">h", version) + h(expected)
    assert decode_assignment(encode_assignment(assignment)).partitions == (TP("t1", 1), TP("t1", 0), TP("t0", 0))


def test_assignment_b_empty_with_empty_user_data() -> None:
    data = encode_assignment(Assignment(partitions=(), user_data=b""))
    assert data == h("0003 00000000 00000000")
    assert decode_assignment(data) == Assignment(partitions=(), user_data=b"")


def test_assignment_future_version_and_trailing_bytes_are_accepted() -> None:
    data = struct.pack(">h", 9) + encode_assignment(Assignment((TP("t", 0),)))[2:] + b"\x00\x01"
    assert decode_assignment(data) == Assignment((TP("t", 0),))


@pytest.mark.parametrize(
    "data",
    [
        "",
        "00",
        "0003",
        "0003 00000001",
        "0003 00000001 0005 6162",
        "0003 ffffffff",
        "0003 7fffffff",
        "0003 00000001 ffff",
        "0003 00000000 ffffffff 00000001",
    ],
    ids=[
        "empty",
        "half-header",
        "no-body",
        "missing-topic",
        "short-string",
        "null-array",
        "huge-array",
        "null-topic",
        "truncated-owned",
    ],
)
def test_malformed_subscription_raises_consumer_protocol_error(data: str) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(h(data))
    assert issubclass(ConsumerProtocolError, ValueError)


@pytest.mark.parametrize("data", ["0000", "0000 00000001 0001 74", "0000 00000000 0000"])
def test_malformed_assignment_raises_consumer_protocol_error(data: str) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(h(data))


def test_writer_refuses_strings_longer_than_32767_utf8_bytes() -> None:
    with pytest.raises(ConsumerProtocolError):
        encode_subscription(Subscription(topics=("é" * 20000,)))


# ------------------------------------------------------------------ assignor user data


def test_sticky_user_data_vector() -> None:
    data = encode_sticky_user_data((TP("t0", 0), TP("t1", 1), TP("t0", 2)), 3)
    assert data == h("00000002 00027430 00000002 00000000 00000002 00027431 00000001 00000001 00000003")
    assert decode_sticky_user_data(data) == StickyMemberData((TP("t0", 0), TP("t0", 2), TP("t1", 1)), 3)


def test_sticky_user_data_groups_topics_in_java_compute_if_absent_order() -> None:
    partitions = tuple(TP(t, 0) for t in ["t10", "topic", "t1", "x", "mid"])
    decoded = decode_sticky_user_data(encode_sticky_user_data(partitions, 1))
    assert [p.topic for p in decoded.partitions] == ["t10", "x", "mid", "topic", "t1"]


def test_sticky_user_data_v0_falls_back_with_generation_absent() -> None:
    v0 = h("00000001 00027430 00000001 00000004")
    assert decode_sticky_user_data(v0) == StickyMemberData((TP("t0", 4),), None)


@pytest.mark.parametrize("data", [None, b""])
def test_sticky_user_data_null_or_empty_means_nothing_and_no_generation(data: bytes | None) -> None:
    assert decode_sticky_user_data(data) == StickyMemberData((), None)


def test_sticky_user_data_garbage_means_nothing_with_generation_minus_one() -> None:
    assert decode_sticky_user_data(b"\xff\xff\xff\xff") == StickyMemberData((), -1)
    assert decode_sticky_user_data(b"\x00\x00\x00\x05") == StickyMemberData((), -1)


def test_cooperative_user_data_is_a_bare_generation() -> None:
    assert encode_cooperative_user_data(-1) == h("ffffffff")
    assert encode_cooperative_user_data(7) == h("00000007")
    assert decode_cooperative_user_data(h("0000000a")) == 10


def test_cooperative_user_data_null_is_absent_and_unparsable_is_minus_one() -> None:
    assert decode_cooperative_user_data(None) is None
    assert decode_cooperative_user_data(b"") == -1
    assert decode_cooperative_user_data(b"\x00\x01") == -1


def test_importing_the_codec_first_does_not_trip_the_package_import_cycle() -> None:
    import subprocess
    import sys

    code = "import rebalance_lab.protocol.consumer_protocol as c; import rebalance_lab.clients.assignors as a"
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------ properties

topics_st = st.lists(st.text(min_size=1, max_size=8), max_size=5)
partitions_st = st.lists(
    st.builds(TopicPartition, st.sampled_from(["a", "b", "z", "ä"]), st.integers(0, 2**31 - 1)),
    max_size=8,
    unique=True,
)


@settings(max_examples=60, deadline=None)
@given(
    topics=topics_st,
    user_data=st.none() | st.binary(max_size=8),
    owned=partitions_st,
    gen=st.none() | st.integers(0, 2**31 - 1),
    rack=st.none() | st.text(min_size=1, max_size=5),
    version=st.integers(0, 5),
)
def test_subscription_round_trip_keeps_what_the_version_carries(
    topics: list[str],
    user_data: bytes | None,
    owned: list[TopicPartition],
    gen: int | None,
    rack: str | None,
    version: int,
) -> None:
    sub = Subscription(tuple(topics), user_data, tuple(owned), gen, rack)
    decoded = decode_subscription(encode_subscription(sub, version))
    assert sorted(decoded.topics) == sorted(topics)
    assert decoded.user_data == user_data
    v = min(version, 3)
    assert sorted(decoded.owned_partitions) == (sorted(owned) if v >= 1 else [])
    assert decoded.generation_id == (gen if v >= 2 else None)
    assert decoded.rack_id == (rack if v >= 3 else None)


@settings(max_examples=60, deadline=None)
@given(partitions=partitions_st, user_data=st.none() | st.binary(max_size=8))
def test_assignment_round_trip_keeps_partitions_grouped_by_first_topic(
    partitions: list[TopicPartition], user_data: bytes | None
) -> None:
    decoded = decode_assignment(encode_assignment(Assignment(tuple(partitions), user_data)))
    order = list(dict.fromkeys(p.topic for p in partitions))
    assert decoded.partitions == tuple(sorted(partitions, key=lambda p: order.index(p.topic)))
    assert decoded.user_data == user_data


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=40))
def test_random_bytes_either_parse_or_raise_consumer_protocol_error(data: bytes) -> None:
    for decode in (decode_subscription, decode_assignment):
        with contextlib.suppress(ConsumerProtocolError):
            decode(data)
