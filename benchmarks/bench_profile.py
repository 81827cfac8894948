"""Where the wall time of the speed runs goes, by layer: the evidence behind an Amdahl bound.

The speed issue asks for 10x more simulated transactions per wall-second while the protocols
(``pmsim/runtimes/**``) stay readable Python. Whatever else is made faster (the C engine, the
machine glue, the hardware models, SimPy), the time spent in protocol and workload code itself
remains: if it is a share X of the wall time, nothing done outside it can give more than 1/X.
This script measures X for each run of ``bench_speed.py`` (its ``RUNS`` and ``_run``).

Only the measured phase is profiled: the ``Session.run`` of the timed transactions, which is
what the rate counts (setup and warm-up are run the same way but their profiles thrown away).
Time goes to a layer by the source file of the function it was spent in: ``protocol``
(pmsim/runtimes/**), ``workload`` (pmsim/workloads/**, which includes the Session driver),
``tm`` (pmsim/tm/**), ``hw models`` (pmsim/hw/** but pmsim/hw/engines/: the Proteus and LOC
hardware, the HTM model), ``machine`` (every other pmsim module: machine.py, opstream.py, the
engine glue in pmsim/hw/engines/, pmsim/cache/, ...), ``engine`` (the C core's functions, by
``bench_speed.engine_share``'s rule: a built-in whose name holds ``pmsim.cache._pmcore``; this
includes cffi's own cost of the call), ``simpy``, ``numpy`` (its files, and built-ins whose
name mentions numpy) and ``python/other`` (every other built-in, the standard library).

Two profilers, printed side by side:

* **cProfile self time** (``tottime``). A second column charges each built-in other than the
  engine's (``len``, ``list.append``, ...) to the layer of the Python function that called it,
  by cProfile's per-caller times. cProfile adds a roughly constant cost to every call it
  records, and that cost lands in the self time of the Python functions involved: the layers
  that make many tiny calls (protocol glue, machine wrappers, built-ins) are overstated and
  the ones doing longer work per call (the C core) understated. The runs are about 3x slower
  under it (rates printed). The C core's cProfile *seconds*, though, are close to its real
  time, since the profiler's cost falls outside them; over the unprofiled measured phase's
  seconds (the best of up to 3 plain runs) they give a second estimate of the engine's share
  (``engine_by_seconds``; a little high: it includes some of the profiler's hook).
* **Sampling**: an interval timer (``setitimer(ITIMER_REAL)``, every ``--interval`` ms of wall
  time) whose SIGALRM handler, run in the main thread, appends the interrupted frame's code,
  instruction offset and caller's code to a list, and does nothing else: it only observes, so
  the simulation and its results are unchanged (it cost about 5% of the rate at 1 ms, and
  about 17% at 0.25 ms, on the loaded 2-core machine it was tried on). CPython runs a signal
  handler at the next safe point (a function's entry, a loop's back edge, the return from a
  C call), so: a sample on a call of a C-core function (a name bound to ``lib.pm_*`` in that file, found
  from the source) is ``engine``, including the few bytecodes of its Python wrapper before the
  call (so the sampled engine share is somewhat high and the machine glue's low); a sample on
  a function's entry covers straight-line code since the last safe point, run by the caller,
  and goes to the caller (the ``sampled`` column), or, for comparison, to the function entered
  (``sampled_callee``: where the cost of calling a function belongs is a matter of view; the
  two columns bracket it). Any other sample goes to the layer of the interrupted frame's file,
  built-ins included (as in cProfile's second column).
  A background thread reading ``sys._current_frames()`` every millisecond would be the simpler
  sampler, but it only gets to run when the main thread releases the GIL, which cffi does on
  every call into the C core: tried on undo/Array, every one of its samples landed on a call
  instruction, nearly all of them calls into the C core, so it measures the GIL hand-offs, not
  where the time goes.

The Amdahl bound is total / (protocol + workload): the speed-up if everything else (engine,
machine glue, hardware models, TM machinery, SimPy, NumPy, built-ins) took no time at all,
protocol and workload code unchanged; ``bound, protocol only`` is total / protocol (the
workload's generators and the Session driver need not stay as they are). pmsim/tm/** (the
TinySTM algorithm and the HTM runner that DUDETx and NV-HTM run on) is algorithm code too;
``bound, tm kept too`` is the bound if it stays Python as well. Both profilers distort; the
sampled columns are the less distorted.

Run ``python benchmarks/bench_profile.py [--quick] [--repeat N] [--interval MS] [--only TEXT]``
(``--quick``: a fifth of the transactions, at most 3 sampled runs a case; ``--repeat``: sampled
runs a case, pooled; ``--only``: the runs whose key, e.g. ``nvhtm/bank/14t``, holds TEXT).
"""

