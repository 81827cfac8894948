"""Fixed runs whose every simulated figure is pinned: the bit-identity regression set.

Speed work on the engine boundary, the runtimes or the workloads must not change a single
simulated number. :data:`RUNS` covers every protocol family and its baselines, one and several
threads, and each persistence domain, on their papers' presets; :func:`measure` records every
machine statistic per thread, every clock, the runtime's commits, aborts, counters and
latencies, and a hash of the final PM image.

``python -m tests.experiments.golden --write`` regenerates ``data/golden_runs.json``; do that
only for a change that is *meant* to move simulated results, and say so in its commit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pmsim.presets import preset
from pmsim.workloads.session import Session

GOLDEN = Path(__file__).with_name("data") / "golden_runs.json"


@dataclass(frozen=True)
class GoldenRun:
    """One pinned run: ``txs`` transactions per thread of ``workload`` on ``runtime``."""

    runtime: str
    workload: str
    preset: str
    threads: int = 1
    txs: int = 40
    seed: int = 7
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        p = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.runtime}/{self.workload}/{self.preset}/t{self.threads}/{p}"


ARRAY = {"slots": 512, "per_tx": 8}
RUNS: tuple[GoldenRun, ...] = (
    # Marathe's families, each domain, one and two threads
    *(GoldenRun(rt, "array", f"marathe-{d}", params=ARRAY)
      for rt in ("undo", "redo", "cow") for d in ("pdom0", "pdom1", "pdom2")),
    GoldenRun("undo-2pb", "array", "marathe-pdom1", params=ARRAY),
    GoldenRun("undo", "array", "marathe-pdom1", threads=2, params=ARRAY),
    GoldenRun("redo", "kv", "marathe-pdom1", threads=2),
    GoldenRun("cow", "array", "marathe-pdom0", threads=2, params=ARRAY),
    # the Optane machine: out-of-order cores, prefetchers, six DIMMs; eADR and PDOM-0 too
    GoldenRun("undo", "array", "optane-adr", threads=2, params=ARRAY),
    GoldenRun("redo", "array", "eadr", params=ARRAY),
    GoldenRun("cow", "array", "pdom0", params=ARRAY),
    # DUDETx and its baselines
    GoldenRun("dudetx", "bank", "dudetx-xeon", threads=2),
    GoldenRun("dudetx", "tpcc", "dudetx-xeon", threads=2, txs=10),
    GoldenRun("dudetx-sync", "hashtable", "dudetx-xeon"),
    GoldenRun("dudetx-htm", "btree", "dudetx-xeon", threads=2),
    GoldenRun("dudetx-paging", "ycsb", "dudetx-xeon"),
    GoldenRun("dudetx-combine", "tatp", "dudetx-xeon"),
    GoldenRun("dudetx-locks-1r", "bank", "dudetx-xeon", threads=2),
    GoldenRun("stm", "bank", "dudetx-xeon", threads=2),
    GoldenRun("htm", "bank", "dudetx-xeon", threads=2),
    GoldenRun("locks", "bank", "dudetx-xeon", threads=2),
    GoldenRun("mnemosyne", "hashtable", "dudetx-xeon"),
    GoldenRun("nvml", "hashtable", "dudetx-xeon"),
    # NV-HTM and its baselines
    GoldenRun("nvhtm", "bank", "nvhtm-xeon"),
    GoldenRun("nvhtm", "bank", "nvhtm-xeon", threads=4),
    GoldenRun("nvhtm-lc", "tpcc", "nvhtm-xeon", threads=2, txs=10),
    GoldenRun("phtm", "bank", "nvhtm-xeon", threads=2),
    GoldenRun("pstm", "bank", "nvhtm-xeon", threads=2),
    # LOC and its baselines
    GoldenRun("loc", "rbtree", "loc-gem5"),
    GoldenRun("loc-ec", "sps", "loc-gem5"),
    GoldenRun("hwal", "btree", "loc-gem5"),
    GoldenRun("swal", "sps", "loc-gem5"),
    # Proteus and its baselines
    GoldenRun("proteus", "hashmap", "proteus-marss"),
    GoldenRun("proteus", "avl", "proteus-marss", threads=2),
    GoldenRun("proteus-nolwr", "queue", "proteus-marss"),
    GoldenRun("proteus-pcommit", "hashmap", "proteus-marss"),
    GoldenRun("atom", "hashmap", "proteus-marss", threads=2),
    GoldenRun("pmem", "swap", "proteus-marss"),
    GoldenRun("pmem-pcommit", "bigtx", "proteus-marss"),
)


def _hash(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:32]


def measure(run: GoldenRun, backend: str | None = None) -> dict[str, Any]:
    """Every simulated figure of ``run``, as JSON-ready values (floats kept exact)."""
    s = Session.create(run.runtime, run.workload, preset(run.preset), threads=run.threads,
                       seed=run.seed, txs=run.txs, params=run.params, backend=backend)
    s.run(run.txs)
    m, rt = s.machine, s.runtime
    st = m.stats()
    lat = np.asarray(rt.latencies, dtype=np.float64)
    return {
        "stats": {name: [float(v) for v in st[name]] for name in st.dtype.names},
        "clocks": [float(m.cpu(t).clock) for t in range(m.config.cores)],
        "commits": int(rt.commits),
        "aborts": int(rt.aborts),
        "counters": {k: float(v) for k, v in sorted(rt.counters().items())},
        "latencies": {"n": int(lat.size), "sum": float(lat.sum()), "sha": _hash(lat)},
        "pm": _hash(m.pm_image()),
        "consistent": bool(s.check()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--write", action="store_true", help="rewrite the golden file")
    args = ap.parse_args()
    out = {}
    for run in RUNS:
        print(run.key, flush=True)
        out[run.key] = measure(run)
    if args.write:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(out)} runs to {GOLDEN}")


if __name__ == "__main__":
    main()
