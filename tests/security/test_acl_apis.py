"""CreateAcls/DescribeAcls/DeleteAcls on the emulator: no authorizer, a caller without cluster rights, the file's ACLs.

The answers an authorizer gives to valid and invalid bindings and filters are compared with a real
broker in tests/integration/test_acl_vs_kafka.py.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.protocol import codec
from tests.integration.wire import RawConnection
from tests.security.acl_support import raw_emulator

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
ANY_FILTER = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
              "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}


def creation(name: str) -> Any:
    shape = codec.data_class(codec.request_type(CREATE_ACLS), "AclCreation")
    return shape(resource_type=2, resource_name=name, resource_pattern_type=3, principal="User:alice", host="*",
                 operation=3, permission_type=3)


def delete_filter() -> Any:
    return codec.data_class(codec.request_type(DELETE_ACLS), "DeleteAclsFilter")(**ANY_FILTER)


async def connect(config: EmulatorConfig) -> AsyncIterator[RawConnection]:
    async with raw_emulator(config) as conn:
        yield conn


@pytest.fixture
async def no_authorizer() -> AsyncIterator[RawConnection]:
    async for conn in connect(EmulatorConfig(port=0)):
        yield conn


def acl_file(tmp_path: Path, acls: list[dict[str, str]]) -> str:
    path = tmp_path / "acls.json"
    path.write_text(json.dumps({"acls": acls}))
    return str(path)


@pytest.mark.parametrize("version", [1, 2, 3])
async def test_without_an_acl_file_the_acl_apis_answer_security_disabled(no_authorizer: RawConnection,
                                                                          version: int) -> None:
    described = await no_authorizer.request(DESCRIBE_ACLS, version, **ANY_FILTER)
    assert (described.error_code, described.error_message) == (54, "No Authorizer is configured on the broker")
    created = await no_authorizer.request(CREATE_ACLS, version, creations=[creation("a"), creation("b")])
    assert [(r.error_code, r.error_message) for r in created.results] == [(54, "No Authorizer is configured.")] * 2
    deleted = await no_authorizer.request(DELETE_ACLS, version, filters=[delete_filter()])
    assert [(r.error_code, r.error_message, r.matching_acls) for r in deleted.filter_results] == [
        (54, "No Authorizer is configured.", [])]


async def test_a_caller_without_cluster_rights_gets_cluster_authorization_failed(tmp_path: Path) -> None:
    acls = [{"principal": "User:admin", "operation": "ALTER", "resource_type": "CLUSTER",
             "resource_name": "kafka-cluster"}]
    async for conn in connect(EmulatorConfig(port=0, acl_file=acl_file(tmp_path, acls))):
        described = await conn.request(DESCRIBE_ACLS, 3, **ANY_FILTER)
        assert (described.error_code, described.resources) == (31, [])
        created = await conn.request(CREATE_ACLS, 3, creations=[creation("a")])
        assert [r.error_code for r in created.results] == [31]
        deleted = await conn.request(DELETE_ACLS, 3, filters=[delete_filter()])
        assert [r.error_code for r in deleted.filter_results] == [31]


async def test_super_users_manage_the_acls_loaded_from_the_file(tmp_path: Path) -> None:
    acls = [{"principal": "User:bob", "operation": "READ", "resource_type": "GROUP", "resource_name": "g"}]
    config = EmulatorConfig(port=0, acl_file=acl_file(tmp_path, acls), super_users=("User:ANONYMOUS",))
    async for conn in connect(config):
        created = await conn.request(CREATE_ACLS, 3, creations=[creation("orders")])
        assert [r.error_code for r in created.results] == [0]
        described = await conn.request(DESCRIBE_ACLS, 3, **ANY_FILTER)
        assert sorted((r.resource_type, r.resource_name) for r in described.resources) == [(2, "orders"), (3, "g")]
        deleted = await conn.request(DELETE_ACLS, 3, filters=[delete_filter()])
        assert len(deleted.filter_results[0].matching_acls) == 2
        assert (await conn.request(DESCRIBE_ACLS, 1, **ANY_FILTER)).resources == []
