"""Experiments: measured runs (``run_experiment``), protocol comparisons and CLI commands."""

from __future__ import annotations

from .compare import compare_table, run_comparison
from .run import METRICS, RunResult, run_experiment

__all__ = ["METRICS", "RunResult", "compare_table", "run_comparison", "run_experiment"]
