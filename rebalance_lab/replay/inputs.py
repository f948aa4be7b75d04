"""Input paths of a replay: files, directories (every file below) and glob patterns, expanded in the driver.

The expansion is deterministic (sorted, first occurrence kept) so that every runner
reads the same files in the same order, and a path that names nothing is an error
the command line reports before any work starts.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

_GLOB_CHARS = frozenset("*?[")


class InputError(ValueError):
    """An input that names no readable file; the message says which and why."""


def expand_inputs(inputs: Sequence[str]) -> list[str]:
    """Every input file, as an absolute path: tasks on a cluster do not share the driver's working directory."""
    if not inputs:
        raise InputError("no input given")
    seen: dict[str, None] = {}
    for given in inputs:
        found = list(_expand_one(given))
        if not found:
            raise InputError(f"{given}: no input files there")
        for path in found:
            seen.setdefault(path, None)
    return list(seen)


def _expand_one(given: str) -> Iterator[str]:
    if _GLOB_CHARS & set(given):
        for match in sorted(glob.glob(given, recursive=True)):
            yield from _expand_existing(Path(match))
        return
    path = Path(given)
    if not path.exists():
        raise InputError(f"{given}: no such file or directory")
    yield from _expand_existing(path)


def _expand_existing(path: Path) -> Iterator[str]:
    if path.is_dir():
        # Skip hidden and bookkeeping files (".crc", Spark's "_SUCCESS"), as Hadoop's input formats do.
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
            for name in sorted(files):
                if not name.startswith((".", "_")):
                    yield from _checked(Path(root) / name)
        return
    yield from _checked(path)


def _checked(path: Path) -> Iterator[str]:
    if not path.is_file():
        return
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: not readable")
    yield str(path.resolve())
