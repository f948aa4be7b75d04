"""The words of ``--explain`` for classic groups: :mod:`.explain`'s notes and stories as short lines.

Each function returns :class:`Line` values: the first is the note's own line, the others are the rows of
a block (the vote table, the assignment) indented under it. Wrapping to the terminal width, the time
prefix and colour are the narrator's job; what is said per situation is decided here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rebalance_lab.observe.explain import TP, NoteKind, RebalanceStory, Share, Told
from rebalance_lab.protocol.errors import ErrorCode

_UUID_TAIL = re.compile(r"-([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass(frozen=True)
class Line:
    text: str
    style: str = ""  # "head" (a rebalance's start), "bad" (a refusal or an error), "" plain
    row: bool = False  # a block row, indented under the note's line


def short(member_id: str | None) -> str:
    """``<client or instance id>-<first 8 hex of the uuid>``."""
    if not member_id:
        return "-"
    match = _UUID_TAIL.search(member_id)
    return member_id[: match.start()] + "-" + match.group(1) if match else member_id


def tps_text(tps: Iterable[TP]) -> str:
    """``audit[1], orders[0-2,5]``: topics sorted, runs collapsed; ``nothing`` when empty."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(set(tps)):
        by_topic.setdefault(topic, []).append(partition)
    if not by_topic:
        return "nothing"
    return ", ".join(f"{t}[{_runs(ps)}]" for t, ps in by_topic.items())


