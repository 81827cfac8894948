"""Runtime throughput: simulated transactions per wall-clock second for undo, redo and COW on
Array with 10 read-write slots per transaction, plus the simulated figures (latency,
throughput, persist barriers per transaction against the spec card); then the runtimes whose
hardware pmsim models beside the engine (Proteus, ATOM, LOC) and their software baselines on the
chained hash map, whose per-store Python work (LLT, LogQ, LPQ, versions) bounds their speed.

Run ``python benchmarks/bench_runtimes.py`` (``--quick`` for a short run). Wall-clock rates are
this host's; simulated figures are deterministic.
"""

from __future__ import annotations

import argparse
import platform

from pmsim.experiments import run_experiment
from pmsim.machine import default_backend
from pmsim.presets import preset
from pmsim.stats import format_table

# persist barriers per committed transaction, card §3.4, for W = 10 writes and no allocation
CARD_PB = {"undo": 10 + 2, "undo-2pb": 2 * 10 + 2, "redo": 4, "cow": 4}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer transactions")
    ap.add_argument("--slots", type=int, default=1_000_000, help="Array length")
    args = ap.parse_args()
    txs = 300 if args.quick else 3000
    backends = ["python", default_backend()] if default_backend() == "c" else ["python"]
    print(f"# host: {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"# Array: {args.slots:,} slots x 4 words, 20 slots/tx, 10 read-write (50%); "
          f"{txs} measured transactions after {txs // 10} warm-up")
    rows = []
    for backend in backends:
        for dom in ("pdom0", "pdom1", "pdom2"):
            cfg = preset(f"marathe-{dom}").replace(cores=1)
            for rt in CARD_PB:
                n = txs if backend == "c" else max(50, txs // 10)
                r = run_experiment(rt, "array", cfg, txs=n, warmup=n // 10, backend=backend,
                                   params={"slots": args.slots, "slot_words": 4, "write_pct": 50})
                rows.append({
                    "backend": backend, "domain": dom, "runtime": rt,
                    "sim_tx_per_wall_s": r.tx_per_wall_s,
                    "lat_p50_ns": r.lat_p50, "sim_ktx_per_s": r.throughput / 1e3,
                    "pb_per_tx": r.pb_per_tx, "card_pb": CARD_PB[rt],
                    "flush_per_tx": r.flush_per_tx, "pm_B_per_tx": r.pm_bytes_per_tx,
                })
    print(format_table(rows))
    hw = []
    cfg = preset("optane-adr").replace(cores=1)
    for backend in backends:
        for rt in ("proteus", "proteus-nolwr", "atom", "pmem", "loc", "hwal", "undo"):
            n = txs if backend == "c" else max(50, txs // 10)
            r = run_experiment(rt, "hashmap", cfg, txs=n, warmup=n // 10, backend=backend)
            hw.append({"backend": backend, "runtime": rt, "sim_tx_per_wall_s": r.tx_per_wall_s,
                       "lat_p50_ns": r.lat_p50, "sim_ktx_per_s": r.throughput / 1e3,
                       "pm_B_per_tx": r.pm_bytes_per_tx,
                       "lpq_nvm_lines_per_tx": (r.counters.get("log_writes", 0.0) / max(r.commits, 1)
                                                if rt.startswith("proteus") else 0.0)})
    print(f"# hash map (chained), optane-adr, 1 thread, {txs} measured transactions on C; "
          "pm_B_per_tx is what the engine wrote (ATOM's log included), lpq_nvm_lines_per_tx "
          "the log lines Proteus's LPQ wrote to NVM beside it")
    print(format_table(hw))


if __name__ == "__main__":
    main()
