"""The last rebalance as an SVG sequence diagram: one lifeline per member and the coordinator, one row per step.

The steps come from ``observe.sequence`` (requests and answers drawn as arrows, answers dashed, arrows the
recording only implies dotted, notes as boxes over their lanes). Built with the replay report's SVG helpers,
which escape every text, so member and client ids can never become markup.
"""

from __future__ import annotations

from rebalance_lab.observe.sequence import Generation, Message, Note
from rebalance_lab.replay.svg import element, line, rect, svg, text

LANE_W = 190.0  # space per lifeline
ROW_H = 26.0
TOP = 44.0  # lane headers
CHAR_W = 6.2  # the width of one character of an 11 px label, about
MAX_STEPS = 120  # a huge group's rebalance shows its first steps and says how many more there were


def _x(index: int) -> float:
    return LANE_W / 2 + index * LANE_W


def _arrow(step: Message, lanes: dict[str, int], y: float) -> str:
    x1, x2 = _x(lanes[step.sender]), _x(lanes[step.receiver])
    head = -7.0 if x2 > x1 else 7.0
    cls = "seq-msg" + (" seq-reply" if step.reply else "") + (" seq-inferred" if step.inferred else "")
    body = (line(x1, y, x2, y, "seq-line")
            + element("path", {"d": f"M{x2 + head} {y - 4}L{x2} {y}L{x2 + head} {y + 4}", "class": "seq-head"})
            + text((x1 + x2) / 2, y - 4, step.text, cls="seq-label", anchor="middle"))
    title = f"{step.api}{' (inferred from the recording)' if step.inferred else ''}: {step.text}"
    return element("g", {"class": cls, "data-api": step.api}, title, body)


def _note(step: Note, lanes: dict[str, int], y: float) -> str:
    xs = [_x(lanes[key]) for key in step.over if key in lanes] or [_x(0)]
    width = max(max(xs) - min(xs) + LANE_W * 0.9, len(step.text) * CHAR_W + 16)
    left = max(2.0, (min(xs) + max(xs)) / 2 - width / 2)
    body = rect(left, y - 15, width, 20, cls="seq-note-box") + text(
        left + width / 2, y - 1, step.text, cls="seq-label", anchor="middle")
    return element("g", {"class": "seq-note"}, step.text, body)


def _width(generation: Generation, steps: list[Message | Note]) -> float:
    """Wide enough for every lane and every note (a note is centred over its lanes, as wide as its text)."""
    lanes = {lane.key: i for i, lane in enumerate(generation.lanes)}
    width = LANE_W * max(len(generation.lanes), 1)
    for step in steps:
        if isinstance(step, Note):
            xs = [_x(lanes[key]) for key in step.over if key in lanes] or [_x(0)]
            half = max(max(xs) - min(xs) + LANE_W * 0.9, len(step.text) * CHAR_W + 16) / 2
            width = max(width, max(2.0, (min(xs) + max(xs)) / 2 - half) + 2 * half + 4)
    return width


def sequence_svg(generation: Generation, group_id: str) -> str:
    lanes = {lane.key: i for i, lane in enumerate(generation.lanes)}
    steps = generation.steps[:MAX_STEPS]
    height = TOP + ROW_H * (len(steps) + 1) + (ROW_H if len(generation.steps) > MAX_STEPS else 0)
    parts = []
    for lane in generation.lanes:
        x = _x(lanes[lane.key])
        parts.append(rect(x - LANE_W * 0.45, 6, LANE_W * 0.9, 24, cls="seq-lane-box"))
        parts.append(text(x, 22, lane.label, cls="seq-lane", anchor="middle"))
        parts.append(line(x, 30, x, height - 4, "seq-lifeline"))
    for row, step in enumerate(steps):
        y = TOP + ROW_H * (row + 1)
        parts.append(_note(step, lanes, y) if isinstance(step, Note) else _arrow(step, lanes, y))
    if len(generation.steps) > MAX_STEPS:
        parts.append(text(8, height - 8, f"... {len(generation.steps) - MAX_STEPS} more steps", cls="seq-label"))
    width = _width(generation, steps)
    label = f"sequence diagram of generation {generation.number} of group {group_id}"
    return svg(parts, width, height, cls="sequence", label=label,
               data={"data-generation": str(generation.number), "width": f"{width:.0f}"})
