"""Fuzzing over the parameter space: case generation and comparison of implementations."""

from .compare import Outcome, diff, run_jax, run_oracle
from ..case import Case
from .generate import HypothesisDraw, RngDraw, draw_case

__all__ = ["Case", "RngDraw", "HypothesisDraw", "draw_case", "Outcome", "diff", "run_jax",
           "run_oracle"]
