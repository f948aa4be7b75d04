"""StandardAuthorizer's decisions (Kafka 4.4.0's StandardAuthorizerData), the ACL file, and filter matching."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from rebalance_lab.security.acls import (
    Acl,
    AclFileError,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    load_acl_file,
)
from rebalance_lab.security.authorizer import StandardAuthorizer, all_operations, authorizer_for

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY
Op = Operation


def acl(kind: ResourceType, name: str, op: Operation, perm: Permission = ALLOW, principal: str = "User:alice",
        pattern: PatternType = LITERAL, host: str = "*") -> Acl:
    return Acl(kind, name, pattern, principal, host, op, perm)


def allowed(auth: StandardAuthorizer, op: Operation, kind: ResourceType, name: str, principal: str = "User:alice",
            host: str = "/127.0.0.1") -> bool:
    return auth.authorize(principal, host, op, kind, name)


def test_no_acl_for_a_resource_denies_unless_allow_everyone_if_no_acl_found() -> None:
    assert not allowed(StandardAuthorizer(), Op.READ, TOPIC, "t")
    assert allowed(StandardAuthorizer(allow_everyone_if_no_acl_found=True), Op.READ, TOPIC, "t")


def test_an_acl_for_someone_else_takes_allow_everyone_away_from_the_resource() -> None:
    auth = StandardAuthorizer([acl(TOPIC, "t", Op.READ, principal="User:bob")], allow_everyone_if_no_acl_found=True)
    assert not allowed(auth, Op.READ, TOPIC, "t")
    assert allowed(auth, Op.READ, TOPIC, "other")


def test_super_users_are_allowed_everything_even_against_a_deny() -> None:
    auth = StandardAuthorizer([acl(TOPIC, "t", Op.ALL, DENY, principal="User:*")], super_users=["User:admin"])
    assert allowed(auth, Op.DELETE, TOPIC, "t", principal="User:admin")
    assert not allowed(auth, Op.READ, TOPIC, "t")


def test_deny_wins_over_allow_whatever_their_patterns() -> None:
    auth = StandardAuthorizer([acl(TOPIC, "orders", Op.READ), acl(TOPIC, "ord", Op.READ, DENY, pattern=PREFIXED)])
    assert not allowed(auth, Op.READ, TOPIC, "orders")


def test_literal_prefixed_and_wildcard_patterns_cover_the_names_kafka_says() -> None:
    auth = StandardAuthorizer([acl(TOPIC, "orders", Op.READ), acl(TOPIC, "pay-", Op.READ, pattern=PREFIXED),
                               acl(GROUP, "*", Op.READ)])
    assert allowed(auth, Op.READ, TOPIC, "orders")
    assert not allowed(auth, Op.READ, TOPIC, "orders2")  # a literal is not a prefix
    assert allowed(auth, Op.READ, TOPIC, "pay-eu")
    assert not allowed(auth, Op.READ, TOPIC, "pa")
    assert allowed(auth, Op.READ, GROUP, "any-group")


def test_user_star_and_hosts_match_as_in_kafka() -> None:
    auth = StandardAuthorizer([acl(TOPIC, "t", Op.READ, principal="User:*", host="10.0.0.1")])
    assert allowed(auth, Op.READ, TOPIC, "t", principal="User:bob", host="/10.0.0.1")
    assert not allowed(auth, Op.READ, TOPIC, "t", principal="User:bob", host="/10.0.0.2")


def test_read_write_delete_alter_imply_describe_only_when_allowed() -> None:
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        assert allowed(StandardAuthorizer([acl(TOPIC, "t", op)]), Op.DESCRIBE, TOPIC, "t")
    assert not allowed(StandardAuthorizer([acl(TOPIC, "t", Op.CREATE)]), Op.DESCRIBE, TOPIC, "t")
    assert allowed(StandardAuthorizer([acl(TOPIC, "t", Op.ALTER_CONFIGS)]), Op.DESCRIBE_CONFIGS, TOPIC, "t")
    # a DENY of READ does not deny DESCRIBE
    auth = StandardAuthorizer([acl(TOPIC, "t", Op.READ, DENY), acl(TOPIC, "t", Op.DESCRIBE)])
    assert allowed(auth, Op.DESCRIBE, TOPIC, "t") and not allowed(auth, Op.READ, TOPIC, "t")


def test_all_covers_every_operation_for_allow_and_deny() -> None:
    assert allowed(StandardAuthorizer([acl(GROUP, "g", Op.ALL)]), Op.DELETE, GROUP, "g")
    auth = StandardAuthorizer([acl(GROUP, "g", Op.READ), acl(GROUP, "g", Op.ALL, DENY)])
    assert not allowed(auth, Op.READ, GROUP, "g")


def test_authorized_operations_is_kafkas_32_bit_field_of_supported_operations() -> None:
    auth = StandardAuthorizer([acl(GROUP, "g", Op.READ)])
    assert auth.authorized_operations("User:alice", "/127.0.0.1", GROUP, "g") == (1 << 3) | (1 << 8)
    assert all_operations(GROUP) == sum(1 << op for op in (3, 8, 6, 10, 11))


def test_filters_match_literal_prefixed_and_wildcard_bindings_with_match() -> None:
    bindings = [acl(TOPIC, "t-lit", Op.READ), acl(TOPIC, "t-", Op.WRITE, pattern=PREFIXED), acl(TOPIC, "*", Op.READ)]
    match = AclFilter(TOPIC, "t-lit", PatternType.MATCH, None, None, Op.ANY, Permission.ANY)
    assert [a for a in bindings if match.matches(a)] == bindings
    any_pattern = AclFilter(TOPIC, "t-lit", PatternType.ANY, None, None, Op.ANY, Permission.ANY)
    assert [a for a in bindings if any_pattern.matches(a)] == bindings[:1]
    by_entry = AclFilter(ResourceType.ANY, None, PatternType.ANY, "User:alice", "*", Op.WRITE, ALLOW)
    assert [a for a in bindings if by_entry.matches(a)] == bindings[1:2]


def test_the_acl_file_loads_with_defaults(tmp_path: Path) -> None:
    path = tmp_path / "acls.json"
    path.write_text(json.dumps({"acls": [
        {"principal": "User:alice", "operation": "read", "resource_type": "TOPIC", "resource_name": "orders"},
        {"principal": "User:*", "operation": "ALL", "resource_type": "GROUP", "resource_name": "app-",
         "pattern_type": "PREFIXED", "permission": "DENY", "host": "10.0.0.1"},
    ]}))
    assert load_acl_file(path) == [acl(TOPIC, "orders", Op.READ),
                                   acl(GROUP, "app-", Op.ALL, DENY, "User:*", PREFIXED, "10.0.0.1")]
    auth = authorizer_for(str(path), ["User:admin"], True)
    assert auth is not None and auth.super_users == {"User:admin"} and len(auth.acls) == 2
    assert authorizer_for(None) is None


@pytest.mark.parametrize(("document", "message"), [
    ("[]", 'expected a JSON object {"acls": [...]}'),
    ("{", "not JSON"),
    ('{"acls": [{"principal": "User:a", "operation": "READ", "resource_type": "TOPIC"}]}',
     "missing keys ['resource_name']"),
    ('{"acls": [{"principal": "User:a", "operation": "ANY", "resource_type": "TOPIC", "resource_name": "t"}]}',
     "'ANY' is not one of"),
    ('{"acls": [{"principal": "alice", "operation": "READ", "resource_type": "TOPIC", "resource_name": "t"}]}',
     "Could not parse principal from `alice`"),
    ('{"acls": [{"principal": "User:a", "operation": "READ", "resource_type": "CLUSTER", "resource_name": "c"}]}',
     "The only valid name for the CLUSTER resource is kafka-cluster"),
])
def test_a_bad_acl_file_is_one_clear_error_naming_the_entry(tmp_path: Path, document: str, message: str) -> None:
    path = tmp_path / "acls.json"
    path.write_text(document)
    with pytest.raises(AclFileError, match=re.escape(message)):
        load_acl_file(path)


def _reference(acls: list[Acl], principal: str, op: Operation, kind: ResourceType, name: str,
               allow_everyone: bool) -> bool:
    """StandardAuthorizerData's rule written as a plain scan over every binding (the index must agree)."""
    covering = [a for a in acls if a.resource_type == kind and (
        (a.pattern_type == LITERAL and a.resource_name in (name, "*"))
        or (a.pattern_type == PREFIXED and name.startswith(a.resource_name)))]
    applying = [a for a in covering if a.principal in (principal, "User:*") and a.host == "*" and (
        a.operation in (Op.ALL, op) or (a.permission == ALLOW and op == Op.DESCRIBE
                                        and a.operation in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER)))]
    if any(a.permission == DENY for a in applying):
        return False
    return any(a.permission == ALLOW for a in applying) or (not covering and allow_everyone)


