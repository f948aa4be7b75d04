"""Format detection, file handling (gzip, empty, binary) and the shared adapter contract."""

from __future__ import annotations

import gzip
import itertools
import shutil
from pathlib import Path

import pytest

from rebalance_lab.replay.events import EVENT_TYPES, SCHEMA_VERSION
from rebalance_lab.replay.sources import FORMATS, SourceContext, UnknownFormatError, detect, parse_file
from tests.unit.replay.adapter_support import SAMPLES, parse_sample

SAMPLE_FORMATS = {
    "broker-scala-3x.log": "broker-log",
    "broker-scala-2x.log": "broker-log",
    "broker-java-4x.log": "broker-log",
    "dump-log-3.8.txt": "dump-log",
    "dump-log-3.7.txt": "dump-log",
    "console-4x.json": "console-json",
    "client-dynamic.log": "client-log",
    "client-static-coop.log": "client-log",
    "client-logback-iso.log": "client-log",
    "demo-recording.jsonl": "emulator",
}
ADAPTERS = ("broker-log", "dump-log", "console-json", "client-log")


def _head(name: str) -> list[str]:
    with (SAMPLES / name).open(encoding="utf-8") as stream:
        return list(itertools.islice(stream, 1000))


@pytest.mark.parametrize(("name", "fmt"), sorted(SAMPLE_FORMATS.items()))
def test_detect_picks_the_format_of_each_sample(name: str, fmt: str) -> None:
    assert detect(_head(name)) == fmt


@pytest.mark.parametrize("name", sorted(SAMPLE_FORMATS))
def test_sniffers_are_mutually_exclusive(name: str) -> None:
    head = _head(name)
    assert [fmt for fmt in FORMATS.values() if fmt.sniff(head)] == [FORMATS[SAMPLE_FORMATS[name]]]


@pytest.mark.parametrize("lines", [
    ['{"schema_version":"rbl-event/1","key":{"type":2}}\n'],  # an event row that happens to have a "key"
    ['  {"key":{"type":2,"data":{"group":"g"}},"value":null}\n', "Dumping /d/__consumer_offsets-1/0.log\n"],
    ["\tat some.Frame(Frame.java:1)\n", "| offset: 0 CreateTime: 1 key: {} payload: <DELETE>\n"],
    ["\tat some.Frame(Frame.java:1)\n",
     "[2025-03-01 00:00:00,000] INFO [Consumer clientId=c, groupId=g] (Re-)joining group (o.a.k.c.C)\n"],
    ["Dumping x\n", "[2025-03-01 00:00:00,000] INFO [Consumer clientId=c, groupId=g] (Re-)joining group (x.Y)\n"],
    ["[2025-03-01 00:00:00,000] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)\n",
     "[2025-03-01 00:00:00,000] INFO [Consumer clientId=c, groupId=g] (Re-)joining group (x.Y)\n"],
])
def test_tricky_inputs_match_at_most_one_sniffer(lines: list[str]) -> None:
    assert sum(fmt.sniff(lines) for fmt in FORMATS.values()) <= 1


def test_a_broker_log_opening_with_a_long_config_dump_is_still_detected() -> None:
    head = (["[2025-03-01 00:00:00,000] INFO KafkaConfig values: \n"]
            + [f"\tsetting.{i} = {i}\n" for i in range(400)]
            + [" (kafka.server.KafkaConfig)\n",
               "[2025-03-01 00:00:01,000] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)\n"])
    assert detect(head) == "broker-log"


def test_a_client_log_with_broker_like_lines_goes_by_the_majority() -> None:
    client = "[2025-03-01 00:00:00,000] INFO [Consumer clientId=c, groupId=g] (Re-)joining group (o.a.k.c.C)\n"
    broker = "[2025-03-01 00:00:00,000] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)\n"
    assert detect([client, client, broker]) == "client-log"
    assert detect([broker, broker, client]) == "broker-log"


@pytest.mark.parametrize("lines", [
    [],
    ["\n", "   \n"],
    ["hello world\n", "this is not a log\n"],
    ["[2025-03-01 00:00:00,000] INFO started (com.example.App)\n"],
    ["\x00\x01\x02\ufffd\ufffd\n"],
])
def test_an_unrecognisable_input_raises_a_clear_error(lines: list[str]) -> None:
    with pytest.raises(UnknownFormatError, match=r"cannot tell the format from the first lines .*pass --format "
                                                 r"\(broker-log, client-log, console-json, dump-log, emulator\)"):
        detect(lines)


