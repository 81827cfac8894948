"""Experiments and claims as data, and the scoreboard that checks a paper's claims.

* An :class:`Experiment` is a named sweep: a workload on runtimes x machine presets x threads
  x parameter axes, at the paper's scale or at a ``quick`` scale that keeps the shape (fewer
  transactions, fewer axis values). :meth:`Experiment.points` lists its points;
  :func:`measure` runs one (a module-level function, so :func:`~.sweep.run_sweep` can ship it
  to worker processes or Dask).
* A :class:`Claim` is what the paper reports (``says``), the criterion pmsim applies
  (``test``), the experiments it reads and a predicate over their rows returning a
  :class:`Finding`: the verdict, a measured summary and, for every "differs", one sentence
  saying why. Claims the model cannot reach have ``status="out of reach"`` and a reason.
* A :class:`Paper` holds its experiments and claims; papers register with
  :func:`register_paper` (one module per paper under ``pmsim/experiments/papers/``).
* :func:`scoreboard` evaluates every claim of a paper on measured rows.

Tolerances are uniform (see :func:`about`, :func:`same`, :func:`band`): the scoreboard says
what each claim was tested against, so a reader can judge the criterion as well as the verdict.
"""

from __future__ import annotations

import gc
import importlib
import itertools
import math
import statistics
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

from ..errors import ConfigError, PmsimError, unknown
from .plots import Figure

Verdict = Literal["holds", "differs", "scale-limited", "not modelled", "not run",
                  "self-check ok", "self-check fails"]
VERDICTS: tuple[str, ...] = ("holds", "differs", "scale-limited", "not modelled", "not run",
                             "self-check ok", "self-check fails")
"""Every verdict a scoreboard row can carry. **scale-limited**: the run did not reach the regime
the claim is about (a vlog that never fills, fewer threads than the paper's), so the predicate
could not have failed; **self-check ok/fails**: a claim that checks pmsim's own implementation
(two names for one runtime, an invariant), not a result of the paper."""
Status = Literal["reproducible", "qualitative", "out of reach", "self-check"]
STATUSES: tuple[str, ...] = ("reproducible", "qualitative", "out of reach", "self-check")

POINT_KEYS = ("paper", "experiment", "runtime", "workload", "preset", "threads", "txs", "warmup",
              "seed", "params", "machine")
ROW_KEYS = frozenset(("paper", "experiment", "preset", "warmup", "runtime", "workload", "domain",
                      "threads", "txs", "commits", "aborts", "sim_ns", "throughput", "lat_p50",
                      "lat_p90", "lat_p99", "pb_per_tx", "flush_per_tx", "fence_per_tx",
                      "pm_bytes_per_tx", "wall_s", "params", "seed", "backend", "version",
                      "tx_per_wall_s", "config", "ack_p50", "ack_p90", "ack_p99",
                      "llc_misses_per_tx", "work_ns_per_tx", "barrier_stall_ns_per_tx",
                      "wpq_stall_ns_per_tx", "sb_stall_ns_per_tx"))
"""Columns a row has besides the workload parameters (which must not reuse these names)."""


# -- tolerances ---------------------------------------------------------------------------------

TOLERANCE = 1.5
"""A claimed excess over 1 (``~1.25x`` = +25%, ``~50x`` = +4900%) holds within this factor."""
SAME = 0.10
"""Two quantities the paper calls equal (≈) may differ by this fraction."""


def about(target: float) -> tuple[float, float]:
    """The accepted interval of a ratio the paper gives as ``~target``: its excess over 1
    within a factor :data:`TOLERANCE` (``~2x`` -> [1.67, 2.5], ``~1.25`` -> [1.17, 1.375])."""
    e = target - 1
    return 1 + e / TOLERANCE, 1 + e * TOLERANCE


def band(lo: float, hi: float) -> tuple[float, float]:
    """The accepted interval of a ratio the paper gives as a range ``lo``-``hi``: the excess
    of each end over 1 widened by :data:`TOLERANCE` (1.2-1.3 -> [1.13, 1.45])."""
    return 1 + (lo - 1) / TOLERANCE, 1 + (hi - 1) * TOLERANCE


def same(a: float, b: float, tol: float = SAME) -> bool:
    """Whether ``a`` ≈ ``b``: within ``tol`` of each other, relative to the larger."""
    return abs(a - b) <= tol * max(abs(a), abs(b))


