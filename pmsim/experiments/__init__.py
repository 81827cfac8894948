"""Experiments: measured runs, sweeps (local processes or Dask), the papers' experiments and
claims as data with their scoreboards, the unified comparison, tables and figures.

::

    from pmsim.experiments import get_paper, run_points, measure, scoreboard
    paper = get_paper("marathe")
    rows = run_points(paper.points(quick=True), measure)
    board = scoreboard(paper, rows)          # claim, paper, measured, verdict, why
"""

from __future__ import annotations

from .claims import (
    Checks,
    Claim,
    Experiment,
    Finding,
    Paper,
    Rows,
    get_paper,
    measure,
    paper_names,
    register_paper,
    run_points,
    scoreboard,
    summary,
    tally,
)
from .compare import compare_table, run_comparison
from .plots import Figure, draw
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
from .tables import Column, render
from .unified import Unified, run_unified

__all__ = ["METRICS", "WALL_CLOCK_FIELDS", "Checks", "Claim", "Column", "ExecutorSpec",
           "Experiment", "Figure", "Finding", "Paper", "Rows", "RunResult", "Unified",
           "add_sweep_args", "compare_table", "draw", "get_paper", "measure", "paper_names",
           "parse_executor", "point_key", "register_paper", "render", "run_comparison",
           "run_experiment", "run_points", "run_sweep", "run_unified", "scoreboard",
           "summary", "sweep_options", "tally", "to_frame", "without_wall_clock"]
