"""End-to-end crash fuzzing speed: states checked per second (image, recovery, oracle).

Undo logging on Array transactions of 8 single-word writes, PDOM-1 and PDOM-0. Prints states
checked per second, distinct images and recoveries, and the reduction factor: crash states of
eager enumeration (every image at every trace event) per recovery actually run.
Run: python benchmarks/bench_crashfuzz.py [--txs N]
"""

from __future__ import annotations

import argparse
import platform
import time

from crashfuzz import Campaign, FuzzConfig, fuzz
from pmsim.stats import format_table


def eager_states(cfg: FuzzConfig) -> int:
    camp = Campaign(cfg)
    return sum(camp.model.space(p).count for p in camp.model.points("every"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--txs", type=int, default=20)
    ap.add_argument("--runtimes", default="undo,redo",
                    help="comma-separated; cow takes minutes (its spaces are sampled)")
    args = ap.parse_args()
    rows = []
    for runtime in args.runtimes.split(","):
        for domain in ("pdom1", "pdom0"):
            cfg = FuzzConfig(runtime=runtime, workload="array", domain=domain, txs=args.txs,
                             params=(("slot_words", 1), ("per_tx", 8), ("write_pct", 100.0),
                                     ("slots", 64)), idempotence=0, new_tx=0)
            t0 = time.perf_counter()
            rep = fuzz(cfg)
            dt = time.perf_counter() - t0
            eager = eager_states(cfg)
            rows.append({"runtime": runtime, "domain": domain, "ok": rep.ok,
                         "exhaustive": rep.exhaustive, "points": rep.points,
                         "states": rep.states_checked, "distinct": rep.distinct_images,
                         "recoveries": rep.recoveries, "seconds": round(dt, 2),
                         "states/s": round(rep.states_checked / dt),
                         "eager states": eager,
                         "eager/recoveries": round(eager / max(rep.recoveries, 1), 1)})
    print(f"# crashfuzz end to end on {platform.processor() or platform.machine()}, "
          f"{args.txs} transactions of 8 writes")
    print(format_table(rows))


if __name__ == "__main__":
    main()