def inside(v: float, interval: tuple[float, float]) -> bool:
    return interval[0] <= v <= interval[1]


def fmt_interval(interval: tuple[float, float]) -> str:
    """``[lo, hi]`` with 3 significant digits and no exponent (``[0.9, 1,500]``)."""
    def one(v: float) -> str:
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"

    return f"[{one(interval[0])}, {one(interval[1])}]"


# -- findings -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Finding:
    """What a claim's predicate found: the verdict ("holds", "differs" or "scale-limited"),
    a short summary of the measured values, and for "differs" and "scale-limited" one sentence
    saying why (for "scale-limited": which regime the run did not reach)."""

    verdict: Verdict
    measured: str
    why: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in ("holds", "differs", "scale-limited"):
            raise ConfigError(f"a predicate's verdict is 'holds', 'differs' or 'scale-limited', "
                              f"not {self.verdict!r}")
        if self.verdict != "holds" and not self.why.strip():
            raise ConfigError(f"a '{self.verdict}' finding needs an explanation (measured: "
                              f"{self.measured})")


class Checks:
    """Sub-checks of one claim: each records what was measured and, if it fails, why.
    ``finding()`` holds only if every sub-check held; its explanation joins the reasons of
    the failed ones into one sentence. A :meth:`regime` check that was not reached makes the
    finding "scale-limited" whatever the others found: they could not have failed. A regime of
    one part of the claim (``part=True``: one benchmark of several) that was not reached makes
    it scale-limited only if no other part differs."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.failed: list[str] = []
        self.unreached: list[str] = []
        self.unreached_parts: list[str] = []

    def regime(self, reached: bool, measured: str, why: str, part: bool = False) -> bool:
        """Whether the run reached the regime the claim (``part``: one part of it) is about;
        ``why`` says what it did not reach and what would (the scale, the thread count)."""
        self.parts.append(measured + ("" if reached else " (regime not reached)"))
        if not reached:
            (self.unreached_parts if part else self.unreached).append(why)
        return reached

    def expect(self, ok: bool, measured: str, why: str) -> bool:
        self.parts.append(measured + ("" if ok else " ✗"))
        if not ok:
            self.failed.append(why)
        return ok

    def note(self, measured: str) -> None:
        self.parts.append(measured)

    def other_reading(self, reading: str, ok: bool, measured: str) -> None:
        """The verdict under another reading of an ambiguous claim, shown beside the measured
        values; it does not change this claim's verdict (the claim's test names the reading
        chosen and why)."""
        self.parts.append(f"other reading ({reading}): {measured}, "
                          f"{'would hold' if ok else 'would differ'}")

    def finding(self) -> Finding:
        measured = "; ".join(self.parts)
        if self.unreached:
            why = "; ".join(w.rstrip(".") for w in self.unreached) + "."
            return Finding("scale-limited", measured, why[0].upper() + why[1:])
        if not self.failed:
            if self.unreached_parts:
                why = "; ".join(w.rstrip(".") for w in self.unreached_parts) + "."
                return Finding("scale-limited", measured, why[0].upper() + why[1:])
            return Finding("holds", measured)
        why = "; ".join(w.rstrip(".") for w in self.failed) + "."
        return Finding("differs", measured, why[0].upper() + why[1:])


class MissingRows(PmsimError):
    """A claim needs rows that were not measured (its experiment was skipped or filtered)."""


# -- rows ----------------------------------------------------------------------------------------

class Rows(Sequence[dict[str, Any]]):
    """Measured rows with selection helpers for predicates: ``rows.where(runtime="undo")``,
    ``rows.get("lat_p50", runtime="undo", domain="pdom0", write_pct=100)``."""

    def __init__(self, rows: Iterable[Mapping[str, Any]]) -> None:
        self._rows = [dict(r) for r in rows]

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i: Any) -> Any:
        return self._rows[i]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._rows)

    def where(self, **eq: Any) -> Rows:
        """The rows whose columns equal the given values (a tuple or set value: any of them)."""
        def ok(r: dict[str, Any]) -> bool:
            for k, v in eq.items():
                have = r.get(k)
                if isinstance(v, tuple | set | frozenset | list):
                    if have not in v:
                        return False
                elif have != v:
                    return False
            return True

        return Rows(r for r in self._rows if ok(r))

    def values(self, col: str) -> list[Any]:
        """The distinct values of ``col``, sorted."""
        vals = {r[col] for r in self._rows if r.get(col) is not None}
        return sorted(vals)

    def get(self, metric: str, **eq: Any) -> float:
        """``metric`` averaged over the matching rows (repeats of a point); MissingRows if none
        match."""
        sel = self.where(**eq)
        if not sel:
            what = ", ".join(f"{k}={v}" for k, v in eq.items())
            raise MissingRows(f"no measured row with {what}")
        return float(statistics.fmean(float(r[metric]) for r in sel))

    def series(self, x: str, metric: str, **eq: Any) -> list[tuple[Any, float]]:
        """``[(x, metric)]`` sorted by x over the matching rows (repeats averaged)."""
        sel = self.where(**eq)
        if not sel:
            what = ", ".join(f"{k}={v}" for k, v in eq.items())
            raise MissingRows(f"no measured row with {what}")
        return [(xv, sel.get(metric, **{x: xv})) for xv in sel.values(x)]


# -- experiments ---------------------------------------------------------------------------------

Axis = tuple[str, tuple[Any, ...]]


def _pairs(value: Any, what: str) -> tuple[tuple[str, Any], ...]:
    if isinstance(value, Mapping):
        return tuple((str(k), v) for k, v in value.items())
    try:
        out = tuple((str(k), v) for k, v in value)
    except (TypeError, ValueError):
        raise ConfigError(f"{what}: expected a mapping or (name, value) pairs, got {value!r}") \
            from None
    return out


def _axes(value: Any, what: str) -> tuple[Axis, ...]:
    out = []
    for name, vals in _pairs(value, what):
        vals = tuple(vals) if isinstance(vals, list | tuple) else (vals,)
        if not vals:
            raise ConfigError(f"{what}: axis {name!r} has no values")
        out.append((name, vals))
    return tuple(out)


@dataclass(frozen=True)
class Experiment:
    """A named sweep of ``workload`` over ``runtimes`` x ``presets`` x ``threads`` x the
    ``axes`` (workload parameters; an axis value that is a mapping sets several parameters
    at once), with the fixed workload ``params`` and machine overrides ``machine``
    (``{"pm.read_ns": 200}``). ``quick_*`` give the quick scale: fewer transactions and,
    per axis, fewer values (the same shape). ``figures`` are drawn from its rows."""

    name: str
    title: str
    workload: str
    runtimes: tuple[str, ...]
    presets: tuple[str, ...]
    axes: tuple[Axis, ...] = ()
    params: tuple[tuple[str, Any], ...] = ()
    machine: tuple[tuple[str, Any], ...] = ()
    threads: tuple[int, ...] = (1,)
    txs: int = 1000
    warmup: int = 100
    seed: int = 1
    quick_axes: tuple[Axis, ...] = ()
    quick_threads: tuple[int, ...] = ()
    quick_txs: int = 100
    quick_warmup: int = 10
    figures: tuple[Figure, ...] = ()
    source: str = ""
    options: tuple[Axis, ...] = ()
    quick_options: tuple[Axis, ...] = ()
    first_only: tuple[tuple[str, str], ...] = ()
    """(runtime, option) pairs: that runtime runs only the option's first value (e.g. a
    runtime whose rows at the other values no claim reads)."""
    longer_runs: bool = False
    """Whether ``--explain`` also reruns its points that keep a log ten times longer, their
    logs in proportion (the "runs 10x longer" counterfactual: a claim about a log that rarely
    fills, measured nearer that regime); off where that would cost too much."""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "axes", _axes(self.axes, f"experiment {self.name!r} axes"))
        set_(self, "quick_axes", _axes(self.quick_axes, f"experiment {self.name!r} quick_axes"))
        set_(self, "options", _axes(self.options, f"experiment {self.name!r} options"))
        set_(self, "quick_options", _axes(self.quick_options,
                                          f"experiment {self.name!r} quick_options"))
        set_(self, "params", _pairs(self.params, f"experiment {self.name!r} params"))
        set_(self, "machine", _pairs(self.machine, f"experiment {self.name!r} machine"))
        for name in ("runtimes", "presets", "threads", "quick_threads", "figures"):
            set_(self, name, tuple(getattr(self, name)))
        if not self.name or not self.runtimes or not self.presets or not self.threads:
            raise ConfigError(f"experiment {self.name!r} needs a name, runtimes, presets and "
                              "threads")
        axis_names = {n for n, _ in self.axes}
        extra = {n for n, _ in self.quick_axes} - axis_names
        if extra:
            raise ConfigError(f"experiment {self.name!r}: quick_axes {sorted(extra)} are not "
                              f"axes (axes: {sorted(axis_names)})")
        extra = {n for n, _ in self.quick_options} - {n for n, _ in self.options}
        if extra:
            raise ConfigError(f"experiment {self.name!r}: quick_options {sorted(extra)} are not "
                              f"options (options: {sorted(n for n, _ in self.options)})")
        names = axis_names | {n for n, _ in self.params} | {n for n, _ in self.options}
        for _, vals in self.axes:
            for v in vals:
                if isinstance(v, Mapping):
                    names |= set(v)
        clash = names & ROW_KEYS
        if clash:
            raise ConfigError(f"experiment {self.name!r}: parameters {sorted(clash)} reuse row "
                              "column names; rename them")
        for n in ("txs", "quick_txs"):
            if getattr(self, n) < 1:
                raise ConfigError(f"experiment {self.name!r}: {n} must be >= 1")

    def points(self, quick: bool = False, scale: float = 1.0, paper: str = "") -> list[dict[str, Any]]:
        """Every point (a JSON-ready dict for :func:`measure`) at the full or quick scale;
        ``scale`` multiplies the transactions of each point (at least 1 stays)."""
        if not (isinstance(scale, int | float) and math.isfinite(scale) and scale > 0):
            raise ConfigError(f"scale must be a number > 0, got {scale!r}")
        axes = dict(self.axes)
        if quick:
            axes.update(dict(self.quick_axes))
        threads = self.quick_threads if quick and self.quick_threads else self.threads
        txs = max(1, round((self.quick_txs if quick else self.txs) * scale))
        warmup = max(0, round((self.quick_warmup if quick else self.warmup) * scale))
        opts = dict(self.options)
        if quick:
            opts.update(dict(self.quick_options))
        out = []
        for pre in self.presets:
            for rt in self.runtimes:
                mine = self._options_of(rt, opts)
                for th in threads:
                    for ocombo in itertools.product(*mine.values()):
                        for combo in itertools.product(*axes.values()):
                            params = dict(self.params)
                            for name, v in zip(axes, combo, strict=True):
                                if isinstance(v, Mapping):
                                    params.update(v)
                                else:
                                    params[name] = v
                            point = {"paper": paper, "experiment": self.name, "runtime": rt,
                                     "workload": self.workload, "preset": pre, "threads": th,
                                     "txs": txs, "warmup": warmup, "seed": self.seed,
                                     "params": params, "machine": dict(self.machine)}
                            if mine:
                                point["options"] = dict(zip(mine, ocombo, strict=True))
                            out.append(point)
        return out

    def _options_of(self, runtime: str, opts: dict[str, tuple[Any, ...]]
                    ) -> dict[str, tuple[Any, ...]]:
        """The option axes ``runtime`` has settings for (a runtime without one of them, such
        as ``stm`` for ``persist_bw``, runs once and its rows lack that column)."""
        if not opts:
            return {}
        from ..runtimes import get_runtime
        from ..runtimes.options import settable

        can = settable(get_runtime(runtime))
        first = {o for r, o in self.first_only if r == runtime}
        return {k: v[:1] if k in first else v for k, v in opts.items() if k in can}


POINT_STALL_SECONDS = 600.0
"""CPU seconds a paper's sweep point may run with no transaction and no background work
finished before it is stopped as stuck: pmsim's own protocols at the papers' scale, where a
27-thread run of NV-HTM's FNF variant (WPQ merging on) spent up to 71 s of CPU across one
checkpoint, its workers polling for log space every 200 ns of the checkpoint's simulated
flushes; a run's default bound (30 s) is for user code under development."""


