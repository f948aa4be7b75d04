"""Java consumer client log lines (classic protocol, 3.8+) derived from group events (spec §3.1)."""

from __future__ import annotations

import re

import pytest

from rebalance_lab.observe.formats import FormatError, client_log, render
from tests.unit.observe.events import Events, member_row

CC = "(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)"
LI = "(org.apache.kafka.clients.consumer.internals.ConsumerRebalanceListenerInvoker)"
GENERATION = re.compile(r"Generation\{generationId=(-?\d+), memberId='([^']*)', protocol='([^']*)'\}")  # §3.1
C1 = "[Consumer clientId=c1, groupId=orders]"
C2 = "[Consumer instanceId=inst-1, clientId=c2, groupId=orders]"


def eager_group() -> Events:
    e = Events()
    e.created(0)
    e.pending(1, "m1", "c1")
    e.joined(2, "m1", "c1", protocols=("range",))
    e.prepare(2, 0, "Adding new member m1 with group instance id null; client reason: need to re-join with the given "
                    "member-id: m1", "member_join")
    e.complete(3, 1, "m1", 1)
    e.sync(4, 1, "m1", 1)
    e.snapshot(4, 1, "m1", [member_row("m1", "c1", [("orders", 0), ("orders", 1)])])
    e.joined(5, "s1", "c2", instance="inst-1", protocols=("range",))
    e.prepare(5, 1, "Adding new member s1 with group instance id inst-1; client reason: not provided", "member_join")
    e.rejoin(6, "m1", 1)
    e.complete(7, 2, "m1", 2, 1)
    e.sync(8, 2, "m1", 2)
    e.snapshot(8, 2, "m1", [member_row("s1", "c2", [("orders", 0)], instance="inst-1"),
                            member_row("m1", "c1", [("orders", 1)], generation=1)])
    e.left(9, "m1", leader="s1")
    e.left(9, "s1", instance="inst-1")  # an admin removal: a static consumer never sends LeaveGroup
    return e


def test_an_eager_members_life_comes_out_in_the_java_consumers_words() -> None:
    assert list(render(eager_group().rows, "client-log")) == [
        f"[2025-03-01 00:00:00,001] INFO {C1} (Re-)joining group {CC}",
        f"[2025-03-01 00:00:00,001] INFO {C1} Request joining group due to: need to re-join with the given "
        f"member-id: m1 {CC}",
        f"[2025-03-01 00:00:00,002] INFO {C1} (Re-)joining group {CC}",
        f"[2025-03-01 00:00:00,003] INFO {C1} Successfully joined group with generation Generation{{generationId=1, "
        f"memberId='m1', protocol='range'}} {CC}",
        f"[2025-03-01 00:00:00,004] INFO {C1} Finished assignment for group at generation 1: "
        f"{{m1=Assignment(partitions=[orders-0, orders-1])}} {CC}",
        f"[2025-03-01 00:00:00,004] INFO {C1} Successfully synced group in generation Generation{{generationId=1, "
        f"memberId='m1', protocol='range'}} {CC}",
        f"[2025-03-01 00:00:00,004] INFO {C1} Notifying assignor about the new Assignment(partitions=[orders-0, "
        f"orders-1]) {CC}",
        f"[2025-03-01 00:00:00,004] INFO {C1} Adding newly assigned partitions: [orders-0, orders-1] {LI}",
        f"[2025-03-01 00:00:00,005] INFO {C2} (Re-)joining group {CC}",
        f"[2025-03-01 00:00:00,006] INFO {C1} Request joining group due to: group is already rebalancing {CC}",
        f"[2025-03-01 00:00:00,006] INFO {C1} Revoke previously assigned partitions [orders-0, orders-1] {LI}",
        f"[2025-03-01 00:00:00,006] INFO {C1} (Re-)joining group {CC}",
        f"[2025-03-01 00:00:00,007] INFO {C1} Successfully joined group with generation Generation{{generationId=2, "
        f"memberId='m1', protocol='range'}} {CC}",
        f"[2025-03-01 00:00:00,007] INFO {C2} Successfully joined group with generation Generation{{generationId=2, "
        f"memberId='s1', protocol='range'}} {CC}",
        # the leader's map is a Java HashMap: "m1".hashCode() lands in bucket 4, "s1" in bucket 14
        f"[2025-03-01 00:00:00,008] INFO {C1} Finished assignment for group at generation 2: "
        f"{{m1=Assignment(partitions=[orders-1]), s1=Assignment(partitions=[orders-0])}} {CC}",
        f"[2025-03-01 00:00:00,008] INFO {C2} Successfully synced group in generation Generation{{generationId=2, "
        f"memberId='s1', protocol='range'}} {CC}",
        f"[2025-03-01 00:00:00,008] INFO {C2} Notifying assignor about the new Assignment(partitions=[orders-0]) {CC}",
        f"[2025-03-01 00:00:00,008] INFO {C2} Adding newly assigned partitions: [orders-0] {LI}",
        f"[2025-03-01 00:00:00,008] INFO {C1} Successfully synced group in generation Generation{{generationId=2, "
        f"memberId='m1', protocol='range'}} {CC}",
        f"[2025-03-01 00:00:00,008] INFO {C1} Notifying assignor about the new Assignment(partitions=[orders-1]) {CC}",
        f"[2025-03-01 00:00:00,008] INFO {C1} Adding newly assigned partitions: [orders-1] {LI}",
        f"[2025-03-01 00:00:00,009] INFO {C1} Revoke previously assigned partitions [orders-1] {LI}",
        f"[2025-03-01 00:00:00,009] INFO {C1} Member m1 sending LeaveGroup request to coordinator localhost:9092 "
        f"(id: +1 rack: null isFenced: false) due to the consumer is being closed {CC}",
    ]


