"""A crash-fuzz campaign: run, pick crash points, enumerate images, recover, check.

``fuzz(FuzzConfig(runtime="undo", workload="kv", domain="pdom1", txs=20))`` runs the workload
crash-free on a small machine, takes the persistence trace, and for every crash point (the
complete reduced set by default) enumerates the surviving PM images — every one when the
point has at most ``budget`` states, ``samples`` uniform samples otherwise, and the report says
which. Each distinct image (by hash) is recovered once on a power-cycled machine and checked:

* application data equals the reference after a correct set of committed transactions
  (:mod:`crashfuzz.oracle`);
* the runtime's own invariants hold (allocator, descriptors, logs);
* the recovered image accepts and commits a new transaction (once per distinct outcome);
* recovery is idempotent: recovery's own trace is crash-tested and recovered again
  (``idempotence`` images per crash point).

Runtimes and workloads are named (registered) or passed as classes/instances, so users can fuzz
code defined in a test file or a notebook. Campaigns shard crash points over an executor.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import numpy as np

from pmsim.config import CacheConfig, CacheLevel, MachineConfig, Region, param
from pmsim.errors import ConfigError, PmsimError
from pmsim.machine import Machine
from pmsim.runtimes.alloc import HeapExhausted
from pmsim.runtimes.base import Runtime
from pmsim.runtimes.registry import get_runtime
from pmsim.runtimes.steps import step_at
from pmsim.trace import Ev, Trace
from pmsim.workloads.base import Workload, get_workload
from pmsim.workloads.session import Session

from .model import image_hash
from .oracle import Oracle, TxHistory
from .states import CrashModel

POINT_KINDS = ("reduced", "every", "sampled")


@dataclass(frozen=True)
class FuzzConfig:
    """One campaign. Every random choice derives from ``seed``."""

    runtime: str = param("undo", "", "registered runtime or mutant name (e.g. 'undo', 'redo:R2')")
    workload: str = param("array", "", "registered workload name")
    params: tuple[tuple[str, Any], ...] = param((), "", "workload parameters as (name, value) pairs")
    domain: str = param("pdom1", "", "persistence domain: pdom0, pdom1 or pdom2")
    order: str = param("line", "", "persist order mode: 'line' or 'px86'")
    threads: int = param(1, "threads", "application threads")
    txs: int = param(20, "tx", "transactions per thread in the crash-free run")
    points: str = param("reduced", "", "crash points: reduced (complete), every, sampled")
    sampled_points: int = param(64, "points", "how many points 'sampled' draws")
    budget: int = param(65536, "states", "enumerate a point exhaustively up to this many states")
    samples: int = param(256, "states", "uniform samples at a point over the budget")
    idempotence: int = param(8, "images", "distinct images (at most one per crash point, where "
                             "recovery stores something) whose recovery is itself crash-tested")
    new_tx: int = param(1, "tx", "new transactions run (and checked) on a recovered image; 0 = off")
    new_tx_every_image: bool = param(False, "", "run the new transactions on every distinct "
                                     "image, not once per distinct recovered data")
    depth: int = param(2, "crashes", "crash depth: 1 crashes the run (and recovery, see "
                       "idempotence); 2 also crashes the run that follows a recovery: recovery "
                       "and new transactions on a recovered image, traced and crash-tested; 3 ...")
    depth_txs: int = param(2, "tx", "new transactions run after each recovery at depth >= 2")
    depth_runs: int = param(8, "runs", "runs after recovery crash-tested per depth level, "
                            "started from crash points spread over the run")
    seed: int = param(0, "", "seed of the workload and of every sample")
    recovery: str = param("functional", "", "machine that recovers crash images: 'functional' "
                          "(memory and values only; fast) or 'timed' (caches, WPQ, clocks; for "
                          "measuring recovery itself). Findings are identical")
    reduce: bool = param(True, "", "leave out stores to words the runtime declares irrelevant to "
                         "recovery (Runtime.crash_irrelevant); their images recover identically")
    stop_at_first: bool = param(False, "", "stop at the first failure")
    max_failures: int = param(20, "", "failures kept in the report")

    def __post_init__(self) -> None:
        if self.domain not in ("pdom0", "pdom1", "pdom2"):
            raise ConfigError(f"FuzzConfig.domain: unknown domain {self.domain!r}; use pdom0, "
                              "pdom1 or pdom2")
        if self.order not in ("line", "px86"):
            raise ConfigError(f"FuzzConfig.order: unknown order {self.order!r}; use line or px86")
        if self.points not in POINT_KINDS:
            raise ConfigError(f"FuzzConfig.points: unknown kind {self.points!r}; use "
                              f"{', '.join(POINT_KINDS)}")
        for name in ("threads", "txs", "budget", "samples", "sampled_points", "max_failures",
                     "depth", "depth_txs", "depth_runs"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ConfigError(f"FuzzConfig.{name} must be an integer >= 1, got {v!r}")
        if self.recovery not in ("functional", "timed"):
            raise ConfigError(f"FuzzConfig.recovery: unknown machine {self.recovery!r}; use "
                              "functional or timed")
        if not isinstance(self.idempotence, int) or self.idempotence < 0:
            raise ConfigError(f"FuzzConfig.idempotence must be >= 0, got {self.idempotence!r}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["params"] = [list(p) for p in self.params]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FuzzConfig:
        known = {f.name for f in fields(cls)}
        bad = set(d) - known
        if bad:
            raise ConfigError(f"unknown FuzzConfig fields {sorted(bad)}; known: {sorted(known)}")
        d = dict(d)
        d["params"] = tuple(tuple(p) for p in d.get("params", ()))
        return cls(**d)


def fuzz_machine(domain: str, threads: int, seed: int) -> MachineConfig:
    """The small machine campaigns run on: small caches (so lines do get evicted) and a PM
    region sized to the layout later, so images stay cheap to copy."""
    return MachineConfig(
        cores=max(1, threads),
        cache=CacheConfig(CacheLevel(4, 4, 1.5), CacheLevel(16, 4, 5.0), CacheLevel(64, 8, 15.0)),
        regions=(Region("pm", 0, 1 << 16, "pm"), Region("dram", 1 << 30, 1 << 16, "dram")),
        domain=domain,  # type: ignore[arg-type]
        barrier="modelled",
        seed=seed,
    )


FUZZ_PARAMS: dict[str, dict[str, Any]] = {
    "array": {"slots": 32, "slot_words": 2, "per_tx": 2, "write_pct": 100.0},
    "kv": {"buckets": 4, "keys": 8},
    "bank": {"accounts": 4},
    "alloc-x": {"x": 2, "groups": 2, "max_bytes": 64},
}
"""Small workload parameters campaigns use unless FuzzConfig.params says otherwise: small
transactions keep every crash point's state space exhaustively enumerable."""

