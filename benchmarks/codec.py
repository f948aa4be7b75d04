"""Codec seam timings: what the wire codec costs the emulator per request on the hot APIs.

    python benchmarks/codec.py                       # the runtime codec (rebalance_lab.protocol.codec)
    python benchmarks/codec.py --seam tests.unit.protocol.kafka_python_codec --seam rebalance_lab.protocol.codec
                                                     # kafka-python's codec (the runtime codec before issue 21)
                                                     # beside ours, and the ratio
    python benchmarks/codec.py --iterations 20 --repeats 2   # a smoke run

Cases, each timed as the server runs it (``decode_request`` of a framed payload, then ``new_response`` with
the handler's fields and ``encode_response``):

* ``JoinGroup v9, 100 members``: one member's request decoded, the leader's response carrying the metadata of
  100 members (a consumer-protocol subscription of 3 topics each) built and encoded;
* ``Fetch v13 response, 1 MB``: 16 partitions of 64 KiB record batches in one topic, built and encoded;
* ``SyncGroup v5`` (a follower: no assignments in, one assignment out) and ``Heartbeat v4``: small messages,
  as ops per second;
* ``ConsumerGroupHeartbeat v1``: the KIP-848 fast path (``heartbeat_codec``).

Each figure is the best of ``--repeats`` runs of ``--iterations`` operations (the machine is shared: the best
run is the one least disturbed); time is the process's CPU time, so other processes' load counts less.
"""

from __future__ import annotations

import argparse
import importlib
import struct
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from rebalance_lab.protocol import heartbeat_codec

_ROOT = Path(__file__).resolve().parents[1]
JOIN_GROUP, SYNC_GROUP, HEARTBEAT, FETCH, CONSUMER_HEARTBEAT = 11, 14, 12, 1, 68


def _subscription(member: int) -> bytes:
    """A consumer-protocol Subscription v3 (topics, no user data, no owned partitions), about 60 bytes."""
    topics = [f"orders-{member % 7}", "payments", "audit-log"]
    parts = [struct.pack(">hi", 3, len(topics))]
    parts += [struct.pack(">h", len(t)) + t.encode() for t in topics]
    parts.append(struct.pack(">iiih", -1, 0, 1, -1))  # null user data, no owned partitions, generation 1, no rack
    return b"".join(parts)


def _join_case(codec: ModuleType) -> Callable[[], bytes]:
    request = codec.new_request(
        JOIN_GROUP, 9, group_id="bench-group", session_timeout_ms=45000, rebalance_timeout_ms=300000,
        member_id="consumer-1-5b2c", group_instance_id=None, protocol_type="consumer",
        protocols=[codec.data_class(codec.request_type(JOIN_GROUP), "JoinGroupRequestProtocol")(
            name=name, metadata=_subscription(1)) for name in ("range", "cooperative-sticky")],
        reason=None)
    payload = codec.encode_request(request, 7, "bench-client")[4:]
    member = codec.data_class(codec.response_type(JOIN_GROUP), "JoinGroupResponseMember")
    metadata = [(f"consumer-{i}-{uuid.UUID(int=i)}", _subscription(i)) for i in range(100)]

    def run() -> bytes:
        decoded = codec.decode_request(payload)
        body = decoded.body
        response = codec.new_response(
            JOIN_GROUP, 9, throttle_time_ms=0, error_code=0, generation_id=3, protocol_type=body.protocol_type,
            protocol_name="range", leader=body.member_id, skip_assignment=False, member_id=body.member_id,
            members=[member(member_id=m, group_instance_id=None, metadata=meta) for m, meta in metadata])
        return bytes(codec.encode_response(response, decoded.correlation_id))
    return run


def _fetch_case(codec: ModuleType) -> Callable[[], bytes]:
    owner = codec.response_type(FETCH)
    topic_cls = codec.data_class(owner, "FetchableTopicResponse")
    partition_cls = codec.data_class(topic_cls, "PartitionData")
    chunk = bytes(range(256)) * 256  # 64 KiB of record batches (opaque bytes to the codec)
    topic_id = uuid.UUID(int=42)

    def run() -> bytes:
        partitions = [partition_cls(partition_index=p, error_code=0, high_watermark=10_000, last_stable_offset=10_000,
                                    log_start_offset=0, aborted_transactions=[], preferred_read_replica=-1,
                                    records=chunk) for p in range(16)]
        response = codec.new_response(FETCH, 13, throttle_time_ms=0, error_code=0, session_id=0,
                                      responses=[topic_cls(topic_id=topic_id, partitions=partitions)])
        return bytes(codec.encode_response(response, 9))
    return run


