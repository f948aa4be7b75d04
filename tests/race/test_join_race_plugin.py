"""The pytest plugin takes the join race setting from the command line, the ini file or the marker."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_the_plugin_takes_join_race_from_the_command_line_and_the_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_race="""
import pytest

def test_option(rebalance_lab):
    assert rebalance_lab.config.group.join_race == "together"

@pytest.mark.rebalance_lab(join_race="separate")
def test_marker(rebalance_lab):
    assert rebalance_lab.config.group.join_race == "separate"
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rebalance-lab-join-race", "together")
    result.assert_outcomes(passed=2)


def test_an_unknown_join_race_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad="def test_x(rebalance_lab):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rebalance-lab-join-race", "sometimes")
    assert "join_race must be one of sampled, separate, together" in result.stdout.str() + result.stderr.str()
    assert result.ret != 0
