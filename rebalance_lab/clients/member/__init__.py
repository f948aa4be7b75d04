"""A light classic-protocol group member: sans-I/O state plus a thin asyncio driver."""

from rebalance_lab.clients.member.calls import Assigned
from rebalance_lab.clients.member.connection import Connection, ConnectionLost
from rebalance_lab.clients.member.member import GroupMember, GroupMemberError
from rebalance_lab.clients.member.state import IllegalTransition, MemberState, Phase
from rebalance_lab.clients.member.subscription import SubscriptionSpec

__all__ = [
    "Assigned",
    "Connection",
    "ConnectionLost",
    "GroupMember",
    "GroupMemberError",
    "IllegalTransition",
    "MemberState",
    "Phase",
    "SubscriptionSpec",
]
