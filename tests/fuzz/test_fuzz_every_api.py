"""A bounded, seeded fuzz test over every API and version the emulator serves (issue 17).

Valid requests of every advertised API and version (kio's fully populated ones, kafka-python's
default ones, and Produce requests carrying real record batches) are mutated - bit flips,
truncations, extensions, int32/int16/varint length fields set to -1, 0, 2^31-1, random bytes
inserted - and sent over real sockets to one emulator, each followed by an ApiVersions "ping" on
the same connection. Checked throughout:

* no handler raises (no "handler ... failed" / timer / observer traceback in the emulator's log);
* each answer carries the correlation id of the request it answers, the fuzzed request is answered
  or the connection is closed (only Produce may go unanswered: acks=0), and the ping comes next;
* the server keeps serving new connections, and a canary group (``tests/support/canary.py``) keeps
  every member with no rebalance.

The run is bounded by time (``FUZZ_SECONDS``, 30 s by default) and fully determined by its seed
(``FUZZ_SEED``, printed; set it to replay or to explore longer locally). A failure prints the seed,
the API, version and the mutated bytes; ``FUZZ_RECORD=FILE`` also records the emulator's events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import struct
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from rebalance_lab.config import EmulatorConfig, GroupConfig
from rebalance_lab.coordinator.handlers import load_handlers
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.emulator import observer_hooks
from rebalance_lab.protocol import codec, nullability
from tests.support import bad_batches
from tests.support.canary import Canary
from tests.unit.protocol import kio_oracle

DEFAULT_SEED = 20261126
SEED = int(os.environ.get("FUZZ_SEED", DEFAULT_SEED))
SECONDS = float(os.environ.get("FUZZ_SECONDS", "30"))
API_VERSIONS = 18
PRODUCE = 0
# APIs whose answer may wait legitimately: long-polling Fetch, parked JoinGroup/SyncGroup.
MAY_WAIT = {1, 11, 14}
ANSWER_TIMEOUT = 10.0
PING = struct.pack(">hhih", API_VERSIONS, 0, 0, 4) + b"ping"


@dataclass(frozen=True)
class Seed:
    api_key: int
    version: int
    payload: bytes  # request header v1/v2 and body, unframed


def _header(api_key: int, version: int) -> bytes:
    flexible = codec.request_type(api_key).flexible_version_q(version)
    return struct.pack(">hhih", api_key, version, 0, 4) + b"fuzz" + (b"\x00" if flexible else b"")


def _produce_seeds(version: int) -> list[bytes]:
    """Produce bodies (by topic name: v3-12) carrying real batches, so mutations reach record validation."""
    cases = bad_batches.cases()
    shape = codec.request_type(PRODUCE).TopicProduceData
    bodies = []
    for name in ("a good batch", "gzip, two good records"):
        partition = shape.PartitionProduceData(index=0, records=cases[name].data)
        request = codec.new_request(PRODUCE, version, transactional_id=None, acks=1, timeout_ms=1000,
                                    topic_data=[shape(name="fuzz-topic", partition_data=[partition])])
        bodies.append(codec.encode_body(request, version))
    return bodies


def seeds() -> list[Seed]:
    found = []
    for api_key in sorted(load_handlers()):
        low, high = codec.codec_version_range(api_key) or (0, -1)
        for version in range(low, high + 1):
            bodies = [codec.encode_body(codec.new_request(api_key, version), version)]
            with contextlib.suppress(Exception):  # kio cannot populate every message (see test_codec_vs_kio)
                bodies.append(kio_oracle.encode(kio_oracle.populate_case(
                    kio_oracle.message_type(api_key, version, "request"))))
            if api_key == PRODUCE and version < 13:
                bodies += _produce_seeds(version)
            found += [Seed(api_key, version, _header(api_key, version) + body) for body in bodies]
    return found


# -- mutations ------------------------------------------------------------------------------------

_INT32S = [-1, 0, 1, 0x7FFFFFFF, -0x80000000, 0x10000]
_INT16S = [-1, 0, 0x7FFF, -0x8000]
_BYTES = [0x00, 0x01, 0x7F, 0x80, 0xFF]
_BODY_AT = 8  # never touch api key and version (those are exercised by the robustness tests)


def _flip_bits(rng: random.Random, data: bytearray) -> None:
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(_BODY_AT, len(data))
        data[at] ^= 1 << rng.randrange(8)


def _truncate(rng: random.Random, data: bytearray) -> None:
    del data[rng.randrange(_BODY_AT, len(data)):]


def _extend(rng: random.Random, data: bytearray) -> None:
    data.extend(rng.randbytes(rng.randint(1, 64)))


def _int32(rng: random.Random, data: bytearray) -> None:
    if len(data) - _BODY_AT >= 4:
        struct.pack_into(">i", data, rng.randrange(_BODY_AT, len(data) - 3), rng.choice(_INT32S))


def _int16(rng: random.Random, data: bytearray) -> None:
    if len(data) - _BODY_AT >= 2:
        struct.pack_into(">h", data, rng.randrange(_BODY_AT, len(data) - 1), rng.choice(_INT16S))


def _byte(rng: random.Random, data: bytearray) -> None:
    for _ in range(rng.randint(1, 3)):
        data[rng.randrange(_BODY_AT, len(data))] = rng.choice(_BYTES)  # compact lengths, varints, booleans


def _insert(rng: random.Random, data: bytearray) -> None:
    at = rng.randrange(_BODY_AT, len(data) + 1)
    data[at:at] = rng.randbytes(rng.randint(1, 16))


def _repeat(rng: random.Random, data: bytearray) -> None:
    start = rng.randrange(_BODY_AT, len(data))
    end = min(len(data), start + rng.randint(1, 64))
    data[end:end] = data[start:end] * rng.randint(1, 4)


MUTATIONS = [_flip_bits, _truncate, _extend, _int32, _int16, _byte, _insert, _repeat]

# Field-level mutations: well-formed requests whose values are extreme, so the handlers (not only the
# decoder) see them. Names never collide with the canary's ("canary-...").
_EXTREMES = {"int8": [-1, 0, 127, -128], "int16": [-1, 0, 32767, -32768], "uint16": [0, 65535],
             "int32": [-1, 0, 1, 2**31 - 1, -(2**31)], "int64": [-1, 0, 2**63 - 1, -(2**63)],
             "string": ["", "x" * 300, "__consumer_offsets", "a/b", "é", "fuzz-topic"], "bool": [True, False]}


def _in(versions: str | None, version: int) -> bool:
    bounds = nullability.parse_versions(versions)
    return bounds is not None and bounds[0] <= version <= bounds[1]


def _mutate_fields(rng: random.Random, node: Any, fields: list[dict[str, Any]], version: int) -> None:
    present = [f for f in fields if _in(f.get("versions"), version)]
    for spec in rng.sample(present, k=min(len(present), rng.randint(1, 3))):
        name, kind = nullability.attribute_name(spec["name"]), spec["type"]
        value = getattr(node, name, None)
        if kind in _EXTREMES:
            setattr(node, name, rng.choice(_EXTREMES[kind]))
        elif kind.startswith("[]") and isinstance(value, list):
            if value and spec.get("fields") and rng.random() < 0.7:
                _mutate_fields(rng, rng.choice(value), spec["fields"], version)
            else:
                setattr(node, name, rng.choice([[], value * rng.randint(2, 5)]))


def mutate_fields(rng: random.Random, seed: Seed) -> bytes | None:
    """The seed re-encoded after setting a few fields (nested ones too) to extreme values; None if not encodable."""
    try:
        body = codec.generic(codec.decode_request(seed.payload).body)  # a fresh object, mutated in place
        _mutate_fields(rng, body, codec.request_type(seed.api_key)._json["fields"], seed.version)
        return _header(seed.api_key, seed.version) + codec.encode_body(body, seed.version)
    except Exception:  # an extreme the encoder refuses (e.g. a value out of a field's range): skip it
        return None


def mutate(rng: random.Random, seed: Seed, correlation_id: int) -> bytes:
    structured = mutate_fields(rng, seed) if rng.random() < 0.4 else None
    data = bytearray(structured if structured is not None else seed.payload)
    for _ in range(0 if structured is not None else rng.choice((1, 1, 1, 2, 3))):
        if len(data) > _BODY_AT:
            rng.choice(MUTATIONS)(rng, data)
    if len(data) >= 8:
        struct.pack_into(">i", data, 4, correlation_id)
    return bytes(data)


# -- the run --------------------------------------------------------------------------------------

class CrashLog(logging.Handler):
    """Collects the emulator's tracebacks: a handler, timer or observer that raised."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))  # the traceback is appended
        self.crashes: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info is not None or record.levelno >= logging.ERROR:
            self.crashes.append(self.format(record))


