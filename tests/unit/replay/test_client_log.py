"""The client-log adapter on Java consumer log lines (spec/replay-inputs.md §3.1, §3.2)."""

from __future__ import annotations

import pytest

from rebalance_lab.replay.sources.client_log import envelope_pattern
from tests.unit.replay.adapter_support import parse_sample, parse_text, project, us

COLUMNS = ("seq", "event_type", "client_id", "member_id", "generation", "protocol", "client_reason")
CC = "(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)"
PREFIX = "[Consumer clientId=c-1, groupId=g]"


def tps(topic: str, *partitions: int) -> list[dict[str, object]]:
    return [{"topic": topic, "partition": p} for p in partitions]


def test_dynamic_members_eager_protocol_leader_and_follower_in_one_file() -> None:
    events, report = parse_sample("client-dynamic.log", tz="Europe/Berlin")
    a, b = "consumer-orders-1", "consumer-orders-2"
    assert project(events, COLUMNS) == [
        (3, "CLIENT_JOIN_START", a, None, None, None, None),
        (4, "CLIENT_JOIN_START", b, None, None, None, None),
        # the rejoin reason is the one logged just before this join
        (6, "CLIENT_JOIN_START", a, None, None, None,
         "need to re-join with the given member-id: consumer-orders-1-a4b1"),
        (7, "CLIENT_JOINED", a, "consumer-orders-1-a4b1", 1, "range", None),
        (8, "CLIENT_JOINED", b, "consumer-orders-2-b5c6", 1, "range", None),
        (9, "CLIENT_LEADER_ASSIGNMENT", a, "consumer-orders-1-a4b1", 1, None, None),
        (10, "CLIENT_SYNCED", a, "consumer-orders-1-a4b1", 1, "range", None),
        (12, "CLIENT_PARTITIONS_ASSIGNED", a, "consumer-orders-1-a4b1", 1, None, None),
        (13, "CLIENT_SYNCED", b, "consumer-orders-2-b5c6", 1, "range", None),
        (14, "CLIENT_PARTITIONS_ASSIGNED", b, "consumer-orders-2-b5c6", 1, None, None),
        (15, "CLIENT_POLL_TIMEOUT", a, "consumer-orders-1-a4b1", 1, None, None),
        (16, "MEMBER_LEFT", a, "consumer-orders-1-a4b1", 1, None, "consumer poll timeout has expired."),
        (17, "CLIENT_PARTITIONS_REVOKED", b, "consumer-orders-2-b5c6", 1, None, None),
        (19, "CLIENT_JOIN_START", b, "consumer-orders-2-b5c6", None, None, "group is already rebalancing"),
        (23, "CLIENT_PARTITIONS_LOST", a, "consumer-orders-1-a4b1", 1, None, None),
        # "Resetting generation and member id" cleared both
        (25, "CLIENT_JOIN_START", a, None, None, None, None),
        (26, "CLIENT_JOINED", a, "consumer-orders-1-f00d", 3, "range", None),
        (27, "CLIENT_SYNCED", a, "consumer-orders-1-f00d", 3, "range", None),
        (28, "CLIENT_PARTITIONS_ASSIGNED", a, "consumer-orders-1-f00d", 3, None, None),
    ]
    assert events[0]["ts"] == us("2025-03-01 10:00:00.010", "Europe/Berlin")
    leader = events[5]
    assert (leader["leader_id"], leader["n_members"], leader["members"]) == ("consumer-orders-1-a4b1", 2, [
        {"member_id": "consumer-orders-1-a4b1", "assignment": tps("orders", 0, 1) + tps("orders-v2", 0)},
        {"member_id": "consumer-orders-2-b5c6", "assignment": tps("orders", 2) + tps("orders-v2", 1)},
    ])
    assert events[7]["partitions"] == tps("orders", 0, 1) + tps("orders-v2", 0)  # "orders-v2-0" splits on the last -
    assert events[18]["partitions"] == []
    assert {e["group_id"] for e in events} == {"orders"} and {e["source"] for e in events} == {"client_log"}
    # other loggers' lines, "Subscribed", "Request joining" (its reason moves on), Notifying, the ERROR line and its
    # 2-line stack trace, Resetting
    assert (report.lines, report.events, report.ignored, report.unparsed) == (28, 19, 9, 0)


