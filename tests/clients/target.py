"""What the client tests run against, and how they look at it: only through the Kafka protocol.

A :class:`Target` is a bootstrap address, the coordinator flavor it behaves like
(``kafka-4``: the Java coordinator of Kafka 4.x; ``kafka-3``: the Scala one of 3.x) and a
:class:`GroupObserver`, which sees groups the way any Kafka tool does:

* DescribeGroups (kafka-python's ``KafkaAdminClient.describe_groups``): state, selected
  protocol, members with their instance ids, client ids and decoded assignments;
* the **generation**, which DescribeGroups does not return, from Heartbeat probes: a
  Heartbeat naming a live member and generation *g* is answered ``ILLEGAL_GENERATION``
  unless *g* is the group's generation (coordinator.md §9.1, step 5). A wrong generation
  changes nothing on the coordinator; the right one only resets the session timer of a
  member that is heart-beating anyway;
* OffsetFetch for committed offsets; CreateTopics and Produce for set-up.

``emulator`` and ``recording`` are emulator-only extras (``None`` on a real broker): the
running :class:`rebalance_lab.api.Emulator` and its ``--record`` JSONL file, whose
``GENERATION_SNAPSHOT`` rows give every generation's assignment.
"""

from __future__ import annotations

import json
import socket
import struct
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from rebalance_lab.protocol import codec

T = TypeVar("T")

FIND_COORDINATOR, HEARTBEAT = 10, 12
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID = 22, 25
MAX_PROBED_GENERATION = 500


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    instance_id: str | None
    client_id: str
    partitions: frozenset[int]  # of the test's topic


@dataclass(frozen=True)
class GroupDescription:
    state: str
    protocol: str
    members: tuple[MemberDescription, ...]

    def by_client(self) -> dict[str, MemberDescription]:
        return {m.client_id: m for m in self.members}

    def assignments(self) -> dict[str, frozenset[int]]:
        return {m.client_id: m.partitions for m in self.members}


def wait_until(condition: Callable[[], T | None], timeout: float, what: str, interval: float = 0.1) -> T:
    """Poll ``condition`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = condition()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class _RawConnection:
    """A blocking Kafka-protocol connection (request/response, one at a time)."""

    def __init__(self, host: str, port: int) -> None:
        self._sock = socket.create_connection((host, port), timeout=10)
        self._correlation = 0

    def request(self, api_key: int, version: int, **fields: Any) -> Any:
        self._correlation += 1
        frame = codec.encode_request(codec.new_request(api_key, version, **fields), self._correlation, "observer")
        self._sock.sendall(frame)
        (size,) = struct.unpack(">i", self._read(4))
        response = codec.decode_response(api_key, version, self._read(size))
        assert response.header.correlation_id == self._correlation
        return response

    def _read(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self._sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks += chunk
        return bytes(chunks)

    def close(self) -> None:
        self._sock.close()


def _split(address: str) -> tuple[str, int]:
    host, port = address.split(",")[0].rsplit(":", 1)
    return host, int(port)


class GroupObserver:
    """Looks at groups and topics through the Kafka protocol only (works on any broker)."""

    def __init__(self, bootstrap_servers: str) -> None:
        from kafka.admin import KafkaAdminClient

        self.bootstrap_servers = bootstrap_servers
        self._admin: Any = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="clients-observer")
        self._coordinators: dict[str, _RawConnection] = {}

    def close(self) -> None:
        self._admin.close()
        for connection in self._coordinators.values():
            connection.close()

    # -- topics and records ------------------------------------------------------------------

    def create_topic(self, partitions: int, prefix: str = "t") -> str:
        from kafka.admin import NewTopic

        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        self._admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
        self._admin.wait_for_topics([name], timeout_ms=30_000)
        return name

    def produce(self, topic: str, partitions: int, count: int) -> dict[int, int]:
        """``count`` records, round-robin over the partitions; returns the end offset of each."""
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.bootstrap_servers, linger_ms=5, acks="all")
        try:
            for i in range(count):
                producer.send(topic, value=f"record-{i}".encode(), partition=i % partitions)
            producer.flush(timeout=30)
        finally:
            producer.close(timeout=10)
        return {p: len(range(p, count, partitions)) for p in range(partitions)}

    def committed(self, group: str, topic: str) -> dict[int, int]:
        offsets = self._admin.list_group_offsets({group: None}).get(group, {})
        return {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topic}

    # -- groups -----------------------------------------------------------------------------------

    def describe(self, group: str, topic: str) -> GroupDescription:
        raw = self._admin.describe_groups([group])[group]
        if raw["error"] is not None and "GroupIdNotFound" in raw["error"]:  # DescribeGroups v6, an unknown group
            return GroupDescription("Dead", "", ())
        assert raw["error"] is None, raw
        members = []
        for m in raw["members"]:
            assignment = m.get("member_assignment") or {}
            owned = frozenset(p for entry in assignment.get("assigned_partitions", []) if entry["topic"] == topic
                              for p in entry["partitions"])
            members.append(MemberDescription(m["member_id"], m["group_instance_id"], m["client_id"], owned))
        return GroupDescription(raw["group_state"], raw["protocol_data"], tuple(members))

    def generation(self, group: str, member_id: str) -> int:
        """The group's generation, probed with Heartbeats on behalf of ``member_id`` (see the module doc)."""
        connection = self._coordinator(group)
        for generation in range(1, MAX_PROBED_GENERATION + 1):
            response = connection.request(HEARTBEAT, 3, group_id=group, generation_id=generation,
                                          member_id=member_id, group_instance_id=None)
            if response.error_code == UNKNOWN_MEMBER_ID:
                raise AssertionError(f"{member_id} is not a member of {group}")
            if response.error_code != ILLEGAL_GENERATION:  # 0 (Stable/CompletingRebalance) or 27
                return generation
        raise AssertionError(f"no generation of {group} up to {MAX_PROBED_GENERATION}")

    def _coordinator(self, group: str) -> _RawConnection:
        if group not in self._coordinators:
            bootstrap = _RawConnection(*_split(self.bootstrap_servers))
            try:
                found = bootstrap.request(FIND_COORDINATOR, 3, key=group, key_type=0)
            finally:
                bootstrap.close()
            assert found.error_code == 0, found
            self._coordinators[group] = _RawConnection(found.host, found.port)
        return self._coordinators[group]


@dataclass
class Target:
    """A cluster to run the client tests against (see tests/clients/conftest.py for the registry)."""

    name: str
    bootstrap_servers: str
    flavor: str  # "kafka-4" or "kafka-3"
    observer: GroupObserver
    emulator: Any = None  # rebalance_lab.api.Emulator, on the emulator only
    recording: Path | None = None  # the emulator's --record file, on the emulator only

    @property
    def is_emulator(self) -> bool:
        return self.emulator is not None

    def generation_snapshots(self, group: str) -> list[dict[str, Any]] | None:
        """Emulator only: every GENERATION_SNAPSHOT row of ``group`` in the recording (None elsewhere)."""
        if self.recording is None:
            return None
        rows = [json.loads(line) for line in self.recording.read_text().splitlines() if line.strip()]
        return [r for r in rows if r.get("group_id") == group and r["event_type"] == "GENERATION_SNAPSHOT"]