@dataclass
class Tally:
    sent: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    by_api: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)


class Connection:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def ensure(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.reader is None or self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self.reader, self.writer

    async def reset(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await self.writer.wait_closed()
        self.reader = self.writer = None


async def _read_frame(reader: asyncio.StreamReader, timeout: float) -> bytes | None:
    """A frame, or None when the server closed the connection."""
    try:
        head = await asyncio.wait_for(reader.readexactly(4), timeout)
        (size,) = struct.unpack(">i", head)
        return await asyncio.wait_for(reader.readexactly(size), timeout)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


async def exchange(conn: Connection, seed: Seed, payload: bytes, ping_id: int) -> str:
    """Send a fuzzed request and a ping; return the outcome, or raise AssertionError on a violation."""
    reader, writer = await conn.ensure()
    (sent_id,) = struct.unpack_from(">i", payload, 4) if len(payload) >= 8 else (None,)
    ping = bytearray(PING)
    struct.pack_into(">i", ping, 4, ping_id)
    try:
        writer.write(struct.pack(">i", len(payload)) + payload + struct.pack(">i", len(ping)) + bytes(ping))
        await writer.drain()
    except (ConnectionError, OSError):
        await conn.reset()
        return "closed"
    try:
        first = await _read_frame(reader, ANSWER_TIMEOUT)
    except TimeoutError:
        if seed.api_key in MAY_WAIT or seed.api_key == PRODUCE:
            await conn.reset()
            return "parked"
        raise AssertionError("no answer and the connection left open") from None
    if first is None:
        await conn.reset()
        return "closed"
    (first_id,) = struct.unpack_from(">i", first, 0)
    if first_id == ping_id:
        assert seed.api_key == PRODUCE, "a request other than Produce (acks=0) went unanswered"
        return "unanswered (acks=0)"
    assert first_id == sent_id, f"answer with correlation id {first_id}, sent {sent_id}"
    second = await _read_frame(reader, ANSWER_TIMEOUT)
    if second is None:
        await conn.reset()
        return "answered, then closed"
    assert struct.unpack_from(">i", second, 0)[0] == ping_id, "the ping's answer has another correlation id"
    return "answered"


async def fuzz(host: str, port: int, rng: random.Random, deadline: float, corpus: list[Seed], tally: Tally,
               worker: int, crash_log: CrashLog) -> None:
    conn = Connection(host, port)
    correlation = worker * 100_000_000
    while time.monotonic() < deadline and not tally.failures:
        seed = rng.choice(corpus)
        correlation += 2
        payload = mutate(rng, seed, correlation)
        crashes = len(crash_log.crashes)
        try:
            outcome = await exchange(conn, seed, payload, correlation + 1)
            if len(crash_log.crashes) > crashes:
                raise AssertionError(f"the emulator logged: {crash_log.crashes[crashes]}")
        except AssertionError as exc:
            tally.failures.append(f"{codec.API_NAMES.get(seed.api_key)} v{seed.version}: {exc}\n"
                                  f"payload {payload.hex()}")
            return
        tally.sent += 1
        tally.outcomes[outcome] += 1
        tally.by_api[codec.API_NAMES.get(seed.api_key, str(seed.api_key))] += 1
    await conn.reset()


async def _still_serving(host: str, port: int) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    ping = bytearray(PING)
    writer.write(struct.pack(">i", len(ping)) + bytes(ping))
    await writer.drain()
    frame = await _read_frame(reader, ANSWER_TIMEOUT)
    writer.close()
    assert frame is not None and struct.unpack_from(">ih", frame, 0) == (0, 0), "ApiVersions no longer answered"


@pytest.fixture
def crash_log() -> Any:
    handler = CrashLog()
    logger = logging.getLogger("rebalance_lab")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


async def test_fuzzed_requests_to_every_api_and_version_never_crash_a_handler_or_hurt_a_group(
        crash_log: CrashLog) -> None:
    print(f"\nfuzz seed {SEED} (FUZZ_SEED to replay), {SECONDS:.0f} s (FUZZ_SECONDS)")
    corpus = seeds()
    config = EmulatorConfig(port=0, group=GroupConfig(initial_rebalance_delay_ms=0), seed=SEED,
                            record_path=os.environ.get("FUZZ_RECORD"))  # a recording of the run, to debug a failure
    hooks, recordings = observer_hooks(config)
    async with EmulatorServer(config, world_hooks=tuple(hooks)) as server:
        host, port = server.bootstrap_servers.split(",")[0].rsplit(":", 1)
        async with Canary(server.bootstrap_servers) as canary:
            deadline = time.monotonic() + SECONDS
            tally = Tally()
            workers = [fuzz(host, int(port), random.Random(SEED * 10 + i), deadline, corpus, tally, i, crash_log)
                       for i in range(3)]
            await asyncio.gather(*workers)
            await _still_serving(host, int(port))
    for recording in recordings:
        recording.close()
    print(f"fuzz: {tally.sent} requests over {len(corpus)} seeds ({len({(s.api_key, s.version) for s in corpus})} "
          f"API versions); outcomes {dict(tally.outcomes)}; canary {canary.report.summary()}")
    assert not tally.failures, f"seed {SEED}: {tally.failures[0]}"
    assert not crash_log.crashes, f"seed {SEED}: the emulator logged {len(crash_log.crashes)} crash(es); " \
                                  f"first: {crash_log.crashes[0]}"
    canary.report.assert_healthy()
    assert len(tally.by_api) == len(load_handlers()), "every served API was fuzzed"
