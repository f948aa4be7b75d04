"""The five classic group states; the enum carries its transition table (STYLE.md principle 6).

Java ``ClassicGroupState`` / Scala ``GroupState``: each state lists the states it may be
entered from (spec/coordinator.md §4.1). An illegal transition raises and changes nothing.
"""

from __future__ import annotations

from enum import Enum


class IllegalStateTransition(RuntimeError):
    """A transition the real coordinator would reject as an internal error."""


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def wire_name(self) -> str:
        """The name ListGroups and DescribeGroups send."""
        return self.value

    @property
    def filter_name(self) -> str:
        """The lower-case name the ListGroups state filter compares against (§11.2)."""
        return self.value.lower()

    def valid_previous_states(self) -> frozenset[GroupState]:
        return _PREVIOUS[self]

    def check_transition_to(self, target: GroupState) -> None:
        if self not in target.valid_previous_states():
            raise IllegalStateTransition(f"group cannot move from {self.value} to {target.value}")


_ALL = frozenset(GroupState)
_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: _ALL,
}

# Empty, Stable and CompletingRebalance may start a rebalance (``canRebalance``, §3.3).
CAN_REBALANCE = frozenset({GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE})
