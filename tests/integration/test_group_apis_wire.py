"""The group APIs over real TCP: raw requests of several versions through the codec (manual clock)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rebalance_lab.config import EmulatorConfig, Flavor, GroupConfig
from rebalance_lab.coordinator.classic.records import GroupRecord
from rebalance_lab.coordinator.group_service import GroupService
from rebalance_lab.coordinator.routing import coordinator_for
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode
from tests.clients.member import KAFKA_PYTHON_POLL_MS
from tests.support.kafka_python_join import know_partitions_before_joining

from .wire import RawConnection

E = ErrorCode
JOIN, HEARTBEAT, LEAVE, SYNC, DESCRIBE, LIST, DELETE = 11, 12, 13, 14, 15, 16, 42
GROUP_CONFIG = GroupConfig(initial_rebalance_delay_ms=100, min_session_timeout_ms=10)


@pytest.fixture
async def server() -> AsyncIterator[EmulatorServer]:
    config = EmulatorConfig(port=0, manual_clock=True, group=GROUP_CONFIG, seed=7)
    async with EmulatorServer(config) as srv:
        yield srv


async def connect(server: EmulatorServer) -> RawConnection:
    broker = server.world.cluster.live_brokers()[0]
    return await RawConnection.open(broker.host, broker.port)


class Pending:
    """A request whose response may be parked: send now, read later."""

    def __init__(self, conn: RawConnection, api_key: int, version: int) -> None:
        self.conn, self.api_key, self.version = conn, api_key, version

    async def response(self, timeout: float = 5.0) -> Any:
        return codec.decode_response(self.api_key, self.version, await self.conn.read_frame(timeout))


async def send(conn: RawConnection, api_key: int, version: int, client_id: str = "raw", **fields: Any) -> Pending:
    request = codec.new_request(api_key, version, **fields)
    await conn.send_raw(codec.encode_request(request, 1, client_id))
    await asyncio.sleep(0.05)  # let the server process it before the test moves the clock
    return Pending(conn, api_key, version)


def protocols(*names: str) -> list[Any]:
    proto = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")
    return [proto(name=n, metadata=b"\x00\x01") for n in names]


def join_fields(version: int, member_id: str = "", **extra: Any) -> dict[str, Any]:
    fields: dict[str, Any] = dict(group_id="g", session_timeout_ms=10_000, member_id=member_id,
                                  protocol_type="consumer", protocols=protocols("range"))
    if version >= 1:
        fields["rebalance_timeout_ms"] = 10_000
    if version >= 5:
        fields["group_instance_id"] = extra.pop("group_instance_id", None)
    fields.update(extra)
    return fields


async def test_join_v0_parks_until_the_initial_delay_then_returns_generation_one(server: EmulatorServer) -> None:
    conn = await connect(server)
    pending = await send(conn, JOIN, 0, client_id="c0", **join_fields(0))
    server.advance(100)
    r = await pending.response()
    assert (r.error_code, r.generation_id, r.protocol_name, r.leader == r.member_id) == (0, 1, "range", True)
    assert r.member_id.startswith("c0-") and len(r.members) == 1
    await conn.close()


async def test_join_v5_needs_a_member_id_then_sync_heartbeat_and_describe(server: EmulatorServer) -> None:
    conn = await connect(server)
    first = await (await send(conn, JOIN, 5, **join_fields(5))).response()
    assert first.error_code == E.MEMBER_ID_REQUIRED and first.generation_id == -1
    assert first.protocol_name == ""  # v<7: null is sent as ""
    pending = await send(conn, JOIN, 5, **join_fields(5, first.member_id))
    server.advance(100)
    joined = await pending.response()
    assert joined.error_code == 0
    synced = await conn.request(SYNC, 3, group_id="g", generation_id=1, member_id=joined.member_id,
                                group_instance_id=None, assignments=[
                                    codec.data_class(codec.request_type(SYNC), "SyncGroupRequestAssignment")(
                                        member_id=joined.member_id, assignment=b"\x01\x02")])
    assert (synced.error_code, synced.assignment) == (0, b"\x01\x02")
    hb = await conn.request(HEARTBEAT, 3, group_id="g", generation_id=1, member_id=joined.member_id,
                            group_instance_id=None)
    assert hb.error_code == 0
    described = await conn.request(DESCRIBE, 5, groups=["g", "unknown"], include_authorized_operations=False)
    stable, unknown = described.groups
    assert (stable.group_state, stable.protocol_data, stable.members[0].member_assignment) == (
        "Stable", "range", b"\x01\x02")
    assert stable.members[0].client_host == "/127.0.0.1"
    assert (unknown.error_code, unknown.group_state) == (0, "Dead")
    with_ops = await conn.request(DESCRIBE, 6, groups=["g", "unknown"], include_authorized_operations=True)
    assert with_ops.groups[0].authorized_operations == {3, 6, 8, 10, 11}  # 3400
    assert (with_ops.groups[1].error_code, with_ops.groups[1].error_message) == (69, "Group unknown not found.")
    await conn.close()


async def test_join_v9_reports_null_protocol_name_on_errors_and_sync_v5_rejects_null_type(
        server: EmulatorServer) -> None:
    conn = await connect(server)
    r = await (await send(conn, JOIN, 9, **join_fields(9, reason=None))).response()
    assert r.error_code == E.MEMBER_ID_REQUIRED and r.protocol_name is None and r.skip_assignment is False
    bad = await conn.request(SYNC, 5, group_id="g", generation_id=1, member_id="m", group_instance_id=None,
                             protocol_type=None, protocol_name="range", assignments=[])
    assert bad.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    await conn.close()


async def test_leave_v0_flattens_the_member_error_and_v3_reports_per_member(server: EmulatorServer) -> None:
    conn = await connect(server)
    old = await conn.request(LEAVE, 0, group_id="nope", member_id="m")
    assert old.error_code == E.UNKNOWN_MEMBER_ID
    identity = codec.data_class(codec.request_type(LEAVE), "MemberIdentity")
    new = await conn.request(LEAVE, 3, group_id="nope", members=[identity(member_id="m", group_instance_id="i")])
    assert new.error_code == 0
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in new.members] == [("m", "i", 25)]
    await conn.close()


async def test_list_and_delete_groups(server: EmulatorServer) -> None:
    conn = await connect(server)
    await (await send(conn, JOIN, 4, **join_fields(4))).response()  # a MEMBER_ID_REQUIRED-only group
    listed = await conn.request(LIST, 4, states_filter=["empty"])
    assert [(g.group_id, g.protocol_type, g.group_state) for g in listed.groups] == [("g", "", "Empty")]
    listed_v5 = await conn.request(LIST, 5, states_filter=[], types_filter=["classic"])
    assert [g.group_type for g in listed_v5.groups] == ["classic"]
    deleted = await conn.request(DELETE, 2, groups_names=["g", "missing", "g"])
    assert [(r.group_id, r.error_code) for r in deleted.results] == [("g", 0), ("missing", 69)]
    await conn.close()


async def test_two_members_rebalance_and_parked_replies_reach_both_connections(server: EmulatorServer) -> None:
    a, b = await connect(server), await connect(server)
    records: list[GroupRecord] = []
    service: GroupService = server.world.services["groups"]
    service.subscribe(records.append)
    ja = await send(a, JOIN, 2, client_id="a", **join_fields(2))
    jb = await send(b, JOIN, 2, client_id="b", **join_fields(2))
    server.advance(100)
    server.advance(100)  # the second member extended the initial delay once
    ra, rb = await ja.response(), await jb.response()
    assert ra.generation_id == rb.generation_id == 1 and ra.leader == rb.leader
    assert {type(r).__name__ for r in records} >= {"MemberJoined", "GenerationStarted"}
    await a.close()
    await b.close()


async def test_not_coordinator_for_a_group_owned_by_another_broker() -> None:
    config = EmulatorConfig(port=0, brokers=3, manual_clock=True, group=GROUP_CONFIG)
    async with EmulatorServer(config) as srv:
        target = coordinator_for(srv.world, "g").node_id
        other = next(b for b in srv.world.cluster.live_brokers() if b.node_id != target)
        conn = await RawConnection.open(other.host, other.port)
        r = await conn.request(HEARTBEAT, 0, group_id="g", generation_id=1, member_id="m")
        assert r.error_code == E.NOT_COORDINATOR
        j = await conn.request(JOIN, 5, **join_fields(5))
        assert (j.error_code, j.member_id, j.generation_id) == (E.NOT_COORDINATOR, "", -1)
        await conn.close()


async def test_seeded_emulators_generate_the_same_member_ids() -> None:
    ids = []
    for _ in range(2):
        config = EmulatorConfig(port=0, manual_clock=True, group=GROUP_CONFIG, seed=42, flavor=Flavor.KAFKA_3)
        async with EmulatorServer(config) as srv:
            conn = await connect(srv)
            ids.append((await (await send(conn, JOIN, 4, **join_fields(4))).response()).member_id)
            await conn.close()
    assert ids[0] == ids[1]


@pytest.mark.clients
async def test_kafka_python_consumer_group_of_two_forms_and_splits_the_partitions() -> None:
    """A real-client smoke: two kafka-python KafkaConsumers join, sync and get disjoint ranges."""
    import threading
    import time

    kafka = pytest.importorskip("kafka")
    config = EmulatorConfig(port=0, topics=(("t", 4),), group=GroupConfig(initial_rebalance_delay_ms=0))
    async with EmulatorServer(config) as srv:
        if 3 not in srv.world.versions.ranges:
            pytest.skip("Metadata is not served yet")
        bootstrap, stop = srv.bootstrap_servers, threading.Event()
        seen: dict[str, set[tuple[str, int]]] = {}

        def consume(name: str) -> None:
            consumer = kafka.KafkaConsumer("t", bootstrap_servers=bootstrap, group_id="smoke", client_id=name,
                                           enable_auto_commit=False, session_timeout_ms=10_000,
                                           heartbeat_interval_ms=500)
            know_partitions_before_joining(consumer)  # no metadata-triggered rejoin (see the helper)
            deadline = time.time() + 30
            while time.time() < deadline and not stop.is_set():
                try:  # OffsetFetch may not be served yet; the group still forms
                    consumer.poll(timeout_ms=KAFKA_PYTHON_POLL_MS)  # long polls: see KAFKA_PYTHON_POLL_MS
                except Exception:
                    time.sleep(0.1)
                seen[name] = {(tp.topic, tp.partition) for tp in consumer.assignment()}
            consumer.close()

        threads = [threading.Thread(target=consume, args=(n,), daemon=True) for n in ("c1", "c2")]
        for t in threads:
            t.start()
        service: GroupService = srv.world.services["groups"]
        view = None
        try:
            for _ in range(300):
                await asyncio.sleep(0.1)
                view = service.coordinator.group("smoke")
                parts = [seen.get(n, set()) for n in ("c1", "c2")]
                if view and view.state == "Stable" and len(view.members) == 2 and all(parts) \
                        and len(parts[0] | parts[1]) == 4:
                    break
        finally:
            stop.set()
            await asyncio.to_thread(lambda: [t.join(30) for t in threads])
        assert view is not None and view.state == "Stable" and len(view.members) == 2
        assert view.protocol_name == "range"
        assert seen["c1"].isdisjoint(seen["c2"]) and seen["c1"] | seen["c2"] == {("t", p) for p in range(4)}


def _request_fields(api_key: int, version: int) -> dict[str, Any]:
    identity = codec.data_class(codec.request_type(LEAVE), "MemberIdentity")
    if api_key == JOIN:
        return join_fields(version, "unknown-member")
    if api_key == SYNC:
        fields: dict[str, Any] = dict(group_id="g", generation_id=1, member_id="m", assignments=[])
        if version >= 3:
            fields["group_instance_id"] = None
        if version >= 5:
            fields.update(protocol_type="consumer", protocol_name="range")
        return fields
    if api_key == HEARTBEAT:
        extra = {"group_instance_id": None} if version >= 3 else {}
        return dict(group_id="g", generation_id=1, member_id="m", **extra)
    if api_key == LEAVE:
        return dict(group_id="g", member_id="m") if version < 3 else dict(
            group_id="g", members=[identity(member_id="m", group_instance_id=None)])
    if api_key == DESCRIBE:
        return dict(groups=["g"], **({"include_authorized_operations": True} if version >= 3 else {}))
    if api_key == LIST:
        return dict(**({"states_filter": []} if version >= 4 else {}), **({"types_filter": []} if version >= 5 else {}))
    return dict(groups_names=["g"])


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(k, v) for k, top in ((JOIN, 9), (SYNC, 5), (HEARTBEAT, 4), (LEAVE, 5), (DESCRIBE, 6), (LIST, 5), (DELETE, 2))
     for v in range(top + 1)],
)
async def test_every_version_of_every_group_api_round_trips(server: EmulatorServer, api_key: int,
                                                            version: int) -> None:
    conn = await connect(server)
    response = await conn.request(api_key, version, **_request_fields(api_key, version))
    expected_unknown = {JOIN: E.UNKNOWN_MEMBER_ID, SYNC: E.UNKNOWN_MEMBER_ID, HEARTBEAT: E.UNKNOWN_MEMBER_ID}
    if api_key in expected_unknown:
        assert response.error_code == expected_unknown[api_key]
    elif api_key == LEAVE:
        assert response.error_code == (E.UNKNOWN_MEMBER_ID if version < 3 else 0)
    elif api_key == DESCRIBE:
        assert response.groups[0].group_state == "Dead"  # v6 too (GROUP_ID_NOT_FOUND), as the 4.4.0 broker answers
    elif api_key == DELETE:
        assert response.results[0].error_code == E.GROUP_ID_NOT_FOUND
    await conn.close()


async def test_zero_initial_delay_completes_a_join_on_a_manual_clock_without_advancing() -> None:
    config = EmulatorConfig(port=0, manual_clock=True, group=GroupConfig(initial_rebalance_delay_ms=0))
    async with EmulatorServer(config) as srv:
        conn = await connect(srv)
        r = await conn.request(JOIN, 3, client_id="z", **join_fields(3, session_timeout_ms=10_000))
        assert (r.error_code, r.generation_id) == (0, 1)
        await conn.close()


async def test_find_coordinator_v3_says_none_and_v4_answers_each_key_in_order(server: EmulatorServer) -> None:
    """Scenario 69 and trap 13, through the same shell the group APIs use."""
    conn = await connect(server)
    v3 = await conn.request(10, 3, key="g", key_type=0)
    assert (v3.error_code, v3.error_message) == (0, "NONE")
    v4 = await conn.request(10, 4, key_type=0, coordinator_keys=["a", "b"])
    assert [(c.key, c.error_code, c.error_message) for c in v4.coordinators] == [("a", 0, ""), ("b", 0, "")]
    await conn.close()
