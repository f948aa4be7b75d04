"""ErrorCode, made by enum's fast constructor (rebalance_lab/protocol/errors.py, issue 22 start-up), is the IntEnum a
class statement makes from the same members."""

from __future__ import annotations

import enum
import inspect
import pickle
from enum import IntEnum

import pytest

from rebalance_lab.protocol import errors
from rebalance_lab.protocol.errors import ErrorCode


def _made_by_a_class_statement() -> type[IntEnum]:
    """The same members and docstring as ErrorCode, through EnumType's class statement."""
    source = inspect.getsource(errors).split("class ErrorCode(_IntEnumBase):\n", 1)[1].split("\n\n\nclass ", 1)[0]
    namespace: dict[str, object] = {}
    exec(f"from enum import IntEnum\nclass ErrorCode(IntEnum):\n{source}", namespace)
    made = namespace["ErrorCode"]
    assert isinstance(made, type) and issubclass(made, IntEnum)
    return made


def test_error_code_is_the_int_enum_its_class_statement_makes() -> None:
    reference = _made_by_a_class_statement()
    reference.__module__ = ErrorCode.__module__
    enum._test_simple_enum(ErrorCode, reference)  # type: ignore[attr-defined]  # raises at the first difference
    assert ErrorCode.__doc__ == reference.__doc__ and ErrorCode.__doc__
    assert [(m.name, m.value) for m in ErrorCode] == [(m.name, m.value) for m in reference]
    assert len(ErrorCode) == len(reference) > 120


def test_error_codes_look_up_print_compare_and_pickle_as_an_int_enum() -> None:
    assert isinstance(ErrorCode.NONE, IntEnum) and int(ErrorCode.NONE) == 0
    assert ErrorCode(22) is ErrorCode.ILLEGAL_GENERATION
    assert ErrorCode["MEMBER_ID_REQUIRED"] == 79 and repr(ErrorCode.NONE) == "<ErrorCode.NONE: 0>"
    assert (str(ErrorCode.UNKNOWN_SERVER_ERROR), f"{ErrorCode.NOT_COORDINATOR}") == ("-1", "16")
    assert pickle.loads(pickle.dumps(ErrorCode.REBALANCE_IN_PROGRESS)) is ErrorCode.REBALANCE_IN_PROGRESS
    with pytest.raises(ValueError, match="999 is not a valid ErrorCode"):
        ErrorCode(999)
