"""Warnings for a ``rebalance_lab`` marker that cannot do what it says (checked when tests are collected).

pytest applies a marker's options only through the fixtures that read it: a marker on a test
that uses the session emulator, or no emulator at all, would otherwise be ignored without a word,
and a misspelt marker name is only an "unknown mark" warning that does not say what was meant.
"""

from __future__ import annotations

import difflib

import pytest

MARKER = "rebalance_lab"
PER_TEST_FIXTURES = ("rebalance_lab", "rebalance_lab_async")
SESSION_FIXTURE = "rebalance_lab_session"


class RebalanceLabWarning(pytest.PytestWarning):
    """A rebalance_lab marker or setting that cannot apply as written."""


def check(item: pytest.Item) -> None:
    """Warn (on the test's own location) about a misspelt marker name and a marker that cannot apply."""
    registered = _registered(item.config)
    for mark in item.iter_markers():
        if mark.name not in registered and difflib.get_close_matches(mark.name, [MARKER], n=1, cutoff=0.8):
            item.warn(RebalanceLabWarning(f"unknown marker @pytest.mark.{mark.name}: did you mean "
                                          f"@pytest.mark.{MARKER}?"))
    if item.get_closest_marker(MARKER) is None:
        return
    fixtures = getattr(item, "fixturenames", ())
    if any(name in fixtures for name in PER_TEST_FIXTURES):
        return
    if SESSION_FIXTURE in fixtures:
        item.warn(RebalanceLabWarning(
            f"@pytest.mark.{MARKER} cannot apply to {item.name}: it uses {SESSION_FIXTURE}, one emulator shared by "
            f"the whole session; request the rebalance_lab fixture for options of its own, or set the session's "
            f"with --rebalance-lab-* options or rebalance_lab_* ini keys"))
    else:
        item.warn(RebalanceLabWarning(
            f"@pytest.mark.{MARKER} has no effect on {item.name}: it uses none of the fixtures "
            f"{', '.join(PER_TEST_FIXTURES)}"))


def _registered(config: pytest.Config) -> set[str]:
    """Marker names the project registered (``markers`` ini lines, ours included): never called a typo."""
    return {line.split(":")[0].split("(")[0].strip() for line in config.getini("markers")}
