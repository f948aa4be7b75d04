"""The one seam between rebalance-lab and the Kafka wire codec.

The runtime codec is our own: message classes and per-version read/write plans made from Kafka 4.4.0's
JSON message schemas (:mod:`schema_model`, :mod:`schema_codec`; the facts are in
``schemas/kafka_messages.json``, ConsumerGroupHeartbeat and ConsumerGroupDescribe in our own files). It
depends on no Kafka client library, so installing rebalance-lab never chooses the version of the client an
application uses (issue 21); kafka-python's generated codec is the test-time oracle
(``tests/unit/protocol/test_codec_vs_kafka_python.py``: byte-identical over every served API and version).

The rest of the package sees:

* :func:`decode_request` - a framed request payload to a :class:`DecodedRequest`;
* :func:`new_response` / :func:`encode_response` - a response body for an API and
  version, and its framed bytes with the right response-header version;
* :func:`codec_version_range` - the versions the codec can encode for an API.

Message classes are made per API on first use (start-up pays only for the APIs a process touches).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from rebalance_lab.protocol import (
    classic_group_codec,
    classic_heartbeat_codec,
    heartbeat_codec,
    json_cache,
    nullability,
    schema_codec,
)
from rebalance_lab.protocol.errors import MalformedRequest
from rebalance_lab.protocol.schema_model import Message, MessageInfo, build_message

_HEADER = struct.Struct(">hhi")
_HEARTBEAT_KEY = struct.pack(">h", heartbeat_codec.API_KEY)
_CLASSIC_HEARTBEAT_KEY = struct.pack(">h", classic_heartbeat_codec.API_KEY)
_JOIN_KEY = struct.pack(">h", classic_group_codec.JOIN_KEY)
_SYNC_KEY = struct.pack(">h", classic_group_codec.SYNC_KEY)


def _or_generic(fast: Callable[[Any, int], bytes | None]) -> Callable[[Any, int], bytes]:
    """A fast encoder that may leave an answer to the generic codec (None): that codec then writes its object."""
    def encode(response: Any, correlation_id: int) -> bytes:
        encoded = fast(response, correlation_id)
        return encode_response(generic(response), correlation_id) if encoded is None else encoded
    return encode


# The fast paths' response classes and their encoders (the generic codec writes every other body).
_FAST_ENCODERS: dict[type, Any] = {
    heartbeat_codec.HeartbeatResponse: heartbeat_codec.encode_response,
    classic_heartbeat_codec.HeartbeatResponse: classic_heartbeat_codec.encode_response,
    classic_group_codec.JoinGroupResponse: _or_generic(classic_group_codec.encode_join_response),
    classic_group_codec.SyncGroupResponse: _or_generic(classic_group_codec.encode_sync_response),
}


_OWN_SCHEMAS = ("ConsumerGroupHeartbeat", "ConsumerGroupDescribe")
_API_VERSIONS = 18  # its response header is v0 in every version (KIP-511)


def _schema_file(name: str) -> Any:
    # read beside this module, not through importlib.resources: importing that (tempfile, zipfile, shutil, bz2,
    # lzma) cost serve's start-up more than reading the files (issue 22); pip installs packages unzipped. Through
    # json_cache: a start with its cache imports no json and parses nothing
    return json_cache.load(os.path.join(os.path.dirname(__file__), "schemas", name))


def _load_schemas() -> dict[str, Any]:
    schemas: dict[str, Any] = _schema_file("kafka_messages.json")
    for base in _OWN_SCHEMAS:
        for kind in ("Request", "Response"):
            schemas[base + kind] = _schema_file(f"{base}{kind}.json")
    return _adapt({name: schema for name, schema in schemas.items() if not name.startswith("_")})


# Where the package reads a field by another name or type than Kafka 4.4.0's schema gives, the codec
# follows the package (the names and types kafka-python's codec gave them when it was the runtime codec):
# authorized-operations fields are sets of bit numbers ("bitfield": None for Kafka's INT_MIN, "not asked"),
# and two request defaults are the ones KafkaApis assumes. (message, path of field names) -> changes.
_ADAPTATIONS: dict[tuple[str, tuple[str, ...]], dict[str, str]] = {
    ("MetadataResponse", ("ClusterAuthorizedOperations",)): {"name": "AuthorizedOperations", "type": "bitfield"},
    ("MetadataResponse", ("Topics", "TopicAuthorizedOperations")): {"name": "AuthorizedOperations",
                                                                      "type": "bitfield"},
    ("DescribeClusterResponse", ("ClusterAuthorizedOperations",)): {"name": "AuthorizedOperations",
                                                                     "type": "bitfield"},
    ("DescribeGroupsResponse", ("Groups", "AuthorizedOperations")): {"type": "bitfield"},
    ("TxnOffsetCommitRequest", ("GenerationIdOrMemberEpoch",)): {"name": "GenerationId"},  # 4.4.0's new name
    ("CreatePartitionsRequest", ("Topics", "Assignments")): {"default": "null"},
    ("ListOffsetsRequest", ("ReplicaId",)): {"default": "-1"},
}


# Fields of versions Kafka 4.x removed (KIP-896), which callers may still name: accepted, never on the wire.
_REMOVED: dict[tuple[str, tuple[str, ...]], dict[str, str]] = {
    ("ListOffsetsRequest", ("Topics", "Partitions")): {"name": "MaxNumOffsets", "type": "int32", "default": "1"},
    ("ListOffsetsResponse", ("Topics", "Partitions")): {"name": "OldStyleOffsets", "type": "[]int64"},
    ("OffsetCommitRequest", ("Topics", "Partitions")): {"name": "CommitTimestamp", "type": "int64", "default": "-1"},
    ("DescribeConfigsResponse", ("Results", "Configs")): {"name": "IsDefault", "type": "bool"},
}


def _fields_at(schema: dict[str, Any], path: tuple[str, ...]) -> list[dict[str, Any]]:
    fields: list[dict[str, Any]] = schema["fields"]
    for name in path:
        fields = next(f for f in fields if f["name"] == name)["fields"]
    return fields


def _adapt(schemas: dict[str, Any]) -> dict[str, Any]:
    for (message, path), changes in _ADAPTATIONS.items():
        next(f for f in _fields_at(schemas[message], path[:-1]) if f["name"] == path[-1]).update(changes)
    for (message, path), field in _REMOVED.items():
        _fields_at(schemas[message], path).append({**field, "versions": "none"})
    return schemas


_SCHEMAS = _load_schemas()
_BY_KEY: dict[tuple[int, str], str] = {(int(s["apiKey"]), s["type"]): name for name, s in _SCHEMAS.items()}


class _Classes:
    """API key -> message class of one kind, each made on first use."""

    def __init__(self, kind: str) -> None:
        self._kind = kind

    def __contains__(self, api_key: object) -> bool:
        return (api_key, self._kind) in _BY_KEY

    def __iter__(self) -> Any:
        return iter(sorted(key for key, kind in _BY_KEY if kind == self._kind))

    def get(self, api_key: int) -> Any:
        return _message_class(api_key, self._kind) if api_key in self else None

    def __getitem__(self, api_key: int) -> Any:
        if api_key not in self:
            raise KeyError(api_key)
        return _message_class(api_key, self._kind)


@cache
def _message_class(api_key: int, kind: str) -> Any:
    return build_message(_SCHEMAS[_BY_KEY[(api_key, kind)]])


def _info(cls: Any) -> MessageInfo:
    info: MessageInfo = cls._info
    return info


_REQUESTS = _Classes("request")
_RESPONSES = _Classes("response")

API_NAMES: dict[int, str] = {key: name.removesuffix("Request") for (key, kind), name in sorted(_BY_KEY.items())
                             if kind == "request"}


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
class WireHeader:
    """A decoded message's header, as ``message.header`` (kafka-python's field names)."""

    correlation_id: int
    request_api_key: int | None = None
    request_api_version: int | None = None
    client_id: str | None = None


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
    """The versions the codec's schema declares for an API, or None if it has no schema."""
    name = _BY_KEY.get((api_key, "request"))
    if name is None:
        return None
    return nullability.parse_versions(_SCHEMAS[name]["validVersions"])  # read without making the classes


