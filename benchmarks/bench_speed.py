"""Simulation speed: simulated transactions per wall-clock second on the runs the speed issue
names, beside the rates recorded before the speed work (``speed_baseline.json``), with the
share of wall time spent inside the C engine.

Run ``python benchmarks/bench_speed.py`` (``--quick``: fewer transactions; ``--record``:
rewrite the baseline file with this run's rates, only ever from the commit the baseline names).
Every run is repeated and its best rate kept (a loaded machine slows runs, never speeds them).
The engine share comes from a separate profiled run (cProfile: the time inside the C core's
functions over the run's total); a deterministic profiler adds a constant cost per Python call,
so the share it reports is a lower bound.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import platform
import pstats
import subprocess
import time
from pathlib import Path
from typing import Any

from pmsim.experiments import run_experiment
from pmsim.presets import preset
from pmsim.stats import format_table

BASELINE = Path(__file__).with_name("speed_baseline.json")
ARRAY = {"slots": 1_000_000, "slot_words": 4, "per_tx": 20, "write_pct": 50}

RUNS: tuple[tuple[str, str, str, int, dict[str, Any], int], ...] = (
    # (runtime, workload, preset, threads, params, transactions per thread)
    ("undo", "array", "marathe-pdom1", 1, ARRAY, 3000),
    ("redo", "array", "marathe-pdom1", 1, ARRAY, 3000),
    ("cow", "array", "marathe-pdom1", 1, ARRAY, 3000),
    ("dudetx", "tpcc", "dudetx-xeon", 4, {}, 150),
    ("nvhtm", "bank", "nvhtm-xeon", 4, {}, 1500),
    ("nvhtm", "bank", "nvhtm-xeon", 14, {}, 400),
    ("proteus", "hashmap", "proteus-marss", 1, {}, 3000),
    ("loc", "hashmap", "loc-gem5", 1, {}, 3000),
)


def _key(rt: str, wl: str, threads: int) -> str:
    return f"{rt}/{wl}/{threads}t"


def _run(rt: str, wl: str, pre: str, threads: int, params: dict[str, Any], txs: int) -> float:
    r = run_experiment(rt, wl, preset(pre), threads=threads, txs=txs, warmup=max(1, txs // 10),
                       params=params)
    return r.txs / r.wall_s


def engine_share(rt: str, wl: str, pre: str, threads: int, params: dict[str, Any],
                 txs: int) -> float:
    """Time inside the C core's functions over the run's total, under cProfile."""
    prof = cProfile.Profile()
    prof.enable()
    _run(rt, wl, pre, threads, params, txs)
    prof.disable()
    st = pstats.Stats(prof)
    total = engine = 0.0
    for (path, _line, name), (_cc, _nc, tt, _ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        total += tt
        if path == "~" and "pmsim.cache._pmcore" in name:
            engine += tt
    return engine / total if total else 0.0


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True, cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="a tenth of the transactions, one try")
    ap.add_argument("--record", action="store_true", help="rewrite the baseline file")
    ap.add_argument("--repeat", type=int, default=3, help="tries per run (best kept)")
    args = ap.parse_args()
    base = json.loads(BASELINE.read_text()) if BASELINE.exists() else {"rates": {}}
    repeat = 1 if args.quick else args.repeat
    print(f"# host: {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, commit {_commit()}; baseline: commit "
          f"{base.get('commit', '-')} ({base.get('note', 'none recorded')})")
    rows, rates = [], {}
    for rt, wl, pre, threads, params, txs in RUNS:
        n = max(10, txs // 10) if args.quick else txs
        best = max(_run(rt, wl, pre, threads, params, n) for _ in range(repeat))
        share = engine_share(rt, wl, pre, threads, params, max(10, n // 3))
        key = _key(rt, wl, threads)
        rates[key] = best
        old = base["rates"].get(key)
        rows.append({"run": key, "preset": pre, "txs_per_thread": n,
                     "old_tx_per_wall_s": old if old else float("nan"),
                     "new_tx_per_wall_s": best,
                     "speedup": best / old if old else float("nan"),
                     "engine_share_new": share,
                     "engine_share_old": base.get("engine_share", {}).get(key, float("nan"))})
        print(f"  {key}: {best:,.0f} tx/s", flush=True)
    print(format_table(rows))
    if args.record:
        shares = {r["run"]: r["engine_share_new"] for r in rows}
        BASELINE.write_text(json.dumps({
            "commit": _commit(), "recorded": time.strftime("%Y-%m-%d"),
            "note": "before the speed work; best of runs on this host",
            "rates": rates, "engine_share": shares}, indent=1, sort_keys=True) + "\n")
        print(f"recorded {len(rates)} rates in {BASELINE.name}")


if __name__ == "__main__":
    main()
