"""DescribeAcls (29), v1-3 as Kafka 4.4.0 serves it: the bindings a filter matches, by resource pattern.

Resources are listed in the order their first binding was created (Kafka's order is a hash order).
Many bindings are matched and described in steps (200,000 held the loop ~30 s, answer encoding included).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from rebalance_lab.coordinator.handlers.acl_common import (
    acl_fields,
    filter_codes,
    filter_of,
    gate,
    matching,
    refuse_unknown_codes,
)
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.steps import Pacer, answer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.security.acls import Acl, AclFilter, Operation

API_KEY = 29

_NO_AUTHORIZER = "No Authorizer is configured on the broker"  # DescribeAcls words it differently (AclApis)


def _resources(acls: list[Acl], pacer: Pacer) -> Generator[None, None, list[Any]]:
    resource_type = codec.data_class(codec.response_type(API_KEY), "DescribeAclsResource")
    description = codec.data_class(resource_type, "AclDescription")
    grouped: dict[tuple[int, str, int], list[Acl]] = {}
    for acl in acls:
        yield from pacer.pause()
        grouped.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(acl)
    resources = []
    for (kind, name, pattern), members in grouped.items():
        yield from pacer.pause(len(members))
        resources.append(resource_type(resource_type=kind, resource_name=name, pattern_type=pattern,
                                       acls=[description(**acl_fields(acl)) for acl in members]))
    return resources


def handle(ctx: RequestContext, request: Any) -> Any:
    refuse_unknown_codes("DescribeAclsRequest", *filter_codes(request))
    authorizer, error, message = gate(ctx, Operation.DESCRIBE)
    if authorizer is None:
        text = _NO_AUTHORIZER if error is ErrorCode.SECURITY_DISABLED else message
        return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=int(error),
                                  error_message=text, resources=[])
    acls = authorizer.acls  # the work grows with the bindings, not with the request: in steps when there are many
    return answer(_described(ctx, acls, filter_of(request)), len(acls))


def _described(ctx: RequestContext, acls: list[Acl], acl_filter: AclFilter) -> Generator[None, None, Any]:
    pacer = Pacer()
    resources = yield from _resources((yield from matching(acls, acl_filter, pacer)), pacer)
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=0, error_message="",
                              resources=resources)
