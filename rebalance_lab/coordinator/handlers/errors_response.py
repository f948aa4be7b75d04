"""A whole-request error answer, as Kafka's ``AbstractRequest.getErrorResponse`` gives.

A handler module may define ``error_response(api_version, request, code)`` to
build its API's exact shape (per-partition errors, echoed keys). Otherwise the
generic answer below sets the top-level ``error_code`` (when the version has
one) on a response whose other fields keep their schema defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

ErrorBuilder = Callable[[int, Any, ErrorCode], Any]
_CUSTOM: dict[int, ErrorBuilder] = {}
# Handler modules are imported on first use (handlers/__init__.py): one not loaded yet is loaded here first,
# so that its own builder answers (a fault may ask for an API's error answer before any request of it).
_LOADERS: dict[int, Callable[[], object]] = {}


def register(api_key: int, builder: ErrorBuilder) -> None:
    _CUSTOM[api_key] = builder


def register_loader(api_key: int, load: Callable[[], object]) -> None:
    """``load()`` imports the module serving ``api_key`` (registering its builder, if it has one)."""
    if api_key not in _CUSTOM:
        _LOADERS[api_key] = load


def _has_field(message_type: Any, name: str, version: int) -> bool:
    field = message_type._struct.fields.get(name)
    return field is not None and bool(field.for_version_q(version))


def error_response(api_key: int, api_version: int, request: Any, code: ErrorCode) -> Any:
    load = _LOADERS.pop(api_key, None)
    if load is not None:
        load()
    builder = _CUSTOM.get(api_key)
    if builder is not None:
        return builder(api_version, request, code)
    response = codec.new_response(api_key, api_version)
    if _has_field(codec.response_type(api_key), "error_code", api_version):
        response.error_code = int(code)
    return response
