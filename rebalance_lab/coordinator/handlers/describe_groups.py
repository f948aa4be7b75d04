"""DescribeGroups (15), v0-6 (spec §11.1). Groups another broker coordinates get NOT_COORDINATOR.

A KIP-848 consumer group is not a classic group: it is answered as an unknown group is, and v6
says why (spec/kip848.md §8.3, :func:`~rebalance_lab.coordinator.consumer_surface.described_as_classic`).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import Any

from rebalance_lab.coordinator import consumer_surface
from rebalance_lab.coordinator.classic.admin_messages import DescribedGroup, DescribeGroupsInput, DescribeGroupsResult
from rebalance_lab.coordinator.group_service import owns_group, service_of
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.steps import Pacer, answer, chunks
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 15


def _bit_set(value: int) -> set[int] | None:
    """kafka-python encodes a ``bitfield`` from the set of its bit indices; None is INT_MIN (bit 31 only)."""
    bits = value & 0xFFFFFFFF
    return None if bits == 1 << 31 else {i for i in range(32) if bits >> i & 1}


def _group(version: int, g: DescribedGroup) -> Any:
    described = codec.data_class(codec.response_type(API_KEY), "DescribedGroup")
    member = codec.data_class(described, "DescribedGroupMember")
    return described(
        error_code=int(g.error), error_message=g.error_message if version >= 6 else None, group_id=g.group_id,
        group_state=g.state, protocol_type=g.protocol_type, protocol_data=g.protocol_data,
        members=[member(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                        client_host=m.client_host, member_metadata=m.metadata, member_assignment=m.assignment)
                 for m in g.members],
        authorized_operations=_bit_set(g.authorized_operations),
    )


def _not_coordinator(group_id: str) -> DescribedGroup:
    """Coordinator-level errors carry only the group id and the error (other fields: defaults)."""
    return DescribedGroup(group_id, ErrorCode.NOT_COORDINATOR, "", "", "")


def _authorized(ctx: RequestContext, g: DescribedGroup, include_ops: bool) -> DescribedGroup:
    """The caller's operations on a described group (KafkaApis sets them after the coordinator answers)."""
    if not include_ops or g.error is not ErrorCode.NONE:
        return g
    return replace(g, authorized_operations=authz.authorized_operations(ctx, authz.GROUP, g.group_id))


def handle(ctx: RequestContext, request: Any) -> Any:
    return answer(_answer(ctx, request), len(request.groups or ()))


def _answer(ctx: RequestContext, request: Any) -> Generator[None, None, Any]:
    """In steps of 200 groups, each step one coordinator read: GroupCoordinatorService.describeGroups reads
    each group from its own __consumer_offsets partition, so a request is never one atomic read in Kafka."""
    version = ctx.api_version
    group_ids = [g or "" for g in request.groups or ()]
    # KafkaApis: DESCRIBE on each group; the others are answered GROUP_AUTHORIZATION_FAILED and nothing more
    refused = authz.denied(ctx, authz.DESCRIBE, authz.GROUP, group_ids)
    include_ops = bool(request.include_authorized_operations) if version >= 3 else False
    service = service_of(ctx.world)
    described: dict[str, DescribedGroup] = {
        g: DescribedGroup(g, ErrorCode.GROUP_AUTHORIZATION_FAILED, "", "", "") for g in refused}
    for chunk in chunks([g for g in group_ids if g not in refused]):
        yield
        ours = [g for g in chunk if owns_group(ctx.world, ctx.broker.node_id, g)]
        consumer = {g for g in ours if consumer_surface.holds(ctx.world, g)}
        parked = service.call(service.coordinator.describe_groups, DescribeGroupsInput(tuple(ours), include_ops,
                                                                                        version), lambda r: r)
        if not parked.done:  # the classic coordinator answers a describe at once (even while loading)
            raise RuntimeError("DescribeGroups was not answered at once")
        result: DescribeGroupsResult = parked.value
        described.update((g.group_id, _authorized(ctx, consumer_surface.described_as_classic(g.group_id, version, g)
                          if g.group_id in consumer else g, include_ops)) for g in result.groups)
    groups, pacer = [], Pacer()
    for g in group_ids:
        yield from pacer.pause()
        groups.append(_group(version, described.get(g) or _not_coordinator(g)))
    return codec.new_response(API_KEY, version, throttle_time_ms=0, groups=groups)
