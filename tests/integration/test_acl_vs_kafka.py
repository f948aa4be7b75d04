"""Differential: the same ACL scenarios on a real Kafka 4.4.0 broker with StandardAuthorizer and on the emulator.

The broker runs ``authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer`` with
``allow.everyone.if.no.acl.found=true`` on PLAINTEXT, so every client (and the broker itself, on its
controller listener) is ``User:ANONYMOUS``. Facts found on it while writing these tests:

* an ACL on the CLUSTER resource that does not allow ANONYMOUS takes CLUSTER_ACTION away from the broker's own
  principal: CreateAcls/DeleteAcls (forwarded to the controller) then answer UNKNOWN_SERVER_ERROR. On PLAINTEXT
  the controller listener's principal (ANONYMOUS) must stay allowed, so these scenarios never put ACLs on the
  cluster and use resource names of their own (the broker is shared by the session);
* a code 0 (UNKNOWN) in a binding or filter closes the connection; ANY/MATCH in a new binding is answered
  UNKNOWN_SERVER_ERROR without a message; the other refusals are INVALID_REQUEST with the messages in
  ``security/acls.py``.

The emulator runs with an empty ACL file and ``allow_everyone_if_no_acl_found=True``. Each scenario returns a
comparable outcome (orders Kafka leaves to a hash map are sorted) and the two must be equal.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.protocol import codec
from tests.conftest import Brokers
from tests.integration.wire import RawConnection
from tests.support.kafka_broker import KafkaBroker

pytestmark = [pytest.mark.broker]

ACL_BROKER_SETTINGS = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
# Wire codes (org.apache.kafka.common.acl / resource)
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 2, 3, 4, 5
ALL, READ, WRITE, DELETE, ALTER, DESCRIBE = 2, 3, 4, 6, 7, 8
DENY, ALLOW = 2, 3
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31

Scenario = Callable[[str, str], Awaitable[Any]]


@pytest.fixture(scope="module")
def acl_broker(kafka_brokers: Brokers) -> KafkaBroker:
    return kafka_brokers.get("4", ACL_BROKER_SETTINGS)


@pytest.fixture
async def acl_emulator(tmp_path: Path) -> AsyncIterator[str]:
    acl_file = tmp_path / "acls.json"
    acl_file.write_text(json.dumps({"acls": []}))
    config = EmulatorConfig(port=0, acl_file=str(acl_file), allow_everyone_if_no_acl_found=True)
    async with EmulatorServer(config) as server:
        yield server.bootstrap_servers.split(",")[0]


async def on_both(broker: KafkaBroker, emulator: str, scenario: Scenario) -> tuple[Any, Any]:
    run = f"acl{uuid.uuid4().hex[:10]}"
    return await scenario(broker.bootstrap, run), await scenario(emulator, run)


async def one_request(bootstrap: str, api_key: int, version: int, **fields: Any) -> Any:
    """A request on a fresh connection; the string "closed" when the peer closes it instead of answering."""
    host, port = bootstrap.rsplit(":", 1)
    conn = await RawConnection.open(host, int(port))
    try:
        return await conn.request(api_key, version, **fields)
    except (asyncio.IncompleteReadError, ConnectionError):
        return "closed"
    finally:
        await conn.close()


def creation(kind: int, name: str, pattern: int, principal: str, op: int, perm: int, host: str = "*") -> Any:
    shape = codec.data_class(codec.request_type(CREATE_ACLS), "AclCreation")
    return shape(resource_type=kind, resource_name=name, resource_pattern_type=pattern, principal=principal,
                 host=host, operation=op, permission_type=perm)


def acl_filter(kind: int, name: str | None, pattern: int, principal: str | None, op: int = ANY, perm: int = ANY,
               host: str | None = None) -> dict[str, Any]:
    return {"resource_type_filter": kind, "resource_name_filter": name, "pattern_type_filter": pattern,
            "principal_filter": principal, "host_filter": host, "operation": op, "permission_type": perm}


def described(response: Any) -> Any:
    if isinstance(response, str):
        return response
    resources = sorted((r.resource_type, r.resource_name, r.pattern_type,
                        sorted((a.principal, a.host, a.operation, a.permission_type) for a in r.acls))
                       for r in response.resources)
    return response.error_code, response.error_message, resources


def deleted(response: Any) -> Any:
    if isinstance(response, str):
        return response
    return [(r.error_code, r.error_message,
             sorted((m.error_code, m.error_message, m.resource_type, m.resource_name, m.pattern_type, m.principal,
                     m.host, m.operation, m.permission_type) for m in r.matching_acls))
            for r in response.filter_results]


def creations_of(run: str) -> list[Any]:
    me = f"User:{run}"
    return [
        creation(TOPIC, f"{run}-t-lit", LITERAL, me, READ, ALLOW),
        creation(TOPIC, f"{run}-t-", PREFIXED, me, WRITE, ALLOW),
        creation(GROUP, f"{run}-g", LITERAL, me, ALL, DENY),
        creation(GROUP, f"{run}-g", LITERAL, me, ALL, DENY),  # again: a success
        creation(TOPIC, f"{run}-x", LITERAL, me, DESCRIBE, ALLOW, host="10.0.0.1"),
        creation(TOPIC, f"{run}-x", LITERAL, f"Group:{run}", DESCRIBE, ALLOW),
        creation(CLUSTER, "not-the-cluster", LITERAL, me, DESCRIBE, ALLOW),
        creation(TOPIC, "", LITERAL, me, DESCRIBE, ALLOW),
        creation(TOPIC, f"{run}-x", LITERAL, run, DESCRIBE, ALLOW),
        creation(TOPIC, f"{run}-x", LITERAL, me, DESCRIBE, ALLOW, host=""),
        creation(9, f"{run}-x", LITERAL, me, DESCRIBE, ALLOW),
        creation(TOPIC, f"{run}-x", 9, me, DESCRIBE, ALLOW),
        creation(TOPIC, f"{run}-x", LITERAL, me, 99, ALLOW),
    ]


def bad_bindings(run: str) -> list[Any]:
    me = f"User:{run}"
    name = f"{run}-x"
    return [creation(TOPIC, name, ANY, me, DESCRIBE, ALLOW), creation(TOPIC, name, MATCH, me, READ, ALLOW),
            creation(ANY, name, LITERAL, me, DESCRIBE, ALLOW), creation(TOPIC, name, LITERAL, me, ANY, ALLOW),
            creation(TOPIC, name, LITERAL, me, DESCRIBE, ANY)]


async def acl_api_scenario(bootstrap: str, run: str) -> dict[str, Any]:
    me = f"User:{run}"
    out: dict[str, Any] = {}
    versions = await one_request(bootstrap, 18, 3, client_software_name="t", client_software_version="1")
    out["advertised"] = sorted((k.api_key, k.min_version, k.max_version) for k in versions.api_keys
                               if k.api_key in (DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS))
    bindings = creations_of(run)
    created = await one_request(bootstrap, CREATE_ACLS, 3, creations=bindings)
    out["create"] = [(r.error_code, r.error_message) for r in created.results]
    for index in (3, 4):  # one binding Kafka's AclBinding refuses fails the whole request
        created = await one_request(bootstrap, CREATE_ACLS, index - 2, creations=[*bindings[:2], *bad_bindings(run)])
        out[f"create-v{index - 2}-with-any"] = [(r.error_code, r.error_message) for r in created.results]
    out["create-unknown"] = await one_request(
        bootstrap, CREATE_ACLS, 3, creations=[creation(TOPIC, f"{run}-x", 0, me, DESCRIBE, ALLOW)])
    filters = {
        "mine": acl_filter(ANY, None, ANY, me),
        "match-literal": acl_filter(TOPIC, f"{run}-t-lit", MATCH, None),
        "match-prefixed": acl_filter(TOPIC, f"{run}-t-lit-extra", MATCH, None),
        "literal-is-not-prefix": acl_filter(TOPIC, f"{run}-t-", LITERAL, None),
        "prefixed": acl_filter(TOPIC, f"{run}-t-", PREFIXED, None),
        "any-pattern-by-name": acl_filter(TOPIC, f"{run}-t-lit", ANY, None),
        "host": acl_filter(ANY, None, ANY, me, host="10.0.0.1"),
        "operation": acl_filter(ANY, None, ANY, me, op=ALL),
        "permission": acl_filter(ANY, None, ANY, me, perm=ALLOW),
        "principal-type": acl_filter(TOPIC, f"{run}-x", LITERAL, f"Group:{run}"),
        "unknown-pattern-code": acl_filter(TOPIC, None, 9, me),
        "unknown-operation": acl_filter(ANY, None, ANY, me, op=0),
    }
    for version in (1, 2, 3):
        for name, fields in filters.items():
            out[f"describe-v{version}-{name}"] = described(await one_request(bootstrap, DESCRIBE_ACLS, version,
                                                                             **fields))
    shape = codec.data_class(codec.request_type(DELETE_ACLS), "DeleteAclsFilter")
    out["delete"] = deleted(await one_request(bootstrap, DELETE_ACLS, 3, filters=[
        shape(**acl_filter(TOPIC, f"{run}-t-lit-extra", MATCH, None)),
        shape(**acl_filter(ANY, None, ANY, me, perm=DENY)),
        shape(**acl_filter(ANY, None, ANY, me, perm=DENY)),
    ]))
    out["delete-unknown"] = await one_request(bootstrap, DELETE_ACLS, 1, filters=[
        shape(**acl_filter(0, None, ANY, me))])
    out["left"] = described(await one_request(bootstrap, DESCRIBE_ACLS, 3, **filters["mine"]))
    out["delete-rest"] = deleted(await one_request(bootstrap, DELETE_ACLS, 2, filters=[
        shape(**acl_filter(ANY, None, ANY, me)), shape(**acl_filter(ANY, None, ANY, f"Group:{run}"))]))
    return out


async def test_acl_apis_answer_as_kafka_4_4_does(acl_broker: KafkaBroker, acl_emulator: str) -> None:
    kafka, emulator = await on_both(acl_broker, acl_emulator, acl_api_scenario)
    assert kafka["create"][0] == (0, "")  # the scenario ran on a broker with an authorizer
    for key in kafka:
        assert emulator[key] == kafka[key], key


# -- enforcement: what User:ANONYMOUS may do once ACLs name it or someone else -------------------------------------

def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _fields(cls: Any, schema: list[dict[str, Any]], values: dict[str, Any]) -> dict[str, Any]:
    """Nested dicts to kafka-python's nested message classes, following the API's JSON schema."""
    out: dict[str, Any] = {}
    for field in schema:
        name = _snake(field["name"])
        if name not in values:
            continue
        value = values[name]
        if "fields" in field and value is not None:
            sub = getattr(cls, field["type"].removeprefix("[]"))
            value = [sub(**_fields(sub, field["fields"], v)) for v in value]
        out[name] = value
    return out


async def call(bootstrap: str, api_key: int, version: int, **values: Any) -> Any:
    cls = codec.request_type(api_key)
    return await one_request(bootstrap, api_key, version, **_fields(cls, cls._json["fields"], values))


def _bits(value: Any) -> Any:
    """kafka-python decodes a bitfield to the set of its bits (None for INT_MIN, "not asked")."""
    if isinstance(value, int):  # our own schemas (ConsumerGroupDescribe) keep the int32
        value = None if value == -(1 << 31) else {bit for bit in range(32) if value >> bit & 1}
    return None if value is None else sorted(value)


class Names:
    """The resources of one run: topics and groups with ACLs that allow, restrict or deny ANONYMOUS."""

    def __init__(self, run: str) -> None:
        self.open, self.read, self.write, self.denied = (f"{run}-{n}" for n in ("open", "read", "write", "denied"))
        self.deletable, self.alterable, self.missing = f"{run}-deletable", f"{run}-alterable", f"{run}-missing"
        self.topics = [self.open, self.read, self.write, self.denied, self.deletable, self.alterable]
        self.g_open, self.g_read, self.g_describe = f"{run}-g-open", f"{run}-g-read", f"{run}-g-describe"
        self.g_denied, self.g_hidden, self.g_delete = f"{run}-g-denied", f"{run}-g-hidden", f"{run}-g-delete"
        self.groups = [self.g_open, self.g_read, self.g_describe, self.g_denied, self.g_hidden, self.g_delete]
        self.tx_denied = f"{run}-tx-denied"
        self.ids: dict[str, uuid.UUID] = {}

    def acls(self) -> list[Any]:
        anon, bob = "User:ANONYMOUS", "User:bob"
        return [
            creation(TOPIC, self.read, LITERAL, anon, READ, ALLOW),
            creation(TOPIC, self.write, LITERAL, anon, WRITE, ALLOW),
            creation(TOPIC, self.denied, LITERAL, bob, READ, ALLOW),
            creation(TOPIC, self.missing, LITERAL, bob, READ, ALLOW),
            creation(TOPIC, self.deletable, LITERAL, anon, DELETE, ALLOW),
            creation(TOPIC, self.alterable, LITERAL, anon, ALTER, ALLOW),
            creation(GROUP, self.g_read, LITERAL, anon, READ, ALLOW),
            creation(GROUP, self.g_describe, LITERAL, anon, DESCRIBE, ALLOW),
            creation(GROUP, self.g_denied, LITERAL, anon, READ, DENY),
            creation(GROUP, self.g_hidden, LITERAL, bob, READ, ALLOW),
            creation(GROUP, self.g_delete, LITERAL, anon, DELETE, ALLOW),
            creation(TRANSACTIONAL_ID, self.tx_denied, LITERAL, bob, WRITE, ALLOW),
        ]


async def prepare(bootstrap: str, n: Names) -> None:
    """Topics and committed groups made while nothing is restricted, then the ACLs."""
    created = await call(bootstrap, 19, 7, topics=[
        {"name": t, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
        for t in n.topics], timeout_ms=30_000, validate_only=False)
    assert [t.error_code for t in created.topics] == [0] * len(n.topics)
    n.ids.update((t.name, t.topic_id) for t in created.topics)
    for group in (n.g_open, n.g_read, n.g_hidden, n.g_delete):
        await commit(bootstrap, group, [n.open])
    made = await one_request(bootstrap, CREATE_ACLS, 3, creations=n.acls())
    assert [r.error_code for r in made.results] == [0] * len(n.acls())
    await asyncio.sleep(0.5)  # the broker's metadata log carries ACLs to its authorizer asynchronously


async def commit(bootstrap: str, group: str, topics: list[str]) -> Any:
    response = await call(bootstrap, 8, 8, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                          group_instance_id=None, topics=[
                              {"name": t, "partitions": [{"partition_index": 0, "committed_offset": 0,
                                                          "committed_leader_epoch": -1, "committed_metadata": ""}]}
                              for t in topics])
    return sorted((t.name, [p.error_code for p in t.partitions]) for t in response.topics)


def _batch() -> bytes:
    from tests.unit.dataplane.batches import make_batch

    return make_batch([b"v"])


async def topic_apis(bootstrap: str, n: Names) -> dict[str, Any]:
    out: dict[str, Any] = {}
    wanted = [n.open, n.read, n.write, n.denied, n.missing]
    meta = await call(bootstrap, 3, 10, topics=[{"name": t, "topic_id": uuid.UUID(int=0)} for t in wanted],
                      allow_auto_topic_creation=False, include_cluster_authorized_operations=True,
                      include_topic_authorized_operations=True)
    out["metadata"] = sorted((t.name, t.error_code, len(t.partitions), _bits(t.authorized_operations))
                             for t in meta.topics)
    out["metadata-cluster-ops"] = _bits(meta.authorized_operations)
    every = await call(bootstrap, 3, 12, topics=None, allow_auto_topic_creation=False,
                       include_topic_authorized_operations=False)
    out["metadata-all"] = sorted((t.name, t.error_code) for t in every.topics if t.name.startswith(n.open[:13]))
    produced = await call(bootstrap, 0, 9, transactional_id=None, acks=1, timeout_ms=5_000, topic_data=[
        {"name": t, "partition_data": [{"index": 0, "records": _batch()}]} for t in wanted])
    out["produce"] = sorted((t.name, [(p.error_code, p.error_message, p.base_offset) for p in t.partition_responses])
                            for t in produced.responses)
    fetched = await call(bootstrap, 1, 12, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                         isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                         topics=[{"topic": t, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                              "fetch_offset": 0, "last_fetched_epoch": -1,
                                                              "log_start_offset": -1,
                                                              "partition_max_bytes": 1 << 16}]} for t in wanted])
    out["fetch"] = (fetched.error_code, sorted((t.topic, [(p.error_code, p.high_watermark) for p in t.partitions])
                                               for t in fetched.responses))
    listed = await call(bootstrap, 2, 7, replica_id=-1, isolation_level=0, topics=[
        {"name": t, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}
        for t in wanted])
    out["list-offsets"] = sorted((t.name, [(p.error_code, p.offset) for p in t.partitions]) for t in listed.topics)
    return out


async def by_topic_id(bootstrap: str, n: Names) -> dict[str, Any]:
    """The versions that name topics by id: an unauthorized topic's id is answered as the name is."""
    out: dict[str, Any] = {}
    wanted = [n.open, n.read, n.write, n.denied]
    fetched = await call(bootstrap, 1, 13, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                         isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                         topics=[{"topic_id": n.ids[t], "partitions": [{
                             "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
                             "log_start_offset": -1, "partition_max_bytes": 1 << 16}]} for t in wanted])
    names = {v: k for k, v in n.ids.items()}
    out["fetch-v13"] = sorted((names.get(t.topic_id), [p.error_code for p in t.partitions]) for t in fetched.responses)
    produced = await call(bootstrap, 0, 13, transactional_id=None, acks=1, timeout_ms=5_000, topic_data=[
        {"topic_id": n.ids[t], "partition_data": [{"index": 0, "records": _batch()}]} for t in wanted])
    out["produce-v13"] = sorted((names.get(t.topic_id), [p.error_code for p in t.partition_responses])
                                for t in produced.responses)
    return out


