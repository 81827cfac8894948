"""Transactional-memory runtimes: abort rates of ``htm``, ``stm`` and ``dudetx`` against
contention and threads, and simulated transactions per wall-clock second of every workload on
every runtime at one thread (with the C/Python engine ratio for ``htm``).

Run ``python benchmarks/bench_tm.py`` (``--quick`` for a short run, ``--full`` for longer runs
and three seeds). Four parts, each printed as a table on the ``optane-adr`` preset:

1. abort rates of ``htm``, ``stm`` and ``dudetx`` on bank, array and kv at four sizes (smaller =
   more contended) and 1, 2, 4, 8 threads, with the causes and the simulated throughput; each
   run is a fresh session measured whole (see :func:`abort_row`);
2. the abort rate at 4 threads against the scheduling quantum;
3. simulated tx per wall-second of every registered workload on every runtime, one thread;
4. the C engine against the pure-Python one for ``htm`` on a few workloads.

Abort rates and simulated figures are deterministic for a seed; wall-clock rates are this
host's (best of ``--repeat`` runs) and are asserted nowhere.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pmsim.config import MachineConfig
from pmsim.experiments import run_experiment
from pmsim.machine import default_backend
from pmsim.presets import preset
from pmsim.stats import format_table, total
from pmsim.tm.stm import AbortCause
from pmsim.workloads import WORKLOADS, Session

PRESET = "optane-adr"
TM_RUNTIMES = ("htm", "stm", "dudetx")
ALL_RUNTIMES = ("undo", "redo", "cow", "stm", "htm", "dudetx")
THREADS = (1, 2, 4, 8)
HTM_CAUSES = ("conflict", "capacity", "explicit", "lock", "flush")
QUANTA = (1000.0, 100.0, 10.0, 1.0, 0.5)
STM_CAUSES = {"rd_val": AbortCause.READ_VALIDATION, "locked": AbortCause.LOCKED,
              "commit_val": AbortCause.COMMIT_VALIDATION}


@dataclass(frozen=True)
class Contention:
    """A workload whose contention one parameter sets (smaller = more contended)."""

    workload: str
    knob: str
    sizes: tuple[int, ...]
    fixed: tuple[tuple[str, Any], ...] = ()

    def params(self, size: int) -> dict[str, Any]:
        p = dict(self.fixed)
        p[self.knob] = size
        if self.workload == "kv":
            p["keys"] = 4 * size  # chains of similar length at every size
        return p


CONTENTION = (
    # 8 one-word accounts per cache line: up to 1024 accounts (128 lines)
    Contention("bank", "accounts", (4, 16, 64, 1024)),
    # windows of 6 contiguous 32-byte slots, 3 of them incremented
    Contention("array", "slots", (8, 32, 128, 4096), (("per_tx", 6),)),
    # 8 bucket heads per line, keys = 4 x buckets
    Contention("kv", "buckets", (4, 16, 64, 1024)),
)


def abort_row(rt: str, c: Contention, size: int, threads: int, txs: int, seed: int,
              cfg: MachineConfig) -> dict[str, Any]:
    """One fresh run of ``txs`` transactions per thread, measured whole (no warm-up: after a
    ``Session.run`` the workers lag the simulated time, and a lagging thread runs without
    yielding until it catches up, so a measured period after a warm-up starts serialized):
    abort rate (aborted attempts / attempts, user aborts apart), causes, simulated throughput."""
    cfg = cfg.replace(seed=seed)  # the STM's back-off draws from the machine's seed
    s = Session.create(rt, c.workload, cfg, threads=threads, seed=seed, txs=txs,
                       params=c.params(size))
    m, r = s.machine, s.runtime
    s.run(txs)
    stats = total(m.stats())
    row: dict[str, Any] = {"runtime": rt, "workload": f"{c.workload}/{c.knob}", "size": size,
                           "threads": threads}
    row["sim_ktx_s"] = r.commits / m.now * 1e6 if m.now > 0 else 0.0
    row["user_ab"] = r.aborts
    if rt == "htm":
        h = r.runner.total()
        att = max(h.attempts, 1)
        row["attempts"] = h.attempts
        row["abort_rate"] = h.abort_rate
        for cause in HTM_CAUSES:
            row[cause] = getattr(h, cause) / att
        row["fallback"] = h.fallbacks / max(r.commits + r.aborts, 1)
        conflicts = float(stats["htm_aborts_conflict"])
        row["false_sh"] = float(stats["htm_false_sharing"]) / conflicts if conflicts else 0.0
        assert int(stats["htm_begins"]) == h.attempts, "runner attempts != xbegins"
    else:
        st = r.stm.totals()
        att = max(st.attempts, 1)
        n = {k: st.aborts[v] for k, v in STM_CAUSES.items()}
        row["attempts"] = st.attempts
        row["abort_rate"] = sum(n.values()) / att
        for k, v in n.items():
            row[k] = v / att
    return row


def mean_row(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The runs' figures averaged (counts rounded); labels from the first."""
    row = dict(runs[0])
    for k, v in row.items():
        if isinstance(v, (int, float)) and k not in ("size", "threads"):
            avg = sum(x[k] for x in runs) / len(runs)
            row[k] = round(avg) if isinstance(v, int) else avg
    return row


