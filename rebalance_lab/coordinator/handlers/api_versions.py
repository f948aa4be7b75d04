"""ApiVersions (18): the advertised table, and KIP-511's answer to a version we do not know."""

from __future__ import annotations

from typing import Any

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.protocol.versions import VersionTable

API_KEY = 18


def _api_keys(table: VersionTable, only: int | None = None) -> list[Any]:
    item = codec.data_class(codec.response_type(API_KEY), "ApiVersion")
    return [
        item(api_key=key, min_version=low, max_version=high)
        for key, (low, high) in sorted(table.ranges.items())
        if only is None or key == only
    ]


# The feature a client reads to choose its transaction protocol (KIP-890): a default 4.4.0 broker finalizes
# transaction.version 2 (its other features are not emulated); a 3.9 broker finalizes none of it.
_TRANSACTION_VERSION = "transaction.version"
_FEATURES_FROM = 3


def _features(ctx: RequestContext) -> dict[str, Any]:
    if ctx.api_version < _FEATURES_FROM or ctx.world.config.flavor != Flavor.KAFKA_4:
        return {}
    response = codec.response_type(API_KEY)
    return {
        "supported_features": [response.SupportedFeatureKey(name=_TRANSACTION_VERSION, min_version=0, max_version=2)],
        "finalized_features_epoch": 1,
        "finalized_features": [response.FinalizedFeatureKey(name=_TRANSACTION_VERSION, max_version_level=2,
                                                            min_version_level=2)],
    }


def handle(ctx: RequestContext, request: Any) -> Any:
    return codec.new_response(
        API_KEY, ctx.api_version, error_code=ErrorCode.NONE, api_keys=_api_keys(ctx.world.versions),
        throttle_time_ms=0, **_features(ctx),
    )


def unsupported_version_response(table: VersionTable) -> Any:
    """KIP-511: a v0 body with UNSUPPORTED_VERSION listing the ApiVersions range we support,
    so the client can retry with a version both sides know (``ApiVersionsRequest.getErrorResponse``)."""
    return codec.new_response(
        API_KEY, 0, error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=_api_keys(table, only=API_KEY)
    )
