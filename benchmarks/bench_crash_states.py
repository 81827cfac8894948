"""Crash-state enumeration throughput: exact counting, then enumerate + materialise + hash.

A trace with 12 dirty lines of 4 stores each and no fence: 5**12 (about 2.4e8) states at the
end. Counts them exactly, then steps the odometer through the first states, updating the
image in place and its two hashes per state, on the C core (batch call and the per-state
in-place iterator the fuzzer uses) and on the pure-Python reference (fewer states).
Run ``python benchmarks/bench_crash_states.py`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import itertools
import platform
import time
from pathlib import Path

import numpy as np

from crashfuzz.model import image_hash
from crashfuzz.states import CrashModel
from pmsim.cache import native
from pmsim.trace import Ev, Trace

LINES, STORES = 12, 4
REPEAT = 3


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def make_trace() -> Trace:
    rows = [(Ev.STORE, 0, line * 64 + (i % 8) * 8, line * 100 + i + 1)
            for i in range(STORES) for line in range(LINES)]
    return Trace.build(rows, size=LINES * 64)


def best(fn) -> float:  # noqa: ANN001
    times = []
    for _ in range(REPEAT):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer states")
    ap.add_argument("--states", type=int, default=1_000_000, help="states for the C batch")
    ap.add_argument("--py-states", type=int, default=50_000, help="states for the Python reference")
    a = ap.parse_args()
    n_c = 100_000 if a.quick else a.states
    n_py = 10_000 if a.quick else a.py_states
    tr = make_trace()
    print(f"CPU: {cpu_model()}")
    print(f"trace: {LINES} lines x {STORES} stores, no fence, {tr.size} byte PM image")

    py = CrashModel(tr, "line", "pdom1", "python")
    sp_py = py.space(len(tr))
    t = time.perf_counter()
    count = sp_py.count
    us = 1e6 * (time.perf_counter() - t)
    print(f"count: {count} states (exact, = 5**12: {count == 5 ** 12}) in {us:.0f} us; "
          f"distinct images {sp_py.distinct_count()}")

    t_py = best(lambda: sp_py.hashes(0, n_py))
    rate_py = n_py / t_py
    print(f"python reference: {n_py} states enumerated+materialised+hashed in {t_py:.3f} s "
          f"= {rate_py:,.0f} /s")
    if not native.available():
        print("C core not built: no C figures")
        return
    c = CrashModel(tr, "line", "pdom1", "c")
    sp_c = c.space(len(tr))
    t_c = best(lambda: sp_c.hashes(0, n_c))
    rate_c = n_c / t_c
    print(f"C batch (odometer): {n_c} states enumerated+materialised+hashed in {t_c:.3f} s "
          f"= {rate_c:,.0f} /s (target >= 1,000,000 /s)")
    print(f"C / Python: {rate_c / rate_py:.0f}x (target >= 20x)")

    hc, hp = sp_c.hashes(0, n_py), sp_py.hashes(0, n_py)
    last = sp_c.unrank(n_c - 1)
    ok = np.array_equal(hc, hp) and tuple(sp_c.hashes(n_c - 1, 1)[0]) == image_hash(sp_c.image(last))
    print(f"check: C and Python hashes agree on {n_py} states, last state's hash == hash of its image: {ok}")

    n_it = min(n_c, 200_000)

    def iterate() -> None:
        for _ in itertools.islice(sp_c.hashed_images(distinct=False), n_it):
            pass

    t_it = best(iterate)
    print(f"C in-place iterator (one (hash, image) per yield, as the fuzzer reads them): "
          f"{n_it / t_it:,.0f} /s")


if __name__ == "__main__":
    main()
