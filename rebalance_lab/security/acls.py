"""ACL bindings and filters as Kafka models them, and the ACL file the emulator loads at start.

The enums carry Kafka's wire codes (``org.apache.kafka.common.acl.AclOperation``,
``AclPermissionType``, ``org.apache.kafka.common.resource.ResourceType`` and ``PatternType``).
Filter matching follows ``ResourcePatternFilter.matches`` and ``AccessControlEntryFilter.matches``;
the checks on a new binding follow Kafka 4.4.0's answers to CreateAcls (``AclApis`` and the
controller's ``AclControlManager.validateNewAcl``), established on the real broker
(tests/integration/test_acl_vs_kafka.py).

The ACL file (README, "Authorization") is JSON: ``{"acls": [{"principal": "User:alice",
"operation": "READ", "resource_type": "TOPIC", "resource_name": "orders"}, ...]}`` with
optional ``"permission"`` (ALLOW), ``"host"`` ("*") and ``"pattern_type"`` (LITERAL).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from rebalance_lab.protocol.fast_enum import IntEnumBase, int_enum

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


@int_enum  # made fast (protocol/fast_enum.py, issue 22)
class ResourceType(IntEnumBase):
    """Kafka's ``ResourceType`` codes."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


@int_enum  # made fast (protocol/fast_enum.py, issue 22)
class Operation(IntEnumBase):
    """Kafka's ``AclOperation`` codes."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


@int_enum  # made fast (protocol/fast_enum.py, issue 22)
class Permission(IntEnumBase):
    """Kafka's ``AclPermissionType`` codes."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


@int_enum  # made fast (protocol/fast_enum.py, issue 22)
class PatternType(IntEnumBase):
    """Kafka's ``PatternType`` codes."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


# Kafka's AclEntry.supportedOperations: the bits of the "authorized operations" fields.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (Operation.READ, Operation.WRITE, Operation.CREATE, Operation.DESCRIBE, Operation.DELETE,
                         Operation.ALTER, Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS),
    ResourceType.GROUP: (Operation.READ, Operation.DESCRIBE, Operation.DELETE, Operation.DESCRIBE_CONFIGS,
                         Operation.ALTER_CONFIGS),
    ResourceType.CLUSTER: (Operation.CREATE, Operation.CLUSTER_ACTION, Operation.DESCRIBE_CONFIGS,
                           Operation.ALTER_CONFIGS, Operation.IDEMPOTENT_WRITE, Operation.ALTER, Operation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (Operation.DESCRIBE, Operation.WRITE),
    ResourceType.DELEGATION_TOKEN: (Operation.DESCRIBE,),
    ResourceType.USER: (Operation.CREATE_TOKENS, Operation.DESCRIBE_TOKENS),
}


class InvalidAcl(ValueError):
    """A binding Kafka refuses to create (INVALID_REQUEST with this message)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _enum_name(enum: type[IntEnum], code: int) -> str:
    """Java's ``fromCode``: a code without a constant reads as UNKNOWN."""
    try:
        return enum(code).name
    except ValueError:
        return "UNKNOWN"


@dataclass(frozen=True)
class Acl:
    """One binding: a resource pattern and an access control entry (Kafka's ``AclBinding``)."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int

    def constructible(self) -> bool:
        """False for the ANY/MATCH values Kafka's ``ResourcePattern`` and ``AccessControlEntry`` refuse.

        On the real broker one such binding fails the whole CreateAcls request: every result is
        UNKNOWN_SERVER_ERROR without a message.
        """
        return not (self.resource_type == ResourceType.ANY or self.pattern_type in (PatternType.ANY, PatternType.MATCH)
                    or self.operation == Operation.ANY or self.permission == Permission.ANY)

    def validate(self) -> None:
        """Raise :class:`InvalidAcl` (INVALID_REQUEST) as Kafka 4.4.0 answers CreateAcls for a constructible
        binding, with AclApis's and AclControlManager's messages."""
        if not self.constructible():
            raise InvalidAcl("ANY and MATCH are only valid in a filter")
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        if not self.resource_name:
            raise InvalidAcl("Invalid empty resource name")
        for field, enum, value in (("resourceType", ResourceType, self.resource_type),
                                   ("patternType", PatternType, self.pattern_type),
                                   ("operation", Operation, self.operation),
                                   ("permissionType", Permission, self.permission)):
            if _enum_name(enum, value) == "UNKNOWN":
                raise InvalidAcl(f"Invalid {field} UNKNOWN")
        if ":" not in self.principal:
            raise InvalidAcl(f"Could not parse principal from `{self.principal}` "
                             "(no colon is present separating the principal type from the principal name)")
        if not self.host:
            raise InvalidAcl("Host pattern cannot be null or empty")


def has_unknown_code(*codes: int) -> bool:
    """Kafka's request constructors refuse a literal UNKNOWN (0) code: the request does not parse."""
    return any(code == 0 for code in codes)


