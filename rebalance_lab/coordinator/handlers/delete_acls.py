"""DeleteAcls (31), v1-3 as Kafka 4.4.0 serves it: per filter, the bindings it matched and removed.

Every filter sees the bindings as they were before the request (a binding two filters match is
reported by both, as on the real broker); the union of the matches is removed.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.handlers.acl_common import (
    acl_fields,
    filter_codes,
    filter_of,
    gate,
    refuse_unknown_codes,
)
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.security.acls import Acl, Operation

API_KEY = 31


def _result(result_type: Any, acls: list[Acl]) -> Any:
    matching_type = codec.data_class(result_type, "DeleteAclsMatchingAcl")
    matching = [matching_type(error_code=0, error_message=None, resource_type=acl.resource_type,
                              resource_name=acl.resource_name, pattern_type=acl.pattern_type, **acl_fields(acl))
                for acl in acls]
    return result_type(error_code=0, error_message=None, matching_acls=matching)


def handle(ctx: RequestContext, request: Any) -> Any:
    filters = list(request.filters or ())
    for f in filters:
        refuse_unknown_codes("DeleteAclsRequest", *filter_codes(f))
    result_type = codec.data_class(codec.response_type(API_KEY), "DeleteAclsFilterResult")
    authorizer, error, message = gate(ctx, Operation.ALTER)
    if authorizer is None:
        results = [result_type(error_code=int(error), error_message=message, matching_acls=[]) for _ in filters]
        return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, filter_results=results)
    matched = [authorizer.describe(filter_of(entry)) for entry in filters]
    for acls in matched:
        for acl in acls:
            authorizer.remove(acl)
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0,
                              filter_results=[_result(result_type, acls) for acls in matched])
