"""CLI commands of the runtimes: ``pmsim run`` and ``pmsim demo`` (undo/redo/COW side by side).

Imported by :mod:`pmsim.cli`, which maps :class:`~pmsim.errors.PmsimError` to exit status 2.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from ..cli import (
    add_machine_args,
    add_runtime_arg,
    add_workload_args,
    int_in,
    machine_config,
    number_in,
    parse_params,
    positive_int,
    register,
)
from ..errors import PmsimError
from ..machine import default_backend
from ..options import check_output_file as check_output
from ..runtimes.registry import get_runtime
from ..stats import format_table
from ..workloads.base import get_workload
from .compare import DEMO_PRESETS, compare_table, protocols_table, run_comparison, run_protocols
from .run import METRICS, RunResult, abort_summary, run_experiment
from .tables import num


def result_table(results: Sequence[RunResult]) -> str:
    """Metrics as rows, one column per run."""
    rows = []
    for name, unit, _ in METRICS:
        row: dict[str, Any] = {"metric": f"{name} ({unit})" if unit else name}
        for r in results:
            row[f"{r.runtime}/{r.domain}"] = getattr(r, name)
        rows.append(row)
    return format_table(rows)


def counter_table(r: RunResult) -> str:
    """A run's runtime counters (aborts by cause, log traffic in each counting mode...) with
    their totals and per committed transaction (the machine's ``hw.*`` counts are left to
    :func:`~.run.abort_summary`), then the runtime's facts (a log's real size), which have no
    per-transaction figure."""
    n = max(r.commits, 1)

    def total(v: float) -> str:
        return num(int(v) if float(v).is_integer() else v)

    rows = [{"counter": k, "total": total(v), "per tx": num(v / n)}
            for k, v in sorted(r.counters.items()) if not k.startswith("hw.")]
    rows += [{"counter": k, "total": total(v), "per tx": "-"} for k, v in sorted(r.facts.items())]
    return format_table(rows)


def _add_run(p: argparse.ArgumentParser) -> None:
    add_runtime_arg(p)
    add_workload_args(p)
    p.add_argument("--threads", type=int_in(1, 64), default=1,
                   help="application threads, one per core (at most the machine's cores; add "
                   "--cores N for more)")
    p.add_argument("--txs", type=positive_int, default=1000,
                   help="measured transactions per thread")
    p.add_argument("--warmup", type=int_in(0), default=0, help="warm-up transactions per thread")
    p.add_argument("--json", help="also write the result (with the full config) to this JSON file")
    p.add_argument("--csv", help="also write the result row to this CSV file")
    add_machine_args(p)


def _cmd_run(args: argparse.Namespace) -> int:
    cfg = machine_config(args)
    get_runtime(args.runtime)
    get_workload(args.workload)
    if args.threads > cfg.cores:
        given = f"--cores {cfg.cores} gives" if args.cores is not None else \
            f"the machine (--preset {args.preset}) has {cfg.cores} cores,"
        raise PmsimError(f"--threads {args.threads}: {given} one thread per core; use "
                         f"--threads 1..{cfg.cores}, or add --cores {args.threads} for a machine "
                         "with more cores")
    check_output("--json", args.json)
    check_output("--csv", args.csv)
    r = run_experiment(args.runtime, args.workload, cfg, threads=args.threads, txs=args.txs,
                       warmup=args.warmup, params=parse_params(args.param), backend=args.backend)
    print(f"# {r.runtime} on {r.workload} ({r.params or 'defaults'}), {r.domain}, "
          f"{r.threads} thread(s), {r.txs} measured transactions, seed {r.seed}, "
          f"backend {r.backend}, {r.tx_per_wall_s:,.0f} tx per wall-second")
    print(result_table([r]))
    print(f"# {abort_summary(r)}")
    if any(not k.startswith("hw.") for k in r.counters):
        print(f"# the runtime's own counters over the measured period; per tx = total / "
              f"{r.commits} commits")
        print(counter_table(r))
    try:
        if args.json:
            with open(args.json, "w") as f:
                json.dump({**r.row(), "params": r.params, "config": r.config}, f, indent=2)
        if args.csv:
            row = r.row()
            with open(args.csv, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(row))
                w.writeheader()
                w.writerow(row)
    except OSError as e:
        raise PmsimError(f"cannot write {e.filename!r}: {e.strerror or e}") from None
    return 0


def _add_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--txs", type=positive_int, help="measured transactions per run (default: "
                   "300 on the C engine, 60 on the pure-Python one)")
    p.add_argument("--write-pct", type=number_in(0, 100), default=100.0,
                   help="read-write share of slots, in percent (0..100)")
    p.add_argument("--backend", choices=["c", "python"], help="engine backend")


def _cmd_demo(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    print("# Undo vs redo vs copy-on-write (Marathe et al.) on Array: 20 slots of 4 words per "
          f"transaction, {args.write_pct:g}% read-write, 300 ns PM loads, fixed persist barriers "
          f"{', '.join(f'{d} {ns:g} ns' for d, ns in DEMO_PRESETS)}")
    backend = args.backend or default_backend()
    txs = args.txs if args.txs is not None else (300 if backend == "c" else 60)
    results = run_comparison(txs=txs, warmup=max(5, txs // 6), write_pct=args.write_pct,
                             backend=backend)
    print(compare_table(results))
    print("\n# Every seed paper's protocol and baselines on one machine: chained hash map, 1 "
          "thread, optane-adr (PDOM-1); Proteus and ATOM are modelled hardware")
    n = max(20, txs * 2 // 3)
    print(protocols_table(run_protocols(txs=n, warmup=max(5, n // 6), backend=backend)))
    print(f"# {time.perf_counter() - t0:.1f} s wall; `pmsim run --help` runs one configuration, "
          "`pmsim compare` every protocol in every domain", file=sys.stderr)
    return 0


register("run", "run a workload on a runtime and print throughput, latency and persistence "
         "costs", _add_run, _cmd_run)
register("demo", "undo, redo and copy-on-write side by side in every persistence domain, then "
         "every protocol and baseline on one machine "
         "(what `make demo` runs)", _add_demo, _cmd_demo)