def _runs(partitions: list[int]) -> str:
    runs: list[list[int]] = []
    for p in partitions:
        if runs and p == runs[-1][-1] + 1:
            runs[-1].append(p)
        else:
            runs.append([p])
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def error_name(value: object) -> str:
    """An error code as Kafka names it (``27`` -> ``REBALANCE_IN_PROGRESS``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return ErrorCode(value).name
        except ValueError:
            return f"error {value}"
    return str(value)


def lines(told: Told) -> list[Line]:
    render = _RENDER.get(told[0].kind)
    return render(told) if render else []


# -- membership ------------------------------------------------------------------------------------------------

def _pending(told: Told) -> list[Line]:
    n = told[0]
    return [Line(f"{n.client_id or '(no client id)'} asks to join; given member id {short(n.member_id)} and told "
                 "to rejoin with it (MEMBER_ID_REQUIRED, KIP-394)")]


def _joined(told: Told) -> list[Line]:
    n = told[0]
    static = f", static instance {n.instance_id}" if n.instance_id else ""
    text = (f"member {short(n.member_id)} joined (client {n.client_id}{static}, session {n.ms} ms) "
            f"offering [{', '.join(n.protocols)}]")
    if n.flag:
        text += "; the first member, so it is the leader"
    out = [Line(text)]
    if n.instance_id:
        # GroupMetadataManager.classicGroupJoinNewMember (4.4.0): MEMBER_ID_REQUIRED is asked only when the
        # instance id is null; a static member's id is built from its group.instance.id at once (KIP-345).
        out.append(Line("a static member skips KIP-394's MEMBER_ID_REQUIRED round: its identity is its "
                        "group.instance.id, so it is added at once", row=True))
    return out


def _rejoined(told: Told) -> list[Line]:
    n = told[0]
    who, state = short(n.member_id), n.other_id
    what = {None: "with unchanged metadata", "protocols": "with changed protocols",
            "owned partitions": "with the same protocols; its owned partitions changed",
            "subscription": "with the same protocols; its subscribed topics changed",
            "metadata": "with the same protocols; their metadata (user data) changed"}.get(n.cause, n.cause or "")
    if state == "PreparingRebalance":
        return [Line(f"member {who} rejoins {what}: it is in the coming generation")]
    if n.cause == "leader":
        return [Line(f"leader {who} rejoins during Stable: a leader's JoinGroup always starts a rebalance "
                     "(it may want to assign anew)")]
    if n.flag:
        return [Line(f"member {who} rejoins {what} during {state}: that starts a rebalance")]
    return [Line(f"member {who} rejoins {what} during {state}: a follower with nothing new causes no "
                 "rebalance; it is given the current generation back")]


def _replaced(told: Told) -> list[Line]:
    n = told[0]
    out = [Line(f"static instance {n.instance_id} is back as member {short(n.member_id)}, replacing "
                f"{short(n.other_id)}")]
    out.append(Line(f"old id {short(n.other_id)} is now fenced: a request with it gets FENCED_INSTANCE_ID",
                    row=True))
    if not n.flag:
        out.append(Line("no rebalance: a static member back within its session timeout with the same protocols "
                        "takes over its old id's place and assignment (KIP-345)", row=True))
    elif n.cause == "Stable":
        out.append(Line("its protocols changed: the group rebalances only if that changes the selected "
                        "protocol", row=True))
    else:
        out.append(Line(f"the group is {n.cause}, so the new id takes part in the rebalance under way", row=True))
    return out


_REFUSALS = {
    # ClassicGroup.supportsProtocols: the joiner's type must be the group's and one of its protocols must be
    # offered by every member; an empty group only needs a type and one protocol.
    "INCONSISTENT_GROUP_PROTOCOL": "a joiner must offer the group's protocol type and at least one protocol "
                                   "that every member offers",
    "GROUP_MAX_SIZE_REACHED": "the group already has group.max.size members",
    "UNKNOWN_MEMBER_ID": "that member id is not in the group (it was removed); the client must join anew",
    "FENCED_INSTANCE_ID": "its group.instance.id now belongs to a newer member id",
}


def _refused(told: Told) -> list[Line]:
    n = told[0]
    who = f"member {short(n.member_id)}" if n.member_id else f"client {n.client_id or '-'} (new member)"
    out = [Line(f"join refused with {n.error}: {who} offers [{', '.join(n.protocols)}]", "bad")]
    why = _REFUSALS.get(n.error or "", "the coordinator refused it")
    if n.error == "INCONSISTENT_GROUP_PROTOCOL" and n.group_protocols:
        why = f"every member offers {{{', '.join(n.group_protocols)}}} and a joiner must share one of them"
    elif n.error == "INCONSISTENT_GROUP_PROTOCOL" and n.cause == "Empty":
        why = "even an empty group needs a protocol type and at least one protocol"
    out.append(Line(why + "; the group is not changed", row=True))
    return out


def _left(told: Told) -> list[Line]:
    n = told[0]
    how = {"member_leave": "sent LeaveGroup", "group_max_size": "removed: the group is over group.max.size",
           "sync_timeout": "removed: it did not send SyncGroup within the rebalance timeout"}.get(
        n.cause or "", n.cause or "")
    text = f"member {short(n.member_id)} {how}"
    return [Line(text + _leader_after(told))]


def _leader_after(told: Told) -> str:
    n = told[0]
    return f"; it was the leader, the new leader is {short(n.other_id)}" if n.other_id else ""


def _expired(told: Told) -> list[Line]:
    n = told[0]
    if n.flag:
        text = (f"member {short(n.member_id)} expired by the operator (the Python API, the control endpoint or "
                "a fault plan), as its session timeout would: it is removed")
    elif n.cause == "new_member_join_timeout":
        text = f"new member {short(n.member_id)} did not complete its join within 5 minutes: it is removed"
    else:
        text = f"member {short(n.member_id)} expired: no heartbeat within its session timeout; it is removed"
    return [Line(text + _leader_after(told))]


def _pending_expired(told: Told) -> list[Line]:
    n = told[0]
    why = "left" if n.cause == "leave" else "did not rejoin with its id within its session timeout"
    by = " (expired by the operator)" if n.flag else ""
    return [Line(f"pending member {short(n.member_id)} dropped: it {why}{by}")]


def _dropped(told: Told) -> list[Line]:
    names = ", ".join(short(m) for m in told[0].members)
    return [Line(f"members that did not rejoin before the join completed are removed: {names}")]


def _notified(told: Told) -> list[Line]:
    return [Line(f"member {short(told[0].member_id)}'s heartbeat is answered REBALANCE_IN_PROGRESS: that is how "
                 "it learns to rejoin")]


def _fault(told: Told) -> list[Line]:
    n = told[0]
    detail = dict(n.detail)
    if "error" in detail:
        detail["error"] = error_name(detail["error"])
    for key in ("member_id", "client_id"):
        if isinstance(detail.get(key), str):
            detail[key] = short(detail[key])
    params = ", ".join(f"{k}={v}" for k, v in detail.items() if v is not None)
    verb = "fired" if n.flag else "injected"
    return [Line(f"fault {verb}: {n.cause}" + (f" ({params})" if params else ""), "bad")]


# -- the rebalance ---------------------------------------------------------------------------------------------

_WHY = {
    "member_join": "a new member joined", "member_leave": "a member left",
    "member_metadata_change": "a member's metadata changed", "leader_rejoin": "the leader rejoined",
    "static_rejoin_metadata": "a static member came back during CompletingRebalance",
    "protocol_change": "a static member's new protocols change the selected protocol",
    "session_timeout": "a member's session expired", "sync_timeout": "members did not sync in time",
    "forced": "the operator forced it", "operator_expire": "the operator expired a member",
}


def _rebalance(told: Told) -> list[Line]:
    n, story = told
    assert story is not None
    round_two = " (round 2 of a cooperative rebalance)" if story.round == 2 else ""
    out = [Line(f"rebalance to generation {story.generation_before + 1}{round_two}: "
                f"{_WHY.get(story.reason_code, story.reason_code or 'no reason given')}", "head")]
    out.append(Line(f"state {story.from_state} -> PreparingRebalance", row=True))
    if story.round == 2:
        out.append(Line("the members that revoked partitions in the last round rejoin, so the withheld "
                        "partitions can be given out", row=True))
    if n.ms:
        out.append(Line(f"waiting {n.ms} ms for more members (group.initial.rebalance.delay.ms)", row=True))
    return out


def _extended(told: Told) -> list[Line]:
    n, story = told
    total = (story.initial_delay_ms or 0) + sum(story.extensions_ms) if story else n.ms
    return [Line(f"new members joined during the initial delay, so it is extended by {n.ms} ms "
                 f"({total} ms in all so far)")]


def _generation(told: Told) -> list[Line]:
    story = told[1]
    assert story is not None
    out = [Line(f"generation {story.generation} formed with {len(story.ballots)} member(s)", "head"),
           Line("state PreparingRebalance -> CompletingRebalance: the leader must now assign", row=True)]
    out.append(Line("vote table (each member's protocols in preference order, * its vote):", row=True))
    width = max((len(short(b.member_id)) for b in story.ballots), default=0)
    for b in story.ballots:
        prefs = ", ".join(p + ("*" if p == b.vote else "") for p in b.protocols)
        out.append(Line(f"  {short(b.member_id):<{width}}  {prefs}", row=True))
    out.append(Line(f"candidates (offered by every member): {', '.join(sorted(story.candidates))}", row=True))
    votes = ", ".join(f"{name} {count}" for name, count in story.tally)
    counts = " " + " to ".join(str(count) for _, count in story.tally) if len(story.tally) > 1 else ""
    out.append(Line(f"votes: {votes}: {story.winner} wins{counts}", row=True))
    if story.tie is not None:
        out.append(Line(f"tie between {', '.join(sorted(story.tie.tied))}: {story.tie.rule}", row=True))
    out.append(Line(_leader(story), row=True))
    return out


def _leader(story: RebalanceStory) -> str:
    who = short(story.leader_id)
    if story.leader_unchanged:
        return f"leader unchanged: {who}"
    if story.previous_leader_id is None:
        return f"leader: {who} (the first member to join)"
    return f"new leader: {who} (was {short(story.previous_leader_id)})"


def _assigned(told: Told) -> list[Line]:
    story = told[1]
    assert story is not None
    out = [Line(f"leader {short(story.leader_id)} assigned generation {story.generation} ({story.winner})", "head"),
           Line("state CompletingRebalance -> Stable", row=True)]
    cooperative = any(s.owned for s in story.shares) or story.round == 2
    width = max((len(short(s.member_id)) for s in story.shares), default=0)
    for share in story.shares:
        out.append(Line(f"  {short(share.member_id):<{width}}  {_share(share, cooperative)}", row=True))
    moved = story.moved
    out.append(Line(f"moved: {tps_text(moved)}" if moved else "nothing moved", row=True))
    if story.withheld:
        out.append(Line(f"withheld: {tps_text(story.withheld)} (revoked, given to nobody yet: the members that "
                        "revoked them rejoin for round 2)", row=True))
    elif story.released:
        out.append(Line(f"round 2 done: the withheld {tps_text(story.released)} are given out", row=True))
    return out


def _share(share: Share, cooperative: bool) -> str:
    if cooperative:
        text = f"owned {tps_text(share.owned)} -> assigned {tps_text(share.assigned)}"
        return text + (f"; revokes {tps_text(share.revoked)}" if share.revoked else "")
    text = f"gets {tps_text(share.assigned)}"
    changes = [f"{verb} {tps_text(tps)}" for verb, tps in (("gained", share.gained), ("lost", share.lost)) if tps]
    return text + (f" ({'; '.join(changes)})" if changes and share.before else "")


def _empty(told: Told) -> list[Line]:
    return [Line(f"group is empty (generation {told[0].ms})", "head"),
            Line("state PreparingRebalance -> Empty", row=True)]


_RENDER: dict[NoteKind, Callable[[Told], list[Line]]] = {
    NoteKind.GROUP_CREATED: lambda t: [Line("group created (Empty)")],
    NoteKind.ASKS_TO_JOIN: _pending,
    NoteKind.JOINED: _joined,
    NoteKind.REJOINED: _rejoined,
    NoteKind.STATIC_REPLACED: _replaced,
    NoteKind.REFUSED: _refused,
    NoteKind.REBALANCE: _rebalance,
    NoteKind.DELAY_EXTENDED: _extended,
    NoteKind.NOTIFIED: _notified,
    NoteKind.LEFT: _left,
    NoteKind.EXPIRED: _expired,
    NoteKind.PENDING_EXPIRED: _pending_expired,
    NoteKind.DROPPED: _dropped,
    NoteKind.GENERATION: _generation,
    NoteKind.ASSIGNED: _assigned,
    NoteKind.EMPTY: _empty,
    NoteKind.DELETED: lambda t: [Line("group deleted")],
    NoteKind.FAULT: _fault,
}