def test_the_indexed_decisions_agree_with_a_scan_over_every_binding_through_creates_and_removes() -> None:
    rng = random.Random(17)
    names = ["a", "ab", "abc", "b", "*", "abd"]
    bindings = [acl(rng.choice([TOPIC, GROUP]), rng.choice(names), rng.choice([Op.READ, Op.WRITE, Op.ALL, Op.DESCRIBE]),
                    rng.choice([ALLOW, DENY]), rng.choice(["User:alice", "User:*", "User:bob"]),
                    rng.choice([LITERAL, PREFIXED])) for _ in range(60)]
    for allow_everyone in (False, True):
        auth = StandardAuthorizer(allow_everyone_if_no_acl_found=allow_everyone)
        live: list[Acl] = []
        for step, binding in enumerate(bindings):
            if step % 4 == 3 and live:
                gone = live.pop(rng.randrange(len(live)))
                auth.remove(gone)
            elif binding not in live:
                auth.create(binding)
                live.append(binding)
            for kind in (TOPIC, GROUP):
                for name in [*names, "abcd", "zz"]:
                    for op in (Op.READ, Op.WRITE, Op.DESCRIBE, Op.DELETE):
                        assert allowed(auth, op, kind, name) == _reference(live, "User:alice", op, kind, name,
                                                                             allow_everyone), (step, kind, name, op)
