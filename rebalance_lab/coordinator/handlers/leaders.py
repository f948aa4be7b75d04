"""KIP-951 leader hints shared by Produce (v10+) and Fetch (v12+/v16+).

With NOT_LEADER_OR_FOLLOWER a partition response carries the current leader and its
epoch, and the response lists the endpoints of those leaders, so a client can
redirect without a Metadata round trip (``KafkaApis.handleProduceRequest`` /
``handleFetchRequest``). Not a handler module: it declares no ``API_KEY``.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.cluster import PartitionInfo
from rebalance_lab.coordinator.world import World
from rebalance_lab.security.additional import advertised


def current_leader(leader_type: Any, partition: PartitionInfo) -> Any:
    return leader_type(leader_id=partition.leader_id, leader_epoch=partition.leader_epoch)


def node_endpoints(endpoint_type: Any, world: World, leader_ids: set[int], listener: str) -> list[Any]:
    endpoints = []
    for node_id in sorted(leader_ids):
        node = world.nodes.get(node_id)
        if node is None or not node.up:
            continue
        info = advertised(world.services, listener, node.info)  # the address on the request's listener
        endpoints.append(endpoint_type(node_id=info.node_id, host=info.host, port=info.port, rack=info.rack))
    return endpoints