async def transactional_ids(bootstrap: str, n: Names) -> dict[str, Any]:
    out: dict[str, Any] = {}
    # (only the refused key: a real broker answers the first transactional lookup COORDINATOR_NOT_AVAILABLE while it
    # creates __transaction_state, and transactions are not emulated)
    found = await call(bootstrap, 10, 4, key_type=1, coordinator_keys=[n.tx_denied])
    out["find-transaction-coordinator"] = sorted((c.key, c.error_code, c.error_message, c.node_id >= 0)
                                                 for c in found.coordinators)
    single = await call(bootstrap, 10, 3, key=n.tx_denied, key_type=1)
    out["find-transaction-coordinator-v3"] = (single.error_code, single.error_message, single.node_id)
    init = await call(bootstrap, 22, 4, transactional_id=n.tx_denied, transaction_timeout_ms=60_000,
                      producer_id=-1, producer_epoch=-1)
    out["init-producer-id-denied"] = (init.error_code, init.producer_id)
    return out


async def topic_admin_apis(bootstrap: str, n: Names) -> dict[str, Any]:
    out: dict[str, Any] = {}
    grown = await call(bootstrap, 37, 3, topics=[{"name": t, "count": 2, "assignments": None}
                                                 for t in (n.denied, n.read, n.alterable, n.missing)],
                       timeout_ms=30_000, validate_only=True)
    out["create-partitions"] = sorted((r.name, r.error_code, r.error_message) for r in grown.results)
    gone = await call(bootstrap, 20, 5, topic_names=[n.denied, n.read, n.deletable, n.missing], timeout_ms=30_000)
    out["delete-topics"] = sorted((r.name, r.error_code, r.error_message) for r in gone.responses)
    return out