def abort_tables(txs: int, seeds: Sequence[int], cfg: MachineConfig) -> None:
    """Part 1: one table per runtime, rows by workload, size and threads (mean over seeds),
    then the abort rates and throughputs side by side, and htm's causes at 8 threads."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for rt in TM_RUNTIMES:
        t = time.perf_counter()
        rows[rt] = [mean_row([abort_row(rt, c, size, th, txs, sd, cfg) for sd in seeds])
                    for c in CONTENTION for size in c.sizes for th in THREADS]
        print(f"\n## abort rates: {rt} ({txs} tx/thread, seeds {list(seeds)}; "
              f"{time.perf_counter() - t:.1f} s)")
        print(format_table(rows[rt], floatfmt="{:.3f}"))

    def pivot(col: str, threads: Sequence[int]) -> list[dict[str, Any]]:
        out: dict[tuple[str, int], dict[str, Any]] = {}
        for rt in TM_RUNTIMES:
            for r in rows[rt]:
                if r["threads"] in threads:
                    key = (r["workload"], r["size"])
                    out.setdefault(key, {"workload": key[0], "size": key[1]})
                    out[key][f"{rt}/{r['threads']}"] = r[col]
        return list(out.values())

    print(f"\n## summary: abort rate by runtime/threads ({txs} tx/thread)")
    print(format_table(pivot("abort_rate", THREADS[1:]), floatfmt="{:.2f}"))
    print(f"\n## summary: simulated ktx/s by runtime/threads ({txs} tx/thread)")
    print(format_table(pivot("sim_ktx_s", THREADS), floatfmt="{:.0f}"))
    cols = ("workload", "size", "attempts", "abort_rate", *HTM_CAUSES, "fallback", "false_sh")
    print(f"\n## summary: htm at {THREADS[-1]} threads, aborts per attempt by cause")
    print(format_table([r for r in rows["htm"] if r["threads"] == THREADS[-1]], cols,
                       floatfmt="{:.3f}"))


def quantum_table(txs: int, seeds: Sequence[int], cfg: MachineConfig) -> None:
    """Part 1b: abort rate at 4 threads against the scheduling quantum (``quantum_ns`` and
    ``htm.quantum_ns`` both set to q), and at the shipped defaults."""
    t = time.perf_counter()
    rows = []
    for c in CONTENTION:
        size = c.sizes[1]
        for rt in TM_RUNTIMES:
            row: dict[str, Any] = {"runtime": rt, "workload": f"{c.workload}/{c.knob}",
                                   "size": size}
            for q in QUANTA:
                qcfg = cfg.replace(**{"quantum_ns": q, "htm.quantum_ns": q})
                row[f"q={q:g}"] = mean_row([abort_row(rt, c, size, 4, txs, sd, qcfg)
                                            for sd in seeds])["abort_rate"]
            row["default"] = mean_row([abort_row(rt, c, size, 4, txs, sd, cfg)
                                       for sd in seeds])["abort_rate"]
            rows.append(row)
    print(f"\n## abort rate against the quantum q (ns), 4 threads ({txs} tx/thread; "
          f"{time.perf_counter() - t:.1f} s)")
    print(format_table(rows, floatfmt="{:.3f}"))


def wall_rate(rt: str, wl: str, txs: int, repeat: int, cfg: MachineConfig,
              backend: str | None = None) -> tuple[float, float]:
    """Best simulated tx per wall-second of ``repeat`` fresh one-thread runs, and the simulated
    throughput (tx per simulated second, identical in every run)."""
    best, sim = 0.0, 0.0
    for _ in range(repeat):
        r = run_experiment(rt, wl, cfg, threads=1, txs=txs, warmup=max(txs // 10, 1),
                           backend=backend)
        best, sim = max(best, r.tx_per_wall_s), r.throughput
    return best, sim


def wall_table(workloads: Sequence[str], txs: int, repeat: int, cfg: MachineConfig) -> None:
    """Part 2: simulated tx per wall-second, workloads by runtimes, one thread."""
    t = time.perf_counter()
    rows = []
    for wl in workloads:
        row: dict[str, Any] = {"workload": wl}
        for rt in ALL_RUNTIMES:
            row[rt] = wall_rate(rt, wl, txs, repeat, cfg)[0]
        rows.append(row)
    print(f"\n## simulated tx per wall-second, 1 thread ({default_backend()} engine, {txs} tx "
          f"after {max(txs // 10, 1)} warm-up, best of {repeat}; {time.perf_counter() - t:.1f} s)")
    print(format_table(rows, floatfmt="{:.0f}"))


def backend_table(rt: str, workloads: Sequence[str], txs: int, repeat: int,
                  cfg: MachineConfig) -> None:
    """Part 3: the C engine against the pure-Python one on a few workloads."""
    if default_backend() != "c":
        print("\n## engine ratio: skipped (the C engine is not built or PMSIM_BACKEND=python)")
        return
    rows = []
    for wl in workloads:
        c_rate, c_sim = wall_rate(rt, wl, txs, repeat, cfg, "c")
        py_rate, py_sim = wall_rate(rt, wl, txs, repeat, cfg, "python")
        rows.append({"runtime": rt, "workload": wl, "c_tx_per_s": c_rate,
                     "python_tx_per_s": py_rate, "ratio": c_rate / py_rate,
                     "same_sim": c_sim == py_sim})
    print(f"\n## C engine / Python engine ({txs} tx, best of {repeat})")
    print(format_table(rows, floatfmt="{:.1f}"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="fewer transactions and workloads")
    mode.add_argument("--full", action="store_true", help="more transactions, three seeds")
    ap.add_argument("--txs", type=int, help="transactions per thread for the abort rates")
    ap.add_argument("--repeat", type=int, help="wall-clock runs per figure; the best counts")
    ap.add_argument("--part", choices=("all", "aborts", "wall"), default="all",
                    help="only the abort-rate tables or only the wall-clock tables")
    a = ap.parse_args()
    for name in ("txs", "repeat"):
        if getattr(a, name) is not None and getattr(a, name) < 1:
            ap.error(f"--{name} must be at least 1")
    if a.quick:
        txs, seeds, wtxs, repeat, wls = 50, (0,), 50, 2, ("array", "bank", "kv", "tpcc")
    elif a.full:
        txs, seeds, wtxs, repeat, wls = 500, (0, 1, 2), 1000, 3, tuple(sorted(WORKLOADS))
    else:
        txs, seeds, wtxs, repeat, wls = 200, (0,), 200, 3, tuple(sorted(WORKLOADS))
    txs = a.txs or txs
    repeat = a.repeat or repeat
    cfg = preset(PRESET)
    print(f"# host: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}; preset {PRESET}, engine {default_backend()}")
    print("# abort_rate = aborted attempts / attempts (user aborts, the body returning False, "
          "counted apart in user_ab); cause columns are per attempt and sum to it; fallback = "
          "share of transactions run under the SGL; false_sh = share of conflict aborts on "
          "non-overlapping words of a line; sim_ktx_s = commits per simulated ms")
    t = time.perf_counter()
    if a.part in ("all", "aborts"):
        abort_tables(txs, seeds, cfg)
        quantum_table(txs, seeds, cfg)
    if a.part in ("all", "wall"):
        wall_table(wls, wtxs, repeat, cfg)
        backend_table("htm", ("array", "bank") if a.quick else ("array", "bank", "kv"),
                      wtxs, repeat, cfg)
    print(f"\n# total {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
