"""``AbstractPartitionAssignorTest`` (cases 34-35) and the public registry."""

from __future__ import annotations

import random

import pytest
from assignor_support import sub

from rebalance_lab.clients.assignors import (
    ASSIGNORS,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    get_assignor,
)
from rebalance_lab.clients.assignors.common import sorted_member_infos, use_rack_aware_assignment


def test_registry_names_every_built_in_assignor() -> None:
    assert {
        "range": RangeAssignor,
        "roundrobin": RoundRobinAssignor,
        "sticky": StickyAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    } == ASSIGNORS
    for name in ASSIGNORS:
        assert get_assignor(name).name == name
    with pytest.raises(KeyError):
        get_assignor("nope")


def test_member_info_sorting_without_group_instance_id() -> None:
    members = {m: sub("t") for m in ["c", "a", "b"]}
    assert sorted_member_infos(members, members) == ["a", "b", "c"]


def test_member_info_sorting_with_all_group_instance_ids() -> None:
    members = {"m1": sub("t", instance="y"), "m2": sub("t", instance="z"), "m3": sub("t", instance="x")}
    assert sorted_member_infos(members, members) == ["m3", "m1", "m2"]


def test_member_info_sorting_puts_static_members_first() -> None:
    members = {"a": sub("t"), "z": sub("t", instance="i2"), "b": sub("t"), "y": sub("t", instance="i1")}
    assert sorted_member_infos(members, members) == ["y", "z", "a", "b"]


def test_merge_sort_many_member_infos() -> None:
    rng = random.Random(1)
    members = {f"m{i:03d}": sub("t", instance=(f"i{i:03d}" if rng.random() < 0.5 else None)) for i in range(100)}
    ids = list(members)
    rng.shuffle(ids)
    result = sorted_member_infos(ids, members)
    static = [m for m in result if members[m].group_instance_id is not None]
    assert result[: len(static)] == static
    assert static == sorted(static, key=lambda m: members[m].group_instance_id or "")
    assert result[len(static) :] == sorted(m for m in ids if members[m].group_instance_id is None)


ALL = frozenset({"a", "b"})


@pytest.mark.parametrize(
    ("consumer_racks", "partition_racks", "per_partition", "prefer", "expected"),
    [
        (set(), ALL, [ALL], False, False),
        ({"c"}, ALL, [frozenset("a"), frozenset("b")], False, False),
        ({"a"}, ALL, [frozenset("a"), frozenset("b")], False, True),
        ({"a"}, ALL, [ALL, ALL], False, False),
        ({"a"}, ALL, [ALL, ALL], True, True),
        (set(), ALL, [frozenset("a")], True, False),
        ({"c"}, ALL, [ALL], True, False),
    ],
)
def test_use_rack_aware_assignment_truth_table(
    consumer_racks: set[str],
    partition_racks: frozenset[str],
    per_partition: list[frozenset[str]],
    prefer: bool,
    expected: bool,
) -> None:
    assert use_rack_aware_assignment(consumer_racks, partition_racks, per_partition, prefer) is expected


# The collector and its permanent generation belong to the whole process: in a full run, emulators of earlier tests
# keep threads alive that free frozen objects or freeze their own state at any moment. Each check runs in a fresh
# interpreter, where nothing but the check touches them.
_PROMOTES_ONLY_A_LARGE_RESULT = """
import gc
from rebalance_lab.clients.assignors.common import PROMOTE_PARTITIONS, gc_paused

def oldest(marker):
    return any(o is marker for o in gc.get_objects(generation=2))

assert gc.isenabled() and gc.get_freeze_count() == 0
gc.collect()
with gc_paused() as sized:
    assert not gc.isenabled()
    small = [["made while paused"]]
    sized(PROMOTE_PARTITIONS - 1)
assert gc.isenabled(), "the collector is back on"
assert not oldest(small[0]), "a small result is left to the young generations"
with gc_paused() as sized:
    large = [["made while paused"]]
    sized(PROMOTE_PARTITIONS)
assert gc.isenabled(), "the collector is back on"
assert oldest(large[0]), "a large result goes to the oldest generation at once"
assert gc.get_freeze_count() == 0, "nothing is left frozen"
gc.disable()
with gc_paused():
    pass
assert not gc.isenabled(), "a collector that was off stays off"
print("ok")
"""

_LEAVES_OTHERS_FROZEN = """
import gc
from rebalance_lab.clients.assignors.common import PROMOTE_PARTITIONS, gc_paused

kept = [["frozen by someone else"]]
gc.freeze()
frozen = gc.get_freeze_count()
with gc_paused() as sized:
    sized(PROMOTE_PARTITIONS)
assert gc.get_freeze_count() == frozen, (gc.get_freeze_count(), frozen)
assert gc.isenabled()
assert any(o is kept[0] for o in gc.get_objects(generation=2)) is False, "still frozen, not thawed into generation 2"
print("ok")
"""


def _run_alone(script: str) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr


def test_gc_paused_restores_the_collector_and_promotes_only_a_large_result() -> None:
    _run_alone(_PROMOTES_ONLY_A_LARGE_RESULT)


def test_gc_paused_leaves_what_someone_else_froze_frozen() -> None:
    """The emulator's server freezes its long-lived state; a client-side assignment in the same process (a test
    running clients beside it) must not thaw it, so a large result is then left where it is."""
    _run_alone(_LEAVES_OTHERS_FROZEN)