def measure(point: Mapping[str, Any]) -> dict[str, Any]:
    """Run one point (see :meth:`Experiment.points`) and return its row: the point's labels,
    the workload parameters as columns, and the figures of
    :func:`~pmsim.experiments.run.run_experiment` (per-thread ``txs`` measured after
    ``warmup``)."""
    from ..presets import preset
    from .run import run_experiment

    missing = [k for k in ("runtime", "workload", "preset") if k not in point]
    if missing:
        raise ConfigError(f"point {dict(point)!r} lacks {missing}")
    threads = int(point.get("threads", 1))
    cfg = preset(point["preset"]).replace(cores=threads, **dict(point.get("machine") or {}))
    params = dict(point.get("params") or {})
    opts = dict(point.get("options") or {})
    runtime = point["runtime"]
    if opts:
        from ..runtimes.options import with_options

        runtime = with_options(runtime, opts)
    r = run_experiment(runtime, point["workload"], cfg, threads=threads,
                       txs=int(point.get("txs", 100)), warmup=int(point.get("warmup", 0)),
                       seed=point.get("seed"), params=params, stall_seconds=POINT_STALL_SECONDS)
    gc.collect()  # the run's machine sits in reference cycles with its big arrays: free it now
    row = r.row()
    row.pop("params", None)
    row["runtime"] = point["runtime"]
    labels = {"paper": point.get("paper", ""), "experiment": point.get("experiment", ""),
              "preset": point["preset"], "warmup": int(point.get("warmup", 0))}
    return {**labels, **row, **params, **opts}


