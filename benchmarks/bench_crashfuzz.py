"""End-to-end crash fuzzing speed: states checked per second (image, recovery, oracle).

Undo and redo logging on Array transactions of 8 single-word writes, PDOM-1 and PDOM-0, crash
depth 1, no idempotence or new-transaction checks. Prints states checked per second with
recovery on the functional (untimed) machine, as campaigns run it, and on the timed machine
(caches, WPQ, clocks), the speed-up between them, distinct images and recoveries, and the
reduction factor: crash states of eager enumeration (every image at every trace event) per
recovery actually run. Each campaign runs ``--repeat`` times and the best time counts (other
processes share the cores).
``--jobs N`` adds the same functional campaign split into N shards on N worker processes
(identical findings; the pool is started before timing), as `crashfuzz run --jobs N` runs it.
Run: python benchmarks/bench_crashfuzz.py [--txs N] [--runtimes undo,redo] [--repeat N]
     [--recovery both|functional|timed] [--jobs N]
"""

from __future__ import annotations

import argparse
import platform
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any

from crashfuzz import Campaign, FuzzConfig, Report, fuzz
from pmsim.options import jobs_arg
from pmsim.stats import format_table


def eager_states(cfg: FuzzConfig) -> int:
    camp = Campaign(cfg)
    return sum(camp.model.space(p).count for p in camp.model.points("every"))


def run_campaign(cfg: FuzzConfig, timed: bool, pool: Executor | None = None,
                 shards: int = 1) -> tuple[Report, float]:
    """``fuzz(cfg)`` with recovery on the functional or the timed scratch machine (in
    ``shards`` units on ``pool`` if given); the report and the wall time (crash-free run
    included)."""
    t0 = time.perf_counter()
    rep = fuzz(cfg, recovery="timed" if timed else "functional", executor=pool, shards=shards)
    return rep, time.perf_counter() - t0


def best(cfg: FuzzConfig, timed: bool, repeat: int, pool: Executor | None = None,
         shards: int = 1) -> tuple[Report, float]:
    runs = [run_campaign(cfg, timed, pool, shards) for _ in range(repeat)]
    return runs[0][0], min(dt for _, dt in runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--txs", type=int, default=20)
    ap.add_argument("--runtimes", default="undo,redo",
                    help="comma-separated; cow takes minutes (its spaces are sampled)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per campaign; the best counts")
    ap.add_argument("--recovery", choices=("both", "functional", "timed"), default="both",
                    help="which scratch machine recovers the images")
    ap.add_argument("--jobs", type=jobs_arg, default=1,
                    help="also time the functional campaign on this many worker processes")
    args = ap.parse_args()
    pool = ProcessPoolExecutor(args.jobs) if args.jobs > 1 else None
    paths = {"both": (False, True), "functional": (False,), "timed": (True,)}[args.recovery]
    run_campaign(FuzzConfig(runtime="undo", txs=2, idempotence=0, new_tx=0, depth=1), False)
    rows = []
    for runtime in args.runtimes.split(","):
        for domain in ("pdom1", "pdom0"):
            cfg = FuzzConfig(runtime=runtime, workload="array", domain=domain, txs=args.txs,
                             params=(("slot_words", 1), ("per_tx", 8), ("write_pct", 100.0),
                                     ("slots", 64)), idempotence=0, new_tx=0, depth=1)
            row: dict[str, Any] = {"runtime": runtime, "domain": domain}
            speed: dict[bool, float] = {}
            for timed in paths:
                rep, dt = best(cfg, timed, args.repeat)
                speed[timed] = rep.states_checked / dt
                if len(row) == 2:
                    row.update({"ok": rep.ok, "exhaustive": rep.exhaustive, "points": rep.points,
                                "states": rep.states_checked, "distinct": rep.distinct_images,
                                "recoveries": rep.recoveries})
                key = "timed" if timed else "functional"
                row[f"{key} s"] = round(dt, 2)
                row[f"{key} states/s"] = round(speed[timed])
            if len(speed) == 2:
                row["speed-up"] = round(speed[False] / speed[True], 2)
            if pool is not None:
                run_campaign(cfg, False, pool, args.jobs)  # start the workers
                rep, dt = best(cfg, False, args.repeat, pool, args.jobs)
                assert rep.states_checked == row["states"] and rep.ok == row["ok"]
                row[f"{args.jobs} jobs states/s"] = round(rep.states_checked / dt)
            eager = eager_states(cfg)
            row["eager states"] = eager
            row["eager/recoveries"] = round(eager / max(row["recoveries"], 1), 1)
            rows.append(row)
    print(f"# crashfuzz end to end on {platform.processor() or platform.machine()}, "
          f"{args.txs} transactions of 8 writes, best of {args.repeat}")
    print(format_table(rows))
    if pool is not None:
        pool.shutdown()


if __name__ == "__main__":
    main()
