"""crashfuzz: exhaustive crash fuzzing of persistent-memory transactions and PM programs.

The flat API::

    import crashfuzz
    report = crashfuzz.fuzz(crashfuzz.FuzzConfig(runtime="undo", workload="kv", txs=20))
    assert report.ok, crashfuzz.format_report(report)

Pieces: the crash-state model (:class:`CrashModel`: exact surviving images per crash point),
crash points (:func:`select_points`), the oracle, campaigns (:func:`fuzz`), the mutation suite
(:func:`kill_matrix`), PM programs (:func:`fuzz_program`, :func:`repair_program`; see
:mod:`pmsim.programs`), Hypothesis strategies (``crashfuzz.strategies``), the litmus runner and a
pytest plugin (the ``crashfuzz`` fixture).
"""

from __future__ import annotations

from .campaign import (
    FUZZ_PARAMS,
    Campaign,
    Failure,
    FuzzConfig,
    Interrupted,
    RecoveryCrash,
    Report,
    check_failures,
    drop_stores,
    fuzz,
    fuzz_machine,
)
from .litmus import LitmusResult, LitmusTest, litmus_suite, load_litmus, parse_litmus, run_litmus
from .litmus import check as check_litmus
from .model import EDGE_PROVIDERS, Edge, image_hash
from .mutants import KillRow, kill_matrix
from .oracle import Oracle, TxHistory
from .pm import Repair, fuzz_program, repair_program
from .points import CrashPoint, every_points, reduced_points, sampled_points, select_points
from .report import findings_of, format_report, load_finding, replay, save_findings
from .states import Coverage, CrashModel, StateSpace

__all__ = [
    "EDGE_PROVIDERS", "FUZZ_PARAMS", "Campaign", "Coverage", "CrashModel", "CrashPoint", "Edge",
    "Failure", "FuzzConfig", "Interrupted", "KillRow", "LitmusResult", "LitmusTest", "Oracle",
    "RecoveryCrash", "Repair", "Report", "StateSpace", "TxHistory", "check_failures",
    "check_litmus", "drop_stores", "every_points", "findings_of", "format_report", "fuzz",
    "fuzz_machine", "fuzz_program", "image_hash", "kill_matrix", "litmus_suite", "load_finding",
    "load_litmus", "parse_litmus", "reduced_points", "repair_program", "replay", "run_litmus",
    "sampled_points", "save_findings", "select_points",
]