def is_flexible(api_key: int, version: int) -> bool:
    """Whether ``version`` of an API uses the flexible encoding (compact types, tagged fields, header v2/v1)."""
    return _info(_REQUESTS[api_key]).flexible_in(version)


def known_api_keys() -> list[int]:
    return list(_REQUESTS)


def decode_request(payload: bytes) -> DecodedRequest:
    """Decode an unframed request (header + body). Raises MalformedRequest.

    ConsumerGroupHeartbeat takes :mod:`heartbeat_codec`'s fast path (its body is then a
    ``heartbeat_codec.HeartbeatRequest``) and the classic Heartbeat :mod:`classic_heartbeat_codec`'s,
    unless the input is unusual; everything else, and
    every verdict on malformed input, comes from the schema codec.
    """
    fast = decode_request_fast(payload)
    return fast if fast is not None else decode_request_generic(payload)


def decode_request_fast(payload: bytes) -> DecodedRequest | None:
    """The request if a fast path reads it (no verdict: None for anything it leaves to the generic codec)."""
    key = payload[:2]
    if key in (_JOIN_KEY, _SYNC_KEY):
        group = (classic_group_codec.decode_join_request(payload) if key == _JOIN_KEY
                 else classic_group_codec.decode_sync_request(payload))
        if group is None:
            return None
        return DecodedRequest(int.from_bytes(key, "big"), group[2].version, group[0], group[1], group[2])
    if key == _CLASSIC_HEARTBEAT_KEY:
        classic = classic_heartbeat_codec.decode_request(payload)
        if classic is None:
            return None
        correlation_id, client_id, body = classic
        return DecodedRequest(classic_heartbeat_codec.API_KEY, body.version, correlation_id, client_id, body)
    if key != _HEARTBEAT_KEY:
        return None
    fast = heartbeat_codec.decode_request(payload)
    if fast is None:
        return None
    correlation_id, client_id, kip848 = fast
    return DecodedRequest(heartbeat_codec.API_KEY, kip848.version, correlation_id, client_id, kip848)


