"""The pytest plugin's fixtures on a KIP-848 consumer group (run by pytester in a fresh interpreter): a marker
with a manual clock, wait_for_group on a consumer group, a fenced member, a bumped epoch, an error answer on
ConsumerGroupHeartbeat and a session timeout fired by advancing the clock."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]

INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
asyncio_default_test_loop_scope = function
"""

TESTS = '''
import pytest
from tests.support.kip848_light import LightConsumer, reconcile

pytestmark = pytest.mark.rebalance_lab(manual_clock=True, topics=[("orders", 4)])


async def members(emu, *names):
    return [await LightConsumer(emu.bootstrap_servers, "g", ["orders"], client_id=n).open() for n in names]


async def test_a_consumer_group_reaches_stable_and_survives_a_fence_and_a_bump(rebalance_lab):
    a, b = await members(rebalance_lab, "a", "b")
    await a.heartbeat()
    rebalance_lab.advance(2_000)
    await b.heartbeat()
    await reconcile([a, b])
    view = await rebalance_lab.wait_for_group_async("g", state="Stable", generation_at_least=3, timeout=5)
    assert view.group_type == "consumer" and len(view.members) == 2
    rebalance_lab.fence_member("g", b.member_id)
    assert (await b.heartbeat()).error_code == 25  # UNKNOWN_MEMBER_ID
    assert rebalance_lab.bump_epoch("g") == 5
    rebalance_lab.advance(2_000)  # past the 4.4 assignment interval: B's rejoin (epoch 6) computes at once
    await reconcile([b, a])
    view = rebalance_lab.group("g")
    assert (view.state, view.group_epoch, sorted(m.member_epoch for m in view.members)) == ("Stable", 6, [6, 6])
    for m in (a, b):
        await m.close()


async def test_an_error_on_consumer_group_heartbeat_then_the_clock_expires_the_session(rebalance_lab):
    (a,) = await members(rebalance_lab, "a")
    rebalance_lab.inject_error("ConsumerGroupHeartbeat", "COORDINATOR_LOAD_IN_PROGRESS", group_id="g")
    assert (await a.heartbeat()).error_code == 14
    await a.heartbeat()
    assert rebalance_lab.group("g").state == "Stable"
    rebalance_lab.advance(45_000)
    assert rebalance_lab.group("g").state == "Empty"
    await a.close()
'''


def test_the_plugin_fixtures_drive_a_kip848_consumer_group(pytester: pytest.Pytester,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the light KIP-848 client lives in tests/support
    pytester.makeini(INI)
    pytester.makepyfile(test_kip848_user=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
