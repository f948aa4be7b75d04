"""The text of the failure report's "rebalance-lab" section for a KIP-848 consumer group (epochs, their
reasons and targets) and with more groups than it shows; the plugin runs that attach it are in
test_plugin_for_testers.py."""

from __future__ import annotations

import asyncio

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.clients.member import GroupMember
from rebalance_lab.pytest_support.report import GROUPS_SHOWN, section_text
from tests.support.kip848_light import LightConsumer, reconcile


@pytest.mark.rebalance_lab(manual_clock=True, topics=[("orders", 4)])
def test_a_consumer_groups_epochs_reasons_and_targets_are_in_the_section(rebalance_lab: Emulator) -> None:
    async def form() -> None:
        a = await LightConsumer(rebalance_lab.bootstrap_servers, "g", ["orders"], client_id="a").open()
        await reconcile([a])
        await a.close()

    asyncio.run(form())
    text = section_text({"rebalance_lab": rebalance_lab})
    assert "group 'g': consumer group, state" in text
    assert "epoch 2 (member_join, stable): assignor uniform, target " in text and "-> orders[0, 1, 2, 3]" in text


@pytest.mark.rebalance_lab(topics=[("orders", 1)])
def test_only_the_newest_groups_are_shown_and_the_rest_counted(rebalance_lab: Emulator) -> None:
    async def join_all() -> None:
        for i in range(GROUPS_SHOWN + 2):
            member = GroupMember(rebalance_lab.bootstrap_servers, f"g{i}", ["orders"], client_id=f"c{i}")
            await member.join()
            await member.close(leave=True)

    asyncio.run(join_all())
    text = section_text({"rebalance_lab": rebalance_lab})
    assert f"{GROUPS_SHOWN + 2} groups; the last {GROUPS_SHOWN} shown" in text
    assert text.count("\ngroup '") == GROUPS_SHOWN
