"""The pytest plugin takes the history cap from the command line or the ini file, and the marker takes a control
token like any other Emulator option."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_the_plugin_takes_the_history_limit_and_the_marker_a_control_token(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
                     "rebalance_lab_history_limit = 7\n")
    pytester.makepyfile(test_caps="""
import pytest

def test_ini(rebalance_lab):
    assert rebalance_lab.config.history_limit == 7
    assert rebalance_lab.history_summary()["limit_per_group"] == 7

@pytest.mark.rebalance_lab(control_port=0, control_token="t0k3n", history_limit=0)
def test_marker(rebalance_lab):
    assert rebalance_lab.config.control_token == "t0k3n"
    assert rebalance_lab.history("g") == [] and rebalance_lab.history("g").limit == 0
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rebalance-lab-history-limit", "3", "-k", "ini")
    result.assert_outcomes(failed=1)  # the command line wins over the ini file
