"""Sweep throughput: points per wall-clock second of ``run_sweep`` in this process, on local
worker processes and on a Dask LocalCluster, and from the cache; every executor must give the
same rows (wall-clock fields aside).

Run ``python benchmarks/bench_sweep.py`` (``--quick`` for a short run). Each point is one
``run_experiment`` of undo, redo or COW on Array in one of the three Marathe domains. The
``dask:local`` time includes starting and closing the cluster (a few seconds); speed-ups need
idle cores.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import tempfile
import time
from typing import Any

from pmsim.experiments import run_experiment, run_sweep, without_wall_clock
from pmsim.options import MAX_JOBS, jobs_arg
from pmsim.presets import preset
from pmsim.stats import format_table


def point(p: dict[str, Any]) -> dict[str, Any]:
    """One sweep point: a short Array run."""
    r = run_experiment(p["runtime"], "array", p["config"], txs=p["txs"], seed=p["seed"],
                       params={"slots": 100_000, "slot_words": 4, "write_pct": 50})
    return {**r.row(), "config": r.config}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer points and transactions")
    ap.add_argument("--jobs", type=jobs_arg, default=min(os.cpu_count() or 1, MAX_JOBS),
                    help=f"worker processes (1..{MAX_JOBS})")
    args = ap.parse_args()
    n, txs = (6, 100) if args.quick else (18, 400)
    points = [{"runtime": rt, "config": preset(f"marathe-{dom}").replace(cores=1), "seed": i,
               "txs": txs}
              for i in range(n // 9 + 1) for dom in ("pdom0", "pdom1", "pdom2")
              for rt in ("undo", "redo", "cow")][:n]
    print(f"# host: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}; {n} points of {txs} transactions, jobs={args.jobs}")
    runs: list[tuple[str, dict[str, Any]]] = [
        ("serial", {"executor": "serial"}), ("local", {"jobs": args.jobs})]
    if importlib.util.find_spec("distributed"):
        runs.append(("dask:local", {"executor": "dask:local", "jobs": args.jobs}))
    rows, expected = [], None
    with tempfile.TemporaryDirectory() as cache:
        for name, kw in [*runs, ("cached", {"executor": "serial", "cache": cache})]:
            if name == "cached":
                run_sweep(point, points, executor="serial", cache=cache, progress=False)
            t = time.perf_counter()
            out = without_wall_clock(run_sweep(point, points, progress=False, **kw))
            wall = time.perf_counter() - t
            expected = expected or out
            assert out == expected, f"{name} gave different rows"
            rows.append({"executor": name, "wall_s": wall, "points_per_s": n / wall,
                         "speedup": rows[0]["wall_s"] / wall if rows else 1.0})
    print(format_table(rows))


if __name__ == "__main__":
    main()
