"""Cooperative-sticky groups (KIP-429) rebalance in two phases and never share a partition.

kafka-python (``CooperativeStickyAssignor``) and confluent-kafka
(``partition.assignment.strategy=cooperative-sticky``, with ``incremental_assign`` /
``incremental_unassign`` in its callbacks) only: aiokafka 0.14 has no cooperative protocol.

When a third member joins a settled group of two, the first rebalance takes the moving
partitions away from their owners without giving them to anyone (the owners revoke only
those), the owners rejoin at once, and a second rebalance hands them to the newcomer. Seen
through the protocol, the generation advances by two or more; seen by the clients, no
partition is held by two members at once and nobody revokes a partition it keeps.
"""

from __future__ import annotations

import uuid

import pytest

from tests.clients.harness import Members, assert_disjoint_cover, ownership_overlaps, wait_for_settled_group
from tests.clients.target import Target

pytestmark = pytest.mark.clients

PARTITIONS = 6


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_a_cooperative_sticky_group_completes_its_two_phase_rebalance_without_sharing_a_partition(
    target: Target, members: Members, client: str
) -> None:
    topic = target.observer.create_topic(PARTITIONS)
    group = f"coop-{uuid.uuid4().hex[:10]}"
    options = {"strategies": ["cooperative-sticky"]}
    stayers = [members.start(client, group, topic, f"{client}-{i}", **options) for i in range(2)]
    before = wait_for_settled_group(target, group, topic, PARTITIONS, stayers)
    probe_member = before.by_client()[stayers[0].name].member_id
    generation_before = target.observer.generation(group, probe_member)
    callbacks_before = {m.name: len(m.rebalance_callbacks()) for m in stayers}

    newcomer = members.start(client, group, topic, f"{client}-2", **options)
    everyone = [*stayers, newcomer]
    after = wait_for_settled_group(target, group, topic, PARTITIONS, everyone)
    generation_after = target.observer.generation(group, probe_member)

    assert after.protocol == "cooperative-sticky"
    assert_disjoint_cover(after.assignments(), PARTITIONS)
    assert all(after.assignments().values()), f"a member got nothing: {after}"
    assert generation_after >= generation_before + 2, \
        f"one rebalance only ({generation_before} -> {generation_after}): not a two-phase rebalance"
    for stayer in stayers:
        kept = after.assignments()[stayer.name]
        moved = before.assignments()[stayer.name] - kept
        revoked = {p for e in stayer.rebalance_callbacks()[callbacks_before[stayer.name]:]
                   if e["ev"] in ("revoked", "lost") for p in e["partitions"]}
        assert revoked == moved, f"{stayer.name} revoked {sorted(revoked)}, but only {sorted(moved)} moved"
    assert not ownership_overlaps(everyone), ownership_overlaps(everyone)

    snapshots = target.generation_snapshots(group)
    if snapshots is not None:  # emulator extra: every generation's assignment as the coordinator stored it
        _assert_two_phases_in_the_recording(snapshots, generation_before, newcomer.name)


def _assert_two_phases_in_the_recording(snapshots: list[dict[str, object]], generation_before: int,
                                        newcomer: str) -> None:
    owned_by_generation: dict[int, dict[str, set[int]]] = {}
    for snapshot in snapshots:
        members = snapshot["members"]
        assert isinstance(members, list)
        owned = {m["client_id"]: {tp["partition"] for tp in m["assignment"] or []} for m in members}
        flat = [p for parts in owned.values() for p in parts]
        assert len(flat) == len(set(flat)), f"generation {snapshot['generation']} shares a partition: {owned}"
        owned_by_generation[int(str(snapshot["generation"]))] = owned
    later = sorted(g for g in owned_by_generation if g > generation_before)
    assert len(later) >= 2, f"generations after {generation_before}: {later}"
    revoking = owned_by_generation[later[0]]
    assert revoking.get(newcomer) == set(), f"the newcomer got partitions in the revoking phase: {revoking}"
    assert sum(map(len, revoking.values())) < PARTITIONS, f"nothing was revoked in phase one: {revoking}"
    assert sum(map(len, owned_by_generation[later[-1]].values())) == PARTITIONS
