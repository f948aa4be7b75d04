"""kafka-python members with conflicting assignor preferences get the protocol the coordinator picks.

coordinator.md §7: every member votes for its first choice among the protocols all members
list; the most votes win. A tie is broken by an implementation artefact: Kafka 4.x's Java
coordinator iterates a ``java.util.HashMap`` (range before roundrobin), Kafka 3.x's Scala
coordinator a CHAMP trie (roundrobin before range). A clear majority wins on both.
"""

from __future__ import annotations

import uuid

import pytest

from tests.clients.harness import Members, wait_for_settled_group
from tests.clients.target import Target

pytestmark = pytest.mark.clients

PARTITIONS = 4
RANGE_FIRST = ["range", "roundrobin"]
ROUNDROBIN_FIRST = ["roundrobin", "range"]

CASES = {
    # preference lists, in start order -> winner by flavor
    "tie-2-2": ([RANGE_FIRST, ROUNDROBIN_FIRST, RANGE_FIRST, ROUNDROBIN_FIRST],
                {"kafka-4": "range", "kafka-3": "roundrobin"}),
    "range-majority-3-1": ([ROUNDROBIN_FIRST, RANGE_FIRST, RANGE_FIRST, RANGE_FIRST],
                           {"kafka-4": "range", "kafka-3": "range"}),
    "roundrobin-majority-3-1": ([RANGE_FIRST, ROUNDROBIN_FIRST, ROUNDROBIN_FIRST, ROUNDROBIN_FIRST],
                                {"kafka-4": "roundrobin", "kafka-3": "roundrobin"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_members_with_conflicting_preference_orders_get_the_protocol_the_flavor_selects(
    target: Target, members: Members, case: str
) -> None:
    preferences, winners = CASES[case]
    topic = target.observer.create_topic(PARTITIONS)
    group = f"vote-{uuid.uuid4().hex[:10]}"
    group_members = [members.start("kafka-python", group, topic, f"kafka-python-{i}", strategies=strategies)
                     for i, strategies in enumerate(preferences)]

    settled = wait_for_settled_group(target, group, topic, PARTITIONS, group_members)

    assert settled.protocol == winners[target.flavor], f"{case} on {target.flavor}"
    snapshots = target.generation_snapshots(group)
    if snapshots is not None:  # emulator extra: the recorded generation agrees
        assert snapshots[-1]["protocol"] == winners[target.flavor]
