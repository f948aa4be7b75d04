"""Which group and member a request is about, for the fault rules' filters, across the group APIs' shapes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from rebalance_lab.coordinator.cluster import BrokerInfo
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.world import BrokerNode
from rebalance_lab.faults.controller import request_info


def ctx(api_key: int) -> RequestContext:
    return RequestContext(api_key, 0, 1, "client", "/127.0.0.1", 7, BrokerNode(BrokerInfo(2, "h", 1)), None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("api_key", "request_body", "group", "member"), [
    (12, SimpleNamespace(group_id="g", member_id="m"), "g", "m"),  # Heartbeat, JoinGroup, SyncGroup
    (11, SimpleNamespace(group_id="g", member_id=""), "g", ""),  # a fresh JoinGroup
    (13, SimpleNamespace(group_id="g", members=[SimpleNamespace(member_id="m")]), "g", "m"),  # LeaveGroup v3+
    (9, SimpleNamespace(groups=[SimpleNamespace(group_id="g")]), "g", None),  # OffsetFetch v8+
    (15, SimpleNamespace(groups=["g", "h"]), "g", None),  # DescribeGroups
    (42, SimpleNamespace(groups_names=["g"]), "g", None),  # DeleteGroups
    (3, SimpleNamespace(topics=[]), None, None),  # Metadata: about no group
])
def test_the_group_and_member_of_each_request_shape(api_key: int, request_body: Any, group: str | None,
                                                    member: str | None) -> None:
    info = request_info(ctx(api_key), request_body)
    assert (info.api_key, info.broker_id, info.client_id, info.group_id, info.member_id) == (
        api_key, 2, "client", group, member)
