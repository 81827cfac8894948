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
from pmsim.runtimes.base import Runtime, get_runtime
from pmsim.trace import Ev, Trace
from pmsim.workloads.base import Workload, get_workload
from pmsim.workloads.session import Session

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
    seed: int = param(0, "", "seed of the workload and of every sample")
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
        for name in ("threads", "txs", "budget", "samples", "sampled_points", "max_failures"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ConfigError(f"FuzzConfig.{name} must be an integer >= 1, got {v!r}")
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

    def summary(self) -> str:
        return f"[{self.kind}] crash point {self.point} ({self.reason}): {self.message}"


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

    @property
    def ok(self) -> bool:
        return self.failure_count == 0

    @property
    def exhaustive(self) -> bool:
        return self.points_sampled == 0

    def merge(self, other: Report) -> None:
        for name in ("points", "points_exhaustive", "points_sampled", "states_total",
                     "states_checked", "distinct_images", "recoveries", "idempotence_images",
                     "new_tx_checks", "failure_count"):
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
        m = Machine(mcfg)
        rt = rt_cls(m, layout)
        self.session = Session(m, rt, wl)
        rt.format()
        wl.setup(rt)
        m.reset_trace()
        self.session.run(cfg.txs)
        self.full_trace: Trace = m.trace()
        self.ignored = np.asarray(sorted(rt.crash_irrelevant()), np.uint64) if (
            cfg.reduce and hasattr(rt, "crash_irrelevant")) else np.zeros(0, np.uint64)
        self.trace = drop_stores(self.full_trace, self.ignored)
        self.model = CrashModel(self.trace, cfg.order, cfg.domain)
        self.history = TxHistory.from_trace(self.trace)
        self.oracle = Oracle(self.history, wl.expected)
        self.scratch = Machine(mcfg)
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
            return cls(threads=cfg.threads, seed=cfg.seed, txs=cfg.txs + cfg.new_tx, **kw)
        kw = dict(cfg.params)
        if isinstance(workload, Workload):
            return workload
        return workload(threads=cfg.threads, seed=cfg.seed, txs=cfg.txs + cfg.new_tx, **kw)

    # -- recovery -----------------------------------------------------------------------------
    def recover(self, image: np.ndarray, record: bool = False) -> tuple[Runtime | None, Hashable,
                                                                         list[str], Trace | None]:
        """Power-cycle the scratch machine, load ``image``, recover; (runtime, data, errors,
        recovery trace when ``record``). A recovery that raises is reported as an error."""
        m = self.scratch
        m.engine.reset_volatile()
        m.env = type(m.env)()
        m.load_pm_image(image)
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
        h = self.history
        chosen: set[int] = set()
        for t, n in zip(sorted(h.by_thread), key, strict=True):
            chosen.update(h.by_thread[t][:n])
        return [x for x in h.commit_order if x in chosen]

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
                report.failure_count += 1
                if report.first_failure_point is None:
                    report.first_failure_point = point.index
                if len(report.failures) < cfg.max_failures:
                    report.failures.append(failure)
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
            wrote = rt is not None and bool(self.scratch.stats()["stores"].sum())
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

    def _failure(self, kind: str, point: Any, h: tuple[int, int], img: np.ndarray, message: str,
                 cands: Sequence[tuple[tuple[int, ...], Hashable]], data: Hashable) -> Failure:
        k = point.index
        tr = self.trace
        kinds = tr.events["kind"]
        last = next((i for i in range(k - 1, -1, -1) if kinds[i] != Ev.WB), None)
        ev = tr.describe(last) if last is not None else "(start of trace)"
        if k < len(tr):
            ev += f"; next: {tr.describe(k)}"
        t = float(self.trace.events["time"][k - 1]) if k > 0 else 0.0
        return Failure(
            kind=kind, point=k, since=point.since, reason=point.reason, event=ev, time_ns=t,
            image_hash=h, message=message,
            expected=[f"per-thread prefix {key}: {_short(exp)}" for key, exp in cands],
            recovered=_short(data), persisted=self.persisted_lines(point, img), image=img.copy())

    def persisted_lines(self, point: Any, img: np.ndarray) -> list[str]:
        """For each line with stores before the point: how many of them the image holds."""
        ev = self.trace.events
        k = point.index
        base = self.trace.base
        pm0 = self.trace.pm_base
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
    return Trace(ev[~drop], trace.base, trace.pm_base, dict(trace.meta, dropped=int(drop.sum())))


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
