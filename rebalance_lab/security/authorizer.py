"""Kafka 4.4.0's StandardAuthorizer: who may do what, from a set of ACL bindings.

Facts from ``org.apache.kafka.metadata.authorizer.StandardAuthorizerData`` (``authorize``,
``findAclRule``, ``checkSection``, ``findResult``):

* super users (``super.users``, principals as ``User:NAME``) are allowed everything;
* an ACL applies to a resource when its pattern is LITERAL with the same name, LITERAL ``*``,
  or PREFIXED with a prefix of the name; its principal is the caller's or ``User:*``; its host
  is the caller's address or ``*``;
* any applying DENY wins over every ALLOW; ``ALL`` covers every operation; an ALLOW of READ,
  WRITE, DELETE or ALTER also allows DESCRIBE, an ALLOW of ALTER_CONFIGS allows
  DESCRIBE_CONFIGS (never for DENY);
* when no ACL at all exists for the resource (whatever its principal or operation), the answer
  is ``allow.everyone.if.no.acl.found`` (false by default); otherwise, no ALLOW means denied.
"""

from __future__ import annotations

from collections.abc import Iterable

from rebalance_lab.security.acls import (
    SUPPORTED_OPERATIONS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    Acl,
    AclFileError,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    load_acl_file,
)

_LITERAL, _PREFIXED = int(PatternType.LITERAL), int(PatternType.PREFIXED)
_IMPLIES_DESCRIBE = frozenset({Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS})


def _covers_operation(acl: Acl, operation: Operation) -> bool:
    if acl.operation in (Operation.ALL, operation):
        return True
    if acl.permission != Permission.ALLOW:
        return False
    if operation == Operation.DESCRIBE:
        return acl.operation in _IMPLIES_DESCRIBE
    return operation == Operation.DESCRIBE_CONFIGS and acl.operation in _IMPLIES_DESCRIBE_CONFIGS


def client_address(host: str) -> str:
    """The address ACL hosts are compared with (``InetAddress.getHostAddress``: no leading ``/``)."""
    return host.removeprefix("/")


class StandardAuthorizer:
    """The ACLs of one emulator (every broker shares them, as they share Kafka's metadata log)."""

    def __init__(self, acls: Iterable[Acl] = (), super_users: Iterable[str] = (),
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self._acls: dict[Acl, None] = {}  # insertion-ordered set (DescribeAcls order)
        # (resource type, pattern type, name) -> bindings: a check looks up its name, "*" and each prefix of the
        # name instead of scanning every binding (Kafka keeps a sorted set for the same reason)
        self._index: dict[tuple[int, int, str], list[Acl]] = {}
        self._prefixed: dict[int, int] = {}  # resource type -> PREFIXED bindings (0: skip the prefix lookups)
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        for acl in acls:
            self.create(acl)

    @property
    def acls(self) -> list[Acl]:
        return list(self._acls)

    def authorize(self, principal: str, host: str, operation: Operation, resource_type: ResourceType,
                  name: str) -> bool:
        if principal in self.super_users:
            return True
        principals = (principal, WILDCARD_PRINCIPAL)
        address = client_address(host)
        found_resource_acls = allowed = False
        for acl in self._covering(resource_type, name):
            found_resource_acls = True
            if acl.principal not in principals or acl.host not in (WILDCARD, address):
                continue
            if not _covers_operation(acl, operation):
                continue
            if acl.permission == Permission.DENY:
                return False
            allowed = True
        return allowed or (not found_resource_acls and self.allow_everyone_if_no_acl_found)

    def authorize_any(self, principal: str, host: str, operation: Operation, resource_type: ResourceType) -> bool:
        """Kafka's ``authorizeByResourceType`` (simplified): an ALLOW for ``operation`` on some resource of the
        type, not cancelled by a DENY on every name (LITERAL ``*``); with no such ALLOW, what a resource without
        ACLs would get."""
        if principal in self.super_users:
            return True
        principals, address = (principal, WILDCARD_PRINCIPAL), client_address(host)

        def applies(acl: Acl) -> bool:
            return (acl.resource_type == resource_type and acl.principal in principals
                    and acl.host in (WILDCARD, address) and _covers_operation(acl, operation))

        applicable = [acl for acl in self._acls if applies(acl)]
        if any(a.permission == Permission.DENY and a.pattern_type == PatternType.LITERAL
               and a.resource_name == WILDCARD for a in applicable):
            return False
        if any(a.permission == Permission.ALLOW for a in applicable):
            return True
        return self.allow_everyone_if_no_acl_found and not any(a.resource_type == resource_type for a in self._acls)

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType, name: str) -> int:
        """The 32-bit field of the supported operations allowed (Kafka's ``AuthHelper.authorizedOperations``)."""
        bits = 0
        for operation in SUPPORTED_OPERATIONS[resource_type]:
            if self.authorize(principal, host, operation, resource_type, name):
                bits |= 1 << int(operation)
        return bits

    def _covering(self, resource_type: ResourceType, name: str) -> list[Acl]:
        """The bindings whose pattern covers the resource: LITERAL name, LITERAL ``*``, PREFIXED prefixes."""
        kind, get = int(resource_type), self._index.get  # plain ints: an IntEnum in a key hashes slowly
        found = list(get((kind, _LITERAL, name), ()))
        if name != WILDCARD:
            found += get((kind, _LITERAL, WILDCARD), ())
        if self._prefixed.get(kind):
            for end in range(1, len(name) + 1):
                found += get((kind, _PREFIXED, name[:end]), ())
        return found

    def create(self, acl: Acl) -> None:
        """Add a binding (call :meth:`Acl.validate` first); adding one that exists is a success, as in Kafka."""
        if acl in self._acls:
            return
        self._acls[acl] = None
        key = (int(acl.resource_type), int(acl.pattern_type), acl.resource_name)
        self._index.setdefault(key, []).append(acl)
        if acl.pattern_type == PatternType.PREFIXED:
            self._prefixed[key[0]] = self._prefixed.get(key[0], 0) + 1

    def describe(self, acl_filter: AclFilter) -> list[Acl]:
        return [acl for acl in self._acls if acl_filter.matches(acl)]

    def remove(self, acl: Acl) -> None:
        """Remove a binding if present (DeleteAcls removes what its filters matched)."""
        if acl not in self._acls:
            return
        del self._acls[acl]
        key = (int(acl.resource_type), int(acl.pattern_type), acl.resource_name)
        self._index[key].remove(acl)
        if not self._index[key]:
            del self._index[key]
        if acl.pattern_type == PatternType.PREFIXED:
            self._prefixed[key[0]] -= 1


def all_operations(resource_type: ResourceType) -> int:
    """The field when no authorizer is configured: every supported operation."""
    return sum(1 << int(operation) for operation in SUPPORTED_OPERATIONS[resource_type])


def authorizer_for(acl_file: str | None, super_users: Iterable[str] = (),
                   allow_everyone_if_no_acl_found: bool = False) -> StandardAuthorizer | None:
    """The emulator's authorizer: on with an ACL file (which may hold no ACL), else none, as a broker
    without ``authorizer.class.name``. Raises :class:`~rebalance_lab.security.acls.AclFileError`."""
    if acl_file is None:
        return None
    for principal in super_users:  # super.users is parsed at start: a bad entry stops the broker
        if ":" not in principal:
            raise AclFileError(f"super user: Could not parse principal from `{principal}` (no colon is present "
                               "separating the principal type from the principal name)")
    return StandardAuthorizer(load_acl_file(acl_file), super_users, allow_everyone_if_no_acl_found)
