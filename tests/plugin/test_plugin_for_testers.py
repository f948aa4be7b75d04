"""What a tester sees from the pytest plugin (issue 21, item 2), run by pytester in fresh interpreters with
an ini file of their own, as in a user's project: the failure report's "rebalance-lab" section, the record
directory created, warnings for markers that cannot apply or are misspelt, invalid options answered with the
valid choices, and the codec's DeprecationWarnings filtered without hiding the user's own."""

from __future__ import annotations

import re

import pytest

pytest_plugins = ["pytester"]

INI = """
[pytest]
asyncio_mode = strict
asyncio_default_fixture_loop_scope = function
asyncio_default_test_loop_scope = function
"""

JOIN = '''
import asyncio
from rebalance_lab.clients.member import GroupMember


def join(emu, group):
    async def run():
        member = GroupMember(emu.bootstrap_servers, group, ["orders"], session_timeout_ms=10_000,
                             rebalance_timeout_ms=10_000, client_id="billing")
        await member.join()
        await member.close(leave=False)
    asyncio.run(run())
'''


def _run(pytester: pytest.Pytester, source: str, *args: str, fresh: bool = False) -> pytest.RunResult:
    """In this interpreter (quick), or in a fresh one where what happens at import time matters."""
    pytester.makeini(INI)
    pytester.makepyfile(test_user=source)
    run = pytester.runpytest_subprocess if fresh else pytester.runpytest_inprocess
    return run("-p", "no:cacheprovider", *args)


def _section(output: str) -> str:
    """The text of the first "rebalance-lab" report section."""
    match = re.search(r"-+ rebalance-lab -+\n(.*?)(?:\n[-=]{5,}|\Z)", output, re.S)
    assert match, output
    return match.group(1)


def test_a_failed_test_gets_a_section_with_the_groups_generations_and_the_last_narration(
        pytester: pytest.Pytester) -> None:
    result = _run(pytester, JOIN + '''
import pytest


@pytest.mark.rebalance_lab(topics=[("orders", 4)])
def test_waits_for_a_second_generation_that_never_comes(rebalance_lab):
    join(rebalance_lab, "billing")
    rebalance_lab.wait_for_group("billing", generation_at_least=2, timeout=0.3)


def test_passes(rebalance_lab):
    join(rebalance_lab, "audit")
''', "--junitxml=report.xml")
    result.assert_outcomes(failed=1, passed=1)
    output = result.stdout.str()
    section = _section(output)
    assert "rebalance_lab: <Emulator kafka-4 at 127.0.0.1:" in section
    assert "group 'billing': state Stable, generation 1, protocol range, leader billing-" in section
    assert "generation 1: protocol range" in section and "-> orders[0, 1, 2, 3]" in section
    narration = section.partition("narration lines:\n")[2]
    assert "billing: " in narration and "generation 1" in narration
    assert output.count("-- rebalance-lab --") == 1  # the passing test has none
    assert 'property name="rebalance-lab"' in (pytester.path / "report.xml").read_text()


def test_a_failed_test_on_the_session_emulator_gets_the_section_too(pytester: pytest.Pytester) -> None:
    result = _run(pytester, JOIN + '''
def test_fails(rebalance_lab_session):
    join(rebalance_lab_session, "shared")
    assert rebalance_lab_session.group("shared").generation_id == 7
''', "--rebalance-lab-topic", "orders:2")
    result.assert_outcomes(failed=1)
    section = _section(result.stdout.str())
    assert section.startswith("rebalance_lab_session: <Emulator kafka-4 at")
    assert "group 'shared'" in section and "the session emulator is shared" in section


def test_the_record_directory_is_created_when_missing(pytester: pytest.Pytester) -> None:
    record_dir = pytester.path / "runs" / "today"
    result = _run(pytester, "def test_x(rebalance_lab):\n    rebalance_lab.move_coordinator('g', 0)\n",
                  "--rebalance-lab-record-dir", str(record_dir))
    result.assert_outcomes(passed=1)
    (recording,) = record_dir.iterdir()
    assert "FAULT_INJECTED" in recording.read_text()


