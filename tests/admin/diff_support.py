"""The same raw requests to a fresh emulator and to a real broker, for the admin differential tests."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from rebalance_lab.config import EmulatorConfig, Flavor
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.protocol import codec
from tests.integration.wire import RawConnection
from tests.support.kafka_broker import KafkaBroker

Scenario = Callable[[RawConnection, str], Awaitable[list[Any]]]
CREATE_TOPICS, METADATA = 19, 3
_CT = codec.request_type(CREATE_TOPICS)
METADATA_TOPIC = codec.request_type(METADATA).MetadataRequestTopic


async def connect(host_port: str) -> RawConnection:
    host, port = host_port.rsplit(":", 1)
    return await RawConnection.open(host, int(port))


async def run_on(bootstrap: str, scenario: Scenario, suffix: str) -> list[Any]:
    conn = await connect(bootstrap)
    try:
        return await scenario(conn, suffix)
    finally:
        await conn.close()


async def on_both(broker: KafkaBroker, scenario: Scenario, flavor: Flavor = Flavor.KAFKA_4,
                  **config: Any) -> tuple[list[Any], list[Any]]:
    """The scenario's answers from a fresh emulator and from the broker, topic names unique per run."""
    suffix = uuid.uuid4().hex[:8]
    async with EmulatorServer(EmulatorConfig(port=0, flavor=flavor, **config)) as server:
        ours = await run_on(server.bootstrap_servers.split(",")[0], scenario, suffix)
    theirs = await run_on(broker.bootstrap, scenario, suffix)
    return ours, theirs


async def create_topic(conn: RawConnection, name: str, partitions: int = 1,
                       configs: dict[str, str] | None = None) -> Any:
    topic = _CT.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1, assignments=[],
                               configs=[_CT.CreatableTopic.CreatableTopicConfig(name=k, value=v)
                                        for k, v in (configs or {}).items()])
    response = await conn.request(CREATE_TOPICS, 5, topics=[topic], timeout_ms=30_000, validate_only=False)
    assert response.topics[0].error_code == 0, response.topics[0]
    for _ in range(100):  # a real broker learns of the new topic (and its leaders) a moment later
        metadata = await conn.request(METADATA, 1, topics=[METADATA_TOPIC(name=name)])
        known = metadata.topics[0]
        if known.error_code == 0 and all(p.leader_id >= 0 for p in known.partitions):
            return response
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name} never got its leaders")


def assert_same(ours: list[Any], theirs: list[Any]) -> None:
    """Equal answers, step by step (a failure names the first step that differs)."""
    assert len(ours) == len(theirs)
    for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a == b, f"step {index}: emulator {a!r} != broker {b!r}"
