"""Experiments: measured runs (``run_experiment``), protocol comparisons and CLI commands."""

from __future__ import annotations

from .compare import compare_table, run_comparison
from .run import METRICS, RunResult, run_experiment
from .sweep import (
    WALL_CLOCK_FIELDS,
    ExecutorSpec,
    add_sweep_args,
    parse_executor,
    point_key,
    run_sweep,
    sweep_options,
    to_frame,
    without_wall_clock,
)

__all__ = ["METRICS", "WALL_CLOCK_FIELDS", "ExecutorSpec", "RunResult", "add_sweep_args",
           "compare_table", "parse_executor", "point_key", "run_comparison", "run_experiment",
           "run_sweep", "sweep_options", "to_frame", "without_wall_clock"]
