"""Fuzzing over the parameter space: case generation and comparison of implementations."""

from .compare import Outcome, diff, run_jax, run_oracle
from .generate import Case, HypothesisDraw, RngDraw, draw_case

__all__ = ["Case", "RngDraw", "HypothesisDraw", "draw_case", "Outcome", "diff", "run_jax",
           "run_oracle"]
