"""The ApiVersions table the emulator advertises.

By default (preset ``codec``) every implemented API is advertised over the full
range the codec's JSON declares, which includes versions Kafka 4.x removed
(KIP-896), e.g. JoinGroup v0-1, so old and new clients both work. A preset
named after a Kafka release narrows each range to what that release advertises,
so the emulator presents that broker's exact ApiVersions; a JSON file
``{"<api key or name>": [min, max], ...}`` does the same for any table.

A preset range is intersected with the codec's: a version Kafka advertises but
the codec's 4.4.0 schemas cannot express (Produce v0-2 on 4.x, KAFKA-18659) is not advertised.
That difference is listed in FIDELITY.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rebalance_lab.protocol.codec import API_NAMES, codec_version_range

# Ranges advertised by real brokers for the APIs the emulator implements.
# Group APIs: spec/coordinator.md §1.1. Others: the brokers' ApiVersions responses.
_KAFKA_4: dict[str, tuple[int, int]] = {
    "Produce": (0, 13), "Fetch": (4, 18), "ListOffsets": (1, 11), "Metadata": (0, 13),  # as 4.4.0 advertises them
    "OffsetCommit": (2, 10), "OffsetFetch": (1, 10), "FindCoordinator": (0, 6),
    "JoinGroup": (0, 9), "Heartbeat": (0, 4), "LeaveGroup": (0, 5), "SyncGroup": (0, 5),
    "DescribeGroups": (0, 6), "ListGroups": (0, 5), "ApiVersions": (0, 5),
    "CreateTopics": (2, 7), "DeleteTopics": (1, 6), "CreatePartitions": (0, 3),
    "DeleteGroups": (0, 3), "OffsetDelete": (0, 0), "InitProducerId": (0, 5),
    "ConsumerGroupHeartbeat": (0, 1), "ConsumerGroupDescribe": (0, 1),  # KIP-848 (spec/kip848.md §1.1)
    # transactions: the real 4.4.0 broker's ApiVersions (TxnOffsetCommit v6 is beyond the codec)
    "AddPartitionsToTxn": (0, 5), "AddOffsetsToTxn": (0, 4), "EndTxn": (0, 5), "TxnOffsetCommit": (0, 6),
    "DescribeProducers": (0, 0), "DescribeTransactions": (0, 0), "ListTransactions": (0, 2),
    "DescribeAcls": (1, 3), "CreateAcls": (1, 3), "DeleteAcls": (1, 3),  # v0 removed in 4.0 (the schemas say so)
    # admin APIs (issue 18): the real 4.4.0 broker's ApiVersions
    "DescribeConfigs": (1, 4), "AlterConfigs": (0, 2), "IncrementalAlterConfigs": (0, 1), "DeleteRecords": (0, 2),
    "DescribeCluster": (0, 2), "DescribeTopicPartitions": (0, 0), "DescribeLogDirs": (1, 5), "ElectLeaders": (0, 2),
    "AlterPartitionReassignments": (0, 1), "ListPartitionReassignments": (0, 0), "OffsetForLeaderEpoch": (2, 4),
    "ListConfigResources": (0, 1),
    "DescribeQuorum": (0, 2), "AlterReplicaLogDirs": (1, 2),  # as 4.4.0 advertises them
}
_KAFKA_3: dict[str, tuple[int, int]] = {
    "Produce": (0, 11), "Fetch": (0, 17), "ListOffsets": (0, 9), "Metadata": (0, 12),  # as 3.9.2 advertises them
    "OffsetCommit": (0, 9), "OffsetFetch": (0, 9), "FindCoordinator": (0, 6),
    "JoinGroup": (0, 9), "Heartbeat": (0, 4), "LeaveGroup": (0, 5), "SyncGroup": (0, 5),
    "DescribeGroups": (0, 5), "ListGroups": (0, 5), "ApiVersions": (0, 4),
    "CreateTopics": (0, 7), "DeleteTopics": (0, 6), "CreatePartitions": (0, 3),
    "DeleteGroups": (0, 2), "OffsetDelete": (0, 0), "InitProducerId": (0, 5),
    "ConsumerGroupHeartbeat": (0, 0), "ConsumerGroupDescribe": (0, 0),  # advertised, answered UNSUPPORTED_VERSION
    "AddPartitionsToTxn": (0, 5), "AddOffsetsToTxn": (0, 4), "EndTxn": (0, 4), "TxnOffsetCommit": (0, 4),
    "DescribeProducers": (0, 0), "DescribeTransactions": (0, 0), "ListTransactions": (0, 1),
    "DescribeAcls": (0, 3), "CreateAcls": (0, 3), "DeleteAcls": (0, 3),  # v0 is beyond the codec (1-3 advertised)
    # admin APIs: 3.9.2's ApiVersions (DescribeConfigs, DescribeLogDirs, OffsetForLeaderEpoch from 0: beyond the codec)
    "DescribeConfigs": (0, 4), "AlterConfigs": (0, 2), "IncrementalAlterConfigs": (0, 1), "DeleteRecords": (0, 2),
    "DescribeCluster": (0, 1), "DescribeTopicPartitions": (0, 0), "DescribeLogDirs": (0, 4), "ElectLeaders": (0, 2),
    "AlterPartitionReassignments": (0, 0), "ListPartitionReassignments": (0, 0), "OffsetForLeaderEpoch": (0, 4),
    "ListConfigResources": (0, 0),  # 3.9's ListClientMetricsResources
    "DescribeQuorum": (0, 2), "AlterReplicaLogDirs": (0, 2),  # 3.9.2 advertises 0-2; v0 is beyond the codec
}
PRESETS: dict[str, dict[str, tuple[int, int]]] = {"kafka-4": _KAFKA_4, "kafka-3": _KAFKA_3}

_KEYS_BY_NAME = {name: key for key, name in API_NAMES.items()}


class VersionTableError(ValueError):
    """A version table that names an unknown API or an empty range."""


@dataclass(frozen=True)
class VersionTable:
    ranges: Mapping[int, tuple[int, int]]

    def supports(self, api_key: int, version: int) -> bool:
        bounds = self.ranges.get(api_key)
        return bounds is not None and bounds[0] <= version <= bounds[1]

    def range_of(self, api_key: int) -> tuple[int, int] | None:
        return self.ranges.get(api_key)

    @classmethod
    def build(cls, implemented: Iterable[int], spec: str = "codec") -> VersionTable:
        """The table for the implemented API keys under a preset name or JSON file path."""
        overrides = _load_overrides(spec)
        ranges: dict[int, tuple[int, int]] = {}
        for key in sorted(implemented):
            codec = codec_version_range(key)
            if codec is None:
                raise VersionTableError(f"api key {key} is implemented but the codec has no schema for it")
            bounds = _intersect(codec, overrides.get(key, codec))
            if bounds is not None:
                ranges[key] = bounds
        return cls(ranges)


def _intersect(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    low, high = max(a[0], b[0]), min(a[1], b[1])
    return (low, high) if low <= high else None


def _load_overrides(spec: str) -> dict[int, tuple[int, int]]:
    if spec == "codec":
        return {}
    if spec in PRESETS:
        return {_KEYS_BY_NAME[name]: bounds for name, bounds in PRESETS[spec].items()}
    # a file's table: json and pathlib imported here, not at every serve's start (issue 22)
    import json
    from pathlib import Path

    path = Path(spec)
    if not path.is_file():
        known = ", ".join(["codec", *PRESETS])
        raise VersionTableError(f"api versions {spec!r} is neither a preset ({known}) nor a JSON file")
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise VersionTableError(f"cannot read api versions file {spec}: {exc}") from exc
    return _parse_overrides(raw, spec)


def _parse_overrides(raw: object, origin: str) -> dict[int, tuple[int, int]]:
    if not isinstance(raw, dict):
        raise VersionTableError(f"{origin}: expected an object of api -> [min, max]")
    result: dict[int, tuple[int, int]] = {}
    for name, bounds in raw.items():
        key = int(name) if str(name).isdigit() else _KEYS_BY_NAME.get(str(name))
        if key is None:
            raise VersionTableError(f"{origin}: unknown api {name!r}")
        if not (isinstance(bounds, list) and len(bounds) == 2 and all(isinstance(b, int) for b in bounds)):
            raise VersionTableError(f"{origin}: {name} needs [min, max], got {bounds!r}")
        result[key] = (bounds[0], bounds[1])
    return result
