"""What `pmsim demo` runs: undo, redo and COW side by side on Array across the Marathe presets,
then every seed paper's protocol and its baselines on one machine.

The paper's expected ranking: redo beats undo where barriers are expensive (PDOM-0), undo
beats redo where they are free (PDOM-2), COW is slowest everywhere. The full comparison of
every registered protocol and variant, with crash-fuzz verdicts and mutant kills, is
:mod:`pmsim.experiments.unified` (``pmsim compare``); the papers' claims are checked by
:mod:`pmsim.experiments.claims` (``pmsim reproduce``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..presets import preset
from ..stats import format_table
from .run import RunResult, run_experiment

PROTOCOLS = ("undo", "redo", "cow")
DEMO_PRESETS = (("pdom0", 500.0), ("pdom1", 100.0), ("pdom2", 0.0))
ALL_PROTOCOLS = (("undo", "Marathe"), ("redo", "Marathe"), ("cow", "Marathe"),
                 ("dudetx", "DUDETx"), ("nvhtm", "NV-HTM"), ("loc", "LOC"), ("hwal", "LOC"),
                 ("swal", "LOC"), ("proteus", "Proteus"), ("atom", "Proteus"),
                 ("pmem", "Proteus"))
"""The seven protocols and the hardware and software baselines their papers compare against."""


def run_comparison(txs: int = 300, write_pct: float = 100.0, slot_words: int = 4,
                   slots: int = 100_000, warmup: int = 50, runtimes: Sequence[str] = PROTOCOLS,
                   backend: str | None = None) -> list[RunResult]:
    """One single-threaded Array run per (domain, runtime) on the ``marathe-*`` presets."""
    out = []
    for dom, _ in DEMO_PRESETS:
        cfg = preset(f"marathe-{dom}").replace(cores=1)
        for rt in runtimes:
            out.append(run_experiment(rt, "array", cfg, txs=txs, warmup=warmup, backend=backend,
                                      params={"slots": slots, "slot_words": slot_words,
                                              "write_pct": write_pct}))
    return out


def run_protocols(txs: int = 200, warmup: int = 30, backend: str | None = None,
                  machine: str = "optane-adr") -> list[RunResult]:
    """One single-threaded run of the chained hash map per protocol of :data:`ALL_PROTOCOLS`
    on ``machine`` (ADR: the domain every protocol is defined in)."""
    cfg = preset(machine).replace(cores=1)
    return [run_experiment(rt, "hashmap", cfg, txs=txs, warmup=warmup, backend=backend)
            for rt, _ in ALL_PROTOCOLS]


def protocols_table(results: Sequence[RunResult]) -> str:
    """One row per protocol: its paper, latency, throughput, flushes, fences, PM bytes."""
    paper = dict(ALL_PROTOCOLS)
    best = min(r.lat_p50 for r in results)
    return format_table([{
        "runtime": r.runtime, "paper": paper.get(r.runtime, ""), "lat_p50_ns": r.lat_p50,
        "vs_best": r.lat_p50 / best, "ktx_per_s": r.throughput / 1e3,
        "flush/tx": r.flush_per_tx, "fence/tx": r.fence_per_tx, "pm_B/tx": r.pm_bytes_per_tx,
    } for r in results])


def compare_table(results: Sequence[RunResult]) -> str:
    """One row per (domain, runtime): latency, throughput, PBs, flushes, bytes; 'vs best' is the
    median latency relative to the best runtime in the same domain."""
    best: dict[str, float] = {}
    for r in results:
        best[r.domain] = min(best.get(r.domain, float("inf")), r.lat_p50)
    rows = [{
        "domain": r.domain, "runtime": r.runtime,
        "lat_p50_ns": r.lat_p50, "vs_best": r.lat_p50 / best[r.domain],
        "ktx_per_s": r.throughput / 1e3, "pb/tx": r.pb_per_tx, "flush/tx": r.flush_per_tx,
        "pm_B/tx": r.pm_bytes_per_tx,
    } for r in results]
    return format_table(rows)
