"""The pytest plugin, run by pytester in fresh interpreters (the entry point loads it), in both
pytest-asyncio modes: fixtures, ini and command-line options, and the per-test marker."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

INI = """
[pytest]
asyncio_mode = {mode}
asyncio_default_fixture_loop_scope = function
asyncio_default_test_loop_scope = function
rebalance_lab_flavor = kafka-3
rebalance_lab_brokers = 2
rebalance_lab_topics =
    orders:3
"""

TESTS = '''
import pytest
from rebalance_lab.clients.member import GroupMember

ASYNC = {async_marker}


def test_sync_fixture_takes_the_ini_settings(rebalance_lab):
    assert rebalance_lab.config.flavor.value == "kafka-3"
    assert len(rebalance_lab.brokers()) == 2
    assert rebalance_lab.config.group.initial_rebalance_delay_ms == 0  # the plugin's test default
    assert rebalance_lab.config.topics == (("orders", 3),)


@pytest.mark.rebalance_lab(brokers=1, flavor="kafka-4")
def test_the_marker_overrides_the_ini_file(rebalance_lab):
    assert rebalance_lab.config.flavor.value == "kafka-4" and len(rebalance_lab.brokers()) == 1


@ASYNC
async def test_the_threaded_fixture_serves_an_async_client(rebalance_lab):
    member = GroupMember(rebalance_lab.bootstrap_servers, "g", ["orders"], session_timeout_ms=10_000,
                         rebalance_timeout_ms=10_000)
    try:
        await member.join()
        view = await rebalance_lab.wait_for_group_async("g", state="Stable", timeout=10)
        assert view.member_ids == (member.member_id,)
    finally:
        await member.close(leave=True)


@ASYNC
async def test_the_async_fixture_runs_on_the_tests_loop(rebalance_lab_async):
    member = GroupMember(rebalance_lab_async.bootstrap_servers, "g", ["orders"], session_timeout_ms=10_000,
                         rebalance_timeout_ms=10_000)
    try:
        assert len(await member.join()) == 3
        assert rebalance_lab_async.describe("g")["state"] == "Stable"
    finally:
        await member.close(leave=True)


def test_the_session_fixture_is_shared_a(rebalance_lab_session):
    pytest.shared = rebalance_lab_session.bootstrap_servers


def test_the_session_fixture_is_shared_b(rebalance_lab_session):
    assert rebalance_lab_session.bootstrap_servers == pytest.shared
'''


@pytest.mark.parametrize(("mode", "marker"), [("auto", "lambda f: f"), ("strict", "pytest.mark.asyncio")])
def test_the_fixtures_work_in_both_pytest_asyncio_modes(pytester: pytest.Pytester, mode: str, marker: str) -> None:
    pytester.makeini(INI.format(mode=mode))
    pytester.makepyfile(test_user=TESTS.format(async_marker=marker))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)


def test_command_line_options_override_the_ini_file(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI.format(mode="strict"))
    pytester.makepyfile(test_cli="""
def test_settings(rebalance_lab):
    assert len(rebalance_lab.brokers()) == 3
    assert rebalance_lab.config.flavor.value == "kafka-4"
    assert rebalance_lab.config.group.initial_rebalance_delay_ms == 250
    assert ("extra", 2) in rebalance_lab.config.topics
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rebalance-lab-brokers", "3",
                                           "--rebalance-lab-flavor", "kafka-4",
                                           "--rebalance-lab-initial-delay-ms", "250",
                                           "--rebalance-lab-topic", "extra:2")
    result.assert_outcomes(passed=1)


def test_a_bad_option_value_is_a_usage_error_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad="def test_x(rebalance_lab):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rebalance-lab-brokers", "many")
    assert "bad value 'many' for brokers" in result.stdout.str() + result.stderr.str()
    assert result.ret != 0


def test_an_unknown_marker_option_is_reported(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad="""
import pytest

@pytest.mark.rebalance_lab(brokerz=3)
def test_x(rebalance_lab):
    pass
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert "unknown Emulator option" in result.stdout.str() + result.stderr.str()
    assert result.ret != 0


def test_a_recording_per_test_is_written_with_record_dir(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_rec="def test_x(rebalance_lab):\n    rebalance_lab.move_coordinator('g', 0)\n")
    record_dir = pytester.path / "recordings"
    record_dir.mkdir()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rebalance-lab-record-dir", str(record_dir))
    result.assert_outcomes(passed=1)
    (recording,) = record_dir.iterdir()
    assert "FAULT_INJECTED" in recording.read_text()
