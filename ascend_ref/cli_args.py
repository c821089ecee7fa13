"""Argument checks shared by the ``ascend-ref`` sub-commands (argparse ``type=`` callables)
and by the functions that take a file or folder name.

A value the argparse types refuse makes argparse exit 2 with one line naming the option,
e.g. ``argument --seed: -1 must be at least 0``.

>>> at_least(1)("0x10"), at_least(0)("7")
(16, 7)
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Callable


def at_least(lo: int) -> Callable[[str], int]:
    """An integer (decimal, or ``0x`` / ``0o`` / ``0b``) >= ``lo``."""
    def parse(text: str) -> int:
        try:
            v = int(text, 0)
        except ValueError:
            try:
                v = int(text)                    # "010": decimal, as int() reads it
            except ValueError:
                raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < lo:
            raise argparse.ArgumentTypeError(f"{v} must be at least {lo}")
        return v
    return parse


def is_path(v: Any, *, allow_bytes: bool = False) -> bool:
    """``v`` names a file or folder: a non-empty ``str`` or ``os.PathLike`` (``bytes`` too
    with ``allow_bytes``). The callers raise their own error naming the argument.

    >>> is_path("out"), is_path(""), is_path(None), is_path(b"k"), is_path(b"k", allow_bytes=True)
    (True, False, False, False, True)
    """
    kinds = (str, bytes, os.PathLike) if allow_bytes else (str, os.PathLike)
    return isinstance(v, kinds) and bool(os.fspath(v))


__all__ = ["at_least", "is_path"]
