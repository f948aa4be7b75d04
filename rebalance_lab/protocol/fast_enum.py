"""IntEnums made by the enum module's own fast constructor (start-up, issue 22).

``class Codes(IntEnum)`` runs EnumType's class statement, ~85 thousand instructions per member on Python 3.11: serve's
start to its first answer made ~180 such members (error codes, ACL codes). ``enum._simple_enum``, with which the
standard library makes ``http.HTTPStatus`` and ``re.RegexFlag``, makes the same class from a plain one at about half
the cost. A class written ``@int_enum`` / ``class Codes(IntEnumBase)`` is that IntEnum: the type checker sees
``class Codes(IntEnum)``; at run time the class statement makes a plain class and ``int_enum`` converts it. Each such
class has a docstring: without one, the fast constructor would give it "An enumeration." where the class statement
gives None. tests/unit/protocol/test_errors.py compares each with the class statement's through
``enum._test_simple_enum``, the standard library's check of its own.
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
    int_enum = enum._simple_enum(IntEnum)
