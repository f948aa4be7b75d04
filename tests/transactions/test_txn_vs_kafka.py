"""The raw-protocol transaction scenario (``scenario.py``) gives the same answers on the emulator and on
real Kafka 4.4.0 and 3.9.2 brokers: init, AddPartitionsToTxn (unknown topics, KIP-890 verification),
sequences and duplicates, LSO and read_committed fetch with aborted lists, Describe/ListTransactions,
DescribeProducers, abort/commit and their retries, TxnOffsetCommit (verification, KIP-447 checks,
pending until commit, RequireStable), fencing by a second InitProducerId with per-version errors."""

from __future__ import annotations

import asyncio

import pytest

from rebalance_lab.api import Emulator
from tests.support.kafka_broker import KafkaBroker
from tests.transactions import scenario

pytestmark = [pytest.mark.broker]


async def _on_emulator(flavor: str) -> scenario.Facts:
    async with Emulator(flavor=flavor, initial_rebalance_delay_ms=0, port=0) as emu:
        return await scenario.run(emu.bootstrap_servers)


def _compare(emulated: scenario.Facts, real: scenario.Facts) -> None:
    assert [label for label, _ in emulated] == [label for label, _ in real]
    differences = [(label, mine, theirs) for (label, mine), (_, theirs) in zip(emulated, real, strict=True)
                   if mine != theirs]
    assert differences == []


def test_the_transaction_scenario_answers_as_kafka_4_4_0_does(kafka_broker_4: KafkaBroker) -> None:
    real = asyncio.run(scenario.run(kafka_broker_4.bootstrap))
    _compare(asyncio.run(_on_emulator("kafka-4")), real)


def test_the_transaction_scenario_answers_as_kafka_3_9_2_does(kafka_broker_3: KafkaBroker) -> None:
    real = asyncio.run(scenario.run(kafka_broker_3.bootstrap))
    _compare(asyncio.run(_on_emulator("kafka-3")), real)


async def _v2_on_emulator() -> scenario.Facts:
    async with Emulator(initial_rebalance_delay_ms=0, port=0) as emu:
        return await scenario.run_v2(emu.bootstrap_servers)


def test_transaction_version_2_answers_as_kafka_4_4_0_does(kafka_broker_4: KafkaBroker) -> None:
    """The finalized transaction.version 2, implicit adds by Produce v12 and TxnOffsetCommit v5, EndTxn v5's
    epoch bump and the retries it accepts (the path the Java 4.4.0 client takes on a 4.4.0 broker)."""
    real = asyncio.run(scenario.run_v2(kafka_broker_4.bootstrap))
    _compare(asyncio.run(_v2_on_emulator()), real)


async def _timeout_on_emulator() -> scenario.Facts:
    async with Emulator(initial_rebalance_delay_ms=0, port=0, manual_clock=True) as emu:
        async def advance(_conn: object, _txn_id: str) -> None:
            emu.advance(11_000)  # past the 1 s timeout and the next 10 s abort check

        return await scenario.run_timeout(emu.bootstrap_servers, advance)


def test_a_timed_out_transaction_is_aborted_as_kafka_4_4_0_does(kafka_broker_4: KafkaBroker) -> None:
    real = asyncio.run(scenario.run_timeout(kafka_broker_4.bootstrap, scenario.poll_until_aborted))
    _compare(asyncio.run(_timeout_on_emulator()), real)
