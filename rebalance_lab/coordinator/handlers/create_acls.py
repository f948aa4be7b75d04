"""CreateAcls (30), v1-3 as Kafka 4.4.0 serves it: one result per creation, in request order.

Each binding is checked as the broker and its controller check it (:meth:`Acl.validate`); an
existing binding created again is a success.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from rebalance_lab.coordinator.handlers.acl_common import gate, refuse_unknown_codes
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.steps import Pacer, answer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.security.acls import Acl, InvalidAcl, Operation

API_KEY = 30


def _acl(creation: Any) -> Acl:
    return Acl(creation.resource_type, creation.resource_name, creation.resource_pattern_type,
               creation.principal, creation.host, creation.operation, creation.permission_type)


def _validated(acl: Acl) -> tuple[ErrorCode, str | None]:
    try:
        acl.validate()
    except InvalidAcl as exc:
        return ErrorCode.INVALID_REQUEST, exc.message
    return ErrorCode.NONE, ""


def handle(ctx: RequestContext, request: Any) -> Any:
    creations = list(request.creations or ())
    return answer(_answer(ctx, creations), len(creations))


def _answer(ctx: RequestContext, creations: list[Any]) -> Generator[None, None, Any]:
    """Parsed, built, validated and created in steps, then answered in request order."""
    pacer = Pacer()
    for c in creations:
        yield from pacer.pause()
        refuse_unknown_codes("CreateAclsRequest", c.resource_type, c.resource_pattern_type, c.operation,
                             c.permission_type)
    acls: list[Acl] = []
    for creation in creations:
        yield from pacer.pause()
        acls.append(_acl(creation))
    authorizer, error, message = gate(ctx, Operation.ALTER)
    constructible = True
    for acl in acls:
        yield from pacer.pause()
        constructible = constructible and acl.constructible()
    if authorizer is not None and not constructible:
        # AclApis builds every AclBinding first; one that cannot be built fails the whole request
        authorizer, error, message = None, ErrorCode.UNKNOWN_SERVER_ERROR, None
    verdicts: list[tuple[ErrorCode, str | None]] = []
    for acl in acls:
        yield from pacer.pause()
        verdicts.append((error, message) if authorizer is None else _validated(acl))
    if authorizer is not None:
        # In steps too (200,000 bindings take ~0.7 s to add): another request on the loop may see part of
        # them, where Kafka commits them in one controller batch (FIDELITY.md, Network layer and fairness).
        for acl, (code, _text) in zip(acls, verdicts, strict=True):
            yield from pacer.pause()
            if code is ErrorCode.NONE:
                authorizer.create(acl)
    result_type = codec.data_class(codec.response_type(API_KEY), "AclCreationResult")
    results = []
    for code, text in verdicts:
        yield from pacer.pause()
        results.append(result_type(error_code=int(code), error_message=text))
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, results=results)
