"""CreateAcls (30), v1-3 as Kafka 4.4.0 serves it: one result per creation, in request order.

Each binding is checked as the broker and its controller check it (:meth:`Acl.validate`); an
existing binding created again is a success.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.handlers.acl_common import gate, refuse_unknown_codes
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.security.acls import Acl, InvalidAcl, Operation
from rebalance_lab.security.authorizer import StandardAuthorizer

API_KEY = 30


def _acl(creation: Any) -> Acl:
    return Acl(creation.resource_type, creation.resource_name, creation.resource_pattern_type,
               creation.principal, creation.host, creation.operation, creation.permission_type)


def _create(authorizer: StandardAuthorizer, acl: Acl) -> tuple[ErrorCode, str | None]:
    try:
        acl.validate()
    except InvalidAcl as exc:
        return ErrorCode.INVALID_REQUEST, exc.message
    authorizer.create(acl)
    return ErrorCode.NONE, ""


def handle(ctx: RequestContext, request: Any) -> Any:
    creations = list(request.creations or ())
    for c in creations:
        refuse_unknown_codes("CreateAclsRequest", c.resource_type, c.resource_pattern_type, c.operation,
                             c.permission_type)
    result_type = codec.data_class(codec.response_type(API_KEY), "AclCreationResult")
    authorizer, error, message = gate(ctx, Operation.ALTER)
    acls = [_acl(creation) for creation in creations]
    if authorizer is not None and not all(acl.constructible() for acl in acls):
        # AclApis builds every AclBinding first; one that cannot be built fails the whole request
        authorizer, error, message = None, ErrorCode.UNKNOWN_SERVER_ERROR, None
    results = []
    for acl in acls:
        code, text = (error, message) if authorizer is None else _create(authorizer, acl)
        results.append(result_type(error_code=int(code), error_message=text))
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, results=results)
