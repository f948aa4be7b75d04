"""The packaged scenarios (``rebalance_lab/scenarios/library/``): teaching material and the differential suite.

A scenario is named by its file's stem (``protocol_tie_break``; the KIP-848 ones live in ``kip848/`` and
their names start with ``kip848_``). :func:`find` takes a name or a path to any YAML file, so ``play`` and
``diff`` accept both. An unknown name is an :class:`UnknownScenario` that suggests the closest names.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import yaml

from rebalance_lab.scenarios.model import ScenarioError

LIBRARY = Path(__file__).resolve().parent / "library"
_SPEC_REFERENCE = re.compile(r"\s*\((?:spec|Scenario|scenario)[^()]*(?:\([^()]*\)[^()]*)*\)|^spec .*? -- ")


class UnknownScenario(ScenarioError):
    def __init__(self, name: str, suggestions: list[str]) -> None:
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
        super().__init__(f"no scenario named {name!r}{hint} (rebalance-lab play --list shows them all)")
        self.suggestions = suggestions


def paths() -> list[Path]:
    """Every packaged scenario file, sorted by name."""
    return sorted(LIBRARY.rglob("*.yaml"), key=lambda p: p.stem)


def names() -> list[str]:
    return [p.stem for p in paths()]


def path_of(name: str) -> Path:
    """The packaged scenario called ``name``; :class:`UnknownScenario` with suggestions otherwise."""
    for path in paths():
        if path.stem == name:
            return path
    raise UnknownScenario(name, difflib.get_close_matches(name, names(), n=3, cutoff=0.5))


def find(name_or_path: str | Path) -> Path:
    """A path to an existing file as it is; anything else is a packaged scenario's name."""
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") or candidate.is_file():
        if not candidate.is_file():
            raise ScenarioError(f"no such scenario file: {candidate}")
        return candidate
    return path_of(str(name_or_path))


def summary(path: Path) -> str:
    """One sentence of what the scenario teaches: its ``lesson``, else the first sentence of its description."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    lesson = data.get("lesson") if isinstance(data, dict) else None
    if lesson:
        return " ".join(str(lesson).split())
    text = " ".join(str(data.get("description", "") if isinstance(data, dict) else "").split())
    text = _SPEC_REFERENCE.sub("", text).strip()
    first = re.split(r"(?<=[.;:])\s", text, maxsplit=1)[0].rstrip(";:")
    return first[:1].upper() + first[1:] if first else "(no description)"
