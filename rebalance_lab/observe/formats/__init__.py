"""Real-format artifacts for the emulator's own events: what production would have recorded.

The replay tool reads production evidence through adapters (broker ``server.log``,
``__consumer_offsets`` dumps, client logs). These renderers write the same formats from
canonical events (a recording's rows), so each adapter gets a round trip: emulate ->
render -> parse -> compare.

==================== ====================================================================
``broker-log-scala`` Kafka 3.x broker ``server.log`` group-coordinator lines (``broker_log``)
``broker-log-java``  Kafka 4.x broker ``server.log`` group-coordinator lines (``broker_log``)
``dump-log``         ``kafka-dump-log.sh --offsets-decoder`` output, Kafka 4.x (``dump_log``)
``dump-log-3``       the same of a Kafka 3.8/3.9 broker (``dump_log``)
``console-json``     4.x console consumer ``GroupMetadataMessageFormatter`` JSON (``console_json``)
``client-log``       Java consumer (classic protocol) log lines per member (``client_log``)
==================== ====================================================================

Each module's docstring lists which event types it renders and which it skips.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from rebalance_lab.observe.formats import broker_log, client_log, console_json, dump_log
from rebalance_lab.observe.formats._common import Event, FormatError

__all__ = ["FORMATS", "Format", "FormatError", "render"]


@dataclass(frozen=True)
class Format:
    name: str
    render: Callable[..., Iterator[str]]
    options: frozenset[str]  # the keyword options its renderer takes
    summary: str


FORMATS: dict[str, Format] = {
    f.name: f for f in (
        Format("broker-log-scala", broker_log.render_scala,
               frozenset({"tz", "broker_id", "offsets_partitions", "noise"}),
               "Kafka 3.x broker server.log group coordinator lines"),
        Format("broker-log-java", broker_log.render_java,
               frozenset({"tz", "broker_id", "offsets_partitions", "noise"}),
               "Kafka 4.x broker server.log group coordinator lines"),
        Format("dump-log", dump_log.render, frozenset({"log_dir", "offsets_partitions", "leader_epoch"}),
               "kafka-dump-log.sh --offsets-decoder output of a Kafka 4.x broker's __consumer_offsets"),
        Format("dump-log-3", dump_log.render_kafka_3, frozenset({"log_dir", "offsets_partitions", "leader_epoch"}),
               "kafka-dump-log.sh --offsets-decoder output of a Kafka 3.8/3.9 broker's __consumer_offsets"),
        Format("console-json", console_json.render, frozenset(),
               "kafka-console-consumer GroupMetadataMessageFormatter JSON (Kafka 4.x)"),
        Format("client-log", client_log.render, frozenset({"tz", "layout", "client_id", "coordinator", "broker_id"}),
               "Java consumer (classic protocol) client log lines"),
    )
}


def render(events: Iterable[Event], fmt: str, **options: Any) -> Iterator[str]:
    """Lines of ``fmt`` for ``events`` (canonical rows, in recording order), without line
    separators. Raises :class:`FormatError` for an unknown format, an option the format does
    not take, or a bad option value (an unknown time zone, a bad layout)."""
    spec = FORMATS.get(fmt)
    if spec is None:
        raise FormatError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    unknown = sorted(set(options) - spec.options)
    if unknown:
        takes = ", ".join(sorted(spec.options)) or "no options"
        raise FormatError(f"{fmt} does not take {', '.join(unknown)} (it takes {takes})")
    return spec.render(events, **options)