def test_an_empty_file_with_an_explicit_format_yields_nothing(tmp_path: Path) -> None:
    path = tmp_path / "empty.log"
    path.write_bytes(b"")
    for fmt in ADAPTERS:
        ctx = SourceContext(name="empty.log")
        assert list(parse_file(path, fmt, ctx)) == []
        assert (ctx.report.files, ctx.report.lines, ctx.report.events) == (1, 0, 0)
    with pytest.raises(UnknownFormatError):
        list(parse_file(path, "auto", SourceContext()))


@pytest.mark.parametrize(("name", "fmt"), sorted(SAMPLE_FORMATS.items()))
def test_gzip_input_gives_the_same_events(tmp_path: Path, name: str, fmt: str) -> None:
    zipped = tmp_path / (name + ".gz")
    with (SAMPLES / name).open("rb") as src, gzip.open(zipped, "wb") as dst:
        shutil.copyfileobj(src, dst)
    options = {"envelope": "logback"} if "logback" in name else {}
    plain, _ = parse_sample(name, options=options)
    ctx = SourceContext(name=name, options=options)
    assert list(parse_file(zipped, "auto", ctx)) == plain


def test_a_truncated_gzip_file_keeps_what_was_readable_and_reports_the_rest(tmp_path: Path) -> None:
    data = gzip.compress((SAMPLES / "broker-scala-3x.log").read_bytes() * 20)
    cut = tmp_path / "server.log.1.gz"
    cut.write_bytes(data[: len(data) - 40])
    ctx = SourceContext(name="server.log.1.gz", tz="Europe/Berlin")
    events = list(parse_file(cut, "auto", ctx))
    assert len(events) > 24 * 19
    assert ctx.report.reasons["unreadable input (truncated or corrupt gzip?)"] == 1
    assert any(sample["text"].startswith("EOFError") for sample in ctx.report.samples)


def test_an_empty_input_says_so() -> None:
    with pytest.raises(UnknownFormatError, match="the input is empty"):
        detect([])


def test_binary_junk_is_reported_line_by_line_and_never_raises(tmp_path: Path) -> None:
    path = tmp_path / "junk.bin"
    path.write_bytes(bytes(range(256)) * 8 + b"\n\xff\xfe\x00\x00 more\n")
    for fmt in ADAPTERS:
        ctx = SourceContext(name="junk.bin")
        assert list(parse_file(path, fmt, ctx)) == []
        assert ctx.report.lines > 0
        assert ctx.report.ignored + ctx.report.unparsed == ctx.report.lines


# With a message-last layout (logback) a line cut inside its message reads as a shorter message: not detectable.
@pytest.mark.parametrize("name", sorted(n for n, f in SAMPLE_FORMATS.items() if f in ADAPTERS and "logback" not in n))
def test_a_truncated_last_line_is_counted_and_everything_before_it_kept(tmp_path: Path, name: str) -> None:
    whole, _ = parse_sample(name)
    last = max(e["seq"] for e in whole)  # the last line that yields an event: cut it in half, drop the rest
    lines = (SAMPLES / name).read_text(encoding="utf-8").splitlines(keepends=True)
    cut = tmp_path / name
    cut.write_text("".join(lines[:last - 1]) + lines[last - 1][: len(lines[last - 1]) // 2], encoding="utf-8")
    ctx = SourceContext(name=name)
    assert list(parse_file(cut, SAMPLE_FORMATS[name], ctx)) == [e for e in whole if e["seq"] < last]
    assert ctx.report.unparsed == 1, ctx.report.to_dict()
    assert ctx.report.samples[0]["ref"] == f"{name}:{last}"


@pytest.mark.parametrize("name", sorted(n for n, f in SAMPLE_FORMATS.items() if f in ADAPTERS))
def test_every_event_keeps_the_shared_contract(name: str) -> None:
    options = {"envelope": "logback"} if "logback" in name else {}
    events, report = parse_sample(name, cluster_id="prod-eu", broker_id=9, options=options)
    source = FORMATS[SAMPLE_FORMATS[name]].source
    assert events and report.events == len(events) == report.by_format[SAMPLE_FORMATS[name]]
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs)
    for event in events:
        assert event["schema_version"] == SCHEMA_VERSION and event["source"] == source
        assert event["event_type"] in EVENT_TYPES and isinstance(event["ts"], int)
        assert event["ts_kind"] in ("log_line", "record_create", "current_state")
        assert event["cluster_id"] == "prod-eu" and event["group_kind"] in ("classic", "consumer")
        assert isinstance(event["group_id"], str) and event["source_ref"]
        if source != "broker_log":
            assert event["broker_id"] == 9  # the broker log names its own broker