def test_static_member_cooperative_block_is_one_record_and_the_callback_lines_carry_the_sets() -> None:
    events, report = parse_sample("client-static-coop.log")
    assert project(events, ("seq", "event_type", "group_instance_id", "member_id", "generation", "client_reason")) == [
        (1, "CLIENT_JOIN_START", "billing-a", None, None, None),
        (2, "CLIENT_JOINED", "billing-a", "billing-a-77c1", 4, None),
        (3, "CLIENT_LEADER_ASSIGNMENT", "billing-a", "billing-a-77c1", 4, None),
        (4, "CLIENT_SYNCED", "billing-a", "billing-a-77c1", 4, None),
        (12, "CLIENT_PARTITIONS_ASSIGNED", "billing-a", "billing-a-77c1", 4, None),
        (14, "CLIENT_JOIN_START", "billing-a", "billing-a-77c1", None,
         "cached metadata has changed from [billing-events] at the beginning of the rebalance to "
         "[billing-events, billing-audit]"),
        (15, "CLIENT_JOINED", "billing-a", "billing-a-77c1", 5, None),
        (17, "CLIENT_SYNCED", "billing-a", "billing-a-77c1", 5, None),
        (24, "CLIENT_PARTITIONS_REVOKED", "billing-a", "billing-a-77c1", 5, None),
        (25, "CLIENT_PARTITIONS_ASSIGNED", "billing-a", "billing-a-77c1", 5, None),
        (27, "CLIENT_JOIN_START", "billing-a", "billing-a-77c1", None, "need to revoke partitions and re-join"),
    ]
    assert [e.get("partitions") for e in events if "partitions" in e] == [
        tps("billing-events", 2), tps("billing-events", 2), []]
    assert {e["group_id"] for e in events} == {"billing v2"}
    assert report.unparsed == 0 and report.lines == 27


def test_logback_envelope_iso_times_old_texts_and_kip_848_lines() -> None:
    events, report = parse_sample("client-logback-iso.log", tz="America/New_York", options={"envelope": "logback"})
    assert project(events, ("ts", "event_type", "member_id", "generation", "group_kind", "raw")) == [
        (us("2025-11-02 05:30:00.010"), "CLIENT_JOIN_START", None, None, "classic", None),
        (us("2025-11-02 05:30:01.000"), "CLIENT_JOINED", None, 7, "classic", None),  # <= 2.6: generation only
        (us("2025-11-02 01:30:02.000", "America/New_York"), "CLIENT_PARTITIONS_ASSIGNED", None, 7, "classic", None),
        (us("2025-11-02 06:40:00.000"), "K848_MEMBER_STATE", "m848a", 4, "consumer", "ACKNOWLEDGING"),
        (us("2025-11-02 06:40:00.001"), "CLIENT_PARTITIONS_REVOKED", "m848a", 4, "consumer", None),
    ]
    assert events[2]["partitions"] == tps("inventory", 0, 1)  # "Setting newly assigned partitions [..]"
    assert (report.lines, report.ignored, report.unparsed) == (6, 1, 0)


def test_a_custom_envelope_regex_with_named_groups() -> None:
    envelope = r"(?P<ts>\S+ \S+) (?P<level>[A-Z]+) (?P<logger>\S+): (?P<msg>.*)"
    text = (f"2025-03-01 10:00:00,001 INFO ConsumerCoordinator: {PREFIX} Successfully joined group with generation "
            "Generation{generationId=2, memberId='c-1-x', protocol='roundrobin'}\n")
    events, _ = parse_text(text, "client-log", options={"envelope": envelope})
    assert project(events, ("event_type", "member_id", "protocol", "ts")) == [
        ("CLIENT_JOINED", "c-1-x", "roundrobin", us("2025-03-01 10:00:00.001"))]


def test_an_unusable_envelope_option_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="lacks the named group"):
        envelope_pattern(r"(?P<ts>\S+) (?P<msg>.*)")
    with pytest.raises(ValueError, match="not a valid regex"):
        envelope_pattern(r"(?P<ts>[")


def test_malformed_and_truncated_client_lines_are_counted_and_the_rest_still_parse() -> None:
    text = "\n".join([
        f"[2025-03-01 10:00:00,000] INFO {PREFIX} (Re-)joining group {CC}",
        f"[2025-03-01 10:00:01,000] INFO {PREFIX} Successfully joined group with generation Generation{{generationId=x"
        f"}} {CC}",
        f"[2025-03-01 99:00:01,000] INFO {PREFIX} (Re-)joining group {CC}",
        f"[2025-03-01 10:00:02,000] INFO {PREFIX} Adding newly assigned partitions: no_partition_number {CC}",
        "plain garbage",
        "\x00\x00\x00 binary",
        f"[2025-03-01 10:00:03,000] INFO {PREFIX} Revoke previously assigned partitions t-1 {CC}",
        f"[2025-03-01 10:00:04,000] INFO {PREFIX} Successfully synced group in generation Generation{{generation",
    ]) + "\n"
    events, report = parse_text(text, "client-log", name="app.log")
    assert project(events, ("seq", "event_type")) == [(1, "CLIENT_JOIN_START"), (7, "CLIENT_PARTITIONS_REVOKED")]
    assert report.reasons == {"malformed joined": 1, "bad timestamp": 1, "malformed assigned": 1, "no envelope": 2,
                              "truncated line": 1}
    assert report.samples[-1]["ref"] == "app.log:6"
    assert report.lines == 8
