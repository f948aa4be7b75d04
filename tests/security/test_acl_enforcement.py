"""What the emulator's authorizer lets User:ANONYMOUS (every PLAINTEXT client) do, for the checks a PLAINTEXT
real broker cannot show: an ACL on the cluster resource there takes CLUSTER_ACTION away from the broker itself
(tests/integration/test_acl_vs_kafka.py compares the rest with Kafka 4.4.0)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from rebalance_lab.protocol import codec
from tests.integration.wire import RawConnection
from tests.security.acl_support import acl_emulator

ANON = "User:ANONYMOUS"
# Only someone else may act on the cluster: ANONYMOUS loses every cluster permission
CLUSTER_FOR_BOB = {"principal": "User:bob", "operation": "ALL", "resource_type": "CLUSTER",
                   "resource_name": "kafka-cluster"}


def acl(operation: str, kind: str, name: str, principal: str = ANON, **extra: str) -> dict[str, str]:
    return {"principal": principal, "operation": operation, "resource_type": kind, "resource_name": name, **extra}


def creatable(name: str) -> Any:
    shape = codec.data_class(codec.request_type(19), "CreatableTopic")
    return shape(name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])


async def metadata(conn: RawConnection, *names: str, auto_create: bool = False) -> list[tuple[str, int]]:
    topic = codec.data_class(codec.request_type(3), "MetadataRequestTopic")
    response = await conn.request(3, 9, topics=[topic(name=n) for n in names], allow_auto_topic_creation=auto_create,
                                  include_cluster_authorized_operations=False,
                                  include_topic_authorized_operations=False)
    return [(t.name, t.error_code) for t in response.topics]


async def test_create_topics_needs_create_on_the_cluster_or_the_topic(tmp_path: Path) -> None:
    acls = [CLUSTER_FOR_BOB, acl("CREATE", "TOPIC", "ok-", pattern_type="PREFIXED"),
            acl("DESCRIBE_CONFIGS", "TOPIC", "ok-described")]
    async with acl_emulator(tmp_path, acls) as conn:
        response = await conn.request(19, 7, topics=[creatable("ok-1"), creatable("no-1"), creatable("ok-described")],
                                      timeout_ms=1000, validate_only=False)
        answers = {t.name: t for t in response.topics}
        assert (answers["no-1"].error_code, answers["no-1"].error_message) == (29, "Authorization failed.")
        # created, but its configs are shown only with DESCRIBE_CONFIGS on the topic
        assert (answers["ok-1"].error_code, answers["ok-1"].topic_config_error_code, answers["ok-1"].configs) == (
            0, 29, [])
        assert answers["ok-described"].topic_config_error_code == 0 and answers["ok-described"].configs
        assert [t.name for t in response.topics] == ["ok-1", "ok-described", "no-1"]


async def test_metadata_auto_creates_only_with_create_and_hides_nothing_it_may_describe(tmp_path: Path) -> None:
    acls = [CLUSTER_FOR_BOB, acl("DESCRIBE", "TOPIC", "auto-", pattern_type="PREFIXED"),
            acl("CREATE", "TOPIC", "auto-yes")]
    async with acl_emulator(tmp_path, acls) as conn:
        assert await metadata(conn, "auto-no", "auto-yes", "hidden", auto_create=True) == [
            ("auto-no", 29), ("auto-yes", 3), ("hidden", 29)]
        assert await metadata(conn, "auto-no", "auto-yes") == [("auto-no", 3), ("auto-yes", 0)]


async def test_init_producer_id_needs_idempotent_write_or_write_on_some_topic(tmp_path: Path) -> None:
    async with acl_emulator(tmp_path, [CLUSTER_FOR_BOB]) as conn:
        idempotent = await conn.request(22, 4, transactional_id=None, transaction_timeout_ms=60_000,
                                        producer_id=-1, producer_epoch=-1)
        assert idempotent.error_code == 31
        transactional = await conn.request(22, 4, transactional_id="tx", transaction_timeout_ms=60_000,
                                           producer_id=-1, producer_epoch=-1)
        assert transactional.error_code == 53
    async with acl_emulator(tmp_path, [CLUSTER_FOR_BOB, acl("WRITE", "TOPIC", "orders")]) as conn:
        idempotent = await conn.request(22, 4, transactional_id=None, transaction_timeout_ms=60_000,
                                        producer_id=-1, producer_epoch=-1)
        assert (idempotent.error_code, idempotent.producer_id >= 0) == (0, True)


async def test_super_users_pass_every_check_even_a_deny(tmp_path: Path) -> None:
    acls = [acl("ALL", "TOPIC", "*", permission="DENY"), acl("ALL", "GROUP", "*", permission="DENY")]
    async with acl_emulator(tmp_path, acls, super_users=(ANON,)) as conn:
        response = await conn.request(19, 7, topics=[creatable("t")], timeout_ms=1000, validate_only=False)
        assert response.topics[0].error_code == 0
        assert await metadata(conn, "t") == [("t", 0)]
    async with acl_emulator(tmp_path, acls, allow_everyone_if_no_acl_found=True) as conn:
        assert await metadata(conn, "t") == [("t", 29)]


async def test_acls_created_at_run_time_apply_to_the_next_request(tmp_path: Path) -> None:
    async with acl_emulator(tmp_path, [], allow_everyone_if_no_acl_found=True, topics=(("t", 1),)) as conn:
        assert await metadata(conn, "t") == [("t", 0)]
        shape = codec.data_class(codec.request_type(30), "AclCreation")
        created = await conn.request(30, 3, creations=[shape(
            resource_type=2, resource_name="t", resource_pattern_type=3, principal="User:bob", host="*",
            operation=3, permission_type=3)])
        assert created.results[0].error_code == 0
        assert await metadata(conn, "t") == [("t", 29)]


def test_serve_refuses_a_bad_acl_file_with_one_line_and_exit_code_2(tmp_path: Path) -> None:
    bad = tmp_path / "acls.json"
    bad.write_text(json.dumps({"acls": [acl("READ", "TOPIC", "t", principal="alice")]}))
    exe = Path(sys.executable).with_name("rebalance-lab")
    done = subprocess.run([str(exe), "serve", "--port", "0", "--acl-file", str(bad)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"rebalance-lab: error: {bad} acls[0]: Could not parse principal from `alice` (no colon is present "
        "separating the principal type from the principal name)"]


def test_the_readme_serve_command_with_an_acl_file_starts(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    document = readme.split("## Authorization (ACLs)")[1].split("```json\n")[1].split("```")[0]
    (tmp_path / "acls.json").write_text(document)
    exe = Path(sys.executable).with_name("rebalance-lab")
    proc = subprocess.Popen([str(exe), "serve", "--port", "0", "--topic", "orders:2", "--acl-file", "acls.json",
                             "--super-user", "User:admin"], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert "listening; bootstrap servers:" in proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(30)


def test_serve_refuses_a_super_user_that_is_not_a_principal(tmp_path: Path) -> None:
    (tmp_path / "acls.json").write_text('{"acls": []}')
    exe = Path(sys.executable).with_name("rebalance-lab")
    done = subprocess.run([str(exe), "serve", "--port", "0", "--acl-file", str(tmp_path / "acls.json"),
                           "--super-user", "admin"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr.strip()) == (2, "rebalance-lab: error: super user: Could not parse principal "
                                                         "from `admin` (no colon is present separating the principal "
                                                         "type from the principal name)")
