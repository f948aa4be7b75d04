"""What test_compiled_fuzz.py found (issue 20), one test each: a damaged real record or line is counted as a
diagnostic and the rest of its group replays, compiled (the suite runs on the build in CI) and pure alike.

Before the fixes a dump-log GroupMetadata record with a value of the wrong JSON type (``"protocol":true``, a
number for ``clientHost``, no ``memberId``) reached the compiled fold, which raised TypeError and lost the group
while the pure Python kept it; an object for ``groupInstanceId`` made both raise; a partition of forty digits made
the what-if build a topic of that many partitions (it ran for ever); and a number of more than 4,300 digits made
``int()`` raise out of the broker-log and dump-log parsers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_lab.replay.local import run_local

SAMPLES = Path(__file__).resolve().parent / "samples"
#: A real 4.4.0 GroupMetadata record (one member, six partitions) and a KIP-848 member record.
RECORD = (SAMPLES / "evidence-kafka-4.4.0" / "offsets.dump.txt").read_text().splitlines()[5]
K848_MEMBER = (SAMPLES / "evidence-kip848-4.4.0" / "offsets.dump.txt").read_text().splitlines()[3]
LEGACY = (SAMPLES / "dump-log-3.7.txt").read_text().splitlines()[3]
BROKER = (SAMPLES / "evidence-kafka-3.9.2" / "server.log").read_text().splitlines()[2]  # "Stabilized … generation 1"
HUGE = "1" * 5000


def _replay(tmp_path: Path, *lines: str) -> tuple[dict[str, int], list[dict[str, str]], int]:
    """(the report's reasons, the groups' errors, the events parsed) of an input of these lines."""
    path = tmp_path / "input.txt"
    path.write_text("\n".join(lines) + "\n")
    result = run_local([str(path)], whatif=("cooperative-sticky",))
    return result.report.reasons, result.errors, result.events


@pytest.mark.parametrize(("old", "new", "reason"), [
    ('"protocol":"range"', '"protocol":true', "malformed protocol"),
    ('"leader":"a-96826151-ec1c-4d52-b5df-bd5704673249"', '"leader":[]', "malformed leader"),
    ('"generation":1,', '"generation":"1",', "malformed generation"),
    ('"clientHost":"/10.88.0.1"', '"clientHost":1e400', "malformed clientHost"),
    ('"groupInstanceId":null', '"groupInstanceId":{"a":1}', "malformed groupInstanceId"),
    ('"sessionTimeout":6000', '"sessionTimeout":6000.5', "malformed sessionTimeout"),
    ('"memberId":"a-96826151-ec1c-4d52-b5df-bd5704673249",', "", "member without an id"),
], ids=["protocol", "leader", "generation", "clientHost", "groupInstanceId", "sessionTimeout", "memberId"])
def test_a_dump_record_field_of_the_wrong_json_type_is_reported_and_its_group_still_replays(
        tmp_path: Path, old: str, new: str, reason: str) -> None:
    assert old in RECORD
    reasons, errors, events = _replay(tmp_path, RECORD.replace(old, new, 1))
    assert errors == []
    assert reasons == {reason: 1}
    assert events == 2  # the record's JOIN_COMPLETE and GENERATION_SNAPSHOT


def test_a_partition_beyond_int32_in_a_dump_is_reported_and_the_what_if_does_not_make_that_many(
        tmp_path: Path) -> None:
    damaged = RECORD.replace('"partitions":[0,1,2,3,4,5]', '"partitions":[0,1,2,' + "1" * 40 + ',4,5]', 1)
    reasons, errors, events = _replay(tmp_path, damaged)
    assert (reasons, errors, events) == ({"malformed assignment": 1}, [], 2)


@pytest.mark.parametrize("partition", ["2147483648", "-1", "1.5", "true"])
def test_a_partition_that_is_no_int32_id_is_reported(tmp_path: Path, partition: str) -> None:
    damaged = RECORD.replace('"partitions":[0,1,2,3,4,5]', f'"partitions":[0,{partition}]', 1)
    assert _replay(tmp_path, damaged)[:2] == ({"malformed assignment": 1}, [])


def test_an_old_form_record_with_a_list_for_its_protocol_type_is_reported(tmp_path: Path) -> None:
    damaged = LEGACY.replace('"protocolType":"consumer"', '"protocolType":[1]', 1)
    assert damaged != LEGACY
    reasons, errors, _ = _replay(tmp_path, damaged)
    assert (reasons, errors) == ({"malformed protocolType": 1}, [])


@pytest.mark.parametrize(("old", "new"), [('"instanceId":null', '"instanceId":5'),
                                          ('"rebalanceTimeoutMs":300000', '"rebalanceTimeoutMs":true'),
                                          ('"subscribedTopicNames":["', '"subscribedTopicNames":[7,"'),
                                          ('"memberId":"ySztvqoKTHqksP85DIrMKw"', '"memberId":null')])
def test_a_kip848_member_record_with_a_field_of_the_wrong_type_is_reported(tmp_path: Path, old: str,
                                                                          new: str) -> None:
    assert old in K848_MEMBER
    reasons, errors, events = _replay(tmp_path, K848_MEMBER.replace(old, new, 1))
    assert (reasons, errors, events) == ({"malformed KIP-848 record": 1}, [], 0)


def test_numbers_of_more_than_4300_digits_are_reported_not_raised(tmp_path: Path) -> None:
    assert " generation 1 " in BROKER
    reasons, errors, _ = _replay(tmp_path, BROKER.replace(" generation 1 ", f" generation {HUGE} ", 1))
    assert (reasons, errors) == ({"malformed stabilized": 1}, [])
    reasons, errors, _ = _replay(tmp_path, RECORD.replace("| offset: 1 ", f"| offset: {HUGE} ", 1))
    assert (reasons, errors) == ({"malformed number": 1}, [])
    reasons, _, events = _replay(tmp_path, BROKER.replace("[GroupCoordinator 1]", f"[GroupCoordinator {HUGE}]", 1))
    assert (reasons, events) == ({}, 0)  # a prefix that is no coordinator's: the line is not one of its lines


def test_a_record_time_past_int64_is_reported_and_a_state_time_past_it_is_no_time(tmp_path: Path) -> None:
    """Kafka's record and state times are int64 ms; a longer number's µs overflowed a float in the replay
    (OverflowError), compiled only for an old-form record."""
    reasons, errors, events = _replay(tmp_path, RECORD.replace("CreateTime: 1795693690223", "CreateTime: " + "1" * 40))
    assert (reasons, errors, events) == ({"malformed record header": 1}, [], 0)
    reasons, errors, events = _replay(tmp_path, LEGACY.replace("CreateTime: 1740823203045", "CreateTime: " + "1" * 40))
    assert (reasons, errors, events) == ({"malformed record header": 1}, [], 0)
    damaged = RECORD.replace('"currentStateTimestamp":1795693690208', '"currentStateTimestamp":' + "1" * 40)
    reasons, errors, events = _replay(tmp_path, damaged)
    assert (reasons, errors, events) == ({}, [], 1)  # the snapshot at its record time, no JOIN_COMPLETE


@pytest.mark.parametrize("old", ['"memberId":"a-96826151-ec1c-4d52-b5df-bd5704673249"', '"clientId":"a"'])
def test_a_dump_string_with_a_lone_utf16_surrogate_is_reported(tmp_path: Path, old: str) -> None:
    """JSON can escape half a surrogate pair (``\\ud800``), UTF-8 cannot hold it: the what-if's Java string hash
    raised UnicodeEncodeError on such a member id, compiled and pure."""
    damaged = RECORD.replace(old, old.split(":")[0] + r':"\ud800"', 1)
    reasons, errors, events = _replay(tmp_path, damaged)
    assert (reasons, errors, events) == ({"malformed string (a lone UTF-16 surrogate)": 1}, [], 0)
    paired = RECORD.replace(old, old.split(":")[0] + r':"\ud83d\ude00"', 1)  # a pair is one character: read
    assert _replay(tmp_path, paired) == ({}, [], 2)


def test_a_kip848_partition_past_int32_in_a_broker_log_is_reported(tmp_path: Path) -> None:
    """``<topic id>-<p>@<epoch>`` with p of 19 digits: the what-if built a topic of that many partitions."""
    line = next(line for line in (SAMPLES / "kafka-4.4-consumer-group.log").read_text().splitlines()
                if "2BBcQfIZRwGtbNnGJTJnEA-5@7" in line)
    reasons, errors, _ = _replay(tmp_path, line.replace("-5@7", "-9223372036854775809@7"))
    assert (reasons, errors) == ({"malformed k848_state": 1}, [])


@pytest.mark.parametrize("generation", ["9223372036854775808", "2147483648", "-2147483649"])
def test_a_subscription_generation_past_int32_is_reported(tmp_path: Path, generation: str) -> None:
    """The cooperative what-if packs the subscription's generationId (an int32) into the member's user data:
    2**63 made ``struct`` raise (argument out of range), compiled and pure."""
    damaged = RECORD.replace('"userData":""}', f'"userData":"","generationId":{generation}}}', 1)
    assert damaged != RECORD
    reasons, errors, events = _replay(tmp_path, damaged)
    assert (reasons, errors, events) == ({"malformed subscription": 1}, [], 2)


def test_a_console_json_string_with_a_lone_utf16_surrogate_is_reported(tmp_path: Path) -> None:
    """The console form's records are read by the same GroupMetadataValue reader: the same check (seed 403)."""
    first = (SAMPLES / "console-4x.json").read_text().splitlines()[0]
    damaged = first.replace('"memberId":"consumer-orders-1-a4b1"', r'"memberId":"\ud800"', 1)
    assert damaged != first
    path = tmp_path / "input.json"
    path.write_text(damaged + "\n")
    result = run_local([str(path)], whatif=("cooperative-sticky",))
    assert (result.report.reasons, result.errors) == ({"malformed string (a lone UTF-16 surrogate)": 1}, [])