# -- claims and papers ---------------------------------------------------------------------------

Predicate = Callable[[Rows], Finding]


@dataclass(frozen=True)
class Claim:
    """A claim of a paper: ``id`` ("M4"), where it is (``source``, "Fig. 5c"), what the paper
    reports (``says``), the criterion pmsim applies (``test``), the ``experiments`` whose rows
    the ``check`` reads, and its ``status``. An "out of reach" claim has no check and says
    why in ``reason``."""

    id: str
    source: str
    says: str
    test: str = ""
    experiments: tuple[str, ...] = ()
    check: Predicate | None = None
    status: Status = "reproducible"
    reason: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "experiments", tuple(self.experiments))
        if self.status not in STATUSES:
            raise ConfigError(f"claim {self.id}: status {self.status!r} is not one of "
                              f"{', '.join(STATUSES)}")
        if self.status == "out of reach":
            if self.check is not None or not self.reason:
                raise ConfigError(f"claim {self.id} is out of reach: give a reason and no check")
        elif self.check is None or not self.experiments or not self.test:
            raise ConfigError(f"claim {self.id} ({self.status}) needs a check, a test and the "
                              "experiments it reads")

    def evaluate(self, rows: Rows) -> dict[str, Any]:
        """The scoreboard row of this claim on ``rows`` (all of a paper's rows)."""
        base = {"claim": self.id, "status": self.status, "source": self.source,
                "says": self.says, "test": self.test or "-"}
        if self.check is None:
            return {**base, "measured": "-", "verdict": "not modelled",
                    "explanation": self.reason}
        mine = rows.where(experiment=tuple(self.experiments))
        try:
            f = self.check(mine)
        except MissingRows as e:
            return {**base, "measured": "-", "verdict": "not run",
                    "explanation": f"{e}: run experiments {', '.join(self.experiments)}"}
        verdict: str = f.verdict
        if self.status == "self-check" and verdict != "scale-limited":
            verdict = "self-check ok" if verdict == "holds" else "self-check fails"
        return {**base, "measured": f.measured, "verdict": verdict, "explanation": f.why}


