"""What CreateAcls, DescribeAcls and DeleteAcls share (Kafka's ``AclApis`` on a 4.4.0 broker).

Facts from the real broker (tests/integration/test_acl_vs_kafka.py): a request carrying a code
0 (UNKNOWN) for a resource type, pattern type, operation or permission does not parse (the
``*AclsRequest`` constructors refuse it) and the connection is closed; other unknown codes parse
and read as UNKNOWN. Without an authorizer the answer is SECURITY_DISABLED; a caller without the
cluster permission (DESCRIBE to describe, ALTER to create or delete) gets CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.steps import Pacer
from rebalance_lab.protocol.errors import ErrorCode, MalformedRequest
from rebalance_lab.security.acls import Acl, AclFilter, Operation, has_unknown_code
from rebalance_lab.security.authorizer import StandardAuthorizer

NO_AUTHORIZER = "No Authorizer is configured."


def refuse_unknown_codes(api: str, *codes: int) -> None:
    if has_unknown_code(*codes):
        raise MalformedRequest(f"{api} contains UNKNOWN elements")


def filter_of(entry: Any) -> AclFilter:
    return AclFilter(entry.resource_type_filter, entry.resource_name_filter, entry.pattern_type_filter,
                     entry.principal_filter, entry.host_filter, entry.operation, entry.permission_type)


def filter_codes(entry: Any) -> tuple[int, ...]:
    return entry.resource_type_filter, entry.pattern_type_filter, entry.operation, entry.permission_type


def gate(ctx: RequestContext, operation: Operation) -> tuple[StandardAuthorizer | None, ErrorCode, str | None]:
    """The authorizer to use, or the error every entry of the answer gets."""
    authorizer = ctx.world.authorizer
    if authorizer is None:
        return None, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER
    if not authz.permits_cluster(ctx, operation):
        return None, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, f"Request from {ctx.principal} needs {operation.name} " \
            "permission."
    return authorizer, ErrorCode.NONE, None


def matching(acls: list[Acl], acl_filter: AclFilter, pacer: Pacer) -> Generator[None, None, list[Acl]]:
    """The bindings of ``acls`` (a copy taken in one step: one image, as Kafka's) that match, in steps."""
    found = []
    for acl in acls:
        yield from pacer.pause()
        if acl_filter.matches(acl):
            found.append(acl)
    return found


def acl_fields(acl: Acl) -> dict[str, Any]:
    return {"principal": acl.principal, "host": acl.host, "operation": acl.operation,
            "permission_type": acl.permission}
