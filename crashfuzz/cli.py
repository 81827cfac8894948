"""The ``crashfuzz`` command line: run a campaign, the mutation suite, litmus tests, replays.

Exit status: 0 when everything passed, 1 when a failure was found (or a mutant behaved
unexpectedly, or a litmus test disagreed, or a replayed finding still fails), 2 on bad input
(one line ``crashfuzz: error: ...``; for ``replay``: a finding was unreadable and none still
fails), 141 when the reader of the output closed the pipe early (``crashfuzz litmus | head``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from pmsim.cli import (
    add_machine_args,
    add_runtime_arg,
    add_workload_args,
    closed_pipe,
    int_in,
    machine_config,
    machine_given,
    parse_params,
    positive_int,
)
from pmsim.errors import PmsimError
from pmsim.interrupts import catching, ignore_further, requested, stopped_by_sigterm
from pmsim.options import MAX_JOBS, check_output_dir, check_output_file, jobs_arg
from pmsim.progress import Progress, add_progress_arg, progress_enabled
from pmsim.usercode import user_error

MAX_SAMPLES = 1_000_000
"""Most samples at a crash point (they are drawn and held at once)."""
SEED = int_in(0, (1 << 64) - 1)


def _exit_code(e: BaseException) -> int:
    """128 + the signal that interrupted: 143 for SIGTERM (anywhere in the chain), else 130."""
    return 128 + (signal.SIGTERM if stopped_by_sigterm(e) else signal.SIGINT)


def _worker_init() -> None:
    """Worker processes leave Ctrl-C to the parent, which stops them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _stop_pool(ex: ProcessPoolExecutor) -> None:
    """Cancel what has not started and terminate the workers, busy or idle: no orphans, and no
    waiting for work whose result is no longer wanted. The pool's call queue is read by no one
    once its workers are gone, so its feeder thread (blocked on a full pipe) is not waited for,
    and the pool's manager thread, which would wait for it, ends."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    calls = getattr(ex, "_call_queue", None)
    if calls is not None:
        calls.cancel_join_thread()
    manager = getattr(ex, "_executor_manager_thread", None)
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(5)
        if p.is_alive():
            p.kill()
            p.join()
    if manager is not None:
        manager.join(10)


def _check_outputs(args: argparse.Namespace) -> None:
    """Fail before the work, not after it, when an output path of ``run`` cannot be written."""
    check_output_file("--json", args.json)
    check_output_dir("--findings", args.findings)


def _write_json(path: str, doc: dict[str, Any]) -> None:
    """Write ``doc`` to ``path`` through a temporary file, so a failed write leaves no torn file."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=2)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _report_doc(rep: Any) -> dict[str, Any]:
    doc = {k: getattr(rep, k) for k in (
        "runtime", "workload", "partial", "points_planned", "trace_events", "transactions",
        "points", "points_exhaustive", "points_sampled", "points_classed", "read_classes",
        "deep_points_classed", "deep_read_classes", "read_log_misses", "states_total", "states_checked",
        "distinct_images", "recoveries", "idempotence_images", "new_tx_checks", "failure_count",
        "seconds", "first_failure_point", "deep_runs", "deep_candidates", "deep_points",
        "deep_points_sampled", "deep_states", "deep_distinct", "schedules", "distinct_traces",
        "paths", "notes")}
    doc["config"] = rep.config.to_dict()
    doc["failures"] = [f.summary() for f in rep.failures]
    return doc


def _machine_label(args: argparse.Namespace) -> str:
    """The machine options as given: ``preset optane-adr, --set pm.wpq_entries=8``."""
    parts = [f"preset {args.preset}" if args.preset else "the small fuzzing machine"]
    if args.config:
        parts.append(f"--config {args.config}")
    parts += [f"--{n.replace('_', '-')} {getattr(args, n)}" for n in ("barrier", "barrier_ns",
                                                                        "cores")
              if getattr(args, n) is not None]
    parts += [f"--set {item}" for item in args.set]
    return ", ".join(parts)


