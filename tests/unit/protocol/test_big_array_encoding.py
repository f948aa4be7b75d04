"""Big arrays are encoded a run of elements at a time (issue 17: the 10 MB Metadata request's memory peak).

A 250,000-topic Metadata answer was written as ~2 million parts of a few bytes each before one join: ~60 MiB
above the answer's own size (benchmarks/misbehaviour.py --only metadata-huge prints the server's peak RSS).
Each run of ``_ARRAY_RUN`` elements is now joined as it is written: the same bytes, a few hundred parts.
"""

from __future__ import annotations

import uuid

import pytest

from rebalance_lab.protocol import codec, schema_codec

_METADATA = 3


def _answer(topics: int, partitions: int) -> object:
    response = codec.response_type(_METADATA)
    topic, partition = response.MetadataResponseTopic, response.MetadataResponseTopic.MetadataResponsePartition
    named = [topic(error_code=3, name=f"no-such-topic-{i}", topic_id=uuid.UUID(int=0), is_internal=False,
                   partitions=[], authorized_operations=None) for i in range(topics)]
    big = topic(error_code=0, name="big", topic_id=uuid.UUID(int=7), is_internal=False, authorized_operations=None,
                partitions=[partition(error_code=0, partition_index=p, leader_id=0, leader_epoch=p % 3,
                                      replica_nodes=[0, 1], isr_nodes=[0], offline_replicas=[])
                            for p in range(partitions)])
    return codec.new_response(_METADATA, 12, throttle_time_ms=0, brokers=[], cluster_id="c", controller_id=0,
                              topics=[big, *named], error_code=0, authorized_operations=None)


@pytest.mark.parametrize(("topics", "partitions"), [(0, 0), (1_999, 5), (2_000, 2_001), (6_001, 4_000)])
def test_a_big_array_is_written_as_the_same_bytes_run_by_run(
        topics: int, partitions: int, monkeypatch: pytest.MonkeyPatch) -> None:
    answer = _answer(topics, partitions)
    in_runs = codec.encode_response(answer, 5)
    monkeypatch.setattr(schema_codec, "_ARRAY_RUN", 10**9)  # every element's parts joined once, as before
    assert in_runs == codec.encode_response(answer, 5)
    decoded = codec.decode_response(_METADATA, 12, in_runs[4:])
    assert [t.name for t in decoded.topics] == ["big", *(f"no-such-topic-{i}" for i in range(topics))]
    assert [p.leader_epoch for p in decoded.topics[0].partitions] == [p % 3 for p in range(partitions)]


def test_a_50_000_topic_answer_is_a_few_dozen_parts_before_its_join() -> None:
    parts: list[bytes] = []
    schema_codec.encode_into(_answer(50_000, 0), 12, True, parts)
    assert len(parts) < 60  # ~400,000 before: each topic's fields were parts of their own
