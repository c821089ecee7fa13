"""The enums of the public API: ``ReduceOrder`` (WholeReduceMin/Max) and ``ReduceType``."""

from __future__ import annotations

import enum
from typing import Any, Type, TypeVar

from .constraints import Code, ConstraintError


class ReduceOrder(str, enum.Enum):
    """Layout of a WholeReduceMin/Max result slot (SPEC §4.1)."""

    ORDER_VALUE_INDEX = "ORDER_VALUE_INDEX"
    ORDER_INDEX_VALUE = "ORDER_INDEX_VALUE"
    ORDER_ONLY_VALUE = "ORDER_ONLY_VALUE"
    ORDER_ONLY_INDEX = "ORDER_ONLY_INDEX"


class ReduceType(str, enum.Enum):
    """ReduceDataBlock / ReduceRepeat reduction (SPEC §4.3)."""

    SUM = "SUM"
    MAX = "MAX"
    MIN = "MIN"


E = TypeVar("E", bound=enum.Enum)


def parse_enum(enum_cls: Type[E], value: object, *, api: str, param: str, code: Code,
               chip: Any = None) -> E:
    """Accept an enum member, its name, or its name without the ``ORDER_`` prefix."""
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, str):
        name = value.split(".")[-1].upper()
        for cand in (name, f"ORDER_{name}"):
            if cand in enum_cls.__members__:
                return enum_cls[cand]
    if not isinstance(value, str):
        code = Code.BAD_ARGUMENT
    raise ConstraintError(code, api=api, param=param, value=value,
                          allowed=f"one of {[m.name for m in enum_cls]}",
                          chip=getattr(chip, "id", chip))