def _cmd_run(args: argparse.Namespace) -> int:
    """Fuzz; on SIGINT/SIGTERM stop the workers, keep what finished units found and exit
    130/143. Outputs: findings saved, then the report printed, then the JSON report, each
    written even when an earlier one could not be."""
    from .campaign import FuzzConfig, Interrupted, fuzz, fuzz_machine
    from .report import findings_of, format_report, replay, save_findings

    small = fuzz_machine(args.domain or "pdom1", args.threads, args.seed or 0)  # checks them
    machine = machine_config(args, base=small) if machine_given(args) else None
    domain = machine.domain if machine is not None else args.domain or "pdom1"
    seed = machine.seed if machine is not None else args.seed or 0
    cfg = FuzzConfig(runtime=args.runtime, workload=args.workload,
                     params=parse_params(args.param), domain=domain, order=args.order,
                     oracle=args.oracle, schedules=args.schedules,
                     schedule_kind=args.schedule_kind, schedule_depth=args.schedule_depth,
                     threads=args.threads, txs=args.txs,
                     points=args.points, sampled_points=args.sampled_points, budget=args.budget,
                     samples=args.samples, class_from=args.class_from, class_limit=args.class_limit,
                     idempotence=args.idempotence, new_tx=0 if args.no_new_tx else 1,
                     seed=seed, stop_at_first=args.stop_at_first, reduce=not args.no_reduce,
                     machine=machine)
    _check_outputs(args)
    if machine is not None:
        print(f"machine: {_machine_label(args)}; {machine.domain}, {machine.cores} cores "
              "(recorded with each finding)")
    if args.findings and not args.no_replay:
        still: list[Path] = []
        unreadable: list[str] = []
        old = findings_of(args.findings, cfg.runtime, unreadable)
        for p in old:
            try:
                if replay(p, verbose=False) is not None:
                    still.append(p)
            except PmsimError as e:  # a stale or damaged finding must not cost the new run
                unreadable.append(f"{p} (unreadable: {e})")
        if old or unreadable:
            print(f"replayed {len(old)} saved findings: {len(still)} still fail"
                  + (f", {len(unreadable)} unreadable" if unreadable else ""))
        for p in [*map(str, still), *unreadable]:
            print(f"  {p}")
    shards = max(1, args.jobs)
    ex = ProcessPoolExecutor(shards, initializer=_worker_init) if shards > 1 else None
    code = None
    try:
        with Progress(None, "fuzz", "unit", progress_enabled(args), check_stop=True) as bar:
            rep = fuzz(cfg, executor=ex, shards=shards, progress=bar)
    except Interrupted as e:
        rep, code = e.report, _exit_code(e)
        ignore_further()  # a second signal must not lose them
        print(f"crashfuzz: interrupted; keeping what {rep.points} of {rep.points_planned} crash "
              "points found", file=sys.stderr)
    finally:
        if ex:
            _stop_pool(ex)
    errors = []
    paths = None
    if args.findings and rep.failures:
        try:
            paths = save_findings(rep, args.findings)
        except OSError as e:
            errors.append(f"could not save findings to {args.findings!r}: {e}")
    print(format_report(rep, paths), flush=True)
    if args.json:
        try:
            _write_json(args.json, _report_doc(rep))
        except OSError as e:
            errors.append(f"could not write --json {args.json!r}: {e}")
    for msg in errors:
        print(f"crashfuzz: error: {msg}", file=sys.stderr)
    if code is not None:
        return code
    return 2 if errors else (0 if rep.ok else 1)


def _cmd_mutants(args: argparse.Namespace) -> int:
    from .campaign import FuzzConfig
    from .mutants import format_matrix, kill_matrix

    base = FuzzConfig(txs=args.txs, seed=args.seed, idempotence=2, reduce=False, budget=4096,
                      new_tx=3, new_tx_every_image=True)

    from pmsim.runtimes.registry import all_mutants, get_mutant

    names = args.mutant or sorted(all_mutants())
    domains = args.domain or ("pdom0", "pdom1", "pdom2")
    total = sum(d in get_mutant(n).base.supported_domains for n in names for d in domains)
    with Progress(total, "mutants", "campaign", progress_enabled(args), check_stop=True) as bar:
        rows = kill_matrix(args.mutant or None, domains, base, lambda row: bar.update(
            1, f"{row.mutant} {row.domain}: {'killed' if row.killed else 'alive'}"))
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
            check(t, max_states=args.max_states)
            print(f"ok    {t.name}")
        except AssertionError as e:
            failed += 1
            print(f"FAIL  {t.name}\n{e}")
    print(f"{len(tests) - failed} passed, {failed} failed")
    return 1 if failed else 0