from __future__ import annotations

import argparse
import ast
import cProfile
import dis
import functools
import os
import platform
import pstats
import signal
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import CodeType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy  # noqa: E402
import simpy  # noqa: E402
from bench_speed import RUNS, _commit, _key, _run  # noqa: E402

import pmsim  # noqa: E402
from pmsim.stats import format_table  # noqa: E402
from pmsim.workloads.session import Session  # noqa: E402

LAYERS = ("protocol", "workload", "tm", "hw models", "machine", "engine", "simpy", "numpy",
          "python/other")
PKG = Path(pmsim.__file__).resolve().parent
SIMPY = Path(simpy.__file__).resolve().parent
NUMPY = Path(numpy.__file__).resolve().parent
CALL_OPS = frozenset({"PRECALL", "CALL", "CALL_FUNCTION_EX"})

Func = tuple[str, int, str]  # cProfile's key: (file, first line, name)
Sample = tuple[CodeType, int, CodeType | None]  # code, instruction offset, the caller's code


@functools.cache
def file_layer(filename: str) -> str:
    """The layer of a source file (cProfile's ``~`` built-ins are handled by the caller)."""
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return "python/other"
    if path.is_relative_to(PKG):
        top = path.relative_to(PKG).parts
        if top[0] == "runtimes":
            return "protocol"
        if top[0] == "workloads":
            return "workload"
        if top[0] == "tm":
            return "tm"
        if top[0] == "hw" and not (len(top) > 2 and top[1] == "engines"):
            return "hw models"
        return "machine"
    if path.is_relative_to(SIMPY):
        return "simpy"
    if path.is_relative_to(NUMPY):
        return "numpy"
    return "python/other"


def func_layer(func: Func) -> str:
    """The layer of a cProfile entry."""
    path, _line, name = func
    if path == "~":
        if "pmsim.cache._pmcore" in name:  # bench_speed.engine_share's rule
            return "engine"
        return "numpy" if "numpy" in name else "python/other"
    return file_layer(path)


def short(func: Func) -> str:
    path, line, name = func
    try:
        path = str(Path(path).resolve().relative_to(PKG.parent))
    except ValueError:
        pass
    return f"{path}:{line}({name})"


# ---- cProfile -------------------------------------------------------------------------------


def cprofile_layers(st: pstats.Stats) -> tuple[dict[str, float], dict[str, float]]:
    """Seconds by layer: self time, and self time with non-engine built-ins charged to their
    callers (by cProfile's per-caller inline time)."""
    own: dict[str, float] = defaultdict(float)
    charged: dict[str, float] = defaultdict(float)
    for func, (_cc, _nc, tt, _ct, callers) in st.stats.items():  # type: ignore[attr-defined]
        layer = func_layer(func)
        own[layer] += tt
        if func[0] != "~" or layer == "engine":
            charged[layer] += tt
            continue
        left = tt
        for caller, edge in callers.items():
            charged[func_layer(caller)] += edge[2]
            left -= edge[2]
        charged[layer] += max(left, 0.0)
    return own, charged


# ---- sampling -------------------------------------------------------------------------------


