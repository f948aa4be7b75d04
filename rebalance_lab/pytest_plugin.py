"""pytest plugin (entry point ``pytest11``): emulator fixtures, options and a per-test marker.

Fixtures
    ``rebalance_lab``          a fresh :class:`~rebalance_lab.api.Emulator` per test;
    ``rebalance_lab_session``  one emulator for the whole session;
    ``rebalance_lab_async``    a fresh emulator on the test's own event loop (needs pytest-asyncio).

The first two run the emulator on a background thread, so they serve synchronous tests,
async tests and sync clients (kafka-python, confluent-kafka) alike, under pytest-asyncio's
strict or auto mode. Settings, later ones winning: the plugin's test-friendly defaults
(free ports, ``initial_rebalance_delay_ms=0``), the ini file (``rebalance_lab_flavor = kafka-3``),
the command line (``--rebalance-lab-flavor kafka-3``), then ``@pytest.mark.rebalance_lab(...)``
with any ``Emulator`` option (function-scoped fixtures only).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.pytest_support import codec_warnings, markers

with codec_warnings.quiet_codec_import() as _CODEC_MODULES:
    from rebalance_lab.api import Emulator, make_config
    from rebalance_lab.config import EmulatorConfig
from rebalance_lab.pytest_support.report import SECTION, section_text

MARKER = markers.MARKER
DEFAULTS: dict[str, Any] = {"port": 0, "initial_rebalance_delay_ms": 0}
NARRATION_LINES = 30  # kept per emulator for the report of a failed test
FIXTURES = ("rebalance_lab", "rebalance_lab_session", "rebalance_lab_async")


def _topics(values: list[str]) -> list[tuple[str, int]]:
    topics = []
    for value in values:
        name, _, count = value.strip().partition(":")
        if not name or not (count or "1").isdigit() or int(count or 1) <= 0:
            raise pytest.UsageError(f"rebalance-lab: bad topic {value.strip()!r}: expected NAME[:PARTITIONS] "
                                    "with PARTITIONS above 0")
        topics.append((name, int(count or 1)))
    return topics


# (option name, ini name, help, converter)
_OPTIONS: list[tuple[str, str, Callable[[str], Any]]] = [
    ("flavor", "emulated Kafka behaviour: kafka-4 (default) or kafka-3", str),
    ("brokers", "number of emulated brokers", int),
    ("initial_delay_ms", "group.initial.rebalance.delay.ms (plugin default: 0)", int),
    ("min_session_timeout_ms", "group.min.session.timeout.ms", int),
    ("seed", "fix member ids and placement", int),
    ("join_race", "zero initial delay, members rejoining together: sampled (default), separate or together", str),
    ("history_limit", "generations the history keeps per group (default 1000; 0: no history)", int),
]
_RENAMED = {"initial_delay_ms": "initial_rebalance_delay_ms"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rebalance-lab", "rebalance-lab emulator fixtures")
    for name, help_text, _ in _OPTIONS:
        group.addoption(f"--rebalance-lab-{name.replace('_', '-')}", dest=f"rebalance_lab_{name}", help=help_text)
        parser.addini(f"rebalance_lab_{name}", help_text)
    group.addoption("--rebalance-lab-topic", dest="rebalance_lab_topic", action="append", default=[],
                    metavar="NAME[:PARTITIONS]", help="a topic created at start (repeatable)")
    parser.addini("rebalance_lab_topics", "topics created at start, one NAME[:PARTITIONS] a line", type="linelist")
    group.addoption("--rebalance-lab-record-dir", dest="rebalance_lab_record_dir",
                    help="write each emulator's recording (JSON Lines) into this directory")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(**options): Emulator options for this test's rebalance_lab fixtures "
        "(e.g. brokers=3, flavor='kafka-3', topics=[('t', 6)], manual_clock=True)")
    for line in codec_warnings.ini_filters(_CODEC_MODULES):
        config.addinivalue_line("filterwarnings", line)
    try:  # a bad --rebalance-lab-* option or ini value stops the run at once, naming the valid values
        make_config(**base_options(config))
    except (TypeError, ValueError) as exc:
        raise pytest.UsageError(f"rebalance-lab: {exc}") from None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        markers.check(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test that used an emulator gets a "rebalance-lab" section: its groups' generations and the
    last narration lines (and the same text as a junit-xml property)."""
    report: pytest.TestReport = yield
    if report.failed and report.when in ("setup", "call"):
        funcargs = getattr(item, "funcargs", {})
        emulators = {name: funcargs[name] for name in FIXTURES if isinstance(funcargs.get(name), Emulator)}
        if emulators:
            text = section_text(emulators)
            report.sections.append((SECTION, text))
            item.user_properties.append((SECTION, text))  # junit-xml writes the last report's properties
    return report


def base_options(config: pytest.Config) -> dict[str, Any]:
    """Defaults, then ini values, then command-line values."""
    options = dict(DEFAULTS)
    for name, _, convert in _OPTIONS:
        raw = config.getoption(f"rebalance_lab_{name}") or config.getini(f"rebalance_lab_{name}")
        if raw not in (None, ""):
            try:
                options[_RENAMED.get(name, name)] = convert(str(raw))
            except ValueError:
                raise pytest.UsageError(f"rebalance-lab: bad value {raw!r} for {name}") from None
    topics = list(config.getini("rebalance_lab_topics")) + list(config.getoption("rebalance_lab_topic"))
    if topics:
        options["topics"] = _topics(topics)
    return options


def build_config(config: pytest.Config, node: pytest.Item | None, name: str) -> EmulatorConfig:
    options = base_options(config)
    if node is not None:
        for marker in reversed(list(node.iter_markers(MARKER))):  # the closest marker wins
            options.update(marker.kwargs)
    record_dir = config.getoption("rebalance_lab_record_dir")
    if record_dir and "record_path" not in options:
        options["record_path"] = str(_record_dir(record_dir) / f"{name}.jsonl")
    try:
        return make_config(**options)
    except (TypeError, ValueError) as exc:
        raise pytest.UsageError(f"rebalance-lab: {exc}") from None


def _record_dir(path: str) -> Path:
    """The record directory, created (with its parents) when missing."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise pytest.UsageError(f"rebalance-lab: cannot create the record directory {path}: "
                                f"{exc.strerror or exc}") from None
    return Path(path)


def _safe(nodeid: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in nodeid)[-150:]


@pytest.fixture
def rebalance_lab(request: pytest.FixtureRequest) -> Iterator[Emulator]:
    """A fresh emulator for this test, on a background thread (sync and async tests)."""
    config = build_config(request.config, request.node, _safe(request.node.nodeid))
    with Emulator(config, keep_narration=NARRATION_LINES) as emulator:
        yield emulator


@pytest.fixture(scope="session")
def rebalance_lab_session(request: pytest.FixtureRequest) -> Iterator[Emulator]:
    """One emulator for the session (markers do not apply: it is shared). Use distinct group ids per test."""
    with Emulator(build_config(request.config, None, "session"), keep_narration=NARRATION_LINES) as emulator:
        yield emulator


try:
    import pytest_asyncio
except ImportError:  # pragma: no cover - the async fixture needs pytest-asyncio
    pass
else:

    @pytest_asyncio.fixture
    async def rebalance_lab_async(request: pytest.FixtureRequest) -> AsyncIterator[Emulator]:
        """A fresh emulator on the test's event loop (``async with``); inspection needs no thread hop."""
        config = build_config(request.config, request.node, _safe(request.node.nodeid))
        async with Emulator(config, keep_narration=NARRATION_LINES) as emulator:
            yield emulator