def _check_version(cls: Any, version: int) -> MessageInfo:
    """Versions 0 to the newest are read (a broker refuses old ones by its ApiVersions table, not here)."""
    info = _info(cls)
    if not 0 <= version <= info.valid_versions[1]:
        raise ValueError(f"invalid version {version} (newest {info.valid_versions[1]})")
    return info


def _request_body_start(payload: bytes, flexible: bool) -> int:
    """Where the body starts: after header v1 (key, version, correlation id, client id) or v2 (+ tagged fields)."""
    (length,) = struct.unpack_from(">h", payload, _HEADER.size)
    pos = _HEADER.size + 2 + max(int(length), 0)
    if pos > len(payload):
        raise schema_codec.WireError("client id runs past the end")
    if flexible:
        pos = schema_codec.skip_tags(payload, pos)
    return pos


def decode_request_generic(payload: bytes) -> DecodedRequest:
    """:func:`decode_request` without the fast paths (tests compare the two)."""
    header = peek_header(payload)
    cls = _REQUESTS.get(header.api_key)
    if cls is None:
        raise MalformedRequest(f"no schema for api key {header.api_key}")
    name = _info(cls).name
    try:
        info = _check_version(cls, header.api_version)
        flexible = info.flexible_in(header.api_version)
        data = bytes(payload)
        body, _ = schema_codec.decode(cls, data, header.api_version, flexible, _request_body_start(data, flexible))
    except (ValueError, struct.error, IndexError) as exc:
        raise MalformedRequest(f"cannot decode {name} v{header.api_version}: {type(exc).__name__}: {exc}") from exc
    check_nulls(header.api_key, header.api_version, body)
    body._header = WireHeader(header.correlation_id, header.api_key, header.api_version, header.client_id)
    return DecodedRequest(header.api_key, header.api_version, header.correlation_id, header.client_id, body)


_NULL_PLANS: dict[tuple[int, int], nullability.Plan] = {}


def check_nulls(api_key: int, api_version: int, body: Any) -> None:
    """Refuse a null in a field the schema does not let be null, as Kafka's generated readers do.

    The schema codec reads such a null as ``None`` (handlers would then crash); Kafka throws while
    parsing and closes the connection. The plan for each API and version is built once from the
    schema JSON.
    """
    plan = _NULL_PLANS.get((api_key, api_version))
    if plan is None:
        schema = _info(_REQUESTS[api_key]).schema
        plan = _NULL_PLANS[(api_key, api_version)] = nullability.build_plan(schema, api_version)
    try:
        plan.check(body)
    except nullability.NullInNonNullableField as exc:
        raise MalformedRequest(f"cannot decode {_info(_REQUESTS[api_key]).name} v{api_version}: {exc}") from exc


