"""Protocol selection: candidates, one vote per member, and each flavor's tie-break (spec §7).

Rule (``CG.selectProtocol`` / ``S-GM.selectProtocol``):

1. candidates = names listed by every member (the per-entry count equals the member count);
2. each member, in member iteration order (§7.3), votes for the first candidate in its own list;
3. the most votes win; ties go to the first tied name in the vote map's iteration order:

* kafka-4 (Java): votes go into a fresh ``java.util.HashMap`` in member order and
  ``entrySet().stream().max(comparingInt(getValue))`` keeps the *first* maximum, so the
  winner is the first tied name in HashMap bucket order (sticky > range > roundrobin >
  cooperative-sticky for the usual assignors).
* kafka-3 (Scala 2.13): ``votes.groupBy(identity).maxBy(_._2.size)``; ``groupBy`` builds an
  ``immutable.HashMap`` (CHAMP) and ``maxBy`` keeps the first maximum, so the winner is the
  first tied name in CHAMP order (cooperative-sticky > roundrobin > range > sticky).
"""

from __future__ import annotations

from dataclasses import dataclass

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.classic.model import Group
from rebalance_lab.coordinator.classic.ordering import champ_order, first_max, java_hashmap_order


@dataclass(frozen=True)
class Selection:
    candidates: tuple[str, ...]
    votes: tuple[tuple[str, str], ...]  # (member id, protocol) in member iteration order
    winner: str | None


def select_protocol(group: Group) -> Selection:
    candidates = group.candidates()
    allowed = frozenset(candidates)
    votes: list[tuple[str, str]] = []
    for member in group.members.values():
        vote = member.vote(allowed)
        if vote is not None:  # only a member listing a name twice can have no vote; clients never do
            votes.append((member.member_id, vote))
    counts: dict[str, int] = {}
    for _member_id, name in votes:
        counts[name] = counts.get(name, 0) + 1
    return Selection(tuple(candidates), tuple(votes), tie_break(group.flavor, counts, [n for _, n in votes]))


def tie_break(flavor: Flavor, counts: dict[str, int], votes_in_member_order: list[str]) -> str | None:
    """The winner: the first maximum in the vote map's iteration order for the flavor."""
    order = champ_order(counts) if flavor is Flavor.KAFKA_3 else java_hashmap_order(votes_in_member_order)
    return first_max(order, lambda name: counts[name])
