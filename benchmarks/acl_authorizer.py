"""What authorization costs: decisions per second with many ACLs, and an all-topics Metadata answer under ACLs.

1. ``StandardAuthorizer.authorize`` on one core, for ACL sets of growing size (a literal ALLOW per topic,
   a PREFIXED ALLOW per ten topics, a wildcard DENY for another principal): the index keeps a decision
   at a few dictionary lookups, so the rate should not fall with the number of ACLs.
2. Through the server: one all-topics Metadata request (with topic authorized operations) for ``--topics``
   topics, without an authorizer and with ``--acls`` ACLs; the time to the answer on loopback.

    .venv/bin/python benchmarks/acl_authorizer.py [--acls 1000,10000,100000] [--topics 2000] [--checks 200000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rebalance_lab.config import EmulatorConfig  # noqa: E402
from rebalance_lab.coordinator.server import EmulatorServer  # noqa: E402
from rebalance_lab.protocol import codec  # noqa: E402
from rebalance_lab.security.acls import Acl, Operation, PatternType, Permission, ResourceType  # noqa: E402
from rebalance_lab.security.authorizer import StandardAuthorizer  # noqa: E402
from tests.integration.wire import RawConnection  # noqa: E402

PRINCIPAL = "User:ANONYMOUS"  # every PLAINTEXT client, so the Metadata request below is the one authorized


def bindings(count: int) -> list[Acl]:
    topic, literal, prefixed = ResourceType.TOPIC, PatternType.LITERAL, PatternType.PREFIXED
    acls = [Acl(topic, f"topic-{i}", literal, PRINCIPAL, "*", Operation.READ, Permission.ALLOW) for i in range(count)]
    acls += [Acl(topic, f"topic-{i}", prefixed, PRINCIPAL, "*", Operation.WRITE, Permission.ALLOW)
             for i in range(0, count, 10)]
    acls.append(Acl(topic, "*", literal, "User:mallory", "*", Operation.ALL, Permission.DENY))
    return acls


def decisions_per_second(count: int, checks: int) -> float:
    auth = StandardAuthorizer(bindings(count))
    names = [f"topic-{i % count}" for i in range(checks)]
    started = time.perf_counter()
    for name in names:
        auth.authorize(PRINCIPAL, "/127.0.0.1", Operation.DESCRIBE, ResourceType.TOPIC, name)
    return checks / (time.perf_counter() - started)


async def metadata_seconds(topics: int, acl_file: str | None) -> tuple[float, int]:
    config = EmulatorConfig(port=0, acl_file=acl_file, topics=tuple((f"topic-{i}", 1)
                                                                                 for i in range(topics)),
                            allow_everyone_if_no_acl_found=True)
    async with EmulatorServer(config) as server:
        host, port = server.bootstrap_servers.split(",")[0].rsplit(":", 1)
        conn = await RawConnection.open(host, int(port))
        try:
            started = time.perf_counter()
            response = await conn.request(3, 12, topics=None, allow_auto_topic_creation=False,
                                          include_topic_authorized_operations=True)
            return time.perf_counter() - started, len(response.topics)
        finally:
            await conn.close()


def write_acl_file(directory: Path, count: int) -> str:
    names = {ResourceType.TOPIC: "TOPIC"}
    entries = [{"principal": a.principal, "operation": Operation(a.operation).name,
                "resource_type": names[ResourceType(a.resource_type)], "resource_name": a.resource_name,
                "pattern_type": PatternType(a.pattern_type).name, "permission": Permission(a.permission).name}
               for a in bindings(count)]
    path = directory / f"acls-{count}.json"
    path.write_text(json.dumps({"acls": entries}))
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--acls", default="1000,10000,100000", help="ACL set sizes (comma-separated)")
    parser.add_argument("--checks", type=int, default=200_000, help="decisions timed per size")
    parser.add_argument("--topics", type=int, default=2_000, help="topics in the all-topics Metadata answer")
    args = parser.parse_args()
    sizes = [int(s) for s in args.acls.split(",")]
    codec.codec_version_range(3)  # load the codec before timing anything
    for size in sizes:
        print(f"authorize, {size:>7} literal ACLs (+{size // 10} prefixed, 1 wildcard): "
              f"{decisions_per_second(size, args.checks):>12,.0f} decisions/s")
    with tempfile.TemporaryDirectory() as tmp:
        baseline, shown = asyncio.run(metadata_seconds(args.topics, None))
        print(f"all-topics Metadata, {args.topics} topics, no authorizer: {baseline * 1000:8.1f} ms, {shown} shown")
        for size in sizes:
            seconds, shown = asyncio.run(metadata_seconds(args.topics, write_acl_file(Path(tmp), size)))
            # the wildcard DENY gives every topic an ACL: only those an ALLOW covers are shown
            print(f"all-topics Metadata, {args.topics} topics, {size:>7} ACLs: {seconds * 1000:8.1f} ms "
                  f"({seconds / baseline:.1f}x), {shown} shown")


if __name__ == "__main__":
    main()