def _cmd_ablate(args: argparse.Namespace) -> int:
    from pmsim.stats import format_table

    from .ablation import ablate, ablation_size, cells_to_rows, format_ablation
    from .campaign import FuzzConfig

    base = FuzzConfig(runtime=args.runtime, txs=args.txs, seed=args.seed, idempotence=2,
                      reduce=False, budget=args.budget, samples=args.samples, new_tx=3,
                      new_tx_every_image=True, depth=args.depth, threads=args.threads,
                      order=args.order)

    domains = args.domain or ("pdom0", "pdom1", "pdom2")
    with Progress(ablation_size(args.runtime, args.step or None, not args.no_swaps, base, domains),
                  "ablate", "campaign", progress_enabled(args), check_stop=True) as bar:
        cells = ablate(args.runtime, domains, args.step or None, not args.no_swaps, base,
                       lambda cell: bar.update(1, f"{cell.mutation[:50]} {cell.domain}: "
                                                  f"{cell.verdict}"))
    print(format_ablation(cells) if args.markdown else format_table(cells_to_rows(cells)))
    for note in cells.skipped:
        print(f"\n{note}")
    return 0


def _cmd_replay(args: argparse.Namespace) -> int:
    """Replay every finding, one line each; 1 if any still fails, else 2 if any was
    unreadable (each also reported on stderr), else 0."""
    from .campaign import FuzzConfig
    from .report import format_failure, replay

    failing = unreadable = 0
    for p in args.findings:
        try:
            f = replay(p, verbose=False)
        except PmsimError as e:
            unreadable += 1
            why = str(e).removeprefix(f"{p}: ")
            print(f"{p}: unreadable: {why}", flush=True)
            print(f"crashfuzz: error: {p}: {why}", file=sys.stderr)
            continue
        if f is None:
            print(f"{p}: now passes (the finding no longer reproduces)")
        else:
            failing += 1
            print(f"{p}: still fails: {f.summary()}")
            if args.verbose:
                print(format_failure(f, f.config or FuzzConfig(), p))
    n = len(args.findings)
    print(f"{n} finding(s): {failing} still fail, {n - failing - unreadable} now pass, "
          f"{unreadable} unreadable")
    return 1 if failing else 2 if unreadable else 0


def _pipe_safe(fn: Any) -> Any:
    """``fn`` with its output flushed inside, and a reader that closes the pipe early
    (``crashfuzz litmus | head -1``) ending it quietly with status 141, as SIGPIPE would."""
    def run(args: argparse.Namespace) -> int:
        try:
            rc = int(fn(args))
            sys.stdout.flush()
            return rc
        except BrokenPipeError:
            return closed_pipe()
    run.__doc__ = fn.__doc__
    return run


def _cmd_program(args: argparse.Namespace) -> int:
    """Fuzz a PM program (``run`` with the program as runtime and workload), or repair it."""
    from .pm import _program, repair_program

    _program(args.program)  # a clear error for anything that is not a program
    args.runtime = args.workload = args.program
    if not args.repair:
        return int(_cmd_run(args))
    if machine_given(args):
        raise PmsimError("--repair runs on the small fuzzing machine; leave out the machine "
                         "options (--preset, --config, --set, --cores, --barrier, --barrier-ns)")
    res = repair_program(args.program, txs=args.txs, threads=args.threads,
                         domain=args.domain or "pdom1", seed=args.seed or 0,
                         order=args.order, budget=args.budget, samples=args.samples,
                         points=args.points, sampled_points=args.sampled_points,
                         class_from=args.class_from, class_limit=args.class_limit,
                         idempotence=args.idempotence, new_tx=0 if args.no_new_tx else 1,
                         reduce=not args.no_reduce, schedules=args.schedules,
                         schedule_kind=args.schedule_kind, schedule_depth=args.schedule_depth)
    print(res.summary())
    return 0 if res.ok and not res.fixes else 1


