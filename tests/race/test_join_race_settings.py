"""The --join-race settings, one outcome each (manual clocks and seeded draws: no sleeps, no wall time).

The statistical comparison with real brokers is test_join_race_vs_kafka.py; here each setting is shown to
do what FIDELITY.md and the README say, through the same shell and group service the brokers' clients use.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from rebalance_lab.cli import build_parser, config_from_args
from rebalance_lab.config import EmulatorConfig, GroupConfig
from rebalance_lab.coordinator import group_service
from rebalance_lab.coordinator.classic.context import GroupTimers, InitialDelay, RebalanceTimeout, join_key
from rebalance_lab.coordinator.classic.messages import JoinGroupInput, JoinGroupResult, ProtocolEntry
from rebalance_lab.coordinator.cluster import BrokerInfo
from rebalance_lab.coordinator.join_race import ExpirationLatency
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.coordinator.world import World
from rebalance_lab.protocol import codec
from tests.integration.wire import RawConnection
from tests.race.scenario import JOIN

G = "race"


def _fields(member_id: str, session_ms: int = 10_000) -> dict[str, Any]:
    proto = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")
    return dict(group_id=G, session_timeout_ms=session_ms, rebalance_timeout_ms=30_000, member_id=member_id,
                group_instance_id=None, protocol_type="consumer", protocols=[proto(name="range", metadata=b"")])


async def _members_with_ids(srv: EmulatorServer, n: int, session_ms: int = 10_000) -> list[tuple[RawConnection, str]]:
    broker = srv.world.cluster.live_brokers()[0]
    members = []
    for _ in range(n):
        conn = await RawConnection.open(broker.host, broker.port)
        first = await conn.request(JOIN, 5, **_fields("", session_ms))
        assert first.error_code == 79  # MEMBER_ID_REQUIRED
        members.append((conn, first.member_id))
    return members


async def _rejoin(conn: RawConnection, member_id: str, session_ms: int = 10_000) -> None:
    await conn.send_raw(codec.encode_request(codec.new_request(JOIN, 5, **_fields(member_id, session_ms)), 9, "r"))


async def _answer(conn: RawConnection, timeout: float = 5.0) -> Any:
    return codec.decode_response(JOIN, 5, await conn.read_frame(timeout))


async def _not_answered(conn: RawConnection) -> bool:
    try:
        await conn.read_frame(timeout=0.3)
    except TimeoutError:
        return True
    return False


def _manual(join_race: str) -> EmulatorConfig:
    return EmulatorConfig(port=0, manual_clock=True, seed=3,
                          group=GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=10,
                                            join_race=join_race))


@pytest.mark.parametrize("join_race", ["separate", "sampled"])
async def test_separate_completes_generation_one_with_the_first_rejoin_alone(join_race: str) -> None:
    """"separate" (and "sampled" on a manual clock, which has no wall time to draw a latency in)."""
    async with EmulatorServer(_manual(join_race)) as srv:
        members = await _members_with_ids(srv, 3)
        (a, a_id), (b, b_id), (c, c_id) = members
        await _rejoin(a, a_id)
        first = await _answer(a)
        assert (first.error_code, first.generation_id, len(first.members)) == (0, 1, 1)
        await _rejoin(b, b_id)
        await _rejoin(c, c_id)
        assert await _not_answered(b)  # a second rebalance, waiting for the first member to rejoin
        assert srv.world.services["groups"].coordinator.group(G).state == "PreparingRebalance"
        for conn, _ in members:
            await conn.close()


async def test_together_waits_for_every_member_handed_an_id_then_forms_one_generation() -> None:
    async with EmulatorServer(_manual("together")) as srv:
        members = await _members_with_ids(srv, 3)
        for conn, member_id in members[:2]:
            await _rejoin(conn, member_id)
        assert await _not_answered(members[0][0])
        await _rejoin(*members[2])
        answers = [await _answer(conn) for conn, _ in members]
        assert [(x.error_code, x.generation_id) for x in answers] == [(0, 1)] * 3
        assert sorted(len(x.members) for x in answers) == [0, 0, 3]
        for conn, _ in members:
            await conn.close()


async def test_together_stops_waiting_when_a_member_handed_an_id_expires() -> None:
    async with EmulatorServer(_manual("together")) as srv:
        members = await _members_with_ids(srv, 2, session_ms=6_000)
        await _rejoin(members[0][0], members[0][1], session_ms=6_000)  # the second member never rejoins
        assert await _not_answered(members[0][0])
        srv.advance(6_000)  # its pending id expires (KIP-394): nobody is left to wait for
        answer = await _answer(members[0][0])
        assert (answer.error_code, answer.generation_id, len(answer.members)) == (0, 1, 1)
        for conn, _ in members:
            await conn.close()


# -- "sampled": the mechanism, on a clock that is not manual but that the test moves ----------------------


class _SteppedClock:
    manual = False  # the group service treats it as wall time: "sampled" is in force

    def __init__(self) -> None:
        self.now = 1_000

    def now_ms(self) -> int:
        return self.now


def _sampled_service(overtake_share: float) -> tuple[World, group_service.GroupService]:
    config = EmulatorConfig(port=0, seed=5, group=GroupConfig(initial_rebalance_delay_ms=0, join_race="sampled"))
    world = World(config, [BrokerInfo(0, "127.0.0.1", 9092)], _SteppedClock())
    service = group_service.install(world)
    latency = service._latency
    assert latency is not None and world.timer_latency_s == latency.sample_s
    latency.overtake_share = overtake_share
    return world, service


def _join(service: group_service.GroupService, member_id: str) -> Any:
    inp = JoinGroupInput(G, member_id, "consumer", (ProtocolEntry("range", b""),), 10_000, 30_000, 5)
    return service.call(service.coordinator.join_group, inp, lambda result: result)


def test_sampled_lets_rejoins_in_until_the_timer_turn_and_a_rescheduled_delay_waits_for_the_next() -> None:
    world, service = _sampled_service(overtake_share=0.0)
    ids = [_join(service, "").value.member_id for _ in range(3)]
    first = _join(service, ids[0])
    assert not first.done  # due now, but its expiration waits for the shell's timer turn
    rest = [_join(service, member_id) for member_id in ids[1:]]  # received before that turn: they get in
    world.fire_timers()
    # newMemberAdded: tryCompleteInitialRebalanceElseSchedule set another zero delay, for the next turn
    assert not first.done
    assert isinstance(service.coordinator._core.timers.payload(join_key(G)), InitialDelay)
    world.fire_timers()
    answers: list[JoinGroupResult] = [p.value for p in (first, *rest)]
    assert [(a.error.value, a.generation_id) for a in answers] == [(0, 1)] * 3


def test_sampled_expiration_that_overtakes_completes_at_the_end_of_the_request() -> None:
    _world, service = _sampled_service(overtake_share=1.0)
    ids = [_join(service, "").value.member_id for _ in range(2)]
    first = _join(service, ids[0])
    assert first.done and (first.value.generation_id, len(first.value.members)) == (1, 1)


def test_expiration_latency_draws_are_seeded_and_follow_the_fitted_mixture() -> None:
    a, b = ExpirationLatency.seeded(11), ExpirationLatency.seeded(11)
    draws = [a.sample_s() for _ in range(20_000)]
    assert draws == [b.sample_s() for _ in range(20_000)]
    assert abs(sum(draws) / len(draws) * 1000 - a.mean_ms) < 0.01
    median = sorted(draws)[len(draws) // 2] * 1000
    assert abs(median - a.mean_ms * math.log(2)) < 0.01  # exponential: no share of draws at zero
    assert min(draws) > 0.0 and max(draws) <= 0.020
    overtaking = ExpirationLatency.seeded(4)
    assert abs(sum(overtaking.overtakes() for _ in range(20_000)) / 20_000 - overtaking.overtake_share) < 0.02


def test_a_timer_scheduled_after_a_mark_waits_for_the_next_call() -> None:
    timers = GroupTimers()
    timers.schedule(join_key("old"), 10, RebalanceTimeout())
    mark = timers.mark()
    timers.schedule(join_key("fresh"), 10, RebalanceTimeout())
    assert [d.key for d in timers.pop_next_due(10, mark)] == [join_key("old")]
    assert timers.pop_next_due(10, mark) == []
    assert [d.key for d in timers.pop_next_due(10)] == [join_key("fresh")]


def test_join_race_option_is_validated_and_reaches_the_group_config() -> None:
    args = build_parser().parse_args(["serve", "--join-race", "together"])
    assert config_from_args(args).group.join_race == "together"
    assert config_from_args(build_parser().parse_args(["serve"])).group.join_race == "sampled"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--join-race", "sometimes"])
    with pytest.raises(ValueError, match="join_race must be one of sampled, separate, together, not 'often'"):
        GroupConfig(join_race="often")


def test_python_api_takes_join_race() -> None:
    from rebalance_lab.api import make_config

    assert make_config(join_race="separate").group.join_race == "separate"


def test_the_readme_join_race_command_serves() -> None:
    from tests.race.emulator_process import ROOT, serve

    line = next(x for x in (ROOT / "README.md").read_text().splitlines() if "--join-race together" in x)
    options = line.split("serve", 1)[1].split()
    with serve(*options) as (host, port):  # serve() puts --port 0 first
        assert host == "127.0.0.1" and port > 0


# -- "sampled" in the asyncio shell: the expiration's time, not the loop's timer turn, orders it --------------


async def _late_timer_turns(monkeypatch: pytest.MonkeyPatch, latency_s: float) -> EmulatorServer:
    """A real-clock server whose expirations are due ``latency_s`` after the request that made them due, and
    whose loop timer turns come 30 s late (a loop that polls at 1 ms comes up to 1 ms late; this makes it plain)."""
    config = EmulatorConfig(port=0, seed=5, group=GroupConfig(initial_rebalance_delay_ms=0, join_race="sampled"))
    srv = EmulatorServer(config)
    await srv.start()
    latency = srv.world.services["groups"]._latency
    assert latency is not None
    monkeypatch.setattr(latency, "overtakes", lambda: False)
    srv.world.timer_latency_s = lambda: latency_s
    loop = asyncio.get_running_loop()
    call_later = loop.call_later

    def late(delay: float, callback: Any, *args: Any) -> asyncio.TimerHandle:
        return call_later(delay + 30.0 if callback == srv._fire_timers else delay, callback, *args)

    monkeypatch.setattr(loop, "call_later", late)
    return srv


async def test_a_rejoin_arriving_after_the_expirations_time_finds_it_run_however_late_the_timer_turn() -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        srv = await _late_timer_turns(monkeypatch, latency_s=0.05)
        try:
            (a, a_id), (b, b_id) = await _members_with_ids(srv, 2)
            await _rejoin(a, a_id)
            await asyncio.sleep(0.15)  # past the expiration's time; its timer turn is 30 s away
            await _rejoin(b, b_id)  # its arrival runs the expiration first: generation 1 without it
            first = await _answer(a, timeout=2.0)
            assert (first.error_code, first.generation_id, len(first.members)) == (0, 1, 1)
            assert await _not_answered(b)  # a second rebalance, waiting for the first member to rejoin
            for conn in (a, b):
                await conn.close()
        finally:
            await srv.stop()


async def test_a_rejoin_arriving_before_the_expirations_time_gets_in_and_a_later_arrival_runs_it() -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        srv = await _late_timer_turns(monkeypatch, latency_s=0.2)
        try:
            (a, a_id), (b, b_id), (c, _) = await _members_with_ids(srv, 3)
            await _rejoin(a, a_id)
            await _rejoin(b, b_id)  # well within the 200 ms: it gets in
            assert await _not_answered(a)
            # the expiration's time passes; bytes arriving on another connection run it. newMemberAdded: it sets
            # another zero delay (tryCompleteInitialRebalanceElseSchedule), whose time the next arrival finds past
            for _ in range(2):
                await asyncio.sleep(0.25)
                assert (await c.request(18, 0)).error_code == 0  # ApiVersions
            answers = [await _answer(conn, timeout=2.0) for conn in (a, b)]
            assert [(x.error_code, x.generation_id) for x in answers] == [(0, 1)] * 2
            assert sorted(len(x.members) for x in answers) == [0, 2]
            for conn in (a, b, c):
                await conn.close()
        finally:
            await srv.stop()


async def test_an_expiration_run_by_an_arrival_waits_for_the_requests_received_before_it() -> None:
    """A JoinGroup read in this loop turn is handled on the next (arrival.py's _defer); an expiration whose time a
    later arrival of the same turn finds past runs after it, as a broker's queue holds the requests received first."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        srv = await _late_timer_turns(monkeypatch, latency_s=0.0)
        try:
            fired: list[str] = []
            monkeypatch.setattr(srv.world, "fire_timers", lambda: fired.append("expiration"))
            srv._taken += 1  # a request read, its handling queued for the loop's next turn
            srv._fire_timers()
            assert fired == []
            srv._taken += 1  # one read after the expiration's time: it does not hold the expiration back
            asyncio.get_running_loop().call_soon(setattr, srv, "_handled", srv._handled + 1)  # the first handled
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            assert fired == ["expiration"]
        finally:
            await srv.stop()


async def test_requests_taken_before_a_timer_turn_are_handled_before_it_and_those_after_after_it() -> None:
    """JoinGroup/SyncGroups taken at arrival one after another share one callback (arrival.py's _defer); a timer turn
    closes it, so a request taken after the expiration's turn is handled after the expiration, and one that raises
    leaves the others of its batch handled."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        srv = await _late_timer_turns(monkeypatch, latency_s=0.0)
        try:
            order: list[Any] = []

            def answer(cid: int, out: Any, reader: Any, admitted: Any) -> None:
                srv._handled += 1
                order.append(cid)
                if cid == 1:
                    raise RuntimeError("a bug in one request's handling")

            monkeypatch.setattr(srv, "_answer_deferred", answer)
            monkeypatch.setattr(srv.world, "fire_timers", lambda: order.append("expiration"))
            reader = type("Reader", (), {"parked": False})()
            srv._defer(1, None, reader, None)  # type: ignore[arg-type]
            srv._defer(2, None, reader, None)  # type: ignore[arg-type]
            srv._fire_timers()  # the expiration's time found past: it waits for the two taken before it
            srv._defer(3, None, reader, None)  # type: ignore[arg-type]
            for _ in range(3):
                await asyncio.sleep(0)
            assert order == [1, 2, "expiration", 3]
            assert reader.parked
        finally:
            await srv.stop()
