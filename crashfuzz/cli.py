"""The ``crashfuzz`` command line: run a campaign, the mutation suite, litmus tests, replays.

Exit status: 0 when everything passed, 1 when a failure was found (or a mutant behaved
unexpectedly, or a litmus test disagreed), 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from pmsim.errors import PmsimError


class Progress:
    """A one-line progress bar on stderr (silent when stderr is not a terminal)."""

    def __init__(self, label: str, enabled: bool | None = None) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.t0 = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        width = 30
        fill = int(width * done / max(total, 1))
        el = time.perf_counter() - self.t0
        sys.stderr.write(f"\r{self.label} [{'#' * fill}{'.' * (width - fill)}] {done}/{total} "
                         f"{el:.1f}s")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _params(items: Sequence[str]) -> tuple[tuple[str, Any], ...]:
    out = []
    for item in items:
        k, sep, v = item.partition("=")
        if not sep:
            raise PmsimError(f"--param {item!r}: expected NAME=VALUE, e.g. --param keys=16")
        try:
            out.append((k, json.loads(v)))
        except json.JSONDecodeError:
            out.append((k, v))
    return tuple(out)


def _cmd_run(args: argparse.Namespace) -> int:
    from .campaign import FuzzConfig, fuzz
    from .report import format_report, replay, save_findings

    cfg = FuzzConfig(runtime=args.runtime, workload=args.workload, params=_params(args.param),
                     domain=args.domain, order=args.order, threads=args.threads, txs=args.txs,
                     points=args.points, sampled_points=args.sampled_points, budget=args.budget,
                     samples=args.samples, idempotence=args.idempotence, new_tx=0 if args.no_new_tx else 1,
                     seed=args.seed, stop_at_first=args.stop_at_first, reduce=not args.no_reduce)
    if args.findings and not args.no_replay:
        from pathlib import Path

        old = sorted(Path(args.findings).glob(f"{cfg.runtime.replace(':', '_')}-*.json"))
        still = [p for p in old if replay(p, verbose=False) is not None]
        if old:
            print(f"replayed {len(old)} saved findings: {len(still)} still fail")
        for p in still:
            print(f"  {p}")
    shards = max(1, args.jobs)
    ex = ProcessPoolExecutor(shards) if shards > 1 else None
    try:
        rep = fuzz(cfg, executor=ex, shards=shards, progress=Progress("fuzz", None))
    finally:
        if ex:
            ex.shutdown()
    paths = save_findings(rep, args.findings) if (args.findings and not rep.ok) else None
    print(format_report(rep, paths))
    if args.json:
        from pathlib import Path

        doc = {k: getattr(rep, k) for k in ("runtime", "workload", "trace_events", "transactions",
                                            "points", "points_exhaustive", "points_sampled",
                                            "states_total", "states_checked", "distinct_images",
                                            "recoveries", "idempotence_images", "new_tx_checks",
                                            "failure_count", "seconds", "first_failure_point")}
        doc["config"] = cfg.to_dict()
        doc["failures"] = [f.summary() for f in rep.failures]
        Path(args.json).write_text(json.dumps(doc, indent=2))
    return 0 if rep.ok else 1


def _cmd_mutants(args: argparse.Namespace) -> int:
    from .campaign import FuzzConfig
    from .mutants import format_matrix, kill_matrix

    base = FuzzConfig(txs=args.txs, seed=args.seed, idempotence=2, reduce=False, budget=4096,
                      new_tx=3, new_tx_every_image=True)

    def show(row: Any) -> None:
        if sys.stderr.isatty():
            sys.stderr.write(f"\r{row.mutant:10s} {row.domain}: {'killed' if row.killed else 'alive'}"
                             "          ")
            sys.stderr.flush()

    rows = kill_matrix(args.mutant or None, args.domain or ("pdom0", "pdom1", "pdom2"), base, show)
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    print(format_matrix(rows))
    bad = [r for r in rows if not r.as_expected]
    print(f"\n{sum(r.killed for r in rows)} of {len(rows)} (mutant, domain) pairs killed; "
          f"{len(bad)} unexpected")
    return 1 if bad else 0


def _cmd_litmus(args: argparse.Namespace) -> int:
    from .litmus import check, litmus_suite, load_litmus

    tests = [load_litmus(p) for p in args.files] if args.files else litmus_suite()
    failed = 0
    for t in tests:
        try:
            check(t)
            print(f"ok    {t.name}")
        except AssertionError as e:
            failed += 1
            print(f"FAIL  {t.name}\n{e}")
    print(f"{len(tests) - failed} passed, {failed} failed")
    return 1 if failed else 0


def _cmd_ablate(args: argparse.Namespace) -> int:
    from pmsim.stats import format_table

    from .ablation import ablate, cells_to_rows, format_ablation
    from .campaign import FuzzConfig

    base = FuzzConfig(runtime=args.runtime, txs=args.txs, seed=args.seed, idempotence=2,
                      reduce=False, budget=args.budget, samples=args.samples, new_tx=3,
                      new_tx_every_image=True, depth=args.depth)

    def show(cell: Any) -> None:
        line = f"{cell.mutation[:60]:60s} {cell.domain}: {cell.verdict:14s}"
        if sys.stderr.isatty():
            sys.stderr.write("\r" + line)
        else:
            sys.stderr.write(f"{line} {cell.seconds:.1f} s\n")
        sys.stderr.flush()

    cells = ablate(args.runtime, args.domain or ("pdom0", "pdom1", "pdom2"), args.step or None,
                   not args.no_swaps, base, show)
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    print(format_ablation(cells) if args.markdown else format_table(cells_to_rows(cells)))
    return 0


def _cmd_replay(args: argparse.Namespace) -> int:
    from .report import replay

    return 1 if any(replay(p) is not None for p in args.findings) else 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="crashfuzz",
                                description="Exhaustive crash fuzzing of PM transactions.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="fuzz a runtime on a workload")
    r.add_argument("--runtime", default="undo", help="runtime or mutant (undo, redo, cow, undo:U1...)")
    r.add_argument("--workload", default="array", help="array, kv, bank, alloc_x, ...")
    r.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="workload parameter (repeatable)")
    r.add_argument("--domain", default="pdom1", choices=["pdom0", "pdom1", "pdom2"])
    r.add_argument("--order", default="line", choices=["line", "px86"])
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--txs", type=int, default=20, help="transactions per thread")
    r.add_argument("--points", default="reduced", choices=["reduced", "every", "sampled"])
    r.add_argument("--sampled-points", type=int, default=64)
    r.add_argument("--budget", type=int, default=65536,
                   help="enumerate a point exhaustively up to this many states")
    r.add_argument("--samples", type=int, default=256, help="samples at a point over the budget")
    r.add_argument("--idempotence", type=int, default=8, help="recoveries to crash-test")
    r.add_argument("--no-new-tx", action="store_true", help="skip the new-transaction check")
    r.add_argument("--no-reduce", action="store_true",
                   help="keep stores the runtime declares irrelevant to recovery")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--stop-at-first", action="store_true")
    r.add_argument("--jobs", type=int, default=1, help="worker processes (crash points are sharded)")
    r.add_argument("--findings", default=".crashfuzz/findings",
                   help="directory for failure reports (replayed first on the next run); '' = off")
    r.add_argument("--no-replay", action="store_true", help="do not replay saved findings first")
    r.add_argument("--json", help="write the report as JSON to this file")
    r.set_defaults(fn=_cmd_run)
    m = sub.add_parser("mutants", help="fuzz every registered mutant; print the kill matrix")
    m.add_argument("--mutant", action="append", help="only these mutants (repeatable)")
    m.add_argument("--domain", action="append", choices=["pdom0", "pdom1", "pdom2"])
    m.add_argument("--txs", type=int, default=8)
    m.add_argument("--seed", type=int, default=0)
    m.set_defaults(fn=_cmd_mutants)
    ab = sub.add_parser("ablate", help="drop each named persist step (and swap adjacent ones), "
                        "fuzz each: which steps does the protocol need in which domain")
    ab.add_argument("--runtime", default="undo", help="a registered runtime (undo, redo, cow, ...)")
    ab.add_argument("--domain", action="append", choices=["pdom0", "pdom1", "pdom2"])
    ab.add_argument("--step", action="append", help="only these steps, no swaps (repeatable)")
    ab.add_argument("--no-swaps", action="store_true", help="only drop steps")
    ab.add_argument("--txs", type=int, default=8)
    ab.add_argument("--budget", type=int, default=4096)
    ab.add_argument("--samples", type=int, default=64, help="samples at a point over the budget")
    ab.add_argument("--depth", type=int, default=2)
    ab.add_argument("--seed", type=int, default=0)
    ab.add_argument("--markdown", action="store_true", help="print the Markdown matrix with notes")
    ab.set_defaults(fn=_cmd_ablate)
    lt = sub.add_parser("litmus", help="run persistency litmus tests (default: the built-in suite)")
    lt.add_argument("files", nargs="*", help=".litmus files")
    lt.set_defaults(fn=_cmd_litmus)
    rp = sub.add_parser("replay", help="re-check saved findings (.json)")
    rp.add_argument("findings", nargs="+")
    rp.set_defaults(fn=_cmd_replay)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except PmsimError as e:
        print(f"crashfuzz: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("crashfuzz: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
