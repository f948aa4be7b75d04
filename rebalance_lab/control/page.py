"""The live page at the control endpoint's ``/``: every group, rendered on the server as HTML (no I/O).

Per group: the state machine with the current state lit (classic: Kafka's ``GroupState``; KIP-848:
``ConsumerGroup.ConsumerGroupState``), the members (client id, host, protocols offered, owned -> assigned
partitions), the vote table of each recent generation, the generation timeline and an SVG sequence diagram
of the last rebalance. The same fragments travel in ``/events`` frames, so the page a browser first loads and
the one it keeps up to date are one rendering. Every value from the world passes through ``html.escape``.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from rebalance_lab.control.diagram import sequence_svg
from rebalance_lab.control.live_model import LiveModel
from rebalance_lab.control.views import consumer_group_json, group_json, history_of
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.world import World
from rebalance_lab.observe.explain import RebalanceStory

CLASSIC_STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
CONSUMER_STATES = ("Empty", "Assigning", "Reconciling", "Stable", "Dead")
TIMELINE_KEPT = 12  # newest generations shown in the timeline
VOTES_SHOWN = 4
MEMBERS_SHOWN = 50  # rows of a members or vote table: a frame of a big group costs about what one of 50 does
GROUPS_SHOWN = 50  # sections on the page, by group id


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _tps(rows: Any) -> str:
    if rows is None:
        return "?"
    by_topic: dict[str, list[int]] = {}
    for tp in rows:
        by_topic.setdefault(str(tp["topic"]), []).append(int(tp["partition"]))
    return " ".join(f"{t}[{','.join(map(str, sorted(ps)))}]" for t, ps in sorted(by_topic.items())) or "none"


def _post(url: str, label: str, body: str = "{}", cls: str = "act") -> str:
    return f'<button type="button" class="{cls}" data-post="{esc(url)}" data-body="{esc(body)}">{esc(label)}</button>'


def state_machine(kind: str, current: str) -> str:
    states = CONSUMER_STATES if kind == "consumer" else CLASSIC_STATES
    items = "".join(
        f'<li class="state{" lit" if s == current else ""}" data-state="{esc(s)}">{esc(s)}</li>' for s in states
    )
    return f'<ol class="machine" aria-label="group state machine">{items}</ol>'


def _classic_member(gid: str, m: dict[str, Any]) -> str:
    sub = m.get("subscription") or {}
    owned, assigned = sub.get("owned"), m.get("assignment")
    url = f"/groups/{quote(gid, safe='')}/members/{quote(m['member_id'], safe='')}/expire"
    return (f'<tr class="member" data-member="{esc(m["member_id"])}"><td class="client">{esc(m["client_id"])}</td>'
            f'<td>{esc(m["client_host"])}</td><td class="mid">{esc(m["member_id"])}</td>'
            f'<td class="protocols">{esc(", ".join(m["protocols"]))}</td>'
            f'<td class="moves">{esc(_tps(owned))} &rarr; {esc(_tps(assigned))}</td>'
            f'<td>{_post(url, "expire")}</td></tr>')


def _consumer_member(gid: str, m: dict[str, Any]) -> str:
    url = f"/groups/{quote(gid, safe='')}/members/{quote(m['member_id'], safe='')}/expire"
    return (f'<tr class="member" data-member="{esc(m["member_id"])}"><td class="client">{esc(m["client_id"])}</td>'
            f'<td>{esc(m["client_host"])}</td><td class="mid">{esc(m["member_id"])}</td>'
            f'<td class="protocols">{esc(m["server_assignor"] or "(group default)")}, epoch '
            f'{esc(m["member_epoch"])} {esc(m["state"])}</td>'
            f'<td class="moves">{esc(_tps(m["assigned"]))} &rarr; {esc(_tps(m["target"]))}</td>'
            f'<td>{_post(url, "expire")}</td></tr>')


def members_table(view: dict[str, Any], total: int) -> str:
    consumer = view["type"] == "consumer"
    render = _consumer_member if consumer else _classic_member
    rows = "".join(render(view["group_id"], m) for m in view["members"]) or '<tr><td colspan="6">no members</td></tr>'
    if total > len(view["members"]):
        rows += f'<tr class="more"><td colspan="6">and {total - len(view["members"])} more members</td></tr>'
    offered = "assignor, epoch, state" if consumer else "protocols offered"
    moves = "assigned &rarr; target" if consumer else "owned &rarr; assigned"
    return (f'<table class="members"><caption>members</caption><thead><tr><th>client id</th><th>host</th>'
            f'<th>member id</th><th>{offered}</th><th>{moves}</th><th></th></tr></thead><tbody>{rows}</tbody></table>')


def _pairs(tps: Iterable[tuple[str, int]]) -> str:
    return _tps([{"topic": t, "partition": p} for t, p in tps])


def _revoked(story: RebalanceStory) -> str:
    """A cooperative round's revocations and what the leader withheld for the next round (observe.explain)."""
    names = {b.member_id: b.client_id or b.member_id for b in story.ballots}
    revoked = [f"{names.get(s.member_id, s.member_id)} {_pairs(s.revoked)}" for s in story.shares if s.revoked]
    if not revoked and not story.withheld:
        return ""
    withheld = f"; withheld for a second round: {_pairs(story.withheld)}" if story.withheld else ""
    return f'<p class="revoked">revoked: {esc(", ".join(revoked) or "nothing")}{esc(withheld)}</p>'


