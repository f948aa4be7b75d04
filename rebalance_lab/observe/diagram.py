"""``rebalance-lab diagram``: a group's rebalances drawn as sequence diagrams (Mermaid text, SVG, HTML).

The model comes from :mod:`rebalance_lab.observe.sequence`; this module only draws it. Mermaid's
``sequenceDiagram`` gets one ``rect`` block per generation; the SVG is our own (no library, nothing
fetched), one band per generation with the lanes of the whole group; the HTML page embeds that SVG.
Arrows the recording implies but does not hold (see ``sequence``) are drawn with open heads in Mermaid
and dotted in the SVG.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

from rebalance_lab.observe.sequence import COORDINATOR, Generation, GroupSequence, Lane, Message, Note

FORMATS = ("mermaid", "svg", "html")


def lanes_of(generations: Sequence[Generation]) -> list[Lane]:
    """The coordinator, then every member in order of first appearance across the generations."""
    lanes: dict[str, Lane] = {COORDINATOR: Lane(COORDINATOR, COORDINATOR)}
    for generation in generations:
        for lane in generation.lanes:
            lanes.setdefault(lane.key, lane)
    return list(lanes.values())


def _title(sequence: GroupSequence, generation: Generation) -> str:
    name = "epoch" if sequence.kind == "consumer" else "generation"
    protocol = f" ({generation.protocol})" if generation.protocol else ""
    return f"{name} {generation.number}{protocol}"


# -- Mermaid -------------------------------------------------------------------------------------------------


def _mermaid_text(text: str) -> str:
    """Mermaid ends a statement at ';' and reads '#' as the start of an entity code."""
    return text.replace("#", "#35;").replace(";", "#59;")


def mermaid(sequence: GroupSequence, generations: Sequence[Generation]) -> str:
    lanes = lanes_of(generations)
    ids = {lane.key: ("coordinator" if lane.key == COORDINATOR else f"m{i}") for i, lane in enumerate(lanes)}
    lines = ["sequenceDiagram", f"    title group {_mermaid_text(sequence.group_id)}"]
    lines += [f"    participant {ids[lane.key]} as {_mermaid_text(lane.label)}" for lane in lanes]
    for generation in generations:
        lines.append("    rect rgba(128, 128, 128, 0.08)")
        lines.append(f"    Note over {ids[COORDINATOR]}: {_mermaid_text(_title(sequence, generation))}")
        for step in generation.steps:
            lines.append("    " + _mermaid_step(step, ids))
        lines.append("    end")
    return "\n".join(lines) + "\n"


def _mermaid_step(step: Message | Note, ids: dict[str, str]) -> str:
    if isinstance(step, Note):
        over = ",".join(ids[key] for key in dict.fromkeys(step.over))
        return f"Note over {over}: {_mermaid_text(step.text)}"
    arrow = ("--)" if step.reply else "-)") if step.inferred else ("-->>" if step.reply else "->>")
    return f"{ids[step.sender]}{arrow}{ids[step.receiver]}: {_mermaid_text(step.text)}"


# -- SVG -----------------------------------------------------------------------------------------------------

_LANE_W, _ROW_H, _TOP, _BAND_H, _MARGIN, _CHAR_W = 240, 26, 56, 30, 20, 6.6


def _fit(text: str, width: float) -> str:
    room = max(4, int(width / _CHAR_W))
    return text if len(text) <= room else text[: room - 1] + "…"


def svg(sequence: GroupSequence, generations: Sequence[Generation]) -> str:
    """A standalone SVG document: lanes across, time downwards, one band per generation."""
    lanes = lanes_of(generations)
    x = {lane.key: _MARGIN + _LANE_W * i + _LANE_W / 2 for i, lane in enumerate(lanes)}
    width = _MARGIN * 2 + _LANE_W * len(lanes)
    body: list[str] = []
    y = _TOP + 16
    for generation in generations:
        body.append(f'<rect class="band" x="{_MARGIN / 2}" y="{y}" width="{width - _MARGIN}" height="{_BAND_H - 6}"/>')
        body.append(f'<text class="band-title" x="{_MARGIN}" y="{y + 17}">{escape(_title(sequence, generation))}'
                    "</text>")
        y += _BAND_H
        for step in generation.steps:
            body.append(_svg_step(step, x, y))
            y += _ROW_H
    height = y + _MARGIN
    head = [f'<line class="life" x1="{x[lane.key]}" y1="{_TOP}" x2="{x[lane.key]}" y2="{height - _MARGIN}"/>'
            f'<rect class="head" x="{x[lane.key] - _LANE_W / 2 + 8}" y="{_TOP - 28}" width="{_LANE_W - 16}" '
            f'height="26" rx="4"/><text class="lane" x="{x[lane.key]}" y="{_TOP - 10}">'
            f"{escape(_fit(lane.label, _LANE_W - 24))}</text>" for lane in lanes]
    title = f'<text class="title" x="{_MARGIN}" y="18">group {escape(sequence.group_id)}</text>'
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">'
            f"<title>rebalances of group {escape(sequence.group_id)}</title>{_STYLE}{_MARKERS}{title}"
            + "".join(head) + "".join(body) + "</svg>\n")


def _svg_step(step: Message | Note, x: dict[str, float], y: float) -> str:
    if isinstance(step, Note):
        # a note of the coordinator's (a rebalance starting, a vote) is wide: it spans every lane
        xs = list(x.values()) if step.over == (COORDINATOR,) else [x[key] for key in step.over]
        left, right = min(xs) - _LANE_W / 2 + 12, max(xs) + _LANE_W / 2 - 12
        return (f'<g><title>{escape(step.text)}</title><rect class="note" x="{left}" y="{y - 4}" '
                f'width="{right - left}" height="{_ROW_H - 4}" rx="3"/><text x="{left + 6}" y="{y + 12}">'
                f"{escape(_fit(step.text, right - left - 12))}</text></g>")
    x1, x2 = x[step.sender], x[step.receiver]
    kind = ("reply" if step.reply else "request") + (" inferred" if step.inferred else "")
    mid = y + 14
    label = escape(_fit(step.text, _LANE_W * max(1, abs(x2 - x1) / _LANE_W) - 12))
    return (f'<g><title>{escape(step.api)}: {escape(step.text)}</title><line class="{kind}" x1="{x1}" y1="{mid}" '
            f'x2="{x2}" y2="{mid}" marker-end="url(#head)"/><text class="msg" x="{(x1 + x2) / 2}" y="{mid - 4}">'
            f"{label}</text></g>")


_STYLE = ("<style>.title{font-weight:bold;font-size:14px}.band{fill:#f2f2f2}.band-title{font-weight:bold}"
          ".life{stroke:#999;stroke-dasharray:4 3}.head{fill:#e8eef8;stroke:#557}.lane{text-anchor:middle}"
          ".request{stroke:#224}.reply{stroke:#224;stroke-dasharray:6 3}.inferred{stroke:#888;"
          "stroke-dasharray:2 3}.msg{text-anchor:middle}.note{fill:#fff8d8;stroke:#cb9}</style>")
_MARKERS = ('<defs><marker id="head" markerWidth="8" markerHeight="8" refX="8" refY="4" orient="auto">'
            '<path d="M0,0 L8,4 L0,8 z" fill="#224"/></marker></defs>')


# -- HTML ----------------------------------------------------------------------------------------------------


def html(sequence: GroupSequence, generations: Sequence[Generation]) -> str:
    """One page with the SVG inline (works offline) and a legend."""
    numbers = ", ".join(str(g.number) for g in generations)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>rebalances of group {escape(sequence.group_id)}</title>"
            "<style>body{font-family:sans-serif;margin:1.5em}figure{overflow-x:auto;margin:0}</style></head><body>"
            f"<h1>Group {escape(sequence.group_id)}</h1><p>{escape(sequence.kind)} group; "
            f"{'epochs' if sequence.kind == 'consumer' else 'generations'} {escape(numbers)}. Solid arrows are "
            "requests, dashed ones answers; dotted grey arrows are implied by the recording (a follower's "
            "SyncGroup, the Heartbeat answered REBALANCE_IN_PROGRESS before a rejoin) but not recorded. "
            "Hover an arrow for its full text.</p><figure>"
            + svg(sequence, generations) + "</figure></body></html>\n")


def render(sequence: GroupSequence, generations: Sequence[Generation], fmt: str) -> str:
    renderers = {"mermaid": mermaid, "svg": svg, "html": html}
    return renderers[fmt](sequence, generations)