def test_a_marker_that_cannot_apply_is_a_warning_naming_why(pytester: pytest.Pytester) -> None:
    result = _run(pytester, '''
import pytest


@pytest.mark.rebalance_lab(brokers=3)
def test_on_the_session_emulator(rebalance_lab_session):
    assert len(rebalance_lab_session.brokers()) == 1


@pytest.mark.rebalance_lab(brokers=3)
def test_without_an_emulator():
    pass
''')
    result.assert_outcomes(passed=2)
    output = result.stdout.str()
    assert output.count("RebalanceLabWarning") == 2
    assert "RebalanceLabWarning: @pytest.mark.rebalance_lab cannot apply to test_on_the_session_emulator: " \
           "it uses rebalance_lab_session, one emulator shared by the whole session" in output
    assert "RebalanceLabWarning: @pytest.mark.rebalance_lab has no effect on test_without_an_emulator" in output


def test_a_misspelt_marker_or_option_says_what_was_meant(pytester: pytest.Pytester) -> None:
    result = _run(pytester, '''
import pytest


@pytest.mark.rebalance_labs(brokers=3)
def test_marker_name(rebalance_lab):
    pass


@pytest.mark.rebalance_lab(brokerz=3)
def test_option_name(rebalance_lab):
    pass


@pytest.mark.rebalance
def test_a_registered_marker_of_the_users_own_with_a_close_name():
    pass
''', "-o", "markers=rebalance: the user's own marker")
    result.assert_outcomes(passed=2, errors=1)
    output = result.stdout.str()
    assert output.count("RebalanceLabWarning") == 1  # none for the registered marker
    assert "RebalanceLabWarning: unknown marker @pytest.mark.rebalance_labs: did you mean " \
           "@pytest.mark.rebalance_lab?" in output
    assert "unknown Emulator option 'brokerz'; did you mean 'brokers'?" in output


@pytest.mark.parametrize("where", ["marker", "command line"])
def test_an_invalid_flavor_is_answered_with_the_valid_choices(pytester: pytest.Pytester, where: str) -> None:
    if where == "marker":
        result = _run(pytester, '''
import pytest


@pytest.mark.rebalance_lab(flavor="kafka-9")
def test_x(rebalance_lab):
    pass
''')
    else:
        result = _run(pytester, "def test_x(rebalance_lab):\n    pass\n", "--rebalance-lab-flavor", "kafka-9")
    assert result.ret != 0
    output = result.stdout.str() + result.stderr.str()
    assert "flavor must be one of kafka-4, kafka-3, not 'kafka-9'" in output


def test_the_codecs_deprecation_warnings_are_filtered_but_the_users_own_still_show(
        pytester: pytest.Pytester) -> None:
    result = _run(pytester, JOIN + '''
import warnings


def test_joins_and_warns(rebalance_lab):
    join(rebalance_lab, "g")
    warnings.warn("the user's own deprecation", DeprecationWarning)
''', "--rebalance-lab-topic", "orders:2", "-W", "default::DeprecationWarning",
                  fresh=True)
    result.assert_outcomes(passed=1, warnings=1)
    output = result.stdout.str()
    assert "DeprecationWarning: the user's own deprecation" in output
    assert "kafka/protocol" not in output and "read_text is deprecated" not in output


@pytest.mark.parametrize("topic", ["orders:many", ":3", "orders:0"])
def test_a_bad_topic_option_stops_the_run_saying_what_is_expected(pytester: pytest.Pytester, topic: str) -> None:
    result = _run(pytester, "def test_x(rebalance_lab):\n    pass\n", "--rebalance-lab-topic", topic)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert f"rebalance-lab: bad topic {topic!r}: expected NAME[:PARTITIONS] with PARTITIONS above 0" in output
