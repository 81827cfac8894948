"""PM programs: time to the first finding of every broken gallery variant, and the time of an
exhaustive campaign of every correct one.

For each structure of ``pmsim.programs.gallery`` (its own campaign config: 20 operations, or 6
per thread on 2 threads with 8 explored schedules for the lock-free log) it prints, best of
``--repeat`` runs on one core:

* each broken variant: the wall time of ``fuzz(stop_at_first=True)`` until its first finding,
  under the program's model and under the robustness oracle (no model), and the crash point;
* each correct one: the wall time of the complete campaign (every reduced crash point, every
  image, depth 2), its states and whether it was exhaustive.

Targets (issue: PM programs): under 1 s to the first finding, under 10 s exhaustive.
Run: python benchmarks/bench_programs.py [--repeat N] [--quick]
"""

from __future__ import annotations

import argparse
import platform
import time

from crashfuzz import FuzzConfig, Report, fuzz
from pmsim.programs.gallery import GALLERY
from pmsim.stats import format_table


def timed(cfg: FuzzConfig, prog: type, repeat: int) -> tuple[Report, float]:
    best, rep = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        rep = fuzz(cfg, runtime=prog)
        best = min(best, time.perf_counter() - t0)
    assert rep is not None
    return rep, best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3, help="runs per campaign; the best counts")
    ap.add_argument("--quick", action="store_true", help="one run each")
    args = ap.parse_args()
    repeat = 1 if args.quick else args.repeat
    print(f"# PM programs: {platform.processor() or platform.machine()}, best of {repeat}")
    first, full = [], []
    for name, ex in GALLERY.items():
        for bad in ex.broken:
            row = {"structure": name, "variant": bad.__name__}
            for oracle in ("model", "robust"):
                rep, dt = timed(FuzzConfig(oracle=oracle, stop_at_first=True, **ex.config), bad,
                                repeat)
                row[f"{oracle} (ms)"] = round(1000 * dt, 1)
                row[f"{oracle} found"] = (f"point {rep.first_failure_point}"
                                          if not rep.ok else "NOTHING")
            first.append(row)
        rep, dt = timed(FuzzConfig(**ex.config), ex.correct, repeat)
        full.append({"structure": name, "program": ex.correct.__name__,
                     "seconds": round(dt, 2), "ok": rep.ok, "exhaustive": rep.exhaustive,
                     "states": rep.states_checked + rep.deep_states,
                     "schedules": rep.schedules})
    print("\n## Time to the first finding (broken variants; target < 1000 ms)\n")
    print(format_table(first))
    print("\n## Exhaustive campaigns (correct structures; target < 10 s)\n")
    print(format_table(full))


if __name__ == "__main__":
    main()