async def group_apis(bootstrap: str, n: Names) -> dict[str, Any]:
    out: dict[str, Any] = {}
    found = await call(bootstrap, 10, 4, key_type=0, coordinator_keys=n.groups)
    out["find-coordinator"] = sorted((c.key, c.error_code, c.error_message, c.node_id >= 0) for c in found.coordinators)
    single = await call(bootstrap, 10, 3, key=n.g_denied, key_type=0)
    out["find-coordinator-v3"] = (single.error_code, single.error_message, single.node_id, single.host, single.port)
    for group in (n.g_describe, n.g_denied):
        joined = await call(bootstrap, 11, 9, group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                            member_id="", group_instance_id=None, protocol_type="consumer",
                            protocols=[{"name": "range", "metadata": b""}], reason=None)
        out[f"join-{group[-8:]}"] = joined.error_code
        synced = await call(bootstrap, 14, 5, group_id=group, generation_id=1, member_id="m", group_instance_id=None,
                            protocol_type="consumer", protocol_name="range", assignments=[])
        out[f"sync-{group[-8:]}"] = synced.error_code
        beat = await call(bootstrap, 12, 4, group_id=group, generation_id=1, member_id="m", group_instance_id=None)
        out[f"heartbeat-{group[-8:]}"] = beat.error_code
        left = await call(bootstrap, 13, 5, group_id=group, members=[{"member_id": "m", "group_instance_id": None,
                                                                      "reason": None}])
        out[f"leave-{group[-8:]}"] = (left.error_code, [m.error_code for m in left.members])
        out[f"join-{group[-8:]}-fields"] = (joined.member_id, joined.generation_id, joined.protocol_name)
    out["commit-denied-group"] = await commit(bootstrap, n.g_denied, [n.open, n.read])
    out["commit-topics"] = await commit(bootstrap, n.g_read, [n.open, n.read, n.write, n.denied, n.missing])
    fetched = await call(bootstrap, 9, 8, require_stable=False, groups=[
        {"group_id": n.g_read, "topics": [{"name": t, "partition_indexes": [0]} for t in (n.open, n.denied)]},
        {"group_id": n.g_read, "topics": None}, {"group_id": n.g_denied, "topics": None},
        {"group_id": n.g_describe, "topics": None}])
    out["offset-fetch"] = [(g.group_id, g.error_code, sorted((t.name, [p.error_code for p in t.partitions])
                                                             for t in g.topics)) for g in fetched.groups]
    for version in (1, 7):
        single = await call(bootstrap, 9, version, group_id=n.g_denied, require_stable=False,
                            topics=[{"name": n.open, "partition_indexes": [0]}])
        out[f"offset-fetch-v{version}"] = (getattr(single, "error_code", None), [
            (t.name, [(p.error_code, p.committed_offset) for p in t.partitions]) for t in single.topics])
    described = await call(bootstrap, 15, 6, groups=n.groups, include_authorized_operations=True)
    out["describe-groups"] = sorted((g.group_id, g.error_code, g.error_message, g.group_state, g.protocol_type,
                                     _bits(g.authorized_operations)) for g in described.groups)
    listed = await call(bootstrap, 16, 4, states_filter=[])
    out["list-groups"] = sorted(g.group_id for g in listed.groups if g.group_id in n.groups)
    dropped = await call(bootstrap, 47, 0, group_id=n.g_denied, topics=[{"name": n.open,
                                                                         "partitions": [{"partition_index": 0}]}])
    out["offset-delete-denied"] = dropped.error_code
    deleted = await call(bootstrap, 42, 2, groups_names=[n.g_read, n.g_delete, n.g_denied])
    out["delete-groups"] = sorted((r.group_id, r.error_code) for r in deleted.results)
    return out