def _sync_case(codec: ModuleType) -> Callable[[], bytes]:
    request = codec.new_request(SYNC_GROUP, 5, group_id="bench-group", generation_id=3, member_id="consumer-7-1d0e",
                                group_instance_id=None, protocol_type="consumer", protocol_name="range",
                                assignments=[])
    payload = codec.encode_request(request, 11, "bench-client")[4:]
    assignment = struct.pack(">hih8sii", 3, 1, 8, b"orders-1", 2, 0) + struct.pack(">ii", 1, -1)

    def run() -> bytes:
        decoded = codec.decode_request(payload)
        response = codec.new_response(SYNC_GROUP, 5, throttle_time_ms=0, error_code=0,
                                      protocol_type=decoded.body.protocol_type,
                                      protocol_name=decoded.body.protocol_name, assignment=assignment)
        return bytes(codec.encode_response(response, decoded.correlation_id))
    return run


def _heartbeat_case(codec: ModuleType) -> Callable[[], bytes]:
    request = codec.new_request(HEARTBEAT, 4, group_id="bench-group", generation_id=3,
                                member_id="consumer-7-1d0e", group_instance_id=None)
    payload = codec.encode_request(request, 13, "bench-client")[4:]

    def run() -> bytes:
        decoded = codec.decode_request(payload)
        response = codec.new_response(HEARTBEAT, 4, throttle_time_ms=0, error_code=0)
        return bytes(codec.encode_response(response, decoded.correlation_id))
    return run


def _consumer_heartbeat_case(codec: ModuleType) -> Callable[[], bytes]:
    request = codec.new_request(CONSUMER_HEARTBEAT, 1, group_id="bench-group", member_id="m" * 22, member_epoch=5,
                                instance_id=None, rack_id=None, rebalance_timeout_ms=-1,
                                subscribed_topic_names=None, subscribed_topic_regex=None, server_assignor=None,
                                topic_partitions=None)
    payload = codec.encode_request(request, 17, "bench-client")[4:]

    def run() -> bytes:
        decoded = codec.decode_request(payload)
        # the handler answers with the fast path's response object (consumer_group_heartbeat.to_response)
        response = heartbeat_codec.HeartbeatResponse(1, 0, 0, None, decoded.body.member_id, 5, 5000, None)
        return bytes(codec.encode_response(response, decoded.correlation_id))
    return run


CASES: dict[str, Callable[[ModuleType], Callable[[], bytes]]] = {
    "JoinGroup v9, 100 members (round trip)": _join_case,
    "Fetch v13 response, 1 MB (build + encode)": _fetch_case,
    "SyncGroup v5 (round trip)": _sync_case,
    "Heartbeat v4 (round trip)": _heartbeat_case,
    "ConsumerGroupHeartbeat v1 (round trip)": _consumer_heartbeat_case,
}


def best_seconds(run: Callable[[], Any], iterations: int, repeats: int) -> float:
    """The best of ``repeats`` timings of ``iterations`` calls, per call."""
    run()  # warm: per-version plans, caches
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(iterations):
            run()
        best = min(best, (time.process_time() - start) / iterations)
    return best


def measure(seam: str, iterations: int, repeats: int) -> dict[str, tuple[float, int]]:
    """Per case: (seconds per operation, response size in bytes)."""
    if str(_ROOT) not in sys.path:  # a seam under tests/ (kafka-python's codec, the oracle) imports from the root
        sys.path.insert(0, str(_ROOT))
    codec = importlib.import_module(seam)
    results: dict[str, tuple[float, int]] = {}
    for name, make in CASES.items():
        run = make(codec)
        size = len(run())
        # the 1 MB case copies a megabyte per call: fewer calls give the same precision
        count = max(1, iterations // 20) if size > 100_000 else iterations
        results[name] = (best_seconds(run, count, repeats), size)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seam", action="append", default=None,
                        help="codec seam module(s) to time (default rebalance_lab.protocol.codec; repeatable)")
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    seams: list[str] = args.seam or ["rebalance_lab.protocol.codec"]
    table = {seam: measure(seam, args.iterations, args.repeats) for seam in seams}
    for seam, results in table.items():
        print(f"codec seam: {seam}")
        for name, (seconds, size) in results.items():
            print(f"  {name:45s} {seconds * 1e6:10.1f} us/op  {1 / seconds:10.0f} ops/s  ({size} bytes out)")
    if len(seams) > 1:
        first, *others = seams
        for other in others:
            print(f"ratio {other} / {first} (time per op; < 1 is faster)")
            for name in CASES:
                print(f"  {name:45s} {table[other][name][0] / table[first][name][0]:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