def _campaign_args(r: argparse.ArgumentParser) -> None:
    """The options of one campaign (``run`` and ``program``)."""
    from .campaign import MAX_TXS

    r.add_argument("--order", default="auto", choices=["auto", "line", "px86"],
                   help="persist order mode: line (a cache line persists atomically), px86 (only "
                        "8-byte atoms do) or auto (line for pmsim's runtimes, px86 for PM "
                        "programs)")
    r.add_argument("--oracle", default="auto", choices=["auto", "model", "robust"],
                   help="judge recovered states by the workload's model, by robustness (strict "
                        "persistency: no model needed), or auto (the model if there is one)")
    r.add_argument("--threads", type=int_in(1, 64), default=1, help="application threads (1..64)")
    r.add_argument("--txs", type=int_in(1, MAX_TXS), default=20,
                   help=f"transactions per thread (1..{MAX_TXS})")
    r.add_argument("--points", default="reduced", choices=["reduced", "every", "sampled"])
    r.add_argument("--sampled-points", type=positive_int, default=64)
    r.add_argument("--budget", type=positive_int, default=65536,
                   help="enumerate a point exhaustively up to this many states")
    r.add_argument("--samples", type=int_in(1, MAX_SAMPLES), default=256,
                   help=f"samples at a point over the budget (1..{MAX_SAMPLES})")
    r.add_argument("--class-from", type=int_in(0), default=64,
                   help="check a point with more distinct images (a point with ordering edges: "
                        "more states than the budget) one read-set class at a time: images that "
                        "agree on every word recovery reads recover identically")
    r.add_argument("--class-limit", type=int_in(0), default=4096,
                   help="read-set classes per point before falling back to images or samples "
                        "(0: no classes)")
    r.add_argument("--idempotence", type=int_in(0), default=8, help="recoveries to crash-test")
    r.add_argument("--no-new-tx", action="store_true", help="skip the new-transaction check")
    r.add_argument("--no-reduce", action="store_true",
                   help="keep stores the runtime declares irrelevant to recovery")
    r.add_argument("--stop-at-first", action="store_true")
    r.add_argument("--schedules", type=int_in(1, 10_000), default=1,
                   help="thread interleavings to crash-test (1: the simulator's own; more: "
                        "drawn schedules too, each run with a new trace crash-tested)")
    r.add_argument("--schedule-kind", default="pct", choices=["pct", "random"],
                   help="how drawn schedules delay threads at their switch points")
    r.add_argument("--schedule-depth", type=int_in(1, 64), default=3,
                   help="PCT bug depth d (d-1 priority change points per schedule)")
    r.add_argument("--jobs", type=jobs_arg, default=1,
                   help=f"worker processes (crash points are sharded; 1..{MAX_JOBS})")
    r.add_argument("--findings", default=".crashfuzz/findings",
                   help="directory for failure reports (replayed first on the next run); '' = off")
    r.add_argument("--no-replay", action="store_true", help="do not replay saved findings first")
    r.add_argument("--json", help="write the report as JSON to this file")
    add_progress_arg(r)
    add_machine_args(r, omit=("backend",), preset_default=None)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="crashfuzz",
                                description="Exhaustive crash fuzzing of PM transactions and "
                                "PM programs.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="fuzz a runtime on a workload",
                       description="Fuzz a runtime on a workload. The machine is a small one "
                       "(small caches, so lines get evicted) unless a machine option (--preset, "
                       "--config, --set, --cores, --barrier, --barrier-ns) names one: then it is "
                       "that machine, as `pmsim run` builds it from the same options, its PM "
                       "region cut to the layout; findings record it, so replay uses it. "
                       "--domain and --seed default to the machine's (pdom1 and 0 for the small "
                       "one).")
    add_runtime_arg(r)
    add_workload_args(r)
    _campaign_args(r)
    r.set_defaults(fn=_pipe_safe(_cmd_run))
    pg = sub.add_parser(
        "program", help="fuzz a PM program (a pmsim.programs.PMProgram in a file)",
        description="Crash-test a PM program: its operations run as the crash-free run, every "
        "crash image is recovered with its recover(), and the recovered state() is judged by its "
        "model or, without one, by robustness (every state must be one strict persistency could "
        "recover to). Persist order px86 by default: x86 guarantees 8-byte atoms, not lines.")
    pg.add_argument("program", help="the program's import path: 'file.py:Class' or "
                    "'package.module:Class'")
    _campaign_args(pg)
    pg.add_argument("--repair", action="store_true",
                    help="apply each fix the robustness oracle suggests and fuzz again, until "
                         "the program is clean (the fixes are printed, the file is not edited)")
    pg.set_defaults(fn=_pipe_safe(_cmd_program), workload=None, param=[])
    m = sub.add_parser("mutants", help="fuzz every registered mutant; print the kill matrix")
    m.add_argument("--mutant", action="append", help="only these mutants (repeatable)")
    m.add_argument("--domain", action="append", choices=["pdom0", "pdom1", "pdom2"])
    m.add_argument("--txs", type=positive_int, default=8)
    m.add_argument("--seed", type=SEED, default=0, help="seed (0..2**64-1)")
    add_progress_arg(m)
    m.set_defaults(fn=_pipe_safe(_cmd_mutants))
    ab = sub.add_parser("ablate", help="drop each named persist step (and swap adjacent ones), "
                        "fuzz each: which steps does the protocol need in which domain")
    ab.add_argument("--runtime", default="undo", help="a registered runtime (undo, redo, cow, "
                    "...), or a PM program's import path 'file.py:Class'")
    ab.add_argument("--domain", action="append", choices=["pdom0", "pdom1", "pdom2"])
    ab.add_argument("--step", action="append", help="only these steps, no swaps (repeatable)")
    ab.add_argument("--no-swaps", action="store_true", help="only drop steps")
    ab.add_argument("--order", default="auto", choices=["auto", "line", "px86"],
                    help="persist order mode of every campaign (auto: line for pmsim's "
                         "runtimes, px86 for PM programs)")
    ab.add_argument("--txs", type=positive_int, default=8)
    ab.add_argument("--threads", type=int_in(1, 8), default=1,
                    help="worker threads (2+ for steps only other threads observe)")
    ab.add_argument("--budget", type=positive_int, default=4096)
    ab.add_argument("--samples", type=int_in(1, MAX_SAMPLES), default=64,
                    help=f"samples at a point over the budget (1..{MAX_SAMPLES})")
    ab.add_argument("--depth", type=positive_int, default=2)
    ab.add_argument("--seed", type=SEED, default=0, help="seed (0..2**64-1)")
    ab.add_argument("--markdown", action="store_true", help="print the Markdown matrix with notes")
    add_progress_arg(ab)
    ab.set_defaults(fn=_pipe_safe(_cmd_ablate))
    from .litmus import MAX_STATES

    lt = sub.add_parser("litmus", help="run persistency litmus tests (default: the built-in suite)")
    lt.add_argument("files", nargs="*", help=".litmus files (all are parsed before any runs)")
    lt.add_argument("--max-states", type=positive_int, default=MAX_STATES,
                    help="refuse a test whose interleavings or crash images exceed this many "
                         f"states (default {MAX_STATES:,})")
    lt.set_defaults(fn=_pipe_safe(_cmd_litmus))
    rp = sub.add_parser("replay", help="re-check saved findings (.json)",
                        description="Replay every finding and print one line each: still "
                        "fails, now passes, or unreadable (and why). Exit status: 1 if any "
                        "still fails; else 2 if any was unreadable; else 0.")
    rp.add_argument("findings", nargs="+", help="finding .json files (the .npy beside each)")
    rp.add_argument("-v", "--verbose", action="store_true",
                    help="print the full report of each finding that still fails")
    rp.set_defaults(fn=_pipe_safe(_cmd_replay))
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; exit status 0 / 1 / 2 (see the module), 130 on SIGINT, 143 on SIGTERM."""
    args = build_parser().parse_args(argv)
    try:
        with catching(sigterm=True, force=True):
            rc = int(args.fn(args))
            stopped = requested()
        if stopped:
            ignore_further()
        return rc
    except PmsimError as e:
        print(f"crashfuzz: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        ignore_further()
        print("crashfuzz: interrupted", file=sys.stderr)
        return _exit_code(e)
    except (Exception, SystemExit) as e:  # user code that raised or exited, named
        err = user_error(e)
        if err is None:
            raise
        print(f"crashfuzz: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
