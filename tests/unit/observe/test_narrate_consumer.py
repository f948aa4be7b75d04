"""The narration of KIP-848 consumer groups, from the core's own records (no I/O): why each epoch bumped,
the target, what a member must revoke before it gets more, who holds what another waits for, static members."""

from __future__ import annotations

from rebalance_lab.coordinator.consumer import records as c
from rebalance_lab.observe.narrate_consumer import ConsumerNarration, short_member, tps_text
from tests.unit.consumer.context import BAR, FOO, Ctx, foo, grown


class Told:
    """A core test context whose every record is narrated; :meth:`lines` gives what the last step said."""

    def __init__(self) -> None:
        self.ctx = Ctx()
        self.narration = ConsumerNarration()

    def lines(self) -> list[str]:
        return [line for record in self.ctx.last for line in self.narration.describe(record)]


def two_members() -> Told:
    t = Told()
    t.ctx.join("A")
    t.lines()
    t.ctx.advance(2_000)  # past the 4.4 assignment interval
    return t


def test_a_join_says_why_the_epoch_bumped_the_target_and_what_the_newcomer_waits_for() -> None:
    t = two_members()
    t.ctx.join("B")
    assert t.lines() == [
        "member B joined (client -, consumer protocol) subscribing to [foo]",
        "group epoch 2 -> 3: member B joined; a new target assignment is due",
        "target assignment of epoch 3 (uniform assignor): A gets foo[0-2]; B gets foo[3-5]",
        "member B (UNRELEASED_PARTITIONS) at epoch 3 owns nothing; waits for foo[3-5], still held by A",
    ]


def test_a_member_must_revoke_before_it_gets_more_and_then_the_waiting_member_gets_the_rest() -> None:
    t = two_members()
    t.ctx.join("B")
    t.lines()
    t.ctx.hb("A", 2)
    assert t.lines() == ["member A (STABLE -> UNREVOKED_PARTITIONS, epoch 2) must revoke foo[3-5] before it gets "
                         "more; it keeps foo[0-2]"]
    t.ctx.ack("A", 2, foo(0, 1, 2))
    assert t.lines() == ["member A (UNREVOKED_PARTITIONS -> STABLE) at epoch 3 owns foo[0-2]"]
    t.ctx.hb("B", 3)
    assert t.lines() == ["member B (UNRELEASED_PARTITIONS -> STABLE) at epoch 3 owns foo[3-5]"]


def test_a_subscription_change_and_a_metadata_change_are_told_as_such() -> None:
    t = two_members()
    t.ctx.hb("A", 2, subscribed_topic_names=("foo", "bar"))
    said = t.lines()
    assert said[:2] == ["member A updated its metadata: subscribes to [bar, foo]",
                        "group epoch 2 -> 3: member A changed its subscription; a new target assignment is due"]
    t.ctx.set_topics(grown(FOO, 8), BAR, changed=["foo"])
    t.ctx.advance(2_000)
    t.ctx.hb("A", 3)
    assert "group epoch 3 -> 4: the subscribed topics' metadata changed" in t.lines()[0]


def test_a_static_members_temporary_leave_and_return_keep_its_assignment_without_a_bump() -> None:
    t = two_members()
    t.ctx.join("S", instance_id="i1")
    t.lines()
    t.ctx.advance(2_000)
    t.ctx.leave("S", -2, instance_id="i1")
    assert t.lines() == ["static member S (instance i1) left temporarily (epoch -2): its assignment is kept for it "
                         "until its session expires; no epoch bump"]
    t.ctx.join("S2", instance_id="i1")
    assert t.lines()[0] == ("static instance i1 came back as member S2, replacing S: it takes over its target and "
                            "partitions, no epoch bump")


def test_fencing_says_why_and_the_last_one_leaves_an_empty_group() -> None:
    t = two_members()
    t.ctx.advance(45_000)
    assert t.lines() == [
        "member A fenced from the group because the member session expired (session_timeout); its partitions are "
        "free and its next heartbeat gets UNKNOWN_MEMBER_ID",
        "group epoch 2 -> 3: member A was fenced: its session expired; the group is empty",
        "target assignment of epoch 3 reset: the group is empty",
    ]


def test_a_repeated_state_is_not_told_twice_and_an_operator_bump_says_so() -> None:
    t = two_members()
    t.ctx.join("B")
    t.lines()
    t.ctx.hb("B", 3)
    assert t.lines() == []  # still waiting for the same partitions
    bump = c.GroupEpochBumped("g", 0, 4, (), "operator")
    assert t.narration.describe(bump) == ["group epoch 3 -> 4: the operator bumped it (fault injection); "
                                          "a new target assignment is due"]


def test_member_ids_and_partition_lists_are_shortened() -> None:
    assert short_member("5a0c8e1e-9d1e-4a59-8f2f-3a1f0e9b7c21") == "5a0c8e1e"
    assert short_member("c0-5a0c8e1e-9d1e-4a59-8f2f-3a1f0e9b7c21") == "c0-5a0c8e1e"
    assert short_member("jfU3yIDlQ0uNuKU4Ok3grQ") == "jfU3yIDlQ0uNuKU4Ok3grQ"
    assert tps_text([("b", 1), ("a", 3), ("a", 0), ("a", 1), ("a", 2), ("a", 5)]) == "a[0-3,5], b[1]"
    assert tps_text([]) == "nothing"
