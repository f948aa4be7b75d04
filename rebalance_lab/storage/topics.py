"""The topics on disk: ``__cluster_metadata-0/``, one record per topic change (KRaft keeps them in its
metadata log): the topic as it is now (name, id, partitions and replicas, configs), or its deletion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rebalance_lab.coordinator.cluster import ClusterMetadata, TopicInfo
from rebalance_lab.storage import values
from rebalance_lab.storage.record_log import RecordLog
from rebalance_lab.storage.segments import FlushPolicy, StorageError

DIRECTORY = "__cluster_metadata-0"
# Topic changes are rare and the metadata log is KRaft's, which fsyncs every batch it commits.
_ALWAYS = FlushPolicy(messages=1)


class TopicStore:
    def __init__(self, root: Path) -> None:
        self.log = RecordLog(root / DIRECTORY, _ALWAYS)

    def load(self, cluster: ClusterMetadata) -> int:
        """Put the stored topics back into ``cluster``; then rewrite the log as just those topics."""
        topics: dict[str, TopicInfo] = {}
        for record in self.log.load():
            _replay(topics, record)
        for info in topics.values():
            cluster.restore_topic(info)
        self.log.compact([_topic_record(t) for t in topics.values()])
        return len(topics)

    def changed(self, name: str, info: TopicInfo | None) -> None:
        self.log.append(_topic_record(info) if info is not None else {"deleted": name})

    def close(self) -> None:
        self.log.close()


def _topic_record(info: TopicInfo) -> dict[str, Any]:
    return {"topic": values.encode(info)}


def _replay(topics: dict[str, TopicInfo], record: dict[str, Any]) -> None:
    if "deleted" in record:
        topics.pop(record["deleted"], None)
        return
    info = values.decode(record.get("topic"))
    if not isinstance(info, TopicInfo):
        raise StorageError(f"{DIRECTORY}: a record that is not a topic: {str(record)[:200]}")
    topics[info.name] = info
