"""serve's compiled-dataclass-methods cache (rebalance_lab/dataclass_cache.py, issue 22 start-up): a class made
from cached code behaves as one compiled afresh, and a second process reads what the first one saved."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

# A frozen dataclass with a default, a factory and a ClassVar, made in a fresh interpreter with the cache
# installed; prints what it compiled and how the class behaves.
_SCRIPT = """
import dataclasses, sys
from typing import ClassVar
from rebalance_lab import dataclass_cache
dataclass_cache.install()
before = len(dataclass_cache._compiled)

@dataclasses.dataclass(frozen=True)
class Member:
    kind: ClassVar[str] = "member"
    member_id: str
    generation: int = -1
    protocols: tuple[str, ...] = dataclasses.field(default_factory=tuple)

a, b = Member("m-1", 3, ("range",)), Member("m-1", 3, ("range",))
try:
    a.generation = 4
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
print(before, dataclass_cache._new, repr(a), a == b, hash(a) == hash(b), frozen, Member("m-2").generation,
      Member.__init__.__annotations__, Member.__doc__)
dataclass_cache.save()
"""


def _run(pycache: Path, *extra_env: tuple[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"PYTHONPYCACHEPREFIX": str(pycache), **dict(extra_env)})
    return subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def _without_cache() -> str:
    script = _SCRIPT.replace("dataclass_cache.install()", "").replace("dataclass_cache.save()", "")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip()


def test_a_dataclass_made_from_cached_code_behaves_as_one_compiled_afresh(tmp_path: Path) -> None:
    first, second = _run(tmp_path), _run(tmp_path)
    assert first.split(" ", 2)[:2] == ["0", "True"]  # nothing cached yet: compiled, and saved
    assert int(second.split(" ", 1)[0]) > 0 and second.split(" ", 2)[1] == "False"  # read back, nothing compiled
    expected = _without_cache().split(" ", 2)[2]
    assert first.split(" ", 2)[2] == second.split(" ", 2)[2] == expected
    assert "Member(member_id='m-1', generation=3, protocols=('range',)) True True True -1" in expected


def test_nothing_is_written_when_bytecode_is_not_to_be_written(tmp_path: Path) -> None:
    out = _run(tmp_path, ("PYTHONDONTWRITEBYTECODE", "1"))
    assert out.split(" ", 2)[:2] == ["0", "True"]
    assert not list(tmp_path.rglob("dataclass_methods*"))


def test_a_damaged_cache_file_is_ignored(tmp_path: Path) -> None:
    _run(tmp_path)
    (saved,) = tmp_path.rglob("dataclass_methods*")
    saved.write_bytes(b"not marshal data")
    assert _run(tmp_path).split(" ", 2)[:2] == ["0", "True"]


def test_a_cache_written_for_another_bytecode_version_is_ignored(tmp_path: Path) -> None:
    _run(tmp_path)
    (saved,) = tmp_path.rglob("dataclass_methods*")
    content = saved.read_bytes()
    saved.write_bytes(b"\x00\x00\r\n" + content[4:])  # same code objects, another interpreter's magic number
    assert _run(tmp_path).split(" ", 2)[:2] == ["0", "True"]


_DOC_SCRIPT = """
import dataclasses, inspect, pydoc
from rebalance_lab import dataclass_cache
made = []
real = inspect.signature
inspect.signature = lambda *args, **kwargs: made.append(args) or real(*args, **kwargs)
dataclass_cache.install()

@dataclasses.dataclass(frozen=True)
class Offset:
    topic: str
    partition: int = 0

@dataclasses.dataclass
class Documented:
    '''Its own words.'''
    value: int

during = len(made)
print(during, repr(Offset.__doc__), repr(Offset("t").__doc__), repr(Documented.__doc__), repr(inspect.getdoc(Offset)),
      "Offset(topic" in pydoc.render_doc(Offset))
"""


def test_a_dataclass_docstring_is_made_when_read_and_reads_as_dataclasses_makes_it() -> None:
    """3.11's @dataclass computes ``inspect.signature(cls)`` for the docstring of every class without one; with
    the cache installed that happens when the docstring is first read (help, pydoc), with the same text."""
    with_cache = subprocess.run([sys.executable, "-c", _DOC_SCRIPT], capture_output=True, text=True,
                                check=True).stdout.strip()
    plain = subprocess.run([sys.executable, "-c", _DOC_SCRIPT.replace("dataclass_cache.install()", "")],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert with_cache.split(" ", 1)[0] == "0"  # no signature computed while the classes were made
    assert plain.split(" ", 1)[0] == "1"
    assert with_cache.split(" ", 1)[1] == plain.split(" ", 1)[1]
    assert "'Offset(topic: str, partition: int = 0)'" in plain and plain.endswith("True")


# A NamedTuple of string annotations (typing compiles each into a ForwardRef) and a namedtuple (collections evals
# its __new__), made with the cache installed; prints how many times the builtin compiler ran and how they behave.
_NAMED_TUPLE_SCRIPT = """
from __future__ import annotations
import builtins, collections, typing
from rebalance_lab import dataclass_cache
dataclass_cache.install()
compiled = []
real_compile, real_eval = builtins.compile, builtins.eval
builtins.compile = lambda *args, **kwargs: compiled.append(args[0]) or real_compile(*args, **kwargs)
builtins.eval = lambda *args, **kwargs: compiled.append(args[0]) or real_eval(*args, **kwargs)