def response_type(api_key: int) -> Any:
    """The response message class of an API (gives access to nested data classes)."""
    return _RESPONSES[api_key]


def request_type(api_key: int) -> Any:
    return _REQUESTS[api_key]


def new_response(api_key: int, version: int, **fields: Any) -> Any:
    """A response body of ``api_key`` at ``version``; unspecified fields take JSON defaults."""
    return _RESPONSES[api_key][version](**fields)


# Parts joined, then freed, at a time in a big answer: sizing, joining and freeing 3 million parts in one C call each
# held the GIL 0.15 s, 0.4 s and 0.06 s (issue 17: off the loop in the codec thread, the loop's thread waited as long).
_JOIN_RUN = 20_000


def _framed(parts: list[bytes]) -> bytes:
    """``parts[0]`` is a placeholder for the size of what follows it."""
    if len(parts) > _JOIN_RUN:
        parts = _runs_joined(parts)
    parts[0] = struct.pack(">i", sum(map(len, parts)))
    return b"".join(parts)


def _runs_joined(parts: list[bytes]) -> list[bytes]:
    """The placeholder, then ``parts`` joined :data:`_JOIN_RUN` at a time; ``parts`` is emptied a run at a time."""
    runs = [parts[0]]
    for start in range(1, len(parts), _JOIN_RUN):
        runs.append(b"".join(parts[start:start + _JOIN_RUN]))
    for end in range(len(parts), 1, -_JOIN_RUN):
        del parts[max(1, end - _JOIN_RUN):end]
    return runs


def _version_of(message: Message) -> int:
    version = message.version
    if version is None:
        raise ValueError(f"{type(message).__name__} has no version: make it with new_response/new_request")
    return version


def encode_response(response: Any, correlation_id: int) -> bytes:
    """Frame a response body with its header (the header version follows the body's)."""
    fast = _FAST_ENCODERS.get(type(response))
    if fast is not None:
        return fast(response, correlation_id)  # type: ignore[no-any-return]
    info, version = _info(type(response)), _version_of(response)
    flexible = info.flexible_in(version)
    parts = [b"", struct.pack(">i", correlation_id)]
    if flexible and info.api_key != _API_VERSIONS:
        parts.append(b"\x00")  # response header v1: no tagged fields
    schema_codec.encode_into(response, version, flexible, parts)
    return _framed(parts)


def encode_request(request: Any, correlation_id: int, client_id: str | None = "rebalance-lab") -> bytes:
    """Frame a request (used by our own light clients and by tests): header v1, or v2 in flexible versions."""
    info, version = _info(type(request)), _version_of(request)
    flexible = info.flexible_in(version)
    client = b"" if client_id is None else client_id.encode("utf-8")
    size = -1 if client_id is None else len(client)
    parts = [b"", _HEADER.pack(info.api_key, version, correlation_id), struct.pack(">h", size), client]
    if flexible:
        parts.append(b"\x00")
    schema_codec.encode_into(request, version, flexible, parts)
    return _framed(parts)


def new_request(api_key: int, version: int, **fields: Any) -> Any:
    return _REQUESTS[api_key][version](**fields)


def decode_response(api_key: int, version: int, payload: bytes) -> Any:
    """Decode an unframed response (header + body) of a known API and version.

    An ApiVersions answer carrying an error is read as v0, whatever was asked (KIP-511: a broker that
    does not know the version answers in v0; Kafka's ``ApiVersionsResponse.parse`` does the same).
    """
    cls = _RESPONSES[api_key]
    info = _check_version(cls, version)
    data = bytes(payload)
    flexible = info.flexible_in(version)
    pos = 4
    if api_key == _API_VERSIONS:
        if struct.unpack_from(">h", data, pos)[0] != 0:
            version, flexible = 0, False
    elif flexible:
        pos = schema_codec.skip_tags(data, pos)
    body = schema_codec.decode(cls, data, version, flexible, pos)[0]
    body._header = WireHeader(struct.unpack_from(">i", data, 0)[0])
    return body


def data_class(message_type: Any, name: str) -> Any:
    """A nested data class of a message, e.g. ``data_class(JoinGroupResponse, 'JoinGroupResponseMember')``."""
    return getattr(message_type, name)


