"""Topic changes seen through the metadata image (KIP-1101, 4.4.0 ``onMetadataUpdate``)."""

from __future__ import annotations

from dataclasses import replace

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator.cluster import BrokerInfo, ClusterMetadata
from rebalance_lab.coordinator.consumer.topics import image_of

from .context import BAR, FOO, Ctx


def test_a_deleted_topic_is_revoked_after_the_next_heartbeat_bumps_the_epoch() -> None:
    ctx = Ctx()
    ctx.join("A", ["foo", "bar"])
    ctx.advance(1_000)
    ctx.set_topics(FOO, changed={"bar"})
    r = ctx.hb("A", 2, topic_partitions=(*ctx.owned({"foo": range(6)}), (BAR.topic_id, (0, 1, 2))))
    assert r.member_epoch == 2 and ctx.view().group_epoch == 3
    assert ctx.member("A").pending_revocation == {BAR.topic_id: (0, 1, 2)}
    r = ctx.ack("A", 2, {"foo": range(6)})
    assert (r.member_epoch, r.assignment) == (3, None)  # its assigned partitions did not change
    assert ctx.member("A").state == "STABLE"


def test_a_change_of_replica_racks_bumps_the_epoch_as_the_metadata_hash_covers_racks() -> None:
    ctx = Ctx()
    ctx.join("A")
    ctx.advance(1_000)
    ctx.set_topics(replace(FOO, partition_racks={0: frozenset({"r1"})}), BAR)
    assert ctx.hb("A", 2).member_epoch == 3


def test_a_change_to_a_topic_nobody_subscribes_to_changes_nothing() -> None:
    ctx = Ctx()
    ctx.join("A")
    ctx.advance(1_000)
    ctx.set_topics(FOO, replace(BAR, num_partitions=9))
    ctx.hb("A", 2)
    assert ctx.view().group_epoch == 2 and ctx.last == []


def test_the_image_of_the_cluster_has_ids_partitions_and_replica_racks() -> None:
    cluster = ClusterMetadata(EmulatorConfig(seed=1), [BrokerInfo(0, "h", 1, "r0"), BrokerInfo(1, "h", 2, "r1")])
    info = cluster.create_topic("t", 2, 2)
    image = image_of(cluster, version=3, new_topics_version=3)
    topic = image.get("t")
    assert topic is not None and image.by_id(info.topic_id) is topic
    assert (topic.num_partitions, topic.partition_racks) == (2, {0: frozenset({"r0", "r1"}),
                                                                 1: frozenset({"r0", "r1"})})
    assert (image.version, image.new_topics_version) == (3, 3)


def test_a_new_image_builds_only_the_changed_topics_and_takes_the_others_over() -> None:
    cluster = ClusterMetadata(EmulatorConfig(seed=1), [BrokerInfo(0, "h", 1, "r0"), BrokerInfo(1, "h", 2, "r1")])
    cluster.create_topic("kept", 2, 1)
    cluster.create_topic("moved", 2, 1)
    first = image_of(cluster)
    cluster.reassign("moved", 0, [0, 1])
    second = image_of(cluster, 1, 0, previous=first, changed={"moved"})
    assert second.get("kept") is first.get("kept")  # not built again (issue 17: 200,000 partitions took ~0.4 s)
    moved = second.get("moved")
    assert moved is not None and moved.partition_racks[0] == frozenset({"r0", "r1"})
    assert moved.fingerprint != first.by_name["moved"].fingerprint


def test_a_topic_deleted_and_created_again_under_its_name_is_not_taken_over() -> None:
    cluster = ClusterMetadata(EmulatorConfig(seed=1), [BrokerInfo(0, "h", 1, None)])
    cluster.create_topic("t", 2, 1)
    first = image_of(cluster)
    cluster.delete_topic("t")
    info = cluster.create_topic("t", 3, 1)
    topic = image_of(cluster, previous=first).get("t")  # even when the change was not named
    assert topic is not None and (topic.topic_id, topic.num_partitions) == (info.topic_id, 3)
    assert topic.partition_racks == {}  # no broker has a rack: no entry per partition
