"""kafka-python's generated codec behind the codec seam's interface: the test-time oracle.

Until issue 21 this was ``rebalance_lab/protocol/codec.py``, the runtime codec; the runtime codec is now our
own (schema_model/schema_codec), and this module checks it byte for byte
(``test_codec_vs_kafka_python.py``) and times it beside it (``benchmarks/codec.py --seam``).
kafka-python 3.0.x is a dev dependency only.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

# Only the modules holding the APIs we serve (their classes register themselves on import).
import kafka.protocol.admin.acl  # CreateAcls/DescribeAcls/DeleteAcls (the authorizer's admin APIs)
import kafka.protocol.admin.groups
import kafka.protocol.admin.topics
import kafka.protocol.consumer
import kafka.protocol.metadata
import kafka.protocol.producer.produce
import kafka.protocol.producer.transaction  # noqa: F401
from kafka.protocol.api_message import ApiMessage

from rebalance_lab.protocol import heartbeat_codec, nullability
from rebalance_lab.protocol.errors import MalformedRequest
from tests.unit.protocol import kafka_python_messages as own_messages

_HEADER = struct.Struct(">hhi")
_HEARTBEAT_KEY = struct.pack(">h", heartbeat_codec.API_KEY)


def _all_message_classes() -> list[Any]:
    found: list[Any] = []
    stack: list[Any] = [ApiMessage]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            stack.append(sub)
            if getattr(sub, "_class_version", None) is None and getattr(sub, "_json", None) is not None:
                found.append(sub)
    return found


def _index(kind: str) -> dict[int, Any]:
    table: dict[int, Any] = {}
    for cls in _all_message_classes():
        ours = cls.__module__ == own_messages.__name__
        if cls.type == kind and (cls.__module__.startswith("kafka.protocol.") or ours):
            table.setdefault(int(cls.API_KEY), cls)
    return table


_REQUESTS: dict[int, Any] = _index("request")
_RESPONSES: dict[int, Any] = _index("response")

API_NAMES: dict[int, str] = {key: cls.name.removesuffix("Request") for key, cls in _REQUESTS.items()}


@dataclass(frozen=True)
class DecodedRequest:
    """A request as the emulator sees it after the codec: header fields and body."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    body: Any

    @property
    def api_name(self) -> str:
        return API_NAMES.get(self.api_key, f"Unknown({self.api_key})")


@dataclass(frozen=True)
class RequestHeader:
    """The leading header fields, readable from any request whatever its API or version."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str


def peek_header(payload: bytes) -> RequestHeader:
    """Read api key, version, correlation id and client id without knowing the schema.

    Header v1 and v2 both start with these fields and both encode the client id as a
    classic nullable string (KIP-482 kept it non-compact), so this works even for an
    API key or version we cannot decode. A null client id becomes ``""`` as in
    Java's ``RequestHeader.parse``.
    """
    if len(payload) < _HEADER.size:
        raise MalformedRequest(f"request of {len(payload)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _HEADER.unpack_from(payload, 0)
    client_id = ""
    if len(payload) >= _HEADER.size + 2:
        (length,) = struct.unpack_from(">h", payload, _HEADER.size)
        start = _HEADER.size + 2
        if length > 0:
            raw = payload[start : start + length]
            if len(raw) != length:
                raise MalformedRequest("client id runs past the end of the request")
            client_id = raw.decode("utf-8", errors="replace")
    return RequestHeader(api_key, api_version, correlation_id, client_id)


def codec_version_range(api_key: int) -> tuple[int, int] | None:
    """The versions the codec's JSON declares for an API, or None if it has no schema."""
    cls = _REQUESTS.get(api_key)
    if cls is None or cls.valid_versions is None:
        return None
    low, high = cls.valid_versions
    return int(low), int(high)


def known_api_keys() -> list[int]:
    return sorted(_REQUESTS)


def decode_request(payload: bytes) -> DecodedRequest:
    """Decode an unframed request (header + body). Raises MalformedRequest.

    ConsumerGroupHeartbeat takes :mod:`heartbeat_codec`'s fast path (its body is then a
    ``heartbeat_codec.HeartbeatRequest``) unless the input is unusual; everything else, and
    every verdict on malformed input, comes from kafka-python's generated decoders.
    """
    fast = decode_request_fast(payload)
    return fast if fast is not None else decode_request_generic(payload)


def decode_request_fast(payload: bytes) -> DecodedRequest | None:
    """The request if a fast path reads it (no verdict: None for anything it leaves to the generic codec)."""
    if payload[:2] != _HEARTBEAT_KEY:
        return None
    fast = heartbeat_codec.decode_request(payload)
    if fast is None:
        return None
    correlation_id, client_id, body = fast
    return DecodedRequest(heartbeat_codec.API_KEY, body.version, correlation_id, client_id, body)