@functools.cache
def engine_names(filename: str) -> frozenset[str]:
    """Names that hold a C-core function in a file: targets of assignments from ``lib.pm_*``
    (``native.lib.pm_x``, ``self._lib.pm_x``), parameters of local functions called with one,
    and the ``pm_*`` attributes themselves."""
    try:
        tree = ast.parse(Path(filename).read_text())
    except (OSError, SyntaxError, ValueError):
        return frozenset()

    def is_pm(node: ast.AST) -> bool:
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("pm_")):
            return False
        v = node.value
        return (isinstance(v, ast.Name) and v.id == "lib") or (
            isinstance(v, ast.Attribute) and v.attr in ("lib", "_lib"))

    def holds_pm(node: ast.AST) -> bool:
        return any(is_pm(n) for n in ast.walk(node))

    names: set[str] = set()
    defs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(tree):
        if is_pm(node):
            names.add(node.attr)  # type: ignore[attr-defined]
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs = list(zip(target.elts, node.value.elts, strict=False))
                else:
                    pairs = [(target, node.value)]
                names.update(t.id for t, v in pairs if isinstance(t, ast.Name) and holds_pm(v))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in defs):
            params = defs[node.func.id].args.args
            names.update(p.arg for p, a in zip(params, node.args, strict=False) if is_pm(a))
    return frozenset(names)


@functools.cache
def callee(code: CodeType, offset: int) -> str | None:
    """The name the call at ``offset`` calls (the last load of the callee expression: the one
    that starts where the call starts), or None if ``offset`` is not a call."""
    instrs = list(dis.get_instructions(code))
    at = next((i for i in instrs if i.offset == offset), None)
    if at is None or at.opname not in CALL_OPS or at.positions is None:
        return None
    start = (at.positions.lineno, at.positions.col_offset)
    best = None
    for i in instrs:
        if i.offset >= offset:
            break
        p = i.positions
        if (i.opname.startswith("LOAD") and p is not None and (p.lineno, p.col_offset) == start
                and (best is None or (p.end_lineno or 0, p.end_col_offset or 0)
                     >= (best.positions.end_lineno or 0, best.positions.end_col_offset or 0))):
            best = i
    return str(best.argval) if best is not None else None


@functools.cache
def opname(code: CodeType, offset: int) -> str:
    return dis.opname[code.co_code[offset]] if 0 <= offset < len(code.co_code) else ""


def attribute(sample: Sample, entry_to_caller: bool = True) -> tuple[str, CodeType | None]:
    """The layer a sample goes to, and the function (None for the C core's time). A sample on
    a function's entry (RESUME) covers the time since the last safe point, spent in the caller
    and the call itself: charged to the caller, unless ``entry_to_caller`` is false."""
    code, offset, back = sample
    if entry_to_caller and back is not None and opname(code, offset) == "RESUME":
        return file_layer(back.co_filename), back
    if callee(code, offset) in engine_names(code.co_filename):
        return "engine", None
    return file_layer(code.co_filename), code


@contextmanager
def sampling(interval: float, out: list[Sample]) -> Iterator[None]:
    """Append (code, instruction offset) of the main thread's frame every ``interval`` s."""
    append = out.append

    def tick(_signum: int, frame: Any) -> None:
        if frame is not None:
            back = frame.f_back
            append((frame.f_code, frame.f_lasti, back.f_code if back is not None else None))

    old = signal.signal(signal.SIGALRM, tick)
    signal.setitimer(signal.ITIMER_REAL, interval, interval)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, old)


# ---- the measured phase ---------------------------------------------------------------------


def measured(run: Callable[[], float], wrap: Callable[[Callable[[], None]], Any]) -> tuple[
        float, Any]:
    """Run ``run()`` (bench_speed's ``_run``) with every ``Session.run`` inside it called
    through ``wrap``; return its rate and what ``wrap`` returned for the last (timed) call."""
    orig = Session.run
    last: list[Any] = [None]

    def patched(self: Session, *args: Any, **kwargs: Any) -> None:
        last[0] = wrap(lambda: orig(self, *args, **kwargs))

    Session.run = patched  # type: ignore[method-assign]
    try:
        rate = run()
    finally:
        Session.run = orig  # type: ignore[method-assign]
    return rate, last[0]


