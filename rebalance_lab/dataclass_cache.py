"""Compiled dataclass methods kept between ``serve`` starts (start-up, issue 22).

On Python 3.11, ``@dataclass`` writes the source of each generated method (``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, a frozen class's ``__setattr__``/``__delattr__``) and compiles it with ``exec``: the
~100 dataclasses on serve's path cost about half of its imports, almost all of it in the compiler. The same
source always compiles to the same code, so :func:`install` gives the ``dataclasses`` module an ``exec`` that
looks the source up in a cache first (``dataclasses`` calls ``exec`` by its global name; the builtin is
untouched elsewhere) and :func:`save` writes the code objects used to ``__pycache__`` with ``marshal``, as
Python keeps a module's bytecode (same folder, ``PYTHONPYCACHEPREFIX`` and ``PYTHONDONTWRITEBYTECODE``
honoured, the interpreter's cache tag in the name). Only ``serve`` installs it: a process of its own.

What a cached method does is what a freshly compiled one does: the code object is the one ``exec`` would
have compiled from that source (same file name ``<string>``, no inherited future flags); the globals and
the class's names are bound by running it, every time, as before.

The same cache serves the two other compilers a class statement of serve's path runs (:func:`install`):
``typing.NamedTuple`` compiles each string annotation into a ``ForwardRef`` (``compile(..., 'eval')``; the
process's first ``compile`` also builds the ``ast`` module's ~120 types, ~9 million instructions) and
``collections.namedtuple`` ``eval``s its ``__new__``. Their expressions are kept beside the methods' sources,
under a key no source can start with (a NUL byte).
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.util
import marshal
import os
import sys
from types import CodeType, ModuleType
from typing import Any


class _InspectOnUse:
    """What ``dataclasses`` holds as ``inspect`` when this module imported it first: the real module, imported on
    its first use. ``dataclasses`` imports ``inspect`` (with ``ast``, ``dis``, ``tokenize``...: ~10-15 ms of a
    serve start, issue 22) only to call ``inspect.signature`` when it makes a class, and on 3.11 :func:`install`
    replaces even that; so serve's main thread imports none of them before its first answer, and the asyncio
    shell's import thread imports them beside it (asyncio needs them)."""

    def __getattr__(self, name: str) -> Any:
        import inspect

        return getattr(inspect, name)


def _import_dataclasses() -> ModuleType:
    """``dataclasses`` imported without ``inspect`` (as :class:`_InspectOnUse`) if neither is imported yet: its
    ``import inspect`` finds a stand-in in ``sys.modules``, removed as soon as that import is done (no other thread
    runs yet when serve imports this module; a process that imported either first keeps what it had)."""
    if "dataclasses" in sys.modules or "inspect" in sys.modules:
        import dataclasses
        return dataclasses
    stand_in = ModuleType("inspect")
    sys.modules["inspect"] = stand_in
    try:
        import dataclasses
    finally:
        if sys.modules.get("inspect") is stand_in:
            del sys.modules["inspect"]
    dataclasses.inspect = _InspectOnUse()  # type: ignore[attr-defined]
    return dataclasses


dataclasses = _import_dataclasses()
_compiled: dict[str, CodeType] = {}  # source -> code: what the file held, and what this process compiled
_used: set[str] = set()  # the sources this process ran: what is saved (an edited class's old source drops out)
_new = False
_MAGIC = importlib.util.MAGIC_NUMBER


def _path() -> str:
    # the bytecode file of a module that would sit beside this one: __pycache__/dataclass_methods.<tag>.pyc
    return importlib.util.cache_from_source(os.path.join(os.path.dirname(__file__), "dataclass_methods.py"))


_EVAL = "\0eval\0"  # the key prefix of an expression (eval mode): no source holds a NUL byte


def _code(key: str, source: str, mode: str) -> CodeType:
    global _new
    code = _compiled.get(key)
    _used.add(key)
    if code is None:
        # dont_inherit: the flags the callers' own compile would use (dataclasses, typing and collections have no
        # __future__ import), not this module's
        code = _compiled[key] = builtins.compile(source, "<string>", mode, dont_inherit=True)
        _new = True
    return code


def _exec(source: Any, globals_: Any = None, locals_: Any = None) -> None:
    if not isinstance(source, str):
        builtins.exec(source, globals_, locals_)
        return
    builtins.exec(_code(source, source, "exec"), globals_, locals_)


def _compile(source: Any, filename: Any, mode: Any, *args: Any, **kwargs: Any) -> Any:
    """typing's ``compile``: ``ForwardRef`` compiles ``compile(annotation, '<string>', 'eval')``."""
    if isinstance(source, str) and filename == "<string>" and mode == "eval" and not args and not kwargs:
        return _code(_EVAL + source, source, "eval")
    return builtins.compile(source, filename, mode, *args, **kwargs)


def _eval(source: Any, globals_: Any = None, locals_: Any = None) -> Any:
    """collections' ``eval``: ``namedtuple`` evaluates its ``__new__``'s lambda from source."""
    if isinstance(source, str):
        source = _code(_EVAL + source, source, "eval")
    return builtins.eval(source, globals_, locals_)