def encode_body(message: Any, version: int) -> bytes:
    """A message body without header or frame (golden-byte tests, embedded payloads)."""
    message = generic(message)
    parts: list[bytes] = []
    schema_codec.encode_into(message, version, _info(type(message)).flexible_in(version), parts)
    return b"".join(parts)


def decode_body(message_type: Any, version: int, data: bytes) -> Any:
    """A message body without header or frame."""
    return schema_codec.decode(message_type, bytes(data), version, _info(message_type).flexible_in(version))[0]


def _topic_partitions(owner: Any, topics: list[heartbeat_codec.TopicPartitions]) -> list[Any]:
    shape = owner.TopicPartitions
    return [shape(topic_id=t.topic_id, partitions=list(t.partitions)) for t in topics]


def generic(message: Any) -> Any:
    """The generic codec's object for a fast-path body (any other message is returned as is)."""
    if isinstance(message, _CLASSIC_GROUP_TYPES):
        return _generic_classic_group(message)
    if isinstance(message, classic_heartbeat_codec.HeartbeatRequest):
        return _REQUESTS[classic_heartbeat_codec.API_KEY][message.version](
            group_id=message.group_id, generation_id=message.generation_id, member_id=message.member_id,
            **({"group_instance_id": message.group_instance_id} if message.version >= 3 else {}))
    if isinstance(message, classic_heartbeat_codec.HeartbeatResponse):
        return new_response(classic_heartbeat_codec.API_KEY, message.version, error_code=message.error_code,
                            **({"throttle_time_ms": message.throttle_time_ms} if message.version >= 1 else {}))
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


_CLASSIC_GROUP_TYPES = (classic_group_codec.JoinGroupRequest, classic_group_codec.SyncGroupRequest,
                        classic_group_codec.JoinGroupResponse, classic_group_codec.SyncGroupResponse)


def _generic_classic_group(message: Any) -> Any:
    """The generic object of a classic JoinGroup/SyncGroup fast-path body (the fields of its version only)."""
    version = message.version
    if isinstance(message, classic_group_codec.JoinGroupRequest):
        cls = _REQUESTS[classic_group_codec.JOIN_KEY]
        protocols = [cls.JoinGroupRequestProtocol(name=p.name, metadata=p.metadata) for p in message.protocols]
        return _versioned(cls, version, group_id=message.group_id, session_timeout_ms=message.session_timeout_ms,
                          rebalance_timeout_ms=message.rebalance_timeout_ms, member_id=message.member_id,
                          group_instance_id=message.group_instance_id, protocol_type=message.protocol_type,
                          protocols=protocols, reason=message.reason)
    if isinstance(message, classic_group_codec.SyncGroupRequest):
        cls = _REQUESTS[classic_group_codec.SYNC_KEY]
        assignments = [cls.SyncGroupRequestAssignment(member_id=a.member_id, assignment=a.assignment)
                       for a in message.assignments]
        return _versioned(cls, version, group_id=message.group_id, generation_id=message.generation_id,
                          member_id=message.member_id, group_instance_id=message.group_instance_id,
                          protocol_type=message.protocol_type, protocol_name=message.protocol_name,
                          assignments=assignments)
    if isinstance(message, classic_group_codec.JoinGroupResponse):
        cls = _RESPONSES[classic_group_codec.JOIN_KEY]
        members = [cls.JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                               metadata=m.metadata) for m in message.members]
        return _versioned(cls, version, throttle_time_ms=message.throttle_time_ms, error_code=message.error_code,
                          generation_id=message.generation_id, protocol_type=message.protocol_type,
                          protocol_name=message.protocol_name, leader=message.leader,
                          skip_assignment=message.skip_assignment, member_id=message.member_id, members=members)
    cls = _RESPONSES[classic_group_codec.SYNC_KEY]
    return _versioned(cls, version, throttle_time_ms=message.throttle_time_ms, error_code=message.error_code,
                      protocol_type=message.protocol_type, protocol_name=message.protocol_name,
                      assignment=message.assignment)


def _versioned(cls: Any, version: int, **fields: Any) -> Any:
    """A ``cls`` message of that version with only the fields the version has."""
    spec = cls._spec.by_name
    return cls[version](**{name: value for name, value in fields.items() if spec[name].for_version_q(version)})