@dataclass(frozen=True)
class Paper:
    """A paper: its experiments and claims, and where its spec card is. ``figures`` are
    drawn from the rows of all its experiments (a figure across experiments, such as a table of
    the paper's over every benchmark), or from what ``figure_rows`` derives from them (e.g. a
    table's quantities in long format); an experiment's own figures see only its rows."""

    name: str
    title: str
    citation: str
    card: str
    experiments: tuple[Experiment, ...]
    claims: tuple[Claim, ...]
    figures: tuple[Figure, ...] = ()
    figure_rows: Callable[[Rows], list[dict[str, Any]]] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "experiments", tuple(self.experiments))
        object.__setattr__(self, "claims", tuple(self.claims))
        object.__setattr__(self, "figures", tuple(self.figures))
        names = [e.name for e in self.experiments]
        if len(set(names)) != len(names):
            raise ConfigError(f"paper {self.name!r}: experiment names repeat: {names}")
        ids = [c.id for c in self.claims]
        if len(set(ids)) != len(ids):
            raise ConfigError(f"paper {self.name!r}: claim ids repeat: {ids}")
        for c in self.claims:
            bad = set(c.experiments) - set(names)
            if bad:
                raise ConfigError(f"paper {self.name!r}: claim {c.id} reads unknown experiments "
                                  f"{sorted(bad)} (known: {', '.join(names)})")

    def figure_data(self, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The rows :attr:`figures` are drawn from (none when what they need was not run)."""
        if self.figure_rows is None:
            return [dict(r) for r in rows]
        try:
            return self.figure_rows(Rows(rows))
        except MissingRows:
            return []

    def experiment(self, name: str) -> Experiment:
        for e in self.experiments:
            if e.name == name:
                return e
        raise unknown(f"{self.name} experiment", name, [e.name for e in self.experiments])

    def points(self, quick: bool = False, scale: float = 1.0,
               only: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The points of its experiments (``only``: those named)."""
        exps = [self.experiment(n) for n in only] if only else list(self.experiments)
        return [p for e in exps for p in e.points(quick, scale, self.name)]


PAPERS: dict[str, Paper] = {}
"""Registered papers by name."""


def register_paper(obj: Paper | ModuleType | str) -> Paper:
    """Register a paper: a :class:`Paper`, a module defining ``PAPER``, or the import name
    of such a module. Returns the paper."""
    if isinstance(obj, str):
        obj = importlib.import_module(obj)
    if isinstance(obj, ModuleType):
        paper = getattr(obj, "PAPER", None)
        if not isinstance(paper, Paper):
            raise ConfigError(f"module {obj.__name__} defines no PAPER = Paper(...)")
        obj = paper
    if not isinstance(obj, Paper):
        raise ConfigError(f"register_paper takes a Paper, a module or a module name, not {obj!r}")
    PAPERS[obj.name] = obj
    return obj


def _load_builtin() -> None:
    from .papers import BUILTIN

    for name in BUILTIN:
        importlib.import_module(f"{__package__}.papers.{name}")


def get_paper(name: str) -> Paper:
    """The registered paper ``name`` (the built-in ones loaded first)."""
    _load_builtin()
    try:
        return PAPERS[name]
    except KeyError:
        raise unknown("paper", name, PAPERS) from None


def paper_names() -> list[str]:
    _load_builtin()
    return list(PAPERS)


# -- running and scoring -------------------------------------------------------------------------

def run_points(points: Sequence[Mapping[str, Any]], fn: Callable[[dict[str, Any]], dict[str, Any]]
               = measure, label: str = "experiments", **sweep: Any) -> list[dict[str, Any]]:
    """Rows of ``fn`` over ``points`` via :func:`~.sweep.run_sweep` (``sweep``: its options;
    an empty list of points gives no rows). A point whose runtime does not support its domain
    gets no row, and a note on stderr (:func:`~.run.supported_points`)."""
    from .run import supported_points

    points, notes = supported_points(points)
    for note in notes:
        print(f"{label}: {note}", file=sys.stderr)
    if not points:
        return []
    from .sweep import run_sweep

    return run_sweep(fn, list(points), label=label, **sweep)


def scoreboard(paper: Paper, rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per claim of ``paper``, evaluated on ``rows`` (rows of other papers or
    experiments are ignored): claim, status, source, says, test, measured, verdict,
    explanation."""
    mine = Rows(r for r in rows if r.get("paper", paper.name) == paper.name)
    return [{"paper": paper.name, **c.evaluate(mine)} for c in paper.claims]


def summary(t: Mapping[str, int]) -> str:
    """A tally as one phrase: "12 hold, 3 differ, 2 scale-limited, 1 not modelled" (verdicts
    that no claim got are left out, except hold and differ)."""
    names = {"holds": "hold", "differs": "differ"}
    parts = [f"{t.get(v, 0)} {names.get(v, v)}" for v in VERDICTS
             if v in names or t.get(v, 0)]
    return ", ".join(parts)


def tally(board: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many claims got each verdict."""
    out = dict.fromkeys(VERDICTS, 0)
    for r in board:
        out[r["verdict"]] = out.get(r["verdict"], 0) + 1
    return out


__all__ = ["Checks", "Claim", "Experiment", "Finding", "MissingRows", "PAPERS", "Paper", "Rows",
           "about", "band", "get_paper", "inside", "measure", "paper_names",
           "register_paper", "run_points", "same", "scoreboard", "tally"]
