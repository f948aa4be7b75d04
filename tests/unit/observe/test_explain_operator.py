"""An operator's expire (the Python API, the control endpoint, a fault plan) is told as such, before its effect
(issue 19: it was narrated as a missed heartbeat, and the fault's line came after the rebalance it caused)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rebalance_lab.api import Emulator
from rebalance_lab.clients.member import GroupMember
from rebalance_lab.observe.sequence import Note, build


async def test_an_operators_expire_is_told_as_the_operators_before_the_rebalance_it_causes(tmp_path: Path) -> None:
    out, record = io.StringIO(), tmp_path / "rec.jsonl"
    async with Emulator(topics=[("t", 2)], manual_clock=True, initial_rebalance_delay_ms=0, explain=True,
                        explain_to=out, record_path=str(record)) as emu:
        member = GroupMember(emu.bootstrap_servers, "g", ["t"], client_id="a", session_timeout_ms=10_000,
                             heartbeat_interval_ms=60_000)
        try:
            await member.join()
            emu.expire_member("g", member.member_id)
        finally:
            await member.close()
    lines = out.getvalue().splitlines()
    said = [i for i, line in enumerate(lines) if "g: fault injected: expire_member" in line]
    expired = [i for i, line in enumerate(lines) if "expired by the operator" in line]
    rebalance = [i for i, line in enumerate(lines) if "rebalance to generation 2: the operator expired" in line]
    assert said and expired and rebalance and said[0] < expired[0] < rebalance[0], out.getvalue()
    assert "no heartbeat within its session timeout" not in out.getvalue()
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    kinds = [row["event_type"] for row in rows]
    assert kinds.index("FAULT_INJECTED") < kinds.index("MEMBER_SESSION_EXPIRED")  # the recording agrees
    notes = [s.text for g in build(rows)["g"].generations for s in g.steps if isinstance(s, Note)]
    assert any("expired by the operator" in n for n in notes), notes  # and so does its sequence diagram
    assert not any("no Heartbeat within the session timeout" in n for n in notes), notes
