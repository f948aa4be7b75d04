"""``UniformHeterogeneousAssignmentBuilder.MemberAssignmentBalancer`` of Kafka 4.4.0, step for step.

It walks one topic's subscribers sorted by (target size, member index) and hands out the least loaded
member round-robin within the group at the current minimum size, widening that group as sizes even out;
the most loaded symmetrically from the top. Its choices at ties are what makes the heterogeneous uniform
assignor's output what it is, so the counters below follow the Java fields one to one.
"""

from __future__ import annotations


class MemberAssignmentBalancer:
    """Shares ``sizes`` (the builder's per-member target sizes) and reads them live."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.sorted_members: list[int] = []
        self.least_end = 0
        self.least_count = -1
        self.next_least = 0
        self.most_start = 0
        self.most_end = 0
        self.most_count = 1
        self.next_most = -1

    def initialize(self, members: list[int]) -> int:
        """Sort the subscribers and reset both walks; returns max size - min size among them."""
        if not members:
            raise ValueError("Cannot balance an empty subscriber list.")
        sizes = self.sizes
        self.sorted_members = sorted(members, key=lambda index: (sizes[index], index))
        first, last = sizes[self.sorted_members[0]], sizes[self.sorted_members[-1]]
        self.least_end = 0
        self.least_count = first - 1
        self.next_least = 0
        self.most_start = self.most_end = len(self.sorted_members)
        self.most_count = last + 1
        self.next_most = len(self.sorted_members) - 1
        return last - first

    def next_least_loaded(self) -> int:
        members, sizes = self.sorted_members, self.sizes
        if self.next_least >= self.least_end:
            self.least_count += 1
            while self.least_end < len(members) and sizes[members[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        chosen = members[self.next_least]
        self.next_least += 1
        return chosen

    def next_most_loaded(self) -> int:
        """The next donor, or -1 when none is left."""
        members, sizes = self.sorted_members, self.sizes
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = sizes[members[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and sizes[members[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        chosen = members[self.next_most]
        self.next_most -= 1
        return chosen

    def exclude_most_loaded(self) -> None:
        """Drop the donor just returned (it owns nothing more of the topic) from the top group."""
        members = self.sorted_members
        excluded = members[self.next_most + 1]
        members[self.next_most + 1] = members[self.most_end - 1]
        members[self.most_end - 1] = excluded
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1
