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
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not _skipped(d))
            for name in sorted(files):
                if not _skipped(name):
                    yield from _checked(Path(root) / name)
        return
    yield from _checked(path)


def _skipped(name: str) -> bool:
    """A hidden or bookkeeping name in a directory walk (".crc", Spark's "_SUCCESS" and "_temporary"), which
    Hadoop's input formats skip by their leading "." or "_". Kafka's internal topics start with two underscores, and
    their dumps are named after them ("__consumer_offsets-12.txt"): those are inputs, not bookkeeping."""
    return name.startswith(".") or (name.startswith("_") and not name.startswith("__"))


def _checked(path: Path) -> Iterator[str]:
    if not path.is_file():
        return
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: not readable")
    yield str(path.resolve())
