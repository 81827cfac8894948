"""Machine engine throughput: C batch replay, the same batch on the Python reference, and single
instructions issued from Python through ``Machine.cpu(0)`` on both backends.

Run ``python benchmarks/bench_machine.py`` (``--quick`` for a short run). Prints the CPU model and
a table; the figures are wall-clock rates on this machine, not simulated time.
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pmsim.hw.engines.reference import BATCH_DTYPE, OP_LOAD, OP_STORE, PyEngine
from pmsim.machine import Machine, make_engine
from pmsim.presets import preset
from pmsim.stats import format_table

# where accesses land: (share, bytes of working set) from L1-sized to beyond the LLC (16 MiB)
TIERS = ((0.80, 16 << 10), (0.12, 512 << 10), (0.05, 8 << 20), (0.03, 16 << 20))
# a miss-heavy variant: fewer than half the accesses hit L1
MISS_HEAVY = ((0.55, 16 << 10), (0.25, 512 << 10), (0.12, 8 << 20), (0.08, 16 << 20))


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def mixed_stream(n: int, base: int, loads: float = 0.8, seed: int = 1,
                 tiers: tuple[tuple[float, int], ...] = TIERS) -> np.ndarray:
    """``n`` loads and stores of thread 0 over a working set spanning L1, L2, LLC and memory."""
    rng = np.random.default_rng(seed)
    shares = np.array([s for s, _ in tiers])
    sizes = np.array([b for _, b in tiers], dtype=np.uint64)
    tier = rng.choice(len(tiers), size=n, p=shares / shares.sum())
    words = (rng.random(n) * (sizes[tier] // 8)).astype(np.uint64)
    ops = np.zeros(n, dtype=BATCH_DTYPE)
    ops["op"] = np.where(rng.random(n) < loads, OP_LOAD, OP_STORE)
    ops["addr"] = np.uint64(base) + words * np.uint64(8)
    ops["value"] = np.arange(n, dtype=np.uint64)
    return ops


REPEAT = 3
"""Each figure is the best of this many runs (the machine may be shared)."""
PLAIN = {"core.model": "inorder", "prefetch.stream": False, "prefetch.adjacent": False,
         "pm.dimm.dimms": 0}
"""--plain: the preset without the out-of-order core, the prefetchers and the DIMM model (the
engine's cost before those mechanisms existed, on the same geometry)."""
CONFIG = preset("optane-adr")
"""The machine every figure runs on (set by --preset and --plain)."""


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def batch_rate(backend: str, ops: np.ndarray) -> tuple[float, np.ndarray]:
    """Accesses per second of one ``run_batch`` call on a fresh engine (first touch included)."""
    best = float("inf")
    for _ in range(REPEAT):
        engine = make_engine(CONFIG, backend)
        best = min(best, timed(lambda e=engine: e.run_batch(ops)))
    return len(ops) / best, engine.get_stats()


def level_mix(stats: np.ndarray) -> str:
    s = stats[0]
    hits = [int(s[k]) for k in ("l1_hits", "l2_hits", "llc_hits", "llc_misses")]
    return "L1/L2/LLC/mem = " + " / ".join(f"{100 * h / sum(hits):.0f}%" for h in hits)


def single_op_rate(backend: str, n: int) -> float:
    """Alternating stores and loads issued one call at a time through a Cpu."""
    m = Machine(CONFIG, backend=backend)
    cpu = m.cpu(0)
    store, load = cpu.store, cpu.load
    base = m.pm.base

    def run() -> None:
        for i in range(n // 2):
            a = base + ((i * 8) & 0x3FFF8)
            store(a, i)
            load(a)

    return n / min(timed(run) for _ in range(REPEAT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--accesses", type=int, default=5_000_000, help="C batch length")
    ap.add_argument("--py-accesses", type=int, default=100_000, help="Python batch length")
    ap.add_argument("--ops", type=int, default=1_000_000, help="single ops on the C backend")
    ap.add_argument("--py-ops", type=int, default=100_000, help="single ops on the Python backend")
    ap.add_argument("--quick", action="store_true", help="a tenth of every count")
    ap.add_argument("--preset", default="optane-adr", help="the machine (default optane-adr)")
    ap.add_argument("--plain", action="store_true",
                    help="turn off the out-of-order core, the prefetchers and the DIMM model")
    a = ap.parse_args()
    global CONFIG
    CONFIG = preset(a.preset)
    if a.plain:
        CONFIG = CONFIG.replace(**PLAIN)
    if a.quick:
        a.accesses, a.py_accesses, a.ops, a.py_ops = (max(x // 10, 1000) for x in
                                                       (a.accesses, a.py_accesses, a.ops, a.py_ops))
    base = CONFIG.pm_region.base
    print(f"CPU: {cpu_model()}; Python {platform.python_version()}; preset {a.preset}"
          + (" (plain: in-order core, no prefetchers, no DIMM model)" if a.plain else
             f" (core {CONFIG.core.model}, prefetchers {'on' if CONFIG.prefetch.on else 'off'}, "
             f"{CONFIG.pm.dimm.dimms or 'no'} DIMM model)"))

    ops = mixed_stream(a.accesses, base)
    c_rate, c_stats = batch_rate("c", ops)
    heavy_rate, heavy_stats = batch_rate("c", mixed_stream(a.accesses, base, tiers=MISS_HEAVY))
    py_ops = ops[: a.py_accesses]
    py_rate, _ = batch_rate("python", py_ops)
    # the Python prefix must give the C engine's statistics for the same prefix
    check = make_engine(CONFIG, "c")
    check.run_batch(py_ops)
    ref = PyEngine(CONFIG)
    ref.run_batch(py_ops)
    same = check.get_stats().tobytes() == ref.get_stats().tobytes()

    rows = [
        {"benchmark": "batch replay, 80% loads (C)", "count": a.accesses,
         "rate_per_s": c_rate, "note": level_mix(c_stats)},
        {"benchmark": "batch replay, miss-heavy (C)", "count": a.accesses,
         "rate_per_s": heavy_rate, "note": level_mix(heavy_stats)},
        {"benchmark": "batch replay, 80% loads (Python)", "count": a.py_accesses,
         "rate_per_s": py_rate, "note": f"C/Python = {c_rate / py_rate:.0f}x; stats equal: {same}"},
        {"benchmark": "single ops via Machine.cpu(0) (C)", "count": a.ops,
         "rate_per_s": single_op_rate("c", a.ops), "note": "store+load pairs"},
        {"benchmark": "single ops via Machine.cpu(0) (Python)", "count": a.py_ops,
         "rate_per_s": single_op_rate("python", a.py_ops), "note": "store+load pairs"},
    ]
    print(format_table(rows, floatfmt="{:,.0f}"))


if __name__ == "__main__":
    main()
