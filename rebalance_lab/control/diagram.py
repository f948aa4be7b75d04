"""The last rebalance as an SVG sequence diagram: one lifeline per member and the coordinator, one row per step.

The steps come from ``observe.sequence`` (requests and answers drawn as arrows, answers dashed, arrows the
recording only implies dotted, notes as boxes over their lanes). Built with the replay report's SVG helpers,
which escape every text, so member and client ids can never become markup.
"""

from __future__ import annotations

from rebalance_lab.observe.sequence import Generation, Lane, Message, Note
from rebalance_lab.replay.svg import element, line, rect, svg, text

LANE_W = 190.0  # space per lifeline
ROW_H = 26.0
TOP = 44.0  # lane headers
CHAR_W = 6.2  # the width of one character of an 11 px label, about
MAX_STEPS = 120  # a huge group's rebalance shows its first steps and says how many more there were
LANES_SHOWN = 10  # member lifelines drawn (besides the coordinator's); a frame of a big group stays small


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


def _drawn(generation: Generation) -> tuple[list[Lane], list[Message | Note]]:
    """The coordinator and the first ``LANES_SHOWN`` members, and the first ``MAX_STEPS`` steps between them."""
    lanes = generation.lanes[: LANES_SHOWN + 1]
    keys = {lane.key for lane in lanes}
    steps = [step for step in generation.steps
             if all(key in keys for key in (step.over if isinstance(step, Note) else (step.sender, step.receiver)))]
    return lanes, steps[:MAX_STEPS]


def sequence_svg(generation: Generation, group_id: str) -> str:
    shown, steps = _drawn(generation)
    drawn = Generation(generation.number, shown, steps)
    lanes = {lane.key: i for i, lane in enumerate(shown)}
    left_out = len(generation.steps) - len(steps)
    height = TOP + ROW_H * (len(steps) + 1) + (ROW_H if left_out else 0)
    parts = []
    for lane in shown:
        x = _x(lanes[lane.key])
        parts.append(rect(x - LANE_W * 0.45, 6, LANE_W * 0.9, 24, cls="seq-lane-box"))
        parts.append(text(x, 22, lane.label, cls="seq-lane", anchor="middle"))
        parts.append(line(x, 30, x, height - 4, "seq-lifeline"))
    for row, step in enumerate(steps):
        y = TOP + ROW_H * (row + 1)
        parts.append(_note(step, lanes, y) if isinstance(step, Note) else _arrow(step, lanes, y))
    if left_out:
        hidden = len(generation.lanes) - len(shown)
        among = f" (of {hidden} more members, not drawn)" if hidden else ""
        parts.append(text(8, height - 8, f"... {left_out} more steps{among}", cls="seq-label"))
    width = _width(drawn, steps)
    label = f"sequence diagram of generation {generation.number} of group {group_id}"
    return svg(parts, width, height, cls="sequence", label=label,
               data={"data-generation": str(generation.number), "width": f"{width:.0f}"})