def test_joined_and_synced_lines_match_the_specs_generation_regex() -> None:
    lines = [line for line in render(eager_group().rows, "client-log") if "Successfully" in line]
    assert [GENERATION.search(line).groups() for line in lines] == [  # type: ignore[union-attr]
        ("1", "m1", "range"), ("1", "m1", "range"), ("2", "m1", "range"), ("2", "s1", "range"),
        ("2", "s1", "range"), ("2", "m1", "range")]


def test_a_cooperative_member_keeps_its_partitions_and_revokes_only_what_moved() -> None:
    e = Events()
    e.joined(0, "x", "cx", protocols=("cooperative-sticky",))
    e.complete(1, 1, "x", 1, protocol="cooperative-sticky")
    e.snapshot(2, 1, "x", [member_row("x", "cx", [("t", 0), ("t", 1)])], protocol="cooperative-sticky")
    e.joined(3, "y", "cy", protocols=("cooperative-sticky",))
    e.prepare(3, 1, "Adding new member y with group instance id null; client reason: not provided", "member_join")
    e.rejoin(4, "x", 1, protocols=("cooperative-sticky",))
    e.complete(5, 2, "x", 2, protocol="cooperative-sticky")
    e.snapshot(6, 2, "x", [member_row("x", "cx", [("t", 0)], owned=[("t", 0), ("t", 1)], generation=1),
                           member_row("y", "cy", [])], protocol="cooperative-sticky")
    x = [line.split("groupId=orders] ", 1)[1] for line in render(e.rows, "client-log", client_id="cx")]
    assert x[x.index("Request joining group due to: group is already rebalancing (org.apache.kafka.clients."
                     "consumer.internals.ConsumerCoordinator)") + 1].startswith("(Re-)joining group")  # no revoke
    assert x[-6:] == [
        f"Successfully synced group in generation Generation{{generationId=2, memberId='x', "
        f"protocol='cooperative-sticky'}} {CC}",
        "Updating assignment with\n"
        "\tAssigned partitions:                       [t-0]\n"
        "\tCurrent owned partitions:                  [t-0, t-1]\n"
        "\tAdded partitions (assigned - owned):       []\n"
        f"\tRevoked partitions (owned - assigned):     [t-1]\n {CC}",
        f"Revoke previously assigned partitions [t-1] {LI}",
        f"Request joining group due to: need to revoke partitions [t-1] as indicated by the current assignment and "
        f"re-join {CC}",
        f"Notifying assignor about the new Assignment(partitions=[t-0]) {CC}",
        f"Adding newly assigned partitions: [] {LI}",
    ]


def test_the_layout_zone_and_client_filter_are_options() -> None:
    lines = list(render(eager_group().rows, "client-log", tz="America/New_York", client_id="c2",
                        layout="%d{yyyy-MM-dd'T'HH:mm:ss.SSS} [%t] %-5p %c{1} - %m%n"))
    assert lines[0] == f"2025-02-28T19:00:00.005 [main] INFO  ConsumerCoordinator - {C2} (Re-)joining group"
    assert all("clientId=c2," in line for line in lines) and len(lines) == 5
    quoted = next(render(eager_group().rows, "client-log", layout="%d{HH 'o''clock' mm''} %m"))
    assert quoted.startswith("00 o'clock 00' [Consumer")
    iso = next(render(eager_group().rows, "client-log", layout="%d{ISO8601} %-6p|%m"))
    assert iso.startswith("2025-03-01T00:00:00,001 INFO  |[Consumer clientId=c1")


@pytest.mark.parametrize(("options", "message"), [
    ({"layout": "%d %X %m"}, "uses %X"),
    ({"layout": "%c{2} %m"}, "only %c and %c{1}"),
    ({"layout": "%d{yyyy-MM-dd zzz} %m"}, "uses 'zzz'"),
    ({"layout": "%d{HH 'oops} %m"}, "unclosed quote"),
    ({"tz": "Nowhere/Special"}, "unknown time zone"),
    ({"noise": True}, "client-log does not take noise"),
])
def test_bad_client_log_options_are_clear_errors(options: dict[str, object], message: str) -> None:
    with pytest.raises(FormatError, match=message):
        render(eager_group().rows, "client-log", **options)


def test_a_restarted_static_member_rejoins_as_a_new_process_under_its_instance_id() -> None:
    e = eager_group()
    del e.rows[-2:]  # nobody leaves
    e.add("STATIC_MEMBER_REPLACED", 10, member_id="s2", group_instance_id="inst-1", supported_protocols=["range"],
          generation=2, leader_id="m1", raw="replaced s1")
    e.prepare(10, 2, "Updating metadata for static member s2 with instance id inst-1; client reason: not provided",
              "static_rejoin_metadata")
    e.rejoin(11, "m1", 2)
    e.complete(12, 3, "m1", 2, 1)
    lines = [line.split("] ", 2)[2] for line in render(e.rows, "client-log") if "instanceId=inst-1" in line]
    assert lines[-2:] == [
        f"(Re-)joining group {CC}",  # no revocation: a new process owns nothing
        f"Successfully joined group with generation Generation{{generationId=3, memberId='s2', protocol='range'}} {CC}",
    ]
    covered = {row["event_type"] for row in e.rows + eager_group().rows}
    assert covered >= client_log.RENDERED  # these tests see every type the client log renders
