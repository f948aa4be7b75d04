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
TOPIC, GROUP, CLUSTER = 2, 3, 4
ALL, READ, WRITE, DESCRIBE, DELETE = 2, 3, 4, 8, 6
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
