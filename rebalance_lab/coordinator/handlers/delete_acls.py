"""DeleteAcls (31), v1-3 as Kafka 4.4.0 serves it: per filter, the bindings it matched and removed.

Every filter sees the bindings as they were before the request (a binding two filters match is
reported by both, as on the real broker); the union of the matches is removed.
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
from rebalance_lab.security.acls import Acl, AclFilter, Operation
from rebalance_lab.security.authorizer import StandardAuthorizer

API_KEY = 31


def _result(result_type: Any, acls: list[Acl], pacer: Pacer) -> Generator[None, None, Any]:
    matching_type = codec.data_class(result_type, "DeleteAclsMatchingAcl")
    matched = []
    for acl in acls:
        yield from pacer.pause()
        matched.append(matching_type(error_code=0, error_message=None, resource_type=acl.resource_type,
                                     resource_name=acl.resource_name, pattern_type=acl.pattern_type,
                                     **acl_fields(acl)))
    return result_type(error_code=0, error_message=None, matching_acls=matched)


def handle(ctx: RequestContext, request: Any) -> Any:
    filters = list(request.filters or ())
    for f in filters:
        refuse_unknown_codes("DeleteAclsRequest", *filter_codes(f))
    result_type = codec.data_class(codec.response_type(API_KEY), "DeleteAclsFilterResult")
    authorizer, error, message = gate(ctx, Operation.ALTER)
    if authorizer is None:
        results = [result_type(error_code=int(error), error_message=message, matching_acls=[]) for _ in filters]
        return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, filter_results=results)
    acls = authorizer.acls  # each filter is matched against every binding (AclControlManager.deleteAcls too)
    return answer(_deleted(ctx, authorizer, acls, [filter_of(f) for f in filters], result_type),
                  len(acls) * max(1, len(filters)))


def _deleted(ctx: RequestContext, authorizer: StandardAuthorizer, acls: list[Acl], filters: list[AclFilter],
             result_type: Any) -> Generator[None, None, Any]:
    """Matched, removed and answered in steps: another request may see part of the bindings removed, where
    Kafka's controller removes them in one batch (FIDELITY.md, Network layer and fairness)."""
    pacer = Pacer()
    matched = []
    for acl_filter in filters:
        matched.append((yield from matching(acls, acl_filter, pacer)))
    for found in matched:
        for acl in found:
            yield from pacer.pause()
            authorizer.remove(acl)
    results = []
    for found in matched:
        results.append((yield from _result(result_type, found, pacer)))
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, filter_results=results)