@dataclass(frozen=True)
class AclFilter:
    """Kafka's ``AclBindingFilter``: None matches any name, principal or host; ANY any enum value."""

    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def matches(self, acl: Acl) -> bool:
        return self._matches_pattern(acl) and self._matches_entry(acl)

    def _matches_pattern(self, acl: Acl) -> bool:
        # ResourcePatternFilter.matches: MATCH also finds the wildcard and prefixed patterns covering the name.
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != acl.pattern_type:
            return False
        if self.resource_name is None:
            return True
        if self.pattern_type in (PatternType.ANY, acl.pattern_type):
            return self.resource_name == acl.resource_name
        if acl.pattern_type == PatternType.LITERAL:
            return acl.resource_name in (self.resource_name, WILDCARD)
        return self.resource_name.startswith(acl.resource_name)

    def _matches_entry(self, acl: Acl) -> bool:
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != Operation.ANY and self.operation != acl.operation:
            return False
        return self.permission == Permission.ANY or self.permission == acl.permission


class AclFileError(ValueError):
    """An ACL file that cannot be loaded; the message names the file and the entry."""


_FILE_KEYS = {"principal", "operation", "resource_type", "resource_name", "permission", "host", "pattern_type"}


def _named(enum: type[IntEnum], value: Any, where: str) -> int:
    allowed = [name for name in enum.__members__ if name not in ("UNKNOWN", "ANY", "MATCH")]  # filter-only values
    if not isinstance(value, str) or value.upper() not in allowed:
        raise AclFileError(f"{where}: {value!r} is not one of {', '.join(allowed)}")
    return int(enum[value.upper()])


def _acl_from_entry(entry: Any, where: str) -> Acl:
    if not isinstance(entry, dict):
        raise AclFileError(f"{where}: an entry must be a JSON object")
    unknown = set(entry) - _FILE_KEYS
    missing = {"principal", "operation", "resource_type", "resource_name"} - set(entry)
    if unknown or missing:
        raise AclFileError(f"{where}: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
    acl = Acl(
        resource_type=_named(ResourceType, entry["resource_type"], f"{where} resource_type"),
        resource_name=str(entry["resource_name"]),
        pattern_type=_named(PatternType, entry.get("pattern_type", "LITERAL"), f"{where} pattern_type"),
        principal=str(entry["principal"]), host=str(entry.get("host", WILDCARD)),
        operation=_named(Operation, entry["operation"], f"{where} operation"),
        permission=_named(Permission, entry.get("permission", "ALLOW"), f"{where} permission"),
    )
    try:
        acl.validate()
    except InvalidAcl as exc:
        raise AclFileError(f"{where}: {exc}") from None
    return acl


def parse_acl_document(document: Any, source: str) -> list[Acl]:
    if not isinstance(document, dict) or not isinstance(document.get("acls"), list) or set(document) != {"acls"}:
        raise AclFileError(f'{source}: expected a JSON object {{"acls": [...]}}')
    return [_acl_from_entry(entry, f"{source} acls[{index}]") for index, entry in enumerate(document["acls"])]


def load_acl_file(path: str | os.PathLike[str]) -> list[Acl]:
    """The bindings of an ACL file; :class:`AclFileError` (one line) for anything wrong in it."""
    try:
        with open(path, encoding="utf-8") as file:  # not pathlib: serve imports this module at every start
            text = file.read()
    except OSError as exc:
        raise AclFileError(f"cannot read ACL file {path}: {exc.strerror or exc}") from None
    import json  # here: serve imports this module at every start, and json only for an ACL file (issue 22)

    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AclFileError(f"{path}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    return parse_acl_document(document, str(path))
