"""Which APIs and versions the emulator advertises, against the real brokers, and what happens to an API it
does not serve: not advertised in ApiVersions, and a request for it closes the connection at once (no
answer, no hang), so a client fails fast with its own final error (librdkafka: _UNSUPPORTED_FEATURE)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from rebalance_lab.api import Emulator
from rebalance_lab.config import EmulatorConfig, Flavor
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.protocol import codec
from tests.admin.diff_support import connect
from tests.integration.wire import RawConnection
from tests.support.kafka_broker import KafkaBroker

API_VERSIONS = 18
# The admin APIs of issue 18 and, for the kafka-3 flavor, the versions 3.9.2 advertises below the codec's
ADMIN = [21, 23, 32, 33, 35, 43, 44, 45, 46, 60, 74, 75]
BELOW_THE_CODEC = {32: 1, 35: 1, 23: 2}  # DescribeConfigs v0, DescribeLogDirs v0, OffsetForLeaderEpoch v0-1


async def _advertised(conn: RawConnection) -> dict[int, tuple[int, int]]:
    response = await conn.request(API_VERSIONS, 3, client_software_name="t", client_software_version="1")
    return {a.api_key: (a.min_version, a.max_version) for a in response.api_keys}


async def _emulator_table(flavor: Flavor, preset: str) -> dict[int, tuple[int, int]]:
    async with EmulatorServer(EmulatorConfig(port=0, flavor=flavor, api_versions=preset)) as server:
        conn = await connect(server.bootstrap_servers.split(",")[0])
        try:
            return await _advertised(conn)
        finally:
            await conn.close()


async def _broker_table(broker: KafkaBroker) -> dict[int, tuple[int, int]]:
    conn = await connect(broker.bootstrap)
    try:
        return await _advertised(conn)
    finally:
        await conn.close()


@pytest.mark.broker
async def test_the_kafka_4_preset_advertises_the_admin_apis_as_kafka_4_4_does(kafka_broker_4: KafkaBroker) -> None:
    ours, theirs = await _emulator_table(Flavor.KAFKA_4, "kafka-4"), await _broker_table(kafka_broker_4)
    assert {k: ours.get(k) for k in ADMIN} == {k: theirs[k] for k in ADMIN}


@pytest.mark.broker
async def test_the_kafka_3_preset_advertises_the_admin_apis_as_kafka_3_9_does(kafka_broker_3: KafkaBroker) -> None:
    ours, theirs = await _emulator_table(Flavor.KAFKA_3, "kafka-3"), await _broker_table(kafka_broker_3)
    expected = {k: (max(theirs[k][0], BELOW_THE_CODEC.get(k, 0)), theirs[k][1]) for k in ADMIN}
    assert {k: ours.get(k) for k in ADMIN} == expected


def _raw_request(api_key: int, version: int) -> bytes:
    header = api_key.to_bytes(2, "big", signed=True) + version.to_bytes(2, "big") + (7).to_bytes(4, "big")
    body = header + (1).to_bytes(2, "big") + b"t" + b"\x00" * 8
    return len(body).to_bytes(4, "big") + body


@pytest.mark.broker
async def test_every_api_kafka_4_4_serves_and_the_emulator_does_not_closes_the_connection_at_once(
        kafka_broker_4: KafkaBroker) -> None:
    theirs = await _broker_table(kafka_broker_4)
    async with EmulatorServer(EmulatorConfig(port=0)) as server:
        bootstrap = server.bootstrap_servers.split(",")[0]
        conn = await connect(bootstrap)
        try:
            ours = await _advertised(conn)
        finally:
            await conn.close()
        unserved = sorted(set(theirs) - set(ours))
        assert 76 in unserved and 50 in unserved  # share groups (KIP-932) and SCRAM credential admin
        outcomes: dict[int, Any] = {}
        for key in unserved:
            conn = await connect(bootstrap)
            try:
                started = time.monotonic()
                await conn.send_raw(_raw_request(key, theirs[key][0]))
                closed = await conn.is_closed_by_peer(timeout=5.0)
                outcomes[key] = (closed, time.monotonic() - started < 1.0)
            finally:
                await conn.close()
    assert outcomes == {key: (True, True) for key in unserved}


def test_librdkafka_gets_its_final_unsupported_feature_error_at_once_for_an_api_not_served() -> None:
    with Emulator(port=0) as emu:
        admin = AdminClient({"bootstrap.servers": emu.bootstrap_servers})
        started = time.monotonic()
        with pytest.raises(KafkaException, match="not supported by broker") as raised:
            admin.describe_user_scram_credentials().result(30)
        assert raised.value.args[0].name() == "_UNSUPPORTED_FEATURE"
        assert time.monotonic() - started < 5


def test_the_emulator_serves_every_admin_api_in_its_codec_range() -> None:
    from rebalance_lab.coordinator.handlers import load_handlers

    served = load_handlers()
    assert {k: served[k].versions for k in ADMIN} == {k: codec.codec_version_range(k) for k in ADMIN}


def _within_codec(table: dict[int, tuple[int, int]], served: set[int]) -> dict[int, tuple[int, int]]:
    """A broker's ranges for the APIs the emulator serves, cut to what the codec can encode."""
    cut = {}
    for key in served:
        if key in table and (bounds := codec.codec_version_range(key)) is not None:
            low, high = max(table[key][0], bounds[0]), min(table[key][1], bounds[1])
            if low <= high:
                cut[key] = (low, high)
    return cut


@pytest.mark.broker
async def test_every_api_the_kafka_4_preset_advertises_has_kafka_4_4_s_range(kafka_broker_4: KafkaBroker) -> None:
    ours, theirs = await _emulator_table(Flavor.KAFKA_4, "kafka-4"), await _broker_table(kafka_broker_4)
    assert ours == _within_codec(theirs, set(ours))


@pytest.mark.broker
async def test_every_api_the_kafka_3_preset_advertises_has_kafka_3_9_s_range(kafka_broker_3: KafkaBroker) -> None:
    ours, theirs = await _emulator_table(Flavor.KAFKA_3, "kafka-3"), await _broker_table(kafka_broker_3)
    assert ours == _within_codec(theirs, set(ours))


async def test_the_api_table_in_fidelity_md_is_what_the_emulator_advertises() -> None:
    text = (Path(__file__).resolve().parents[2] / "FIDELITY.md").read_text()
    section = text[text.index("## Admin APIs"):]
    rows = [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| ") and line[2].isdigit()]
    columns = {int(r[0]): (r[2].strip(), r[3].strip(), r[5].strip()) for r in rows}

    def shown(table: dict[int, tuple[int, int]], key: int) -> str:
        bounds = table.get(key)
        return "-" if bounds is None else (f"{bounds[0]}-{bounds[1]}" if bounds[0] != bounds[1] else str(bounds[0]))

    tables = [await _emulator_table(Flavor.KAFKA_4, "codec"), await _emulator_table(Flavor.KAFKA_4, "kafka-4"),
              await _emulator_table(Flavor.KAFKA_3, "kafka-3")]
    assert set(tables[0]) <= set(columns)
    assert {k: tuple(shown(t, k) for t in tables) for k in columns} == columns
