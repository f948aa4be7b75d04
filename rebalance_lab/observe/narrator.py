"""``serve --explain``: the coordinator's steps told for people learning the protocol.

Classic groups are told from :mod:`.explain`'s stories (a block per rebalance: the state changes, the
vote table, candidates, votes and the flavor's tie rule, the leader, the assignment and what moved)
and notes (the reasons), in :mod:`.narrate_classic`'s words; KIP-848 consumer groups by
:mod:`.narrate_consumer` (epoch bumps and their reasons, targets, revocations). Faults are told
before their effect (the fault controller records them first).

Every line fits :data:`WIDTH` columns: longer text wraps under the time. Colour only on a terminal,
and never when ``NO_COLOR`` is set (https://no-color.org).
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from typing import IO

from rebalance_lab.coordinator.classic import records as r
from rebalance_lab.coordinator.consumer.records import ConsumerRecord
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.transactions.service import transactions_of
from rebalance_lab.coordinator.world import World
from rebalance_lab.observe import narrate_classic
from rebalance_lab.observe.explain import Explainer
from rebalance_lab.observe.explain_consumer import Change, ConsumerExplainer
from rebalance_lab.observe.narrate_classic import Line
from rebalance_lab.observe.narrate_classic import short as short
from rebalance_lab.observe.narrate_consumer import ConsumerNarration, short_member, tps_text

WIDTH = 100  # columns, time prefix included
INDENT = 12  # continuation lines start under the text after ``[  12.345s] ``
SERVICE_KEY = "narrator"

_STYLES = {"head": "\033[1m", "bad": "\033[31m", "time": "\033[2m", "group": "\033[36m"}
_RESET = "\033[0m"


def wants_colour(out: IO[str]) -> bool:
    """A terminal that did not ask for no colour."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())


class Narrator:
    def __init__(self, out: IO[str], now_ms: Callable[[], int], flavor: str = "kafka-4",
                 colour: bool | None = None) -> None:
        self._out = out
        self._start = now_ms()
        self._colour = wants_colour(out) if colour is None else colour
        self.explainer = Explainer(flavor)
        self.consumer_explainer = ConsumerExplainer()
        self._consumer = ConsumerNarration()

    def _paint(self, text: str, style: str) -> str:
        return f"{_STYLES[style]}{text}{_RESET}" if self._colour and style else text

    def _prefix(self, ts_ms: int, group: str) -> str:
        return f"[{(ts_ms - self._start) / 1000:8.3f}s] {group or '*'}: "

    def _emit(self, ts_ms: int, group: str, said: list[Line]) -> None:
        """The first line after the time and group; block rows indented under it; all wrapped."""
        text: list[str] = []
        prefix = self._prefix(ts_ms, group)
        for i, line in enumerate(said):
            first = prefix if i == 0 else " " * (INDENT + (2 if line.row else 0))
            rest = " " * (INDENT + (4 if line.row else 2))
            wrapped = textwrap.wrap(line.text, WIDTH, initial_indent=first, subsequent_indent=rest,
                                    break_on_hyphens=False, break_long_words=True)
            if i == 0 and wrapped:
                head = wrapped[0][len(prefix):]
                wrapped[0] = self._paint(prefix[:INDENT - 1], "time") + " " + \
                    self._paint(group or "*", "group") + ": " + self._paint(head, line.style)
                wrapped[1:] = [self._paint(w, line.style) for w in wrapped[1:]]
            else:
                wrapped = [self._paint(w, line.style) for w in wrapped]
            text.extend(wrapped)
        self._out.write("".join(t + "\n" for t in text))
        self._out.flush()

    def say(self, ts_ms: int, group: str, text: str) -> None:
        self._emit(ts_ms, group, [Line(text)])

    def _on_consumer(self, record: ConsumerRecord) -> None:
        """The record's own lines; the group state change and a reconciled epoch's block under the last."""
        texts = self._consumer.describe(record)
        change = self.consumer_explainer.on_record(record)
        rows = consumer_rows(change) if change is not None else []
        if rows and not texts:
            texts, rows = [rows[0].text], rows[1:]
        for text in texts[:-1]:
            self.say(record.ts_ms, record.group_id, text)
        if texts:
            self._emit(record.ts_ms, record.group_id, [Line(texts[-1]), *rows])

    def on_record(self, record: r.GroupRecord) -> None:
        if isinstance(record, ConsumerRecord):
            self._on_consumer(record)
            return
        for told in self.explainer.on_record(record):
            said = narrate_classic.lines(told)
            if said:
                self._emit(record.ts_ms, record.group_id, said)


def consumer_rows(change: Change) -> list[Line]:
    """Under a consumer group's record: its group state change, and the block of an epoch now reconciled."""
    rows = [Line(f"group state {change.before} -> {change.after}", row=True)]
    story = change.reconciled
    if story is None:
        return rows
    took = f" in {story.reconciled_ms - story.started_ms} ms" if story.reconciled_ms is not None else ""
    rows.append(Line(f"epoch {story.epoch} reconciled{took}: every member owns its target "
                     f"({story.assignor or 'no'} assignor)", "head", row=True))
    width = max((len(short_member(m)) for m in story.target), default=0)
    for member_id, target in story.target.items():
        revoked = story.revoked.get(member_id)
        extra = f" (revoked {tps_text(revoked)} first)" if revoked else ""
        rows.append(Line(f"  {short_member(member_id):<{width}}  {tps_text(target)}{extra}", row=True))
    rows.append(Line(f"moved: {tps_text(story.moved)}" if story.moved else "nothing moved", row=True))
    return rows


def install(world: World, out: IO[str]) -> Narrator:
    narrator = Narrator(out, world.now_ms, str(world.config.flavor))
    world.services[SERVICE_KEY] = narrator  # the fault controller leaves its lines to us
    service_of(world).subscribe(narrator.on_record)
    transactions_of(world).listeners.append(lambda e: narrator.say(e.ts_ms, e.transactional_id, e.narration()))
    return narrator
