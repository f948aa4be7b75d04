"""A KIP-848 consumer group run on the emulator over TCP: its recording (``--record``), its replay by the
single-process runner, and its narration (``--explain``), each checked against what the clients saw.

The clients are light protocol clients (``tests/support/kip848_light.py``) on a manual clock, so the
history is exact: A joins, B joins (A revokes half), C joins, B leaves, C goes silent and is fenced
when its session expires. The 4.4 assignment interval (1 s) is respected by 2 s steps between changes.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from rebalance_lab.api import Emulator
from rebalance_lab.replay.local import run_local
from tests.support.kip848_light import LightConsumer, reconcile

GROUP = "g"
COMMON = {"schema_version", "source", "source_ref", "seq", "ts", "ts_kind", "cluster_id", "group_id", "event_type",
          "group_kind", "broker_id", "coord_partition"}
SESSION_MS = 45_000  # group.consumer.session.timeout.ms default


async def play(emu: Emulator) -> dict[str, LightConsumer]:
    """The history above; the clients (with everything they saw) by client id."""
    a, b, c = [await LightConsumer(emu.bootstrap_servers, GROUP, ["orders"], client_id=name).open()
               for name in ("a", "b", "c")]
    await a.heartbeat()
    emu.advance(2_000)
    await b.heartbeat()
    await reconcile([a, b])
    emu.advance(2_000)
    await c.heartbeat()
    await reconcile([a, b, c])
    emu.advance(2_000)
    await b.leave()
    await reconcile([a, c])
    for _ in range(4):  # A keeps heartbeating; C is silent until its session expires
        emu.advance(SESSION_MS // 3)
        await reconcile([a], rounds=2)
    for member in (a, b, c):
        await member.close()
    return {"a": a, "b": b, "c": c}


async def recorded(tmp_path: Path, **options: Any) -> tuple[Path, dict[str, LightConsumer]]:
    path = tmp_path / "kip848.jsonl"
    async with Emulator(topics=[("orders", 6)], manual_clock=True, seed=7, record_path=str(path), **options) as emu:
        clients = await play(emu)
    return path, clients


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_kip848_recording_has_every_step_as_a_consumer_group_row(tmp_path: Path) -> None:
    path, clients = await recorded(tmp_path)
    rows = [r for r in rows_of(path) if r["group_id"] == GROUP]
    assert all(r.keys() >= COMMON and r["group_kind"] == "consumer" for r in rows)
    bumps = [(r["generation"], r["reason_code"], r["member_id"]) for r in rows if r["event_type"] == "K848_EPOCH_BUMP"]
    ids = {name: c.member_id for name, c in clients.items()}
    assert bumps == [(2, "member_join", ids["a"]), (3, "member_join", ids["b"]), (4, "member_join", ids["c"]),
                     (5, "member_leave", ids["b"]), (6, "session_timeout", ids["c"])]
    fenced = next(r for r in rows if r["event_type"] == "K848_MEMBER_FENCED")
    assert (fenced["member_id"], fenced["reason_code"], fenced["reason_raw"]) == (
        ids["c"], "session_timeout", "the member session expired")
    left = next(r for r in rows if r["event_type"] == "K848_MEMBER_LEFT")
    assert (left["member_id"], left["reason_code"]) == (ids["b"], "member_leave")
    revoking = [r for r in rows if r["event_type"] == "K848_MEMBER_STATE" and r["raw"] == "UNREVOKED_PARTITIONS"]
    assert revoking and all(r["partitions_pending_revocation"] for r in revoking)
    # every STABLE state row is exactly what that client held at that epoch
    by_id = {c.member_id: c for c in clients.values()}
    for r in rows:
        if r["event_type"] == "K848_MEMBER_STATE" and r["raw"] == "STABLE":
            held = by_id[r["member_id"]].at_epoch(r["generation"])
            assert held is not None and sorted(p for ps in held.values() for p in ps) == sorted(
                tp["partition"] for tp in r["partitions"]), r


async def test_the_replay_of_the_emulators_kip848_recording_tells_the_epochs_the_clients_went_through(
    tmp_path: Path,
) -> None:
    path, clients = await recorded(tmp_path)
    result = run_local([path])
    assert result.report.unparsed == 0 and not result.errors
    episodes = result.tables["rebalance_episodes"]
    assert [e["trigger_code"] for e in episodes] == [
        "member_join", "member_join", "member_join", "member_leave", "session_timeout"]
    assert [e["members_after"] for e in episodes] == [1, 2, 3, 2, 1]
    by_id = {c.member_id: c for c in clients.values()}
    generations = [g for g in result.tables["group_generations"] if g["group_id"] == GROUP]
    assert [g["generation"] for g in generations] == [2, 3, 4, 5, 6]
    for g in generations:
        assert g["completed"] and g["group_kind"] == "consumer" and g["protocol"] == "uniform", g
        replayed = {m["member_id"]: sorted(tp["partition"] for tp in m["assignment"]) for m in g["members"]}
        seen = {}
        for member_id in replayed:
            held = by_id[member_id].at_epoch(g["generation"])
            seen[member_id] = sorted(p for ps in (held or {}).values() for p in ps)
        assert replayed == seen, g["generation"]
        assert sorted(p for ps in replayed.values() for p in ps) == list(range(6))


async def test_explain_says_why_each_epoch_bumped_the_target_and_what_each_member_must_revoke(
    tmp_path: Path,
) -> None:
    out = io.StringIO()
    await recorded(tmp_path, explain=True, explain_to=out)
    lines = out.getvalue().splitlines()
    text = " ".join(out.getvalue().split())  # wrapped lines joined
    assert all(len(line) <= 120 for line in lines), max(lines, key=len)
    for expected in ("group epoch 1 -> 2: member", "joined", "group epoch 4 -> 5:", "left;",
                     "group epoch 5 -> 6:", "was fenced: its session expired",
                     "target assignment of epoch 3 (uniform assignor):", "must revoke orders[",
                     "before it gets more", "(UNREVOKED_PARTITIONS -> STABLE) at epoch 3",
                     "fenced from the group because the member session expired (session_timeout)"):
        assert expected in text, expected
    assert "waits for orders[" in text and "still held by" in text  # (lines wrap at 100 columns now)