async def regex_assignment(bootstrap: str, n: Names) -> list[str]:
    """A KIP-848 member subscribed by regex gets only the topics it may DESCRIBE (4.4.0 resolves the regex with
    the asking member's principal)."""
    group, member, epoch = f"{n.open[:-5]}-g-regex", str(uuid.uuid4()), 0
    names = {v: k for k, v in n.ids.items()}
    assigned: list[str] = []
    for _ in range(50):
        beat = await call(bootstrap, 68, 1, group_id=group, member_id=member, member_epoch=epoch, instance_id=None,
                          rack_id=None, rebalance_timeout_ms=10_000, subscribed_topic_names=None,
                          subscribed_topic_regex=f"{n.open[:-5]}-.*", server_assignor=None, topic_partitions=[])
        assert beat.error_code == 0, beat
        epoch = beat.member_epoch
        if beat.assignment is not None:
            assigned = sorted(names.get(t.topic_id, "?") for t in beat.assignment.topic_partitions)
        if len(assigned) >= 5:
            break
        await asyncio.sleep(0.2)
    await call(bootstrap, 68, 1, group_id=group, member_id=member, member_epoch=-1, instance_id=None, rack_id=None,
               rebalance_timeout_ms=-1, subscribed_topic_names=None, subscribed_topic_regex=None,
               server_assignor=None, topic_partitions=None)
    return assigned


