"""The IntEnums made by enum's fast constructor (rebalance_lab/protocol/fast_enum.py, issue 22 start-up): ErrorCode and
the ACL codes are the IntEnums a class statement makes from the same members."""

from __future__ import annotations

import enum
import inspect
import pickle
from enum import IntEnum
from types import ModuleType

import pytest

from rebalance_lab.protocol import errors
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.security import acls

FAST = [(errors, errors.ErrorCode), (acls, acls.ResourceType), (acls, acls.Operation), (acls, acls.Permission),
        (acls, acls.PatternType)]


def _made_by_a_class_statement(module: ModuleType, made: type[IntEnum]) -> type[IntEnum]:
    """The same members and docstring, through EnumType's class statement."""
    body = inspect.getsource(module).split(f"class {made.__name__}(IntEnumBase):\n", 1)[1].split("\n\n\n", 1)[0]
    namespace: dict[str, object] = {}
    exec(f"from enum import IntEnum\nclass {made.__name__}(IntEnum):\n{body}", namespace)
    reference = namespace[made.__name__]
    assert isinstance(reference, type) and issubclass(reference, IntEnum)
    reference.__module__ = made.__module__
    return reference


@pytest.mark.parametrize(("module", "made"), FAST, ids=[made.__name__ for _module, made in FAST])
def test_each_fast_enum_is_the_int_enum_its_class_statement_makes(module: ModuleType, made: type[IntEnum]) -> None:
    reference = _made_by_a_class_statement(module, made)
    enum._test_simple_enum(made, reference)  # type: ignore[attr-defined]  # raises at the first difference
    assert made.__doc__ == reference.__doc__ and made.__doc__ and type(made) is type(reference)
    assert [(m.name, m.value) for m in made] == [(m.name, m.value) for m in reference]
    # each member itself in the class, as the class statement stores it: not behind an enum.property (~30x slower)
    assert all(made.__dict__[m.name] is m and reference.__dict__[m.name] is reference[m.name] for m in made)


def test_error_codes_look_up_print_compare_and_pickle_as_an_int_enum() -> None:
    assert len(ErrorCode) > 120
    assert isinstance(ErrorCode.NONE, IntEnum) and int(ErrorCode.NONE) == 0
    assert ErrorCode(22) is ErrorCode.ILLEGAL_GENERATION
    assert ErrorCode["MEMBER_ID_REQUIRED"] == 79 and repr(ErrorCode.NONE) == "<ErrorCode.NONE: 0>"
    assert (str(ErrorCode.UNKNOWN_SERVER_ERROR), f"{ErrorCode.NOT_COORDINATOR}") == ("-1", "16")
    assert pickle.loads(pickle.dumps(ErrorCode.REBALANCE_IN_PROGRESS)) is ErrorCode.REBALANCE_IN_PROGRESS
    with pytest.raises(ValueError, match="999 is not a valid ErrorCode"):
        ErrorCode(999)
    assert acls.Operation(3) is acls.Operation.READ and acls.ResourceType["TOPIC"] == 2