def vote_table(story: RebalanceStory) -> str:
    """One generation's vote: each member's preferences in order, its vote, the tally and the tie-break."""
    rows = "".join(
        f'<tr><td>{esc(b.client_id or b.member_id)}</td><td>{esc(" > ".join(b.protocols))}</td>'
        f'<td class="vote{" won" if b.vote == story.winner else ""}">{esc(b.vote)}</td>'
        f'<td>{esc(_pairs(b.owned)) if b.owned else ""}</td>'
        f'<td>{"leader" if b.member_id == story.leader_id else ""}</td></tr>'
        for b in story.ballots[:MEMBERS_SHOWN])
    if len(story.ballots) > MEMBERS_SHOWN:
        rows += f'<tr class="more"><td colspan="5">and {len(story.ballots) - MEMBERS_SHOWN} more members</td></tr>'
    tally = ", ".join(f"{esc(name)} {count}" for name, count in story.tally)
    tie = f'<p class="tie">tie: {esc(story.tie.rule)}</p>' if story.tie is not None else ""
    tie += _revoked(story)
    cooperative = " (second, cooperative round)" if story.round == 2 else ""
    return (f'<div class="vote-block" data-generation="{story.generation}"><table class="votes">'
            f'<caption>generation {story.generation}{cooperative}: candidates {{{esc(", ".join(story.candidates))}}}'
            f'; votes {tally}; <b>{esc(story.winner)}</b> wins</caption><thead><tr><th>member</th>'
            f'<th>preferences</th><th>vote</th><th>owned</th><th></th></tr></thead><tbody>{rows}</tbody></table>'
            f'{tie}</div>')