def profiled(body: Callable[[], None]) -> pstats.Stats:
    """``body`` run under cProfile, its statistics."""
    prof = cProfile.Profile()
    prof.runcall(body)
    return pstats.Stats(prof)


def shares(secs: dict[str, float]) -> dict[str, float]:
    """Each layer's seconds as a fraction of all of them."""
    tot = sum(secs.values())
    return {k: secs.get(k, 0.0) / tot if tot else 0.0 for k in LAYERS}


def bound(sh: dict[str, float], kept: tuple[str, ...] = ("protocol", "workload")) -> float:
    """Amdahl: the speed-up if every layer but ``kept`` took no time."""
    core = sum(sh[k] for k in kept)
    return 1 / core if core else float("inf")


WITH_TM = ("protocol", "workload", "tm")
PROTOCOL = ("protocol",)


def pct(x: float) -> str:
    """A fraction as a percentage with one decimal."""
    return f"{100 * x:.1f}%"


def timed(body: Callable[[], None]) -> float:
    """Wall seconds ``body`` takes."""
    t = time.perf_counter()
    body()
    return time.perf_counter() - t


def profile_run(spec: tuple[Any, ...], txs: int, repeat: int, interval: float
                ) -> dict[str, Any]:
    rt, wl, pre, threads, params, _ = spec
    go = functools.partial(_run, rt, wl, pre, threads, params, txs)
    plain, plain_s = max(measured(go, timed) for _ in range(min(3, repeat)))  # least loaded
    cp_rate, st = measured(go, profiled)
    own, charged = cprofile_layers(st)
    samples: list[Sample] = []
    s_rates = []
    for _ in range(repeat):
        part: list[Sample] = []

        def sampled(body: Callable[[], None], part: list[Sample] = part) -> None:
            del part[:]  # keep the timed call's samples only
            with sampling(interval, part):
                body()

        s_rates.append(measured(go, sampled)[0])
        samples.extend(part)
    by_layer: Counter[str] = Counter()
    by_callee: Counter[str] = Counter()
    by_code: Counter[Func] = Counter()
    ops: Counter[str] = Counter()
    for sample in samples:
        layer, code = attribute(sample)
        by_layer[layer] += 1
        by_callee[attribute(sample, entry_to_caller=False)[0]] += 1
        ops[opname(sample[0], sample[1])] += 1
        if code is not None:
            by_code[(code.co_filename, code.co_firstlineno, code.co_name)] += 1
    return {"key": _key(rt, wl, threads), "txs": txs, "plain": plain, "plain_s": plain_s,
            "cp_rate": cp_rate, "s_rate": max(s_rates), "stats": st, "own": own,
            "charged": charged, "n": len(samples),
            "sampled": {k: float(v) for k, v in by_layer.items()},
            "sampled_callee": {k: float(v) for k, v in by_callee.items()},
            "by_code": by_code, "ops": ops}


VARIANTS = (("cprofile", "cProfile self time"),
            ("cp_to_caller", "cProfile, built-ins charged to their callers"),
            ("sampled", "sampled (a function's entry charged to its caller)"),
            ("sampled_callee", "sampled, a function's entry charged to it"))