def install() -> None:
    """Read the cache (if any) and route the ``dataclasses`` module's ``exec`` through it."""
    if vars(dataclasses).get("exec") is _exec:
        return
    try:
        with open(_path(), "rb") as file:
            data = file.read()
        # code objects are valid only for the bytecode they were compiled to: a .pyc's magic number says which.
        # marshal.loads on the bytes read at once: marshal.load(file) asks the file object for every item it
        # reads, ~6x the CPU (about 20 ms of a serve start for ~500 methods)
        loaded = marshal.loads(memoryview(data)[len(_MAGIC):]) if data[:len(_MAGIC)] == _MAGIC else None
        if isinstance(loaded, dict):
            _compiled.update((k, v) for k, v in loaded.items() if isinstance(k, str) and isinstance(v, CodeType))
    except (OSError, ValueError, EOFError, TypeError):
        pass  # no cache yet, another interpreter's, or damaged: compile as usual
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    # typing and collections call compile and eval by their global names (NamedTuple's annotations, namedtuple's
    # __new__): a module global of that name is found before the builtin, in that module only
    import collections
    import typing

    typing.compile = _compile  # type: ignore[attr-defined]
    collections.eval = _eval  # type: ignore[attr-defined]
    if sys.version_info[:2] == (3, 11):  # the docstring code below is 3.11's _process_class
        dataclasses.inspect = _DeferredSignatures()  # type: ignore[attr-defined]
    _install_is_type()


_FIRST_NAMES: dict[str, tuple[str | None, str] | tuple[()]] = {}  # annotation -> its regular expression's groups


def _is_type(annotation: str, cls: type, a_module: Any, a_type: Any, is_type_predicate: Any) -> bool:
    """``dataclasses._is_type`` with the match of its regular expression kept per annotation string: asked whether
    each string annotation names ClassVar, InitVar or KW_ONLY (three times a field, ~1,400 times before serve's
    first answer), it matched the same few dozen strings again each time (~5 M instructions, issue 22). What it
    then looks up in the class's module is looked up every time, as there."""
    first = _FIRST_NAMES.get(annotation)
    if first is None:
        match = dataclasses._MODULE_IDENTIFIER_RE.match(annotation)
        first = _FIRST_NAMES[annotation] = (match.group(1), match.group(2)) if match else ()
    if not first:
        return False
    qualifier, name = first
    home = sys.modules.get(cls.__module__)
    if qualifier:  # "dataclasses.InitVar": only if that qualifier is a_module in the class's module
        if not (home and home.__dict__.get(qualifier) is a_module):
            return False
        home = sys.modules.get(a_type.__module__)
    names = home.__dict__ if home is not None else None
    return bool(names and is_type_predicate(names.get(name), a_module))


def _install_is_type() -> None:
    # only over the function this one restates (3.11-3.13's: same arguments, same regular expression)
    original = getattr(dataclasses, "_is_type", None)
    code = getattr(original, "__code__", None)
    if (code is not None and code.co_varnames[:5] == ("annotation", "cls", "a_module", "a_type", "is_type_predicate")
            and hasattr(dataclasses, "_MODULE_IDENTIFIER_RE")):
        dataclasses._is_type = _is_type  # type: ignore[attr-defined]


class _LazyDoc:
    """The docstring ``@dataclass`` gives a class without one (``Name(field: 'type', ...)``), made when first
    read: 3.11's ``_process_class`` makes it with ``inspect.signature(cls)`` for every such class, ~40% of a
    cached dataclass's cost, and serve's ~100 classes are made at start while their docstrings are read by
    help() alone. ``type.__doc__`` calls a descriptor kept in the class's ``__doc__``, as an instance does."""

    __slots__ = ("_cls",)

    def __init__(self, cls: type) -> None:
        self._cls = cls

    def __get__(self, instance: object, owner: type | None = None) -> str:
        import inspect

        cls = self._cls
        try:  # what _process_class does, to the letter
            text_sig = str(inspect.signature(cls)).replace(" -> None", "")
        except (TypeError, ValueError):
            text_sig = ""
        doc = cls.__name__ + text_sig
        with contextlib.suppress(AttributeError, TypeError):
            cls.__doc__ = doc  # made once
        return doc


class _DeferredText(str):
    """``str(inspect.signature(cls)).replace(' -> None', '')`` in ``_process_class``: ``cls.__name__ + this``
    calls this subclass's ``__radd__`` first, which hands the class a :class:`_LazyDoc` instead."""

    cls: type

    def replace(self, *_args: Any, **_kwargs: Any) -> _DeferredText:
        return self

    def __radd__(self, name: str) -> Any:
        return _LazyDoc(self.cls)


class _DeferredSignature:
    __slots__ = ("_cls",)

    def __init__(self, cls: type) -> None:
        self._cls = cls

    def __str__(self) -> str:
        text = _DeferredText()
        text.cls = self._cls
        return text


class _DeferredSignatures:
    """What ``dataclasses`` sees as its ``inspect`` module: ``signature`` deferred, the rest the real one's."""

    def signature(self, cls: type) -> _DeferredSignature:
        return _DeferredSignature(cls)

    def __getattr__(self, name: str) -> Any:
        import inspect

        return getattr(inspect, name)


def save() -> None:
    """Write the compiled methods if this process compiled any new ones (quietly skipped when not writable)."""
    global _new
    if not _new or sys.dont_write_bytecode:
        return
    path = _path()
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "wb") as file:
            file.write(_MAGIC)
            marshal.dump({source: _compiled[source] for source in _used}, file)
        os.replace(temporary, path)  # whole or not at all, whichever serve writes last
        _new = False
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
