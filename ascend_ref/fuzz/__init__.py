"""Fuzzing over the parameter space: case generation, comparators, coverage, shrinking,
crash-safe campaign results, replay — ``ascend-ref fuzz`` (see ``docs/fuzz.md``).

>>> from ascend_ref.fuzz import Campaign
>>> c = Campaign.load("default")
>>> c.case(5).describe() == c.case(5).describe()      # any case replays from (seed, id)
True
"""

from __future__ import annotations

from typing import Any

from .compare import Outcome, diff, run_jax, run_oracle
from ..case import Case
from .generate import (Distributions, HypothesisDraw, RngDraw, Template, draw_campaign_case,
                       draw_case)
from .campaign import Campaign
from .signature import signature

__all__ = ["Case", "RngDraw", "HypothesisDraw", "draw_case", "Outcome", "diff", "run_jax",
           "run_oracle", "Campaign", "Distributions", "Template", "draw_campaign_case",
           "signature", "run_campaign", "replay"]


def run_campaign(*args: Any, **kwargs: Any) -> dict:
    """:func:`ascend_ref.fuzz.runner.run_campaign` (imported on first use)."""
    from .runner import run_campaign as run

    return run(*args, **kwargs)


def replay(*args: Any, **kwargs: Any) -> int:
    """:func:`ascend_ref.fuzz.replay.replay` (imported on first use)."""
    from .replay import replay as rp

    return rp(*args, **kwargs)
