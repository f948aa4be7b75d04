"""IntEnums made by the enum module's own fast constructor (start-up, issue 22).

``class Codes(IntEnum)`` runs EnumType's class statement, ~85 thousand instructions per member on Python 3.11: serve's
start to its first answer made ~180 such members (error codes, ACL codes). ``enum._simple_enum``, with which the
standard library makes ``http.HTTPStatus`` and ``re.RegexFlag``, makes the same class from a plain one at about half
the cost. A class written ``@int_enum`` / ``class Codes(IntEnumBase)`` is that IntEnum: the type checker sees
``class Codes(IntEnum)``; at run time the class statement makes a plain class and ``int_enum`` converts it. Each such
class has a docstring: without one, the fast constructor would give it "An enumeration." where the class statement
gives None. tests/unit/protocol/test_errors.py compares each with the class statement's through
``enum._test_simple_enum``, the standard library's check of its own.

The fast constructor leaves each member behind an ``enum.property`` in the class, where the class statement puts the
member itself: ``ErrorCode.NONE`` then cost ~0.2 us, 30 times a plain attribute, and the classic coordinator reads
such codes several times per JoinGroup and SyncGroup (issue 22). :func:`int_enum` puts the members themselves there.
"""

from __future__ import annotations

import enum
from enum import IntEnum
from typing import TYPE_CHECKING, TypeVar

_E = TypeVar("_E", bound=type[IntEnum])

if TYPE_CHECKING:
    IntEnumBase = IntEnum

    def int_enum(cls: _E) -> _E:
        return cls
else:
    IntEnumBase = object
    _simple = enum._simple_enum(IntEnum)

    def int_enum(cls):
        made = _simple(cls)
        for name, member in made.__members__.items():
            type.__setattr__(made, name, member)  # the member, as the class statement stores it (EnumType forbids)
        return made
