"""OffsetStore.delete_all: OffsetDelete's tombstones in one step (issue 17, Fairness)."""

from __future__ import annotations

from rebalance_lab.config import GroupConfig
from rebalance_lab.coordinator.offsets import CommittedOffset, OffsetStore

VALUE = CommittedOffset(offset=5, leader_epoch=-1, metadata="", commit_timestamp_ms=0, expire_timestamp_ms=None)


def _store() -> OffsetStore:
    store = OffsetStore(GroupConfig())
    store.commit_all("g", {("t", 0): VALUE, ("t", 1): VALUE, ("u", 0): VALUE})
    return store


def test_delete_all_removes_the_listed_offsets_and_keeps_the_others() -> None:
    store = _store()
    store.delete_all("g", [("t", 0), ("t", 1), ("t", 9)])
    assert store.fetch_all("g") == [(("u", 0), VALUE)]


def test_delete_all_of_every_offset_forgets_the_group_and_tells_the_listener_only_what_was_there() -> None:
    store, told = _store(), []
    store.listener = lambda group, key, value: told.append((group, key, value))
    store.delete_all("g", [("t", 0), ("t", 1), ("u", 0), ("v", 3)])
    assert not store.has_offsets("g") and "g" not in store.group_ids()
    assert told == [("g", ("t", 0), None), ("g", ("t", 1), None), ("g", ("u", 0), None)]
    store.delete_all("absent", [("t", 0)])  # an unknown group is no error