RuntimeArg = str | type[Runtime]
WorkloadArg = str | type[Workload] | Callable[..., Workload]


@dataclass
class Failure:
    """One wrong recovery, with everything a human needs to act on it."""

    kind: str  # "data", "invariant", "new-tx", "idempotence", "crash" (recovery raised)
    point: int
    since: int
    reason: str
    event: str  # the trace event at the crash point, as text
    time_ns: float
    image_hash: tuple[int, int]
    message: str
    expected: list[str]
    recovered: str
    persisted: list[str]  # per line: which stores persisted
    image: np.ndarray = field(repr=False)
    depth: int = 1
    origin: str = ""  # depth >= 2: the recovered image and run the crash point belongs to
    step: str = ""  # the runtime's named persist step the crash point falls in
    lineage: tuple[int, ...] = ()  # depth >= 2: see Campaign.stage_for

    def summary(self) -> str:
        where = f"crash point {self.point} ({self.reason}" + (f", in {self.step}" if self.step else "")
        if self.depth > 1:
            where = f"depth {self.depth}: {self.origin}; {where}"
        return f"[{self.kind}] {where}): {self.message}"


@dataclass
class Report:
    """What a campaign checked and found."""

    config: FuzzConfig
    runtime: str
    workload: str
    trace_events: int = 0
    transactions: int = 0
    points: int = 0
    points_exhaustive: int = 0
    points_sampled: int = 0
    states_total: int = 0  # exact number of crash states at the chosen points
    states_checked: int = 0  # states whose image was checked (all of them when exhaustive)
    distinct_images: int = 0
    recoveries: int = 0
    idempotence_images: int = 0
    new_tx_checks: int = 0
    failures: list[Failure] = field(default_factory=list)
    failure_count: int = 0
    seconds: float = 0.0
    first_failure_point: int | None = None
    deep_runs: int = 0  # runs after recovery crash-tested (depth >= 2)
    deep_candidates: int = 0  # crash points those runs could have started from
    deep_points: int = 0
    deep_points_sampled: int = 0
    deep_states: int = 0
    deep_distinct: int = 0

    @property
    def ok(self) -> bool:
        return self.failure_count == 0

    @property
    def exhaustive(self) -> bool:
        return self.points_sampled == 0

    def add(self, failure: Failure) -> None:
        """Count a failure; keep it while fewer than ``max_failures`` are kept."""
        self.failure_count += 1
        if self.first_failure_point is None:
            self.first_failure_point = failure.point
        if len(self.failures) < self.config.max_failures:
            self.failures.append(failure)

    def merge(self, other: Report) -> None:
        for name in ("points", "points_exhaustive", "points_sampled", "states_total",
                     "states_checked", "distinct_images", "recoveries", "idempotence_images",
                     "new_tx_checks", "failure_count", "deep_runs", "deep_candidates",
                     "deep_points", "deep_points_sampled", "deep_states", "deep_distinct"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.failures.extend(other.failures)
        self.failures.sort(key=lambda f: f.point)
        del self.failures[self.config.max_failures:]
        firsts = [p for p in (self.first_failure_point, other.first_failure_point) if p is not None]
        self.first_failure_point = min(firsts) if firsts else None

    def states_per_second(self) -> float:
        return self.states_checked / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        mode = "exhaustive" if self.exhaustive else (
            f"{self.points_sampled} of {self.points} points sampled")
        lines = [
            f"crashfuzz {self.runtime} / {self.workload} / {self.config.domain} / "
            f"{self.config.order}: {'OK' if self.ok else f'{self.failure_count} FAILURES'}",
            f"  trace {self.trace_events} events, {self.transactions} transactions committed",
            f"  {self.points} crash points ({self.config.points}), {mode}",
            f"  states: {self.states_total} at those points, {self.states_checked} checked, "
            f"{self.distinct_images} distinct images, {self.recoveries} recoveries run",
            f"  idempotence: {self.idempotence_images} recoveries crash-tested; "
            f"new-transaction checks: {self.new_tx_checks}",
            f"  depth {self.config.depth}: " + (
                f"{self.deep_runs} runs after recovery (from {self.deep_runs} of "
                f"{self.deep_candidates} crash points), {self.deep_points} points, "
                f"{self.deep_states} states, {self.deep_distinct} distinct images, "
                + ("exhaustive" if not self.deep_points_sampled
                   else f"{self.deep_points_sampled} points sampled")
                if self.config.depth > 1 else "off"),
            f"  {self.seconds:.2f} s, {self.states_per_second():,.0f} states/s",
        ]
        return "\n".join(lines)


class Campaign:
    """The crash-free run of one config, and the machinery to check its crash images."""

    def __init__(self, cfg: FuzzConfig, runtime: RuntimeArg | None = None,
                 workload: WorkloadArg | None = None, machine: MachineConfig | None = None) -> None:
        self.cfg = cfg
        rt_cls = get_runtime(runtime or cfg.runtime) if not isinstance(runtime, type) else runtime
        self.rt_cls = rt_cls
        wl = self._workload(workload)
        base = machine or fuzz_machine(cfg.domain, cfg.threads, cfg.seed)
        base = base.replace(domain=cfg.domain, cores=max(base.cores, cfg.threads))
        layout = rt_cls.plan(wl.spec(), cfg.threads, base.pm_region.base)
        size = -(-(layout.end - base.pm_region.base) // 4096) * 4096
        pm = base.pm_region
        regions = tuple(replace(r, size=max(size, 4096)) if r is pm else r for r in base.regions)
        mcfg = base.replace(regions=regions)
        self.mcfg = mcfg
        m = Machine(mcfg)
        rt = rt_cls(m, layout)
        self.session = Session(m, rt, wl)
        rt.format()
        wl.setup(rt)
        m.reset_trace()
        self.step_log: list[tuple[int, int, str]] = []
        rt.log_steps(self.step_log)
        self.session.run(cfg.txs)
        self.full_trace: Trace = m.trace()
        self.ignored = np.asarray(sorted(rt.crash_irrelevant()), np.uint64) if (
            cfg.reduce and hasattr(rt, "crash_irrelevant")) else np.zeros(0, np.uint64)
        self.trace = drop_stores(self.full_trace, self.ignored)
        self.model = CrashModel(self.trace, cfg.order, cfg.domain)
        self.history = TxHistory.from_trace(self.trace)
        self.oracle = Oracle(self.history, wl.expected)
        # recovery needs its functional result, not its timing; a recovery whose own trace is
        # crash-tested (record=True) runs timed, and cfg.recovery='timed' times them all
        self.scratch_timed = Machine(mcfg)
        self.scratch = self.scratch_timed if cfg.recovery == "timed" else Machine(mcfg, timed=False)
        self.rt_name = getattr(rt_cls, "name", rt_cls.__name__) or rt_cls.__name__
        self._outcomes: dict[tuple[int, int], tuple[Hashable, list[str], str | None, bool]] = {}
        self._new_tx_done: set[Hashable] = set()
        self._idem_done: set[tuple[int, int]] = set()

    def _workload(self, workload: WorkloadArg | None) -> Workload:
        cfg = self.cfg
        if workload is None or isinstance(workload, str):
            name = workload or cfg.workload
            kw = {**FUZZ_PARAMS.get(name, {}), **dict(cfg.params)}
            cls = get_workload(name)
            return cls(threads=cfg.threads, seed=cfg.seed, txs=self._planned_txs(), **kw)
        kw = dict(cfg.params)
        if isinstance(workload, Workload):
            return workload
        return workload(threads=cfg.threads, seed=cfg.seed, txs=self._planned_txs(), **kw)

    def _planned_txs(self) -> int:
        """Transactions per thread the layout must hold: the run, the new-transaction check and
        the runs after recovery at every depth."""
        cfg = self.cfg
        return cfg.txs + max(cfg.new_tx, (cfg.depth - 1) * cfg.depth_txs)

    # -- recovery -----------------------------------------------------------------------------
    def recover(self, image: np.ndarray, record: bool = False) -> tuple[Runtime | None, Hashable,
                                                                         list[str], Trace | None]:
        """Power-cycle the scratch machine, load ``image``, recover; (runtime, data, errors,
        recovery trace when ``record``). A recovery that raises is reported as an error.

        Runs on the functional machine (same memory, values and trace stores as the timed
        one), or on the timed one when ``record`` asks for recovery's own trace."""
        m = self.scratch_timed if record else self.scratch
        m.power_cycle(image)
        if record:
            m.reset_trace()
        wl = self.session.workload
        try:
            rt = self.session.runtime.reattach(m)
            rt.recover(m.cpu(0))
        except Exception as e:  # noqa: BLE001 - any exception is a finding, not a crash
            return None, ("recovery raised", f"{type(e).__name__}: {e}"), [
                f"recovery raised {type(e).__name__}: {e}"], None
        data = wl.app_data(rt)
        try:
            errors = rt.check_invariants(wl.live_objects(rt))
        except Exception as e:  # noqa: BLE001
            errors = [f"invariant check raised {type(e).__name__}: {e}"]
        return rt, data, errors, (m.trace() if record else None)

    def _new_transaction(self, rt: Runtime, data: Hashable, k: int) -> str | None:
        """Commit ``new_tx`` more transactions on the recovered runtime, restart cleanly, recover and
        check data and invariants; None if all is well."""
        wl = self.session.workload
        _, cands = self.oracle.check(k, data)
        match = next((key for key, exp in cands if exp == data), None)
        if match is None:
            return None
        trial = copy.copy(wl)
        trial.executed = dict(wl.executed)
        trial._rngs = {}
        trial.seed = wl.seed + 7919
        m = rt.m
        trial.locks = [m.lock() for _ in range(wl.nlocks())]
        model = wl.model()
        for t in self._order_for(match):
            model.apply(wl.executed[t])
        for _ in range(self.cfg.new_tx):
            op = trial.next_op(0, trial.rng(0))
            proc = m.spawn(lambda cpu, op=op: trial.transaction(cpu, rt, op), 0)
            try:
                m.run()
                if not proc.ok:
                    return f"a new transaction failed: {proc.value!r}"
            except HeapExhausted:
                return None  # the layout was planned for fewer transactions: inconclusive
            except Exception as e:  # noqa: BLE001
                return f"a new transaction raised {type(e).__name__}: {e}"
            model.apply(op)
        exp = model.snapshot()
        rt2, got, errs, _ = self.recover(m.pm_image())
        if rt2 is None:
            return f"recovery after a new transaction failed: {errs[0]}"
        if got != exp:
            return (f"after a new transaction and a clean restart the data is {_short(got)}, "
                    f"expected {_short(exp)}")
        return f"after a new transaction and a clean restart: {'; '.join(errs)}" if errs else None

    def _order_for(self, key: tuple[int, ...]) -> list[int]:
        return _prefix_order(self.history, key)

    # -- one crash point ----------------------------------------------------------------------
    def check_point(self, point: Any, rng: np.random.Generator, report: Report) -> None:
        cfg = self.cfg
        space = self.model.space(point)
        count = space.count
        report.points += 1
        report.states_total += count
        if count <= cfg.budget:
            report.points_exhaustive += 1
            report.states_checked += count
            images: Iterable[tuple[tuple[int, int], np.ndarray]] = space.hashed_images(distinct=True)
        else:
            report.points_sampled += 1
            states = space.sample(cfg.samples, rng)
            report.states_checked += len(states)
            images = ((space.hash(s), space.image(s)) for s in states)
        idem_here = len(self._idem_done) < cfg.idempotence
        for h, img in images:
            failure = self._check_image(point, h, img, report)
            if failure is None and idem_here and self._outcomes[h][3]:
                idem_here = False
                failure = self._check_idempotence(point, h, img, rng, report)
            if failure is not None:
                report.add(failure)
                if cfg.stop_at_first:
                    return

    def _outcome(self, h: tuple[int, int], img: np.ndarray, report: Report,
                 k: int) -> tuple[Hashable, list[str], str | None, bool]:
        """Recover an image once per distinct hash: (data, invariant errors, new-tx problem,
        whether recovery stored anything to PM)."""
        out = self._outcomes.get(h)
        if out is None:
            report.distinct_images += 1
            report.recoveries += 1
            rt, data, errors, _ = self.recover(img)
            data = self.oracle.canonical(k, data)  # one shared object per correct outcome
            wrote = rt is not None and bool(rt.m.count("stores"))
            newtx = None
            key = h if self.cfg.new_tx_every_image else data
            if rt is not None and not errors and self.cfg.new_tx and key not in self._new_tx_done:
                ok, _ = self.oracle.check(k, data)
                if ok:
                    self._new_tx_done.add(key)
                    report.new_tx_checks += 1
                    newtx = self._new_transaction(rt, data, k)
            out = (data, errors, newtx, wrote)
            self._outcomes[h] = out
        return out

    def _check_image(self, point: Any, h: tuple[int, int], img: np.ndarray,
                     report: Report) -> Failure | None:
        k = point.index
        data, errors, newtx, _ = self._outcome(h, img, report, k)
        ok, cands = self.oracle.check(k, data)
        if not ok:
            kind = "crash" if isinstance(data, tuple) and data[:1] == ("recovery raised",) else "data"
            return self._failure(kind, point, h, img, "recovered data matches no correct outcome",
                                 cands, data)
        if errors:
            return self._failure("invariant", point, h, img, "; ".join(errors[:3]), cands, data)
        if newtx:
            return self._failure("new-tx", point, h, img, newtx, cands, data)
        return None

    def _check_idempotence(self, point: Any, h: tuple[int, int], img: np.ndarray,
                           rng: np.random.Generator, report: Report) -> Failure | None:
        """Crash recovery itself at its reduced points and recover again (once per image)."""
        if h in self._idem_done:
            return None
        self._idem_done.add(h)
        k = point.index
        rt, _, _, rtrace = self.recover(img.copy(), record=True)
        report.recoveries += 1
        if rt is None or rtrace is None or len(rtrace) == 0:
            return None
        report.idempotence_images += 1
        model = CrashModel(rtrace, self.cfg.order, self.cfg.domain)
        for p in model.points("reduced"):
            sp = model.space(p)
            if sp.count <= self.cfg.budget:
                it: Iterable[tuple[tuple[int, int], np.ndarray]] = sp.hashed_images(distinct=True)
            else:
                it = ((sp.hash(s), sp.image(s)) for s in sp.sample(self.cfg.samples, rng))
            for h2, img2 in it:
                data2, errors2, _, _ = self._outcome(h2, img2, report, k)
                ok, cands = self.oracle.check(k, data2)
                if not ok or errors2:
                    where = rtrace.describe(p.index - 1) if p.index else "its start"
                    msg = (f"recovery crashed after its own event {p.index - 1} ({where}), then "
                           + ("recovered wrong data" if not ok else "; ".join(errors2[:3])))
                    return self._failure("idempotence", point, h2, img2, msg, cands, data2)
        return None

    # -- crash depth: crash the run that follows a recovery ----------------------------------------
    def crash_deeper(self, points: Sequence[Any], rng: np.random.Generator, report: Report) -> None:
        """Depth >= 2: from crash points spread over the run, take the image in which every
        store so far persisted, run recovery and ``depth_txs`` new transactions on it with
        tracing on, and crash-test that run like the first one: its reduced points, every image
        (up to the budget), recovery and the oracle, whose acceptable outcomes are the
        recovered outcome followed by prefixes of the new transactions. Recursively up to
        ``depth``. Runs whose recovered image was already explored are skipped."""
        root = _Stage(1, self.trace, self.model, self.oracle, self.history,
                      self.session.runtime, self.session.workload, [], "", ())
        self._deep_seen: set[tuple[int, int]] = set()
        self._deep_outcomes: dict[tuple[int, int], tuple[Hashable, list[str]]] = {}
        self._expand(root, points, rng, report)

    def _expand(self, stage: _Stage, points: Sequence[Any], rng: np.random.Generator,
                report: Report) -> None:
        cfg = self.cfg
        if stage.depth >= cfg.depth:
            return
        report.deep_candidates += len(points)
        runs = 0
        for p in _spread(points):
            if runs >= cfg.depth_runs or (cfg.stop_at_first and report.failure_count):
                break
            ix = stage.model.index
            child = self._run_after_recovery(stage, p, ix.image_at(ix.hi_at(p.index)), report)
            if child is None:
                continue
            runs += 1
            report.deep_runs += 1
            child_points = child.model.points("reduced")
            for cp in child_points:
                self._check_deep_point(child, cp, rng, report)
                if cfg.stop_at_first and report.failure_count:
                    return
            self._expand(child, child_points, rng, report)

    def _run_after_recovery(self, stage: _Stage, point: Any, img: np.ndarray,
                            report: Report) -> _Stage | None:
        """The traced run of recovery plus new transactions on ``img``, as a stage; None when
        the image does not recover to a correct outcome or its recovered image was seen."""
        data, errors = self._deep_outcome(image_hash(img), img, report)
        ok, cands = stage.oracle.check(point.index, data)
        match = next((key for key, exp in cands if exp == data), None)
        if not ok or errors or match is None:
            return None
        m = self._deep_machine()
        m.engine.reset_volatile()
        m.env = type(m.env)()
        m.load_pm_image(img)
        m.reset_trace()
        rt = stage.runtime.reattach(m)
        rt.recover(m.cpu(0))
        h = image_hash(m.pm_image())
        if h in self._deep_seen:
            return None
        self._deep_seen.add(h)
        wl = stage.workload
        trial = copy.copy(wl)
        trial.executed = dict(wl.executed)
        trial._rngs = {}
        trial.seed = wl.seed + 7919 * stage.depth + point.index
        trial.locks = [m.lock() for _ in range(wl.nlocks())]
        for _ in range(self.cfg.depth_txs):
            op = trial.next_op(0, trial.rng(0))
            proc = m.spawn(lambda cpu, op=op: trial.transaction(cpu, rt, op), 0)
            try:
                m.run()
            except HeapExhausted:
                break  # the layout was planned for fewer transactions: run what fits
            if not proc.ok:
                break
        trace = drop_stores(m.trace(), self.ignored)
        history = TxHistory.from_trace(trace)
        order = stage.order + _prefix_order(stage.history, match)

        def expected(txids: Sequence[int], order: list[int] = order) -> Hashable:
            return trial.expected(order + list(txids))

        where = f"every store before crash point {point.index} persisted"
        origin = (f"{stage.origin}, then " if stage.origin else "") + (
            f"recovered the image with {where}, ran {len(history.commit_order)} new transactions")
        return _Stage(stage.depth + 1, trace, CrashModel(trace, self.cfg.order, self.cfg.domain),
                      Oracle(history, expected), history, rt, trial, order, origin,
                      stage.lineage + (point.index,))

    def _deep_machine(self) -> Machine:
        if getattr(self, "_deep_m", None) is None:
            self._deep_m = Machine(self.mcfg)
        return self._deep_m

    def _deep_outcome(self, h: tuple[int, int], img: np.ndarray,
                      report: Report) -> tuple[Hashable, list[str]]:
        """(data, invariant errors) of recovering ``img``, once per distinct image hash."""
        if h in self._outcomes:
            data, errors = self._outcomes[h][:2]
            return data, errors
        out = self._deep_outcomes.get(h)
        if out is None:
            report.deep_distinct += 1
            report.recoveries += 1
            _, data, errors, _ = self.recover(img)
            out = self._deep_outcomes[h] = (data, errors)
        return out

    def _check_deep_point(self, stage: _Stage, point: Any, rng: np.random.Generator,
                          report: Report) -> None:
        cfg = self.cfg
        space = stage.model.space(point)
        report.deep_points += 1
        if space.count <= cfg.budget:
            report.deep_states += space.count
            images: Iterable[tuple[tuple[int, int], np.ndarray]] = space.hashed_images(distinct=True)
        else:
            report.deep_points_sampled += 1
            states = space.sample(cfg.samples, rng)
            report.deep_states += len(states)
            images = ((space.hash(s), space.image(s)) for s in states)
        for h, img in images:
            f = self.check_deep_image(stage, point, h, img, report)
            if f is not None:
                report.add(f)
                if cfg.stop_at_first:
                    return

    def check_deep_image(self, stage: _Stage, point: Any, h: tuple[int, int], img: np.ndarray,
                         report: Report) -> Failure | None:
        """Recover one image of a run after recovery and check it against that run's oracle."""
        data, errors = self._deep_outcome(h, img, report)
        ok, cands = stage.oracle.check(point.index, data)
        if ok and not errors:
            return None
        kind = ("crash" if isinstance(data, tuple) and data[:1] == ("recovery raised",)
                else "data") if not ok else "invariant"
        msg = "recovered data matches no correct outcome" if not ok else "; ".join(errors[:3])
        return self._failure(kind, point, h, img, msg, cands, data, stage)

    def stage_for(self, lineage: Sequence[int]) -> _Stage:
        """Rebuild the run after recovery that a depth >= 2 failure belongs to: ``lineage``
        lists the crash point of each level whose all-persisted image was recovered."""
        self._deep_seen = set()
        self._deep_outcomes = {}
        stage = _Stage(1, self.trace, self.model, self.oracle, self.history,
                       self.session.runtime, self.session.workload, [], "", ())
        rep = Report(self.cfg, self.rt_name, self.session.workload.name)
        for k in lineage:
            ix = stage.model.index
            child = self._run_after_recovery(stage, stage.model.point(k), ix.image_at(ix.hi_at(k)),
                                             rep)
            if child is None:
                raise ConfigError(f"cannot rebuild the run after recovery from crash point {k}: "
                                  "its image no longer recovers correctly")
            stage = child
        return stage

    # -- reports ----------------------------------------------------------------------------------
    def _failure(self, kind: str, point: Any, h: tuple[int, int], img: np.ndarray, message: str,
                 cands: Sequence[tuple[tuple[int, ...], Hashable]], data: Hashable,
                 stage: _Stage | None = None) -> Failure:
        k = point.index
        tr = stage.trace if stage is not None else self.trace
        kinds = tr.events["kind"]
        last = next((i for i in range(k - 1, -1, -1) if kinds[i] != Ev.WB), None)
        ev = tr.describe(last) if last is not None else "(start of trace)"
        if k < len(tr):
            ev += f"; next: {tr.describe(k)}"
        t = float(tr.events["time"][k - 1]) if k > 0 else 0.0
        step = self.step_of(last) if stage is None and last is not None else ""
        return Failure(
            kind=kind, point=k, since=point.since, reason=point.reason, event=ev, time_ns=t,
            image_hash=h, message=message,
            expected=[f"per-thread prefix {key}: {_short(exp)}" for key, exp in cands],
            recovered=_short(data), persisted=self.persisted_lines(point, img, tr), image=img.copy(),
            depth=stage.depth if stage is not None else 1,
            origin=stage.origin if stage is not None else "", step=step or "",
            lineage=stage.lineage if stage is not None else ())

    def step_of(self, i: int) -> str | None:
        """The named persist step event ``i`` of the (reduced) trace belongs to."""
        kept = self.trace.meta.get("kept")
        j = int(kept[i]) if kept is not None else i
        return step_at(self.step_log, j, int(self.trace.events["tid"][i]))

    def persisted_lines(self, point: Any, img: np.ndarray, trace: Trace | None = None) -> list[str]:
        """For each line with stores before the point: how many of them the image holds."""
        tr = trace if trace is not None else self.trace
        ev = tr.events
        k = point.index
        base = tr.base
        pm0 = tr.pm_base
        kinds = ev["kind"][:k]
        mask = np.isin(kinds, (Ev.STORE, Ev.NTSTORE)) | ((kinds == Ev.RMW) & (ev["aux"][:k] == 1))
        idx = np.nonzero(mask)[0]
        lines: dict[int, list[int]] = {}
        for i in idx.tolist():
            lines.setdefault(int(ev["addr"][i]) & ~63, []).append(i)
        out = []
        for line, stores in sorted(lines.items()):
            off = line - pm0
            got = img[off:off + 64]
            cur = base[off:off + 64].copy()
            match = 0 if np.array_equal(cur, got) else None
            for n, i in enumerate(stores, 1):
                a = int(ev["addr"][i]) - pm0
                cur[a - off:a - off + 8] = np.frombuffer(
                    int(ev["value"][i]).to_bytes(8, "little"), np.uint8)
                if np.array_equal(cur, got):
                    match = n
            desc = (f"{match} of {len(stores)} stores persisted" if match is not None
                    else f"matches no prefix of its {len(stores)} stores (atoms persisted "
                         "independently)")
            out.append(f"line {line:#x}: {desc}")
        return out


def drop_stores(trace: Trace, words: np.ndarray) -> Trace:
    """``trace`` without the plain stores to the 8-byte words at ``words`` (sorted addresses).

    Sound when recovery neither reads those words nor lets them change what it writes: every
    state of the reduced trace stands for the states of the full trace that differ from it only
    in those words, and they all recover to the same data (tests/crashfuzz/test_campaign.py
    checks the declaration of each runtime).
    """
    if not len(words):
        return trace
    ev = trace.events
    drop = (ev["kind"] == Ev.STORE) & np.isin(ev["addr"], words)
    if not drop.any():
        return trace
    return Trace(ev[~drop], trace.base, trace.pm_base,
                 dict(trace.meta, dropped=int(drop.sum()), kept=np.nonzero(~drop)[0]))


@dataclass
class _Stage:
    """One traced run whose crash points are checked: the crash-free run (depth 1), or recovery
    plus new transactions on a recovered image (depth >= 2)."""

    depth: int
    trace: Trace
    model: CrashModel
    oracle: Oracle
    history: TxHistory
    runtime: Runtime
    workload: Workload
    order: list[int]  # committed txids applied before this run (the recovered outcome)
    origin: str
    lineage: tuple[int, ...]  # the crash point of each level this run descends from


def _prefix_order(history: TxHistory, key: tuple[int, ...]) -> list[int]:
    """The txids of per-thread prefixes ``key`` in commit order."""
    chosen: set[int] = set()
    for t, n in zip(sorted(history.by_thread), key, strict=True):
        chosen.update(history.by_thread[t][:n])
    return [x for x in history.commit_order if x in chosen]


def _spread(items: Sequence[Any]) -> list[Any]:
    """``items`` reordered so that any prefix is spread evenly over them (bit-reversed ranks)."""
    n = len(items)
    if n <= 2:
        return list(items)
    bits = (n - 1).bit_length()
    rev = sorted(range(1 << bits), key=lambda i: int(format(i, f"0{bits}b")[::-1], 2))
    return [items[i] for i in rev if i < n]


def _short(x: Any, limit: int = 160) -> str:
    s = repr(x)
    return s if len(s) <= limit else s[:limit] + f"... ({len(s)} chars)"


def _run_shard(cfg: FuzzConfig, shard: int, nshards: int, runtime: RuntimeArg | None,
               workload: WorkloadArg | None, machine: MachineConfig | None) -> Report:
    camp = Campaign(cfg, runtime, workload, machine)
    rep = Report(cfg, camp.rt_name, camp.session.workload.name, len(camp.trace),
                 len(camp.history.commit_order))
    rng = np.random.default_rng([cfg.seed, 1, shard])
    prng = np.random.default_rng([cfg.seed, 2])
    points = camp.model.points(cfg.points, n=cfg.sampled_points, rng=prng)
    for p in points[shard::nshards]:
        camp.check_point(p, rng, rep)
        if cfg.stop_at_first and rep.failure_count:
            break
    if shard == 0 and cfg.depth > 1 and not (cfg.stop_at_first and rep.failure_count):
        camp.crash_deeper(points, np.random.default_rng([cfg.seed, 3]), rep)
    return rep


def fuzz(cfg: FuzzConfig | None = None, *, runtime: RuntimeArg | None = None,
         workload: WorkloadArg | None = None, machine: MachineConfig | None = None,
         executor: Executor | None = None, shards: int = 1,
         progress: Callable[[int, int], None] | None = None, **overrides: Any) -> Report:
    """Run a campaign; ``overrides`` are FuzzConfig fields. With ``executor`` and ``shards``
    > 1, crash points are dealt round-robin to shards that each redo the (deterministic)
    crash-free run. Returns the merged :class:`Report`; findings are identical for a seed."""
    cfg = replace(cfg or FuzzConfig(), **overrides) if overrides else (cfg or FuzzConfig())
    t0 = time.perf_counter()
    if executor is None or shards <= 1:
        reports = []
        for s in range(max(1, shards)):
            reports.append(_run_shard(cfg, s, max(1, shards), runtime, workload, machine))
            if progress:
                progress(s + 1, max(1, shards))
    else:
        futs = [executor.submit(_run_shard, cfg, s, shards, runtime, workload, machine)
                for s in range(shards)]
        reports = []
        for i, f in enumerate(futs):
            reports.append(f.result())
            if progress:
                progress(i + 1, shards)
    out = reports[0]
    for r in reports[1:]:
        out.merge(r)
    out.seconds = time.perf_counter() - t0
    return out


def check_failures(report: Report) -> None:
    """Raise AssertionError with a readable report if the campaign found failures."""
    if report.ok:
        return
    from .report import format_report

    raise AssertionError(format_report(report))


__all__ = ["Campaign", "Failure", "FuzzConfig", "Report", "check_failures", "fuzz", "fuzz_machine",
           "PmsimError"]