def report(r: dict[str, Any]) -> dict[str, Any]:
    """Print one run's tables; return its summary row per variant."""
    sh = {"cprofile": shares(r["own"]), "cp_to_caller": shares(r["charged"]),
          "sampled": shares(r["sampled"]), "sampled_callee": shares(r["sampled_callee"])}
    total = sum(r["own"].values())
    engine_real = r["own"].get("engine", 0.0) / r["plain_s"]
    print(f"\n## {r['key']} ({r['txs']} transactions a thread; tx/s: plain {r['plain']:,.0f}, "
          f"sampled {r['s_rate']:,.0f}, under cProfile {r['cp_rate']:,.0f}; "
          f"{r['n']:,} samples)")
    rows: list[dict[str, Any]] = [
        {"layer": k, "cprofile_s": r["own"].get(k, 0.0), **{v: pct(sh[v][k]) for v in sh}}
        for k in LAYERS]
    rows.append({"layer": "total", "cprofile_s": total, **{v: "100%" for v in sh}})
    rows.append({"layer": "Amdahl bound", "cprofile_s": "",
                 **{v: f"{bound(sh[v]):.2f}x" for v in sh}})
    rows.append({"layer": "bound, protocol only", "cprofile_s": "",
                 **{v: f"{bound(sh[v], PROTOCOL):.2f}x" for v in sh}})
    rows.append({"layer": "bound, tm kept too", "cprofile_s": "",
                 **{v: f"{bound(sh[v], WITH_TM):.2f}x" for v in sh}})
    print(format_table(rows, floatfmt="{:.3f}", align_left=["layer"]))
    print(f"C core by seconds: cProfile's {r['own'].get('engine', 0.0):.3f} s in the C core over "
          f"the unprofiled measured phase's {r['plain_s']:.3f} s = {pct(engine_real)}")
    print("samples by the instruction they landed on: " + ", ".join(
        f"{op or '?'} {pct(c / max(r['n'], 1))}" for op, c in r["ops"].most_common(5)))
    st, n = r["stats"], max(r["n"], 1)
    items = st.stats.items()  # type: ignore[attr-defined]
    for layer, top in (("protocol", 10), ("workload", 5)):
        hot = sorted(((v[2], v[1], f) for f, v in items if func_layer(f) == layer), reverse=True)
        print(f"top {top} {layer} functions by cProfile self time (sampled: the share of "
              "samples charged to the function)")
        print(format_table([{"function": short(f), "calls": nc, "self_s": tt,
                             "cprofile_self": pct(tt / total),
                             "sampled": pct(r["by_code"].get(f, 0) / n)}
                            for tt, nc, f in hot[:top]],
                           floatfmt="{:.3f}", align_left=["function"]))
    shown = ("protocol", "workload", "tm", "engine", "simpy", "hw models", "machine")
    summary: dict[str, Any] = {}
    for v, s in sh.items():
        summary[v] = {"run": r["key"], **{k.split()[0]: pct(s[k]) for k in shown},
                      "other": pct(sum(s[k] for k in LAYERS if k not in shown)),
                      "bound_protocol": f"{bound(s, PROTOCOL):.2f}x",
                      "bound": f"{bound(s):.2f}x", "bound_with_tm": f"{bound(s, WITH_TM):.2f}x"}
    summary["cprofile"]["engine_by_seconds"] = pct(engine_real)
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="a fifth of the transactions, 3 sampled runs")
    ap.add_argument("--repeat", type=int, default=6, help="sampled runs per case (pooled)")
    ap.add_argument("--interval", type=float, default=1.0, help="sampling interval, ms")
    ap.add_argument("--only", default="", help="only the runs whose key holds this text")
    args = ap.parse_args()
    repeat = min(3, max(1, args.repeat)) if args.quick else max(1, args.repeat)
    print(f"# host: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, commit {_commit()}; sampling every "
          f"{args.interval} ms, {repeat} sampled run(s) a case")
    t0 = time.perf_counter()
    summaries = []
    for spec in RUNS:
        rt, wl, _pre, threads, _params, txs = spec
        if args.only not in _key(rt, wl, threads):
            continue
        n = max(10, txs // 5) if args.quick else txs
        summaries.append(report(profile_run(spec, n, repeat, args.interval / 1000)))
    print("\n# summary: shares of the measured phase's time by layer (other: numpy, "
          "python/other); bound_protocol = 1 / protocol, bound = 1 / (protocol + workload), "
          "bound_with_tm = 1 / (protocol + workload + tm)")
    for v, label in VARIANTS:
        print(f"\n{label}")
        print(format_table([s[v] for s in summaries], align_left=["run"]))
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