def _clock(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%H:%M:%S.%f")[:-3]


def _timeline_item(entry: dict[str, Any], last: bool) -> str:
    if entry.get("type") == "consumer":
        number, what = entry["epoch"], f"epoch {entry['epoch']}: {entry.get('reason') or ''}"
    else:
        members = len(entry.get("members") or ())
        number = entry["generation"]
        what = f"generation {number}: {entry.get('protocol') or '-'}, {members} member(s)"
    stable = entry.get("stable_ms")
    if stable is not None:
        settled = f"stable after {stable - entry['started_ms']} ms"
    else:
        settled = "not stable yet" if last else "a new rebalance began before it was stable"
    return (f'<li class="gen" data-generation="{esc(number)}"><b>{esc(what)}</b> '
            f'<span>started {_clock(entry["started_ms"])}, {esc(settled)}</span></li>')


def timeline(world: World, group_id: str) -> str:
    entries = history_of(world).of(group_id)[-TIMELINE_KEPT:]
    items = "".join(_timeline_item(e, i == len(entries) - 1) for i, e in enumerate(entries))
    items = items or "<li>no generation yet</li>"
    return f'<ol class="timeline" aria-label="generation timeline">{items}</ol>'


def shown_groups(world: World) -> tuple[list[str], int]:
    """The ids of the groups the page draws (the first ``GROUPS_SHOWN`` by id) and how many there are in all."""
    service = service_of(world)
    ids = sorted([v.group_id for v in service.coordinator.groups()] + [v.group_id for v in service.consumer.groups()])
    return ids[:GROUPS_SHOWN], len(ids)


def _view(world: World, group_id: str) -> tuple[dict[str, Any], int] | None:
    """The group's JSON view with its first ``MEMBERS_SHOWN`` members only (decoding all of a big group's
    subscriptions and assignments per frame would hold the loop), and its member count."""
    service = service_of(world)
    consumer = service.consumer.group(group_id)
    if consumer is not None:
        trimmed = replace(consumer, members=consumer.members[:MEMBERS_SHOWN])
        return consumer_group_json(world, trimmed), len(consumer.members)
    classic = service.coordinator.group(group_id)
    if classic is None:
        return None
    return group_json(world, replace(classic, members=classic.members[:MEMBERS_SHOWN])), len(classic.members)


def group_html(world: World, model: LiveModel, group_id: str) -> str:
    """One group's section; "" when the group no longer exists."""
    found = _view(world, group_id)
    return "" if found is None else _section(world, model, *found)


def _section(world: World, model: LiveModel, view: dict[str, Any], members: int) -> str:
    gid = view["group_id"]
    consumer = view["type"] == "consumer"
    number = view["group_epoch"] if consumer else view["generation"]
    title = (f'{view["type"]} group, {"epoch" if consumer else "generation"} {number}, '
             f'{"assignor " + str(view["assignor"]) if consumer else "protocol " + str(view["protocol"] or "-")}')
    votes = "".join(vote_table(story) for story in reversed(model.stories(gid)[-VOTES_SHOWN:]))
    last = model.last_rebalance(gid)
    diagram = sequence_svg(last, gid) if last is not None else "<p>no rebalance yet</p>"
    rebalance = _post(f"/groups/{quote(gid, safe='')}/rebalance", "force a rebalance")
    return (f'<section class="group" data-group="{esc(gid)}" data-state="{esc(view["state"])}">'
            f'<h2>{esc(gid)} <small>{esc(title)}</small> {rebalance}</h2>'
            f'{state_machine(view["type"], view["state"])}{members_table(view, members)}'
            f'<div class="votes-wrap"><h3>votes</h3>{votes or "<p>no vote yet</p>"}</div>'
            f'<h3>generation timeline</h3>{timeline(world, gid)}'
            f'<h3>last rebalance</h3><div class="diagram">{diagram}</div></section>')


def groups_html(world: World, model: LiveModel) -> str:
    shown, total = shown_groups(world)
    sections = [group_html(world, model, group_id) for group_id in shown]
    more = f'<p class="more">and {total - len(shown)} more groups (GET /groups lists them)</p>' if total > len(
        shown) else ""
    return "".join(sections) + more or '<p class="empty">no groups yet: start a consumer with a group id</p>'


def clock_html(world: World) -> str:
    if not world.clock.manual:  # the time moves by itself: a rendered time would be stale at once
        return '<div class="clock" data-manual="false"><span class="now">wall clock</span></div>'
    buttons = "".join(_advance_buttons())
    return (f'<div class="clock" data-manual="true"><span class="now" data-now="{world.now_ms()}">'
            f'manual clock {_clock(world.now_ms())}</span>{buttons}</div>')


def _advance_buttons() -> Iterable[str]:
    yield _post("/advance", "+100 ms", '{"ms": 100}', "advance")
    yield _post("/advance", "+1 s", '{"ms": 1000}', "advance")
    yield _post("/advance", "to the next group timer", '{"to": "next_timer"}', "advance")


def page_html(world: World, model: LiveModel) -> str:
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8"><title>rebalance-lab live</title>'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<link rel="stylesheet" href="/static/live.css"><script src="/static/live.js" defer></script></head>'
            f'<body><header><h1>rebalance-lab <small>{esc(world.config.flavor.value)}</small></h1>'
            f'<div id="clock">{clock_html(world)}</div><p id="status" role="status">connecting</p></header>'
            f'<main id="groups">{groups_html(world, model)}</main></body></html>')