def decode_request_generic(payload: bytes) -> DecodedRequest:
    """:func:`decode_request` without the fast paths (tests compare the two)."""
    header = peek_header(payload)
    cls = _REQUESTS.get(header.api_key)
    if cls is None:
        raise MalformedRequest(f"no schema for api key {header.api_key}")
    try:
        body = cls.decode(bytes(payload), version=header.api_version, header=True, framed=False)
    except Exception as exc:  # the generated decoders raise many kinds of errors
        raise MalformedRequest(
            f"cannot decode {cls.name} v{header.api_version}: {type(exc).__name__}: {exc}"
        ) from exc
    check_nulls(header.api_key, header.api_version, body)
    client_id = body.header.client_id or ""
    return DecodedRequest(header.api_key, header.api_version, header.correlation_id, client_id, body)


_NULL_PLANS: dict[tuple[int, int], nullability.Plan] = {}


def check_nulls(api_key: int, api_version: int, body: Any) -> None:
    """Refuse a null in a field the schema does not let be null, as Kafka's generated readers do.

    kafka-python decodes such a null as ``None`` (handlers would then crash); Kafka throws while
    parsing and closes the connection. The plan for each API and version is built once from the
    schema JSON kafka-python carries (Kafka's own message JSON).
    """
    plan = _NULL_PLANS.get((api_key, api_version))
    if plan is None:
        plan = _NULL_PLANS[(api_key, api_version)] = nullability.build_plan(_REQUESTS[api_key]._json, api_version)
    try:
        plan.check(body)
    except nullability.NullInNonNullableField as exc:
        raise MalformedRequest(f"cannot decode {_REQUESTS[api_key].name} v{api_version}: {exc}") from exc


def response_type(api_key: int) -> Any:
    """The response message class of an API (gives access to nested data classes)."""
    return _RESPONSES[api_key]


def request_type(api_key: int) -> Any:
    return _REQUESTS[api_key]


def new_response(api_key: int, version: int, **fields: Any) -> Any:
    """A response body of ``api_key`` at ``version``; unspecified fields take JSON defaults."""
    return _RESPONSES[api_key][version](**fields)


def encode_response(response: Any, correlation_id: int) -> bytes:
    """Frame a response body with its header (the header version follows the body's)."""
    if type(response) is heartbeat_codec.HeartbeatResponse:
        return heartbeat_codec.encode_response(response, correlation_id)
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


def encode_request(request: Any, correlation_id: int, client_id: str = "rebalance-lab") -> bytes:
    """Frame a request (used by our own light clients and by tests)."""
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(header=True, framed=True))


def new_request(api_key: int, version: int, **fields: Any) -> Any:
    return _REQUESTS[api_key][version](**fields)


def decode_response(api_key: int, version: int, payload: bytes) -> Any:
    """Decode an unframed response (header + body) of a known API and version."""
    return _RESPONSES[api_key].decode(bytes(payload), version=version, header=True, framed=False)


def data_class(message_type: Any, name: str) -> Any:
    """A nested data class of a message, e.g. ``data_class(JoinGroupResponse, 'JoinGroupResponseMember')``."""
    return getattr(message_type, name)


def encode_body(message: Any, version: int) -> bytes:
    """A message body without header or frame (golden-byte tests, embedded payloads)."""
    message = generic(message)
    if getattr(message, "_header", None) is None:
        message._header = None  # bodies decoded without a header lack the slot encode() reads
    return bytes(message.encode(version=version))


def decode_body(message_type: Any, version: int, data: bytes) -> Any:
    """A message body without header or frame."""
    return message_type.decode(bytes(data), version=version)


def _topic_partitions(owner: Any, topics: list[heartbeat_codec.TopicPartitions]) -> list[Any]:
    shape = owner.TopicPartitions
    return [shape(topic_id=t.topic_id, partitions=list(t.partitions)) for t in topics]


def generic(message: Any) -> Any:
    """kafka-python's object for a fast-path heartbeat body (any other message is returned as is)."""
    if isinstance(message, heartbeat_codec.HeartbeatRequest):
        cls = _REQUESTS[heartbeat_codec.API_KEY]
        owned = message.topic_partitions
        return cls[message.version](
            group_id=message.group_id, member_id=message.member_id, member_epoch=message.member_epoch,
            instance_id=message.instance_id, rack_id=message.rack_id,
            rebalance_timeout_ms=message.rebalance_timeout_ms,
            subscribed_topic_names=None if message.subscribed_topic_names is None
            else list(message.subscribed_topic_names),
            subscribed_topic_regex=message.subscribed_topic_regex, server_assignor=message.server_assignor,
            topic_partitions=None if owned is None else _topic_partitions(cls, owned),
        )
    if isinstance(message, heartbeat_codec.HeartbeatResponse):
        cls = _RESPONSES[heartbeat_codec.API_KEY]
        assignment = message.assignment
        return cls[message.version](
            throttle_time_ms=message.throttle_time_ms, error_code=message.error_code,
            error_message=message.error_message, member_id=message.member_id, member_epoch=message.member_epoch,
            heartbeat_interval_ms=message.heartbeat_interval_ms,
            assignment=None if assignment is None
            else cls.Assignment(topic_partitions=_topic_partitions(cls.Assignment, assignment.topic_partitions)),
        )
    return message
