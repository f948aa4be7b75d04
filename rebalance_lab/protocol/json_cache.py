"""The package's JSON data files read through a bytecode-style cache (start-up, issue 22).

Every ``serve`` start reads Kafka's message schemas (``schemas/kafka_messages.json``, ~70 KB) before its first
answer: importing ``json`` and parsing the file cost ~11 million instructions of that path, ``marshal`` reading the
same values ~4 million. So :func:`load` keeps what it parsed in ``__pycache__`` as Python keeps a module's bytecode
(``PYTHONPYCACHEPREFIX`` and ``PYTHONDONTWRITEBYTECODE`` honoured, the interpreter's cache tag and magic number in
the file), checked against the JSON file's modification time and size as a ``.pyc`` is checked against its source,
and ``json`` is imported only when the file must be parsed. The values are the ones ``json.load`` gives: dicts (in
the file's order), lists, strings, numbers, booleans and None, which ``marshal`` writes and reads unchanged.
"""

from __future__ import annotations

import contextlib
import importlib.util
import marshal
import os
import sys
from typing import Any

_MAGIC = importlib.util.MAGIC_NUMBER


def _cache_path(path: str) -> str:
    # the bytecode file of a module named like the JSON file: __pycache__/kafka_messages.json.<tag>.pyc
    return importlib.util.cache_from_source(path + ".py")


def load(path: str) -> Any:
    """The JSON value of the file at ``path`` (UTF-8), from the cache when it was made from the file as it is."""
    stat = os.stat(path)
    stamp = (stat.st_mtime_ns, stat.st_size)
    cached = _read(_cache_path(path), stamp)
    if cached is not None:
        return cached[0]
    import json  # only here: a start with a cache imports no json (issue 22)

    with open(path, encoding="utf-8") as file:
        value = json.load(file)
    _write(_cache_path(path), stamp, value)
    return value


def _read(cache: str, stamp: tuple[int, int]) -> tuple[Any] | None:
    """(value,) from the cache file if it holds the file of ``stamp`` for this interpreter, else None."""
    try:
        with open(cache, "rb") as file:
            data = file.read()
        if data[:len(_MAGIC)] != _MAGIC:
            return None
        loaded = marshal.loads(memoryview(data)[len(_MAGIC):])
    except (OSError, ValueError, EOFError, TypeError):
        return None  # none yet, or damaged: parse the file
    if not (isinstance(loaded, tuple) and len(loaded) == 3 and loaded[:2] == stamp):
        return None
    return (loaded[2],)


def _write(cache: str, stamp: tuple[int, int], value: Any) -> None:
    """Keep ``value`` for the next process (quietly skipped when bytecode is not written or cannot be)."""
    if sys.dont_write_bytecode:
        return
    temporary = f"{cache}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        with open(temporary, "wb") as file:
            file.write(_MAGIC)
            marshal.dump((*stamp, value), file)
        os.replace(temporary, cache)  # whole or not at all, whichever process writes last
    except (OSError, ValueError):  # ValueError: a value marshal cannot write (none from JSON)
        with contextlib.suppress(OSError):
            os.unlink(temporary)
