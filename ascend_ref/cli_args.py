"""Argument types shared by the ``ascend-ref`` sub-commands (argparse ``type=`` callables).

A value they refuse makes argparse exit 2 with one line naming the option, e.g.
``argument --seed: -1 must be at least 0``.

>>> at_least(1)("0x10"), at_least(0)("7")
(16, 7)
"""

from __future__ import annotations

import argparse
from typing import Callable


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


__all__ = ["at_least"]