async def consumer_group_apis(bootstrap: str, n: Names) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, group, topics in (("denied", n.g_denied, [n.open]), ("topic", n.g_read, [n.open, n.denied])):
        beat = await call(bootstrap, 68, 0, group_id=group, member_id=str(uuid.uuid4()), member_epoch=0,
                          instance_id=None, rack_id=None, rebalance_timeout_ms=10_000, subscribed_topic_names=topics,
                          server_assignor=None, topic_partitions=[])
        out[f"consumer-heartbeat-{name}"] = (beat.error_code, beat.error_message, beat.member_id, beat.member_epoch)
    out["regex-assignment"] = await regex_assignment(bootstrap, n)
    described = await call(bootstrap, 69, 0, group_ids=[n.g_denied, n.g_describe, n.g_hidden],
                           include_authorized_operations=True)
    out["consumer-describe"] = sorted((g.group_id, g.error_code, g.error_message, _bits(g.authorized_operations))
                                      for g in described.groups)
    return out


async def enforcement_scenario(bootstrap: str, run: str) -> dict[str, Any]:
    names = Names(run)
    await prepare(bootstrap, names)
    return {**await topic_apis(bootstrap, names), **await by_topic_id(bootstrap, names),
            **await transactional_ids(bootstrap, names), **await group_apis(bootstrap, names),
            **await consumer_group_apis(bootstrap, names), **await topic_admin_apis(bootstrap, names)}


async def test_what_anonymous_may_do_under_acls_matches_kafka_4_4(acl_broker: KafkaBroker, acl_emulator: str) -> None:
    kafka, emulator = await on_both(acl_broker, acl_emulator, enforcement_scenario)
    mismatches = {key: (kafka[key], emulator.get(key)) for key in kafka if emulator.get(key) != kafka[key]}
    assert not mismatches, "\n".join(f"{k}:\n  kafka    {a}\n  emulator {b}" for k, (a, b) in mismatches.items())