class Joined(typing.NamedTuple):
    member_id: str
    generation: int = -1
    protocols: tuple[str, ...] = ()

Pair = collections.namedtuple("Pair", "left right", defaults=(0,))
builtins.compile, builtins.eval = real_compile, real_eval
ref = typing.get_type_hints(Joined)
print(len([c for c in compiled if isinstance(c, str)]), repr(Joined("m", 2)), Joined("m") == ("m", -1, ()),
      Joined._fields, Joined.__annotations__, ref, repr(Pair(1)), Pair._field_defaults, Joined.__new__.__defaults__)
dataclass_cache.save()
"""


def test_named_tuples_made_from_cached_code_compile_nothing_and_behave_as_ones_compiled_afresh(
        tmp_path: Path) -> None:
    """typing.NamedTuple's ForwardRefs and namedtuple's __new__ come from the cache a previous serve saved: no
    compile (the first one of a process also builds the ast module's types), the same classes."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path)

    def run(script: str) -> list[str]:
        return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                              check=True).stdout.strip().split(" ", 1)

    first, second = run(_NAMED_TUPLE_SCRIPT), run(_NAMED_TUPLE_SCRIPT)
    plain = run(_NAMED_TUPLE_SCRIPT.replace("dataclass_cache.install()", "").replace("dataclass_cache.save()", ""))
    assert int(first[0]) > 0 and second[0] == "0"  # compiled once, then read from the saved cache
    assert first[1] == second[1] == plain[1]
    assert "Joined(member_id='m', generation=2, protocols=()) True ('member_id', 'generation', 'protocols')" in plain[1]


# Fields whose string annotations name ClassVar, InitVar and KW_ONLY in each way dataclasses recognises (and some it
# does not), made with or without the cache installed; prints each field's kind and the class's __init__ signature.
_KINDS_SCRIPT = """
from __future__ import annotations
import dataclasses, sys, typing
import typing as t
from dataclasses import KW_ONLY, InitVar
from typing import ClassVar
from rebalance_lab import dataclass_cache
if sys.argv[1] == "cached":
    dataclass_cache.install()

@dataclasses.dataclass
class Kinds:
    a: ClassVar[int] = 1
    b: typing.ClassVar[int] = 2
    c: t.ClassVar[int] = 3
    d: InitVar[int] = 4
    e: dataclasses.InitVar[str] = "e"
    f: int = 5
    g: "  ClassVar [int]" = 6
    _: KW_ONLY
    h: list[int] | None = None
    i: dict[str, ClassVar] = dataclasses.field(default_factory=dict)

    def __post_init__(self, d: int, e: str) -> None:
        pass

print([(f.name, f._field_type.name) for f in dataclasses.fields(Kinds)], sorted(Kinds.__dataclass_fields__),
      Kinds.__init__.__code__.co_varnames, Kinds.__init__.__kwdefaults__, Kinds.__match_args__)
"""


def test_string_annotations_name_classvar_initvar_and_kw_only_as_without_the_cache() -> None:
    """The cache's _is_type keeps its regular expression's match per annotation string; what it then looks up is
    looked up as dataclasses does, so every field is of the kind it is without the cache."""
    def run(mode: str) -> str:
        return subprocess.run([sys.executable, "-c", _KINDS_SCRIPT, mode], capture_output=True, text=True,
                              check=True, cwd=tempfile.gettempdir()).stdout

    cached, plain = run("cached"), run("plain")
    assert cached == plain
    # a, b, c are class variables (not fields, not in __init__); d, e init-only variables (in __init__, not fields)
    assert plain.startswith("[('f', '_FIELD'), ('g', '_FIELD'), ('h', '_FIELD'), ('i', '_FIELD')]")
    assert "('self', 'd', 'e', 'f', 'g', 'h', 'i') {'h': None, 'i': <factory>} ('d', 'e', 'f', 'g')" in plain
