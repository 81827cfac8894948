"""A crash-fuzz campaign: run, pick crash points, enumerate images, recover, check.

``fuzz(FuzzConfig(runtime="undo", workload="kv", domain="pdom1", txs=20))`` runs the workload
crash-free on a small machine, takes the persistence trace, and for every crash point (the
complete reduced set by default) enumerates the surviving PM images — every one when the
point has at most ``budget`` states, ``samples`` uniform samples otherwise, and the report says
which. Each distinct image (by hash) is recovered on a power-cycled machine (once per chunk of
crash points) and checked:

* application data equals the reference after a correct set of committed transactions
  (:mod:`crashfuzz.oracle`);
* the runtime's own invariants hold (allocator, descriptors, logs);
* the recovered image accepts and commits a new transaction (once per distinct outcome and
  chunk);
* recovery is idempotent: recovery's own trace is crash-tested and recovered again
  (``idempotence`` images per campaign, the first candidates in trace order).

Runtimes and workloads are named (registered) or passed as classes/instances, so users can fuzz
code defined in a test file or a notebook. Campaigns run in units (chunks of crash points,
idempotence checks, the runs after recovery) fixed by the config, here or on an executor; the
report is the same for any number of workers, and an interrupted campaign keeps what finished
units found (:class:`Interrupted`).
"""

from __future__ import annotations

import bisect
import copy
import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, NoReturn

import numpy as np

from pmsim.config import CacheConfig, CacheLevel, MachineConfig, Region, param
from pmsim.errors import ConfigError, PmsimError, unknown
from pmsim.interrupts import catching, raise_pending
from pmsim.machine import Machine
from pmsim.programs import program_of
from pmsim.programs.api import site_text
from pmsim.runtimes.alloc import HeapExhausted
from pmsim.runtimes.background import run_threads
from pmsim.runtimes.base import Runtime
from pmsim.runtimes.labels import Labeller
from pmsim.runtimes.layout import Layout
from pmsim.runtimes.mutation import Mutant
from pmsim.runtimes.registry import MUTANTS, declares_crash_irrelevant, get_runtime, reference
from pmsim.runtimes.steps import step_at
from pmsim.schedule import KINDS as SCHEDULE_KINDS
from pmsim.schedule import Schedule
from pmsim.trace import Ev, Trace
from pmsim.usercode import hang_error, import_path, reraise, user_raised
from pmsim.usercode import where as user_where
from pmsim.watchdog import MIN_OPS, OPS_FACTOR, SECONDS, Hang, Watchdog, bounded, ops
from pmsim.workloads.base import FINISHED, Workload, build_workload, fuzz_defaults, get_workload
from pmsim.workloads.base import WorkloadArg as WorkloadArg
from pmsim.workloads.base import reference as workload_reference
from pmsim.workloads.session import Session, run_progress

from .classes import ReadClasses
from .model import image_hash
from .oracle import Oracle, TxHistory
from .robust import ORACLES, Cut, RobustOracle, violation
from .states import CrashModel

POINT_KINDS = ("reduced", "every", "sampled")

MAX_THREADS = 64
"""Most application threads of a campaign (one per core; pmsim has at most 64 cores)."""
MAX_TXS = 100_000
"""Most transactions per thread of a campaign (``txs``, ``new_tx``, ``depth_txs``): the
crash-free run is traced whole, about 54 events (crash points) a transaction, so 100,000 take
about half a minute and hold millions of points; a finding or config claiming more is refused,
not run for hours."""

CHUNK_POINTS = 16
"""Crash points per unit of work. The units are fixed by the campaign, never by the number of
jobs, and each starts from empty caches, so what a report counts and finds does not depend on
how the units were spread over jobs (see :func:`fuzz`)."""


READS_CACHED = 1 << 14
"""Read sets up to this many words are cached per image hash (a larger one is recomputed)."""
PROBE_CLASSES = 16
"""A point under the budget abandons classes after this many if they were small (see
:class:`~crashfuzz.classes.ReadClasses`)."""
VERIFY_CLASSES = 8
"""Read-set classes per crash point whose second member is recovered too, as a check that the
read log saw every read (a runtime reading the engine's arrays without ``note_reads``)."""


@dataclass(frozen=True)
class FuzzConfig:
    """One campaign. Every random choice derives from ``seed``."""

    runtime: str = param("undo", "", "registered runtime or mutant name (e.g. 'undo', 'redo:R2'), "
                         "or an import path of a user's class or Mutant ('file.py:Name', "
                         "'module:Name')")
    workload: str = param("array", "", "registered workload name, or an import path of a user's "
                          "workload class ('file.py:Name', 'module:Name')")
    params: tuple[tuple[str, Any], ...] = param((), "", "workload parameters: a mapping {name: "
                                                "value} or (name, value) pairs; kept as pairs")
    domain: str = param("pdom1", "", "persistence domain: pdom0, pdom1 or pdom2")
    order: str = param("auto", "", "persist order mode: 'line' (a cache line persists "
                       "atomically, its stores in order), 'px86' (only 8-byte atoms do, as x86 "
                       "guarantees) or 'auto' (the runtime's choice: line for pmsim's runtimes, "
                       "px86 for PM programs)")
    oracle: str = param("auto", "", "what a recovered state is judged by: 'model' (the "
                        "workload's reference model), 'robust' (every state strict persistency "
                        "could recover to: no model needed) or 'auto' (the model when there is "
                        "one, else robust)")
    threads: int = param(1, "threads", "application threads")
    txs: int = param(20, "tx", "transactions per thread in the crash-free run")
    points: str = param("reduced", "", "crash points: reduced (complete), every, sampled")
    sampled_points: int = param(64, "points", "how many points 'sampled' draws")
    budget: int = param(65536, "states", "enumerate a point exhaustively up to this many states")
    samples: int = param(256, "states", "uniform samples at a point over the budget")
    class_from: int = param(64, "states", "a point with more states is checked one read-set "
                            "class at a time (images that agree on every PM word recovery "
                            "reads recover identically, so one recovery decides a class); "
                            "exhaustive whatever the budget when the classes are few. Points "
                            "with ordering edges use classes only over the budget")
    class_limit: int = param(4096, "classes", "at most this many read-set classes per point; "
                             "past it the point's distinct images are enumerated (up to the "
                             "budget) or sampled. 0 = no classes")
    idempotence: int = param(8, "images", "recoveries that are themselves crash-tested: at the "
                             "first crash points in trace order, one per point, the first image "
                             "(in enumeration order) that passes and whose recovery stores "
                             "something, skipping images already chosen; the same images for any "
                             "number of jobs")
    new_tx: int = param(1, "tx", "new transactions run (and checked) on a recovered image; 0 = off")
    new_tx_every_image: bool = param(False, "", "run the new transactions on every distinct "
                                     "image, not once per distinct recovered data (and chunk of "
                                     f"{CHUNK_POINTS} crash points)")
    depth: int = param(2, "crashes", "crash depth: 1 crashes the run (and recovery, see "
                       "idempotence); 2 also crashes the run that follows a recovery: recovery "
                       "and new transactions on a recovered image, traced and crash-tested; 3 ...")
    depth_txs: int = param(2, "tx", "new transactions run after each recovery at depth >= 2")
    depth_runs: int = param(8, "runs", "runs after recovery crash-tested per depth level, "
                            "started from crash points spread over the run")
    seed: int = param(0, "", "seed (>= 0) of the workload and of every sample; a sample is a "
                      "function of the seed and its crash point, never of the number of jobs")
    recovery: str = param("functional", "", "machine that recovers crash images: 'functional' "
                          "(memory and values only; fast) or 'timed' (caches, WPQ, clocks; for "
                          "measuring recovery itself). Findings are identical")
    schedules: int = param(1, "schedules", "thread interleavings to crash-test: schedule 0 is the "
                           "simulator's own, the others are drawn (schedule_kind); runs whose "
                           "trace repeats one already tested are skipped")
    schedule_kind: str = param("pct", "", "how explored schedules delay threads at their switch "
                               "points: 'pct' (priorities with depth-1 change points) or "
                               "'random' (see pmsim.schedule)")
    schedule_depth: int = param(3, "", "PCT bug depth d: d-1 priority change points per schedule")
    schedule_index: int = param(0, "", "the schedule this campaign runs (0: the simulator's own); "
                                "set per schedule by exploration and saved with each finding")
    reduce: bool = param(True, "", "leave out stores to words the runtime declares irrelevant to "
                         "recovery (Runtime.crash_irrelevant); their images recover identically")
    stop_at_first: bool = param(False, "", "stop at the first failure in report order: chunks of "
                                "crash points in trace order, each followed by the idempotence "
                                "checks of its points, then the runs after recovery")
    max_failures: int = param(20, "", "failures kept in the report: the first in the order "
                              "(depth, lineage, crash point, image hash)")
    machine: MachineConfig | None = param(None, "", "the machine the campaign runs on (a "
                                          "MachineConfig, or its dict); None = the small fuzzing "
                                          "machine (fuzz_machine). Its domain and cores give way "
                                          "to domain and threads, its PM region is cut to the "
                                          "layout; saved with every finding, so replay uses it")

    def __post_init__(self) -> None:
        for name in ("runtime", "workload"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v:
                raise ConfigError(f"FuzzConfig.{name} must be a name or an import path "
                                  f"('file.py:Class'), got {v!r}; pass classes as "
                                  f"fuzz({name}=...)")
        if self.domain not in ("pdom0", "pdom1", "pdom2"):
            raise ConfigError(f"FuzzConfig.domain: unknown domain {self.domain!r}; use pdom0, "
                              "pdom1 or pdom2")
        if self.order not in ("auto", "line", "px86"):
            raise ConfigError(f"FuzzConfig.order: unknown order {self.order!r}; use line, px86 "
                              "or auto")
        if self.oracle not in ORACLES:
            raise ConfigError(f"FuzzConfig.oracle: unknown oracle {self.oracle!r}; use "
                              f"{', '.join(ORACLES)}")
        if self.points not in POINT_KINDS:
            raise ConfigError(f"FuzzConfig.points: unknown kind {self.points!r}; use "
                              f"{', '.join(POINT_KINDS)}")
        for name, low in (("threads", 1), ("txs", 1), ("budget", 1), ("samples", 1),
                          ("sampled_points", 1), ("max_failures", 1), ("depth", 1),
                          ("depth_txs", 1), ("depth_runs", 1), ("idempotence", 0), ("new_tx", 0),
                          ("seed", 0), ("class_limit", 0), ("class_from", 0), ("schedules", 1),
                          ("schedule_depth", 1), ("schedule_index", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < low:
                raise ConfigError(f"FuzzConfig.{name} must be an integer >= {low}, got {v!r}")
            object.__setattr__(self, name, int(v))
        for name, most in (("threads", MAX_THREADS), ("txs", MAX_TXS), ("new_tx", MAX_TXS),
                           ("depth_txs", MAX_TXS)):
            if getattr(self, name) > most:
                raise ConfigError(f"FuzzConfig.{name} must be at most {most:,}, got "
                                  f"{getattr(self, name):,}; use {name} <= {most}")
        for name in ("new_tx_every_image", "reduce", "stop_at_first"):
            v = getattr(self, name)
            if not isinstance(v, bool):
                raise ConfigError(f"FuzzConfig.{name} must be True or False, got {v!r}")
        if self.schedule_kind not in SCHEDULE_KINDS:
            raise ConfigError(f"FuzzConfig.schedule_kind: unknown kind {self.schedule_kind!r}; "
                              f"use {' or '.join(SCHEDULE_KINDS)}")
        if self.recovery not in ("functional", "timed"):
            raise ConfigError(f"FuzzConfig.recovery: unknown machine {self.recovery!r}; use "
                              "functional or timed")
        object.__setattr__(self, "params", _params(self.params))
        if isinstance(self.machine, Mapping):
            object.__setattr__(self, "machine", MachineConfig.from_dict(dict(self.machine)))
        elif self.machine is not None and not isinstance(self.machine, MachineConfig):
            raise ConfigError(f"FuzzConfig.machine must be a MachineConfig (or its dict), e.g. "
                              f"pmsim.preset('optane-adr'), or None, got {self.machine!r}")

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-ready data; ``from_dict`` reads it back to an equal config."""
        d = asdict(replace(self, machine=None))
        d["params"] = [list(p) for p in self.params]
        d["machine"] = self.machine.to_dict() if self.machine is not None else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FuzzConfig:
        known = {f.name for f in fields(cls)}
        bad = set(d) - known
        if bad:
            raise ConfigError(f"unknown FuzzConfig fields {sorted(bad)}; known: {sorted(known)}")
        return cls(**d)


def _params(raw: Any) -> tuple[tuple[str, Any], ...]:
    """FuzzConfig.params as (name, value) pairs: from a mapping or a sequence of pairs (lists
    too, as JSON gives them); anything else is a ConfigError naming the expected form."""
    form = ("a mapping {name: value} or a sequence of (name, value) pairs, e.g. {'slots': 8} "
            "or (('slots', 8),)")
    if isinstance(raw, Mapping):
        pairs = list(raw.items())
    elif isinstance(raw, Sequence) and not isinstance(raw, str | bytes):
        pairs = []
        for item in raw:
            if not isinstance(item, Sequence) or isinstance(item, str | bytes) or len(item) != 2:
                raise ConfigError(f"FuzzConfig.params: {item!r} in {raw!r} is not a (name, value) "
                                  f"pair; params must be {form}")
            pairs.append((item[0], item[1]))
    else:
        raise ConfigError(f"FuzzConfig.params: got {raw!r}; params must be {form}")
    seen: set[str] = set()
    for name, _ in pairs:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"FuzzConfig.params: parameter name {name!r} is not a non-empty "
                              f"string; params must be {form}")
        if name in seen:
            raise ConfigError(f"FuzzConfig.params: parameter {name!r} is given twice; give each "
                              "name once")
        seen.add(name)
    return tuple(pairs)


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

RuntimeArg = str | type[Runtime] | Mutant
"""A runtime as campaigns take it: a registered name, an import path ``"file.py:Class"``, a
Runtime subclass or a Mutant (built)."""


class RecoveryCrash(tuple[str, str]):
    """What a recovery "recovered" when recovery code raised or did not terminate, in place of
    the application data: ``(what, detail)``, e.g. ``("recovery raised", "KeyError: 3")``,
    ``("reading the recovered data did not terminate", "within 1,000,000 instructions")``.
    Equal to no workload snapshot; failures with it are of kind ``crash``."""

    def __new__(cls, what: str, detail: str) -> RecoveryCrash:
        return super().__new__(cls, (what, detail))

    @property
    def message(self) -> str:
        return f"{self[0]} {self[1]}"

    def __repr__(self) -> str:
        return f"<{self.message}>"


@dataclass
class Failure:
    """One wrong recovery, with everything a human needs to act on it."""

    kind: str  # "data", "invariant", "new-tx", "idempotence", "crash" (recovery raised), or
    # "crash-free": wrong before any crash (the crash-free run or a clean restart)
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
    config: FuzzConfig | None = field(default=None, repr=False)
    """The campaign's config with user classes as import paths: what reproduces the failure."""
    unreproducible: str = ""  # why ``config`` alone does not rebuild the campaign, if it does not
    fix: tuple[Any, Any] | None = None
    """A robustness violation of a PM program: the sites (function, line, file) of the earlier
    store and of the later one it must persist before (crashfuzz.repair_program applies it)."""

    def summary(self) -> str:
        if self.kind == "crash-free":
            return f"[crash-free] before any crash: {self.message}"
        where = f"crash point {self.point} ({self.reason}" + (f", in {self.step}" if self.step else "")
        if self.depth > 1:
            where = f"depth {self.depth}: {self.origin}; {where}"
        return f"[{self.kind}] {where}): {self.message}"


def failure_key(f: Failure) -> tuple[Any, ...]:
    """Report order of failures, a total order that does not depend on how they were found:
    depth, the run after recovery they belong to, crash point, image, then kind and message."""
    return (f.depth, f.lineage, f.point, f.image_hash, f.kind, f.message)


@dataclass
class Report:
    """What a campaign checked and found. ``partial``: the campaign was interrupted and the
    report covers only the work finished by then (``points`` of ``points_planned``)."""

    config: FuzzConfig
    runtime: str
    workload: str
    trace_events: int = 0
    transactions: int = 0
    points: int = 0
    points_exhaustive: int = 0
    points_sampled: int = 0
    points_classed: int = 0  # points checked one read-set class at a time (see class_from)
    read_classes: int = 0  # classes those points fell into
    deep_points_classed: int = 0  # the same for the points of runs after recovery
    deep_read_classes: int = 0
    read_log_misses: int = 0  # points where two members of a class recovered differently
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
    points_planned: int = 0  # crash points the campaign chose (all of them checked unless partial)
    partial: bool = False
    notes: list[str] = field(default_factory=list)  # what the campaign assumed (Campaign.notes)
    schedules: int = 1  # interleavings run (FuzzConfig.schedules): each crash-tested unless its
    distinct_traces: int = 1  # trace repeated an earlier one's
    paths: dict[str, int] = field(default_factory=dict)  # a PM program's paths: times taken

    @property
    def ok(self) -> bool:
        return self.failure_count == 0

    @property
    def exhaustive(self) -> bool:
        return self.points_sampled == 0

    def add(self, failure: Failure) -> None:
        """Count a failure; keep the first ``max_failures`` in report order (:func:`failure_key`),
        whatever order they were found in."""
        self.failure_count += 1
        bisect.insort(self.failures, failure, key=failure_key)
        del self.failures[self.config.max_failures:]
        self.first_failure_point = self.failures[0].point

    def keeps(self, key: tuple[Any, ...]) -> bool:
        """Whether a failure whose :func:`failure_key` starts with ``key`` may be kept (else
        :meth:`add` would only count it, and building its full text is wasted work)."""
        kept = self.failures
        return len(kept) < self.config.max_failures or key <= failure_key(kept[-1])[:len(key)]

    def merge(self, other: Report) -> None:
        """Add ``other``'s counts and failures. Merging is order-independent. ``distinct_images``
        is summed; :func:`fuzz` replaces it by the size of the union of the images' hashes."""
        for name in ("points", "points_exhaustive", "points_sampled", "points_classed",
                     "read_classes", "deep_points_classed", "deep_read_classes",
                     "read_log_misses", "states_total",
                     "states_checked", "distinct_images", "recoveries", "idempotence_images",
                     "new_tx_checks", "failure_count", "deep_runs", "deep_candidates",
                     "deep_points", "deep_points_sampled", "deep_states", "deep_distinct"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.partial = self.partial or other.partial
        self.failures = sorted(self.failures + other.failures, key=failure_key)
        del self.failures[self.config.max_failures:]
        self.first_failure_point = self.failures[0].point if self.failures else None

    def _paths_line(self) -> str:
        never = [p for p, n in self.paths.items() if not n]
        took = ", ".join(f"{p} x{n}" for p, n in self.paths.items() if n) or "none"
        runs = "runs" if self.schedules > 1 else "run"
        return (f"  paths the crash-free {runs} took: {took}" + (
            f"; never: {', '.join(never)} (more operations, threads, schedules or a script may "
            "reach them)" if never else ""))

    def states_per_second(self) -> float:
        return self.states_checked / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        mode = "exhaustive" if self.exhaustive else (
            f"{self.points_sampled} of {self.points} points sampled")
        verdict = "OK" if self.ok else f"{self.failure_count} FAILURES"
        if self.partial:
            verdict = (f"PARTIAL: interrupted after {self.points} of {self.points_planned} crash "
                       "points; " + ("no failures so far" if self.ok else f"{verdict} so far"))
        lines = [
            f"crashfuzz {self.runtime} / {self.workload} / {self.config.domain} / "
            f"{self.config.order}: {verdict}",
            f"  trace {self.trace_events} events, {self.transactions} transactions committed",
            f"  {self.points} crash points ({self.config.points}), {mode}" + (
                f" ({self.points_classed} checked by {self.read_classes} read-set classes)"
                if self.points_classed else "") + (
                f"; the read log missed a read at {self.read_log_misses} points (sampled)"
                if self.read_log_misses else ""),
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
                + (f" ({self.deep_points_classed} checked by {self.deep_read_classes} read-set "
                   "classes)" if self.deep_points_classed else "")
                if self.config.depth > 1 else "off"),
            *([f"  schedules: {self.schedules} run ({self.config.schedule_kind}"
               + (f", depth {self.config.schedule_depth}" if self.config.schedule_kind == "pct"
                  else "") + f"), {self.distinct_traces} distinct traces crash-tested"]
              if self.config.schedules > 1 else []),
            f"  {self.seconds:.2f} s, {self.states_per_second():,.0f} states/s",
            *([self._paths_line()] if self.paths else []),
            *(f"  note: {n}" for n in self.notes),
        ]
        return "\n".join(lines)


class Campaign:
    """The crash-free run of one config, and the machinery to check its crash images."""

    recovery_min_ops: int = MIN_OPS
    recovery_ops_factor: int = OPS_FACTOR
    recovery_seconds: float = SECONDS
    """Recovery budget (see :mod:`pmsim.watchdog`): a recovery, data read and invariant
    check of one image may issue ``max(recovery_min_ops, recovery_ops_factor x the crash-free
    run's operations)`` machine operations and use ``recovery_seconds`` of CPU time; beyond
    either it is a finding of kind ``crash`` ("... did not terminate within ...")."""
    stall_seconds: float = 30.0
    """CPU seconds the crash-free run (and the runs on recovered images) may go without a
    transaction finishing, and the check of the crash-free run's data may take: user code in a
    loop there is a clear error (or a finding, where the loop runs on a recovered image)."""

    def __init__(self, cfg: FuzzConfig, runtime: RuntimeArg | None = None,
                 workload: WorkloadArg | None = None, machine: MachineConfig | None = None) -> None:
        """Run the crash-free run of ``cfg`` and check it.

        ``runtime``/``workload`` override ``cfg.runtime``/``cfg.workload`` with any form
        :func:`get_runtime` and :func:`~pmsim.workloads.base.build_workload` take. A class (or
        an instance, run as a fresh copy seeded by ``cfg.seed``) with an import path is recorded
        in ``self.cfg`` as that path, so failures carry a config that reproduces them;
        ``self.unreproducible`` says why not otherwise. When the workload's data after the
        crash-free run (or after a clean restart) disagree with its model,
        ``self.crash_free_failure`` is that finding (kind ``crash-free``), else None.
        User code that raises, exits or loops before any crash raises
        :class:`~pmsim.usercode.UserCodeError`.
        """
        self.cfg = cfg
        self.unreproducible = ""
        self._notes: list[str] = []
        rt_cls = get_runtime(cfg.runtime if runtime is None else runtime)
        if not rt_cls.durable:
            raise ConfigError(f"runtime {rt_cls.name or rt_cls.__name__!r} is a volatile baseline "
                              "(its transactions are not durable), so there is nothing to fuzz; "
                              "fuzz a durable runtime such as undo, redo or cow")
        self.rt_cls = rt_cls
        if cfg.order == "auto":
            self.cfg = cfg = replace(cfg, order=rt_cls.default_order)
        if isinstance(runtime, str):
            self._record("runtime", runtime, "")
        elif runtime is not None:
            self._record("runtime", *self._runtime_ref(runtime, rt_cls))
        program = program_of(rt_cls)
        if program is not None:
            workload = self._program_workload(program, workload)
        with bounded(self.stall_seconds):
            wl = self._workload(workload)
        self._pristine = _fresh_copy(wl)  # the workload before it ran, for _reference_agrees
        if machine is not None:
            self._notes.append("the campaign ran on a machine config passed to it; pass the same "
                               "machine= to reproduce")
        self.unreproducible = "; ".join(self._notes)
        cfg = self.cfg
        base = machine or cfg.machine or fuzz_machine(cfg.domain, cfg.threads, cfg.seed)
        cores = cfg.threads + rt_cls.extra_cores(cfg.threads)
        self.base_mcfg = base = base.replace(domain=cfg.domain, cores=max(base.cores, cores))
        with bounded(self.stall_seconds):
            layout = rt_cls.plan(wl.spec(), cfg.threads, base.pm_region.base)
            mcfg = self.mcfg = rt_cls.fit_config(_machine_for(layout, base), layout)
            m = Machine(mcfg)
            if cfg.schedule_index:
                m.schedule = Schedule(cfg.schedule_kind, cfg.schedule_index, cfg.seed,
                                      cfg.threads, cfg.schedule_depth,
                                      horizon=4 * cfg.txs * cfg.threads)
            rt = rt_cls(m, layout)
            self.session = Session(m, rt, wl)
            rt.format()
            wl.setup(rt)
        m.reset_trace()
        self.step_log: list[tuple[int, int, str]] = []
        rt.log_steps(self.step_log)
        with bounded(self.stall_seconds, _finished(rt), self._stalled("the crash-free run")):
            self.session.run(cfg.txs)
        self.full_trace: Trace = m.trace()
        with bounded(self.stall_seconds):  # the runtime's declarations: user code too
            self.ignored = np.asarray(sorted(rt.crash_irrelevant()), np.uint64) if (
                cfg.reduce and declares_crash_irrelevant(rt_cls)) else np.zeros(0, np.uint64)
            self.edges = rt.edge_providers()
        self.trace = drop_stores(self.full_trace, self.ignored)
        self.model = CrashModel(self.trace, cfg.order, cfg.domain, extra_edge_providers=self.edges)
        self.history = TxHistory.from_trace(self.trace, rt.commit_order)
        # recovery needs its functional result, not its timing; a recovery whose own trace is
        # crash-tested (record=True) runs timed, and cfg.recovery='timed' times them all
        self.scratch_timed = Machine(mcfg)
        self.scratch = self.scratch_timed if cfg.recovery == "timed" else Machine(mcfg, timed=False)
        self.robust = self._robust(wl)
        self.notes = self._assumptions(program)
        self.paths: dict[str, int] = self.session.runtime.path_counts() if program else {}
        self.oracle: Oracle = (RobustOracle(self.history, self.model, self._strict_view)
                               if self.robust else Oracle(self.history, wl.expected))
        self.watchdog = Watchdog(max(self.recovery_min_ops, self.recovery_ops_factor * ops(m)),
                                 self.recovery_seconds)
        self.rt_name = getattr(rt_cls, "name", rt_cls.__name__) or rt_cls.__name__
        self._outcomes: dict[tuple[int, int], tuple[Hashable, list[str], str | None, bool]] = {}
        self._new_tx_done: set[Hashable] = set()
        self._idem_done: set[tuple[int, int]] = set()
        self._read_sets: dict[tuple[int, int], frozenset[int]] = {}
        self.last_reads: set[int] = set()
        self.crash_free_failure = self._check_crash_free()

    def _program_workload(self, program: type, workload: WorkloadArg | None) -> WorkloadArg:
        """A PM program's runtime runs the program's own operations: the workload given, if it
        is that program's, else the program's (FuzzConfig.workload then names the program)."""
        arg = self.cfg.workload if workload is None else workload
        try:
            cls = get_workload(arg) if isinstance(arg, str | type) else type(arg)
        except PmsimError:
            cls = None
        own = program_of(cls) if cls is not None else None
        if own is program:
            return workload  # type: ignore[return-value]
        if own is not None:
            raise ConfigError(f"the runtime is the PM program {program.__name__} but the "
                              f"workload is the program {own.__name__}; a program runs its own "
                              "operations: leave the workload out")
        from pmsim.programs import program_workload

        if isinstance(self.cfg.runtime, str):
            self.cfg = replace(self.cfg, workload=self.cfg.runtime)
        return program_workload(program)

    def _robust(self, wl: Workload) -> bool:
        """Whether recovered states are judged by robustness (cfg.oracle; see crashfuzz.robust)."""
        program = program_of(wl)
        has_model = program is None or program.model is not None
        if self.cfg.oracle == "model" and not has_model:
            raise ConfigError(f"oracle='model' but the PM program {program.__name__} has no "
                              "model: give it one (class attribute model) or use oracle='robust'")
        return self.cfg.oracle == "robust" or (self.cfg.oracle == "auto" and not has_model)

    def _assumptions(self, program: type | None) -> list[str]:
        """What the campaign assumes beyond the architecture, said in its report."""
        notes = []
        if self.cfg.order == "line":
            notes.append("order line: each cache line is assumed to persist atomically, its stores "
                         "in order; x86 guarantees only 8-byte failure atomicity (order px86)"
                         + (" — a PM program should normally be fuzzed with order px86"
                            if program is not None else ""))
        if self.robust:
            notes.append("oracle robust: a recovered state is correct if strict persistency (stores "
                         "persisting in their visibility order) could recover to it")
        return notes

    def _strict_view(self, img: np.ndarray, base: Runtime | None = None) -> Hashable:
        """What recovery (by ``base``'s kind, default the crash-free run's runtime) makes of
        ``img`` (the robustness oracle's prefix images), on a machine of its own so that it
        never disturbs a recovery in progress."""
        m = getattr(self, "_strict_m", None)
        if m is None:
            m = self._strict_m = Machine(self.mcfg, timed=False)
        m.power_cycle(img)
        return self._recover(m, False, base)[1]

    @property
    def trace_hash(self) -> tuple[int, int]:
        """A hash of what the crash-free run did (each event's kind, thread, address, value and
        marker, not its time): two schedules with equal hashes interleaved alike."""
        ev = self.full_trace.events
        cols = np.stack([ev["kind"].astype(np.uint64), ev["tid"].astype(np.uint64),
                         ev["addr"].astype(np.uint64), ev["value"].astype(np.uint64),
                         ev["aux"].astype(np.uint64)])
        return image_hash(cols.view(np.uint8).ravel())

    def _stalled(self, what: str) -> str:
        return f"{what} finished no transaction within {self.stall_seconds:g} s of CPU time"

    def _record(self, which: str, ref: str | None, why: str) -> None:
        """Store the string that finds a runtime or workload class again in ``self.cfg``."""
        if ref is None:
            self._notes.append(f"the {which} {why}")
        elif getattr(self.cfg, which) != ref:
            self.cfg = replace(self.cfg, **{which: ref})

    @staticmethod
    def _runtime_ref(arg: Any, cls: type[Runtime]) -> tuple[str | None, str]:
        if isinstance(arg, Mutant):
            if MUTANTS.get(arg.name) is arg:
                return arg.name, ""
            path, _ = import_path(arg)
            return (path, "") if path else (None, (
                f"is the unregistered Mutant {arg.name!r}; define it at module level in a file "
                "and pass 'file.py:<variable>', or register_mutant() it in an imported module"))
        return reference(cls)

    def _workload(self, workload: WorkloadArg | None) -> Workload:
        """The workload instance, from any form the entry points take (build_workload). A name
        or class gets the small fuzzing parameters of its class (FUZZ_PARAMS by registered
        name, or the class's ``fuzz_params``) under ``cfg.params``; an instance keeps its own
        and runs as a fresh copy (no history, ``cfg.seed``, ``txs`` filled in when None)."""
        cfg = self.cfg
        arg = cfg.workload if workload is None else workload
        txs, params = self._planned_txs(), dict(cfg.params)
        if isinstance(arg, Workload):
            build_workload(arg, cfg.threads, cfg.seed, txs, params)  # checks threads and params
            if arg.seed != cfg.seed:
                raise ConfigError(f"the workload instance has seed={arg.seed} but "
                                  f"FuzzConfig.seed={cfg.seed}, which seeds the workload; set "
                                  f"FuzzConfig(seed={arg.seed}) or build it with seed={cfg.seed}")
            wl = _fresh_copy(arg)
            wl.txs = txs if arg.txs is None else arg.txs
            self._record("workload", *self._instance_ref(wl))
            return wl
        if not isinstance(arg, str | type):
            self._notes.append(f"the workload came from the factory {arg!r}, which FuzzConfig "
                               "cannot name; pass a class or its import path")
            return build_workload(arg, cfg.threads, cfg.seed, txs, params)
        cls = get_workload(arg)
        wl = build_workload(cls, cfg.threads, cfg.seed, txs, params, fuzz_defaults(cls, FUZZ_PARAMS))
        self._record("workload", *((arg, "") if isinstance(arg, str) else workload_reference(cls)))
        return wl

    def _instance_ref(self, wl: Workload) -> tuple[str | None, str]:
        """The import path of an instance's class, with ``self.cfg.params`` set to rebuild it,
        if FuzzConfig can describe the instance: the rebuilt one must have its parameters and
        layout."""
        cls = type(wl)
        ref, why = workload_reference(cls)
        if ref is None:
            return None, why
        cfg = self.cfg
        defaults = fuzz_defaults(cls, FUZZ_PARAMS)
        base = cls.Params()
        explicit = tuple((f.name, getattr(wl.p, f.name)) for f in fields(wl.p)
                         if getattr(wl.p, f.name) != defaults.get(f.name, getattr(base, f.name)))
        try:
            again = build_workload(cls, cfg.threads, cfg.seed, self._planned_txs(), dict(explicit),
                                   defaults)
            same = again.p == wl.p and again.spec() == wl.spec()
        except Exception:  # noqa: BLE001 - a class that cannot be rebuilt so is reported, below
            same = False
        if not same:
            return None, (f"was passed as a {cls.__name__} instance that FuzzConfig cannot "
                          "rebuild (its txs or constructor differ); pass its class with params=")
        self.cfg = replace(cfg, params=explicit)
        return ref, ""

    def _planned_txs(self) -> int:
        """Transactions per thread the layout must hold: the run, the new-transaction check and
        the runs after recovery at every depth."""
        cfg = self.cfg
        return cfg.txs + max(cfg.new_tx, (cfg.depth - 1) * cfg.depth_txs)

    # -- recovery -----------------------------------------------------------------------------
    def recover(self, image: np.ndarray, record: bool = False, track: bool = False,
                base: Runtime | None = None
                ) -> tuple[Runtime | None, Hashable, list[str], Trace | None]:
        """Power-cycle the scratch machine, load ``image``, recover; (runtime, data, errors,
        recovery trace when ``record``).

        Recovery code that raises or overruns the watchdog's budget is a finding, not an error:
        recovery itself gives runtime None and a :class:`RecoveryCrash` as the data; the
        workload's data reader gives a RecoveryCrash as the data; the invariant check an error.
        Runs on the functional machine (same memory, values and trace stores as the timed
        one), or on the timed one when ``record`` asks for recovery's own trace."""
        m = self.scratch_timed if record else self.scratch
        m.power_cycle(image)
        if record:
            m.reset_trace()
        if track:  # the words recovery, the data reader and the invariant check read
            self.last_reads = m.start_read_log().reads
            try:
                return self._recover(m, record, base)
            finally:
                m.stop_read_log()
        return self._recover(m, record, base)

    def _recover(self, m: Machine, record: bool, base: Runtime | None = None
                 ) -> tuple[Runtime | None, Hashable, list[str], Trace | None]:
        """Recovery on ``m`` by a runtime reattached from ``base`` (the runtime that ran the
        trace the image comes from: a run after recovery continues its heap) or the crash-free
        run's."""
        wl = self.session.workload
        wd = self.watchdog
        rt: Runtime | None = None
        data: Hashable = None
        errors: list[str] = []
        stage = "recovery"
        try:
            wd.start(m)
            try:
                try:
                    rt = (base or self.session.runtime).reattach(m)
                    rt.recover(m.cpu(0))
                except BaseException as e:  # any failure of user code is a finding, not a crash
                    if not _caught(e):
                        raise
                    crash = RecoveryCrash("recovery raised", _raised(e))
                    return None, crash, [crash.message], None
                stage = "reading the recovered data"
                try:
                    data = wl.app_data(rt)
                except BaseException as e:
                    if not _caught(e):
                        raise
                    data = RecoveryCrash(f"{stage} raised", _raised(e))
                stage = "the invariant check"
                try:
                    errors = rt.check_invariants(wl.live_objects(rt))
                except BaseException as e:
                    if not _caught(e):
                        raise
                    errors = [f"invariant check raised {_raised(e)}"]
            finally:
                wd.stop()
            stage = "recovery"  # the operations an overrun that ended counts are recovery's
            wd.check(m)
        except Hang as h:
            crash = RecoveryCrash(f"{stage} did not terminate", h.detail)
            if stage == "recovery":
                return None, crash, [crash.message], None
            if stage == "the invariant check":
                errors = [crash.message]
            else:
                data = crash
        return rt, data, errors, (m.trace() if record else None)

    # -- the crash-free run -----------------------------------------------------------------------
    def _check_crash_free(self) -> Failure | None:
        """The finding (kind ``crash-free``) when the workload's data after the crash-free
        run, or after a clean restart and recovery, disagree with its model. On a runtime that
        is not one of pmsim's own correct ones the crash-free run is first repeated on undo: if
        the data agree there, the runtime is at fault, and fuzzing reports it as usual."""
        try:
            with bounded(self.stall_seconds):
                problem = _crash_free_problem(self.session, self.recover)
        except Hang as h:
            problem = (f"checking the workload's data after a crash-free run did not terminate "
                       f"{h.detail}; {_NOT_CRASH}")
        if problem is None:
            return None
        if (not _trusted(self.rt_cls) and program_of(self.rt_cls) is None
                and self._reference_agrees()):
            return None
        trace, m = self.trace, self.session.machine
        k = len(trace)
        img = m.pm_image()
        return Failure(kind="crash-free", point=k, since=k, reason="no crash",
                       event=trace.describe(k - 1) if k else "(start of trace)",
                       time_ns=float(trace.events["time"][k - 1]) if k else 0.0,
                       image_hash=image_hash(img), message=problem, expected=[], recovered="",
                       persisted=[], image=img.copy(), config=self.cfg,
                       unreproducible=self.unreproducible)

    def _reference_agrees(self) -> bool:
        """Whether a fresh copy of the workload agrees with its model on the undo runtime."""
        wl = _fresh_copy(self._pristine)
        ref = get_runtime("undo")
        cfg = self.cfg
        layout = ref.plan(wl.spec(), cfg.threads, self.base_mcfg.pm_region.base)
        mcfg = _machine_for(layout, self.base_mcfg)
        m = Machine(mcfg)
        rt = ref(m, layout)
        rt.format()
        wl.setup(rt)
        s = Session(m, rt, wl)
        try:
            with bounded(self.stall_seconds, _finished(rt)):
                s.run(cfg.txs)
        except BaseException as e:  # the workload fails on a correct runtime: its bug
            if not (_caught(e) or isinstance(e, Hang)):
                raise
            return False
        scratch = Machine(mcfg, timed=False)

        def recover(img: np.ndarray) -> tuple[Any, Hashable, list[str], None]:
            scratch.power_cycle(img)
            rt2 = rt.reattach(scratch)
            rt2.recover(scratch.cpu(0))
            return rt2, wl.app_data(rt2), rt2.check_invariants(wl.live_objects(rt2)), None

        try:
            with bounded(self.stall_seconds):
                return _crash_free_problem(s, recover) is None
        except BaseException as e:
            if not (_caught(e) or isinstance(e, Hang)):
                raise
            return False

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
        order = self._order_for(match)
        trial.resume(None if self.robust else order)
        model = None if self.robust else wl.model()
        for t in order if model is not None else ():
            model.apply(wl.executed[t])
        for _ in range(self.cfg.new_tx):
            op = trial.next_op(0, trial.rng(0))
            if op is FINISHED:
                break
            try:
                with bounded(self.stall_seconds, _finished(rt)):
                    proc, = run_threads(rt, [(lambda cpu, op=op: trial.transaction(cpu, rt, op),
                                              0, ())])
                if not proc.ok:
                    return f"a new transaction failed: {proc.value!r}"
            except HeapExhausted:
                return None  # the layout was planned for fewer transactions: inconclusive
            except Hang as h:
                return f"a new transaction did not terminate {h.detail}"
            except BaseException as e:
                if not _caught(e):
                    raise
                return f"a new transaction raised {_raised(e)}"
            if model is not None:
                model.apply(op)
        # without a model: what the run left, read before the restart
        exp = model.snapshot() if model is not None else trial.app_data(rt)
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
    def check_point(self, point: Any, report: Report,
                    collect: bool = False) -> tuple[tuple[int, int], np.ndarray] | None:
        """Check every image at ``point`` (or ``samples`` of them, drawn by a generator seeded
        by the seed and the point). With ``collect``, return the point's candidate for the
        idempotence check (a copy): its first image that passes and whose recovery stores
        something; the check itself is :meth:`_check_idempotence`, chosen by :func:`fuzz`."""
        cfg = self.cfg
        space = self.model.space(point)
        count = space.count
        report.points += 1
        report.states_total += count
        reps = None if not self._classes_first(space) else self._by_class(
            space, report, lambda h, img, track: self._outcome(h, img, report, point.index, track)[:2])
        if count <= cfg.budget or reps is not None:
            report.points_exhaustive += 1
            report.states_checked += count
            images: Iterable[tuple[tuple[int, int], np.ndarray]] = (
                space.hashed_images(distinct=True) if reps is None else reps)
        else:
            report.points_sampled += 1
            states = space.sample(cfg.samples, _rng(cfg.seed, 1, point.index))
            report.states_checked += len(states)
            images = ((space.hash(s), space.image(s)) for s in states)
        candidate = None
        for h, img in images:
            raise_pending()  # a stop request whose exception was dropped or swallowed
            failure = self._check_image(point, h, img, report)
            if failure is None and collect and candidate is None and self._outcomes[h][3]:
                candidate = (h, img.copy())
            if failure is not None:
                report.add(failure)
                if cfg.stop_at_first:
                    break
        return candidate

    def _recover_logged(self, h: tuple[int, int], img: np.ndarray, report: Report, track: bool,
                        base: Runtime | None = None
                        ) -> tuple[Runtime | None, Hashable, list[str], Trace | None]:
        """Recover ``img`` (counted); with ``track`` cache the words it read under ``h``, unless
        they are many (a recovery that scans the whole region is recovered again if needed)."""
        report.recoveries += 1
        out = self.recover(img, track=track, base=base)
        if track and len(self.last_reads) <= READS_CACHED:
            self._read_sets[h] = frozenset(self.last_reads)
        return out

    def _classes_first(self, space: Any) -> bool:
        """Whether to check ``space`` by read-set classes: a product with more than
        ``class_from`` distinct images (the walk costs one recovery per class), an ordered space
        over the budget (below it the C core enumerates its images faster than the walk, whose
        boxes may hold no state); never a PDOM-2 prefix space (one state per store: cheap)."""
        if space.kind == "product":
            return space.count > self.cfg.budget or space.distinct_count() > self.cfg.class_from
        return space.kind == "ordered" and space.count > max(self.cfg.budget, self.cfg.class_from)

    def _by_class(self, space: Any, report: Report,
                  outcome: Callable[[tuple[int, int], np.ndarray, bool], tuple[Hashable, list[str]]],
                  deep: bool = False) -> Iterator[tuple[tuple[int, int], np.ndarray]] | None:
        """One (hash, image) per read-set class of a ``space`` (images built lazily; every
        outcome is already cached by hash)
        (:mod:`crashfuzz.classes`), every outcome computed by ``outcome(hash, image, track)``;
        None when the classes exceed ``class_limit`` or two members of a class recover
        differently (the read log missed a read: counted, and the point is sampled). The
        second member is recovered for the first :data:`VERIFY_CLASSES` classes of a point."""
        if not self.cfg.class_limit:
            return None

        def reads(state: tuple[int, ...]) -> Collection[int]:
            raise_pending()
            h = space.hash(state)
            got = self._read_sets.get(h)
            if got is None:
                outcome(h, space.image(state), True)  # recovers it, tracked, into last_reads
                got = self.last_reads
            return got

        limit, probe = self.cfg.class_limit, 0
        if space.count <= self.cfg.budget:
            # classes must beat enumerating the distinct images clearly, or are abandoned early
            n = space.distinct_count() if space.kind == "product" else space.count
            limit, probe = min(limit, max(1, n // 4)), PROBE_CLASSES
        rc = ReadClasses(space, reads, limit, probe=probe)
        reps = []
        for n, (rep, other, _) in enumerate(rc):
            h = space.hash(rep)
            if other is not None and n < VERIFY_CLASSES:
                h2 = space.hash(other)
                if h2 != h and outcome(h, space.image(rep), False) != outcome(
                        h2, space.image(other), False):
                    report.read_log_misses += 1
                    return None
            reps.append((h, rep))
        if not rc.complete:
            return None
        if deep:
            report.deep_points_classed += 1
            report.deep_read_classes += rc.classes
        else:
            report.points_classed += 1
            report.read_classes += rc.classes
        return ((h, space.image(st)) for h, st in reps)

    def _outcome(self, h: tuple[int, int], img: np.ndarray, report: Report,
                 k: int, track: bool = False) -> tuple[Hashable, list[str], str | None, bool]:
        """Recover an image once per distinct hash: (data, invariant errors, new-tx problem,
        whether recovery stored anything to PM). ``track`` also records the PM words the
        recovery read (in ``_read_sets``), recovering again if the outcome was known."""
        out = self._outcomes.get(h)
        if out is not None and track and h not in self._read_sets:
            self._recover_logged(h, img, report, True)
        if out is None:
            report.distinct_images += 1
            rt, data, errors, _ = self._recover_logged(h, img, report, track)
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
        race = self._torn_read(h, img, self.session.runtime, k, self.trace)
        if race:
            return self._failure("torn", point, h, img, race, cands, data, report=report)
        if not ok:
            kind = "crash" if isinstance(data, tuple) and data[:1] == ("recovery raised",) else "data"
            return self._failure(kind, point, h, img, "recovered data matches no correct outcome",
                                 cands, data, report=report)
        if errors:
            return self._failure("invariant", point, h, img, "; ".join(errors[:3]), cands, data,
                                 report=report)
        if newtx:
            return self._failure("new-tx", point, h, img, newtx, cands, data, report=report)
        return None

    def _check_idempotence(self, point: Any, h: tuple[int, int], img: np.ndarray,
                           rng: np.random.Generator | None, report: Report) -> Failure | None:
        """Crash recovery itself at its reduced points and recover again (once per image).
        Samples at a point of recovery's trace are drawn by a generator seeded by the seed, the
        crash point and that point, as the campaign does, unless ``rng`` is given."""
        if h in self._idem_done:
            return None
        self._idem_done.add(h)
        k = point.index
        rt, _, _, rtrace = self.recover(img.copy(), record=True)
        report.recoveries += 1
        if rt is None or rtrace is None or len(rtrace) == 0:
            return None
        report.idempotence_images += 1
        model = CrashModel(rtrace, self.cfg.order, self.cfg.domain,
                           extra_edge_providers=self.edges)
        for p in model.points("reduced"):
            sp = model.space(p)
            if sp.count <= self.cfg.budget:
                it: Iterable[tuple[tuple[int, int], np.ndarray]] = sp.hashed_images(distinct=True)
            else:
                prng = rng or _rng(self.cfg.seed, 4, point.index, p.index)
                it = ((sp.hash(s), sp.image(s)) for s in sp.sample(self.cfg.samples, prng))
            for h2, img2 in it:
                raise_pending()
                data2, errors2, _, _ = self._outcome(h2, img2, report, k)
                ok, cands = self.oracle.check(k, data2)
                if not ok or errors2:
                    where = rtrace.describe(p.index - 1) if p.index else "its start"
                    msg = (f"recovery crashed after its own event {p.index - 1} ({where}), then "
                           + ("recovered wrong data" if not ok else "; ".join(errors2[:3])))
                    return self._failure("idempotence", point, h2, img2, msg, cands, data2)
        return None

    # -- crash depth: crash the run that follows a recovery ----------------------------------------
    def crash_deeper(self, points: Sequence[Any], report: Report) -> None:
        """Depth >= 2: from crash points spread over the run, take the image in which every
        store so far persisted, run recovery and ``depth_txs`` new transactions on it with
        tracing on, and crash-test that run like the first one: its reduced points, every image
        (up to the budget), recovery and the oracle, whose acceptable outcomes are the
        recovered outcome followed by prefixes of the new transactions. Recursively up to
        ``depth``. Runs whose recovered image was already explored are skipped. Samples at a
        point are drawn by a generator seeded by the seed, the depth, the lineage and the point."""
        root = _Stage(1, self.trace, self.model, self.oracle, self.history,
                      self.session.runtime, self.session.workload, [], "", ())
        self._deep_seen: set[tuple[int, int]] = set()
        self._deep_outcomes: dict[tuple[int, int], tuple[Hashable, list[str]]] = {}
        self._expand(root, points, report)

    def _expand(self, stage: _Stage, points: Sequence[Any], report: Report) -> None:
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
                self._check_deep_point(child, cp, report)
                if cfg.stop_at_first and report.failure_count:
                    return
            self._expand(child, child_points, report)

    def _run_after_recovery(self, stage: _Stage, point: Any, img: np.ndarray,
                            report: Report) -> _Stage | None:
        """The traced run of recovery plus new transactions on ``img``, as a stage; None when
        the image does not recover to a correct outcome or its recovered image was seen."""
        data, errors = self._deep_outcome(image_hash(img), img, report,
                                          base=stage.runtime if stage.depth > 1 else None)
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
        order = stage.order + _prefix_order(stage.history, match)
        trial = copy.copy(wl)
        trial.executed = dict(wl.executed)
        trial._rngs = {}
        trial.seed = wl.seed + 7919 * stage.depth + point.index
        trial.locks = [m.lock() for _ in range(wl.nlocks())]
        trial.resume(None if self.robust else order)
        for _ in range(self.cfg.depth_txs):
            op = trial.next_op(0, trial.rng(0))
            if op is FINISHED:
                break
            try:
                with bounded(self.stall_seconds, _finished(rt)):
                    proc, = run_threads(rt, [(lambda cpu, op=op: trial.transaction(cpu, rt, op),
                                              0, ())])
            except HeapExhausted:
                break  # the layout was planned for fewer transactions: run what fits
            except BaseException as e:  # a transaction on the recovered image failed: a finding
                if not _caught(e):
                    raise
                report.add(self._failure(
                    "new-tx", point, image_hash(img), img,
                    f"a new transaction on the recovered image raised {_raised(e)}", cands, data,
                    stage if stage.depth > 1 else None, report))
                return None
            if not proc.ok:
                break
        trace = drop_stores(m.trace(), self.ignored)
        history = TxHistory.from_trace(trace, rt.commit_order)

        def expected(txids: Sequence[int], order: list[int] = order) -> Hashable:
            return trial.expected(order + list(txids))

        where = f"every store before crash point {point.index} persisted"
        origin = (f"{stage.origin}, then " if stage.origin else "") + (
            f"recovered the image with {where}, ran {len(history.commit_order)} new transactions")
        model = CrashModel(trace, self.cfg.order, self.cfg.domain, extra_edge_providers=self.edges)
        oracle = (RobustOracle(history, model, lambda img: self._strict_view(img, rt))
                  if self.robust else Oracle(history, expected))
        return _Stage(stage.depth + 1, trace, model, oracle, history, rt, trial, order, origin,
                      stage.lineage + (point.index,))

    def _deep_machine(self) -> Machine:
        if getattr(self, "_deep_m", None) is None:
            self._deep_m = Machine(self.mcfg)
        return self._deep_m

    def _deep_outcome(self, h: tuple[int, int], img: np.ndarray, report: Report,
                      track: bool = False, base: Runtime | None = None
                      ) -> tuple[Hashable, list[str]]:
        """(data, invariant errors) of recovering ``img``, once per distinct image hash;
        ``track`` as for :meth:`_outcome`."""
        out = self._outcomes[h][:2] if h in self._outcomes else self._deep_outcomes.get(h)
        if out is not None and track and h not in self._read_sets:
            self._recover_logged(h, img, report, True, base)
        if out is None:
            report.deep_distinct += 1
            _, data, errors, _ = self._recover_logged(h, img, report, track, base)
            out = self._deep_outcomes[h] = (data, errors)
        return out

    def _check_deep_point(self, stage: _Stage, point: Any, report: Report) -> None:
        cfg = self.cfg
        space = stage.model.space(point)
        report.deep_points += 1
        reps = None if not self._classes_first(space) else self._by_class(
            space, report, lambda h, img, track: self._deep_outcome(h, img, report, track,
                                                                   stage.runtime), deep=True)
        if space.count <= cfg.budget or reps is not None:
            report.deep_states += space.count
            images: Iterable[tuple[tuple[int, int], np.ndarray]] = (
                space.hashed_images(distinct=True) if reps is None else reps)
        else:
            report.deep_points_sampled += 1
            rng = _rng(cfg.seed, 3, stage.depth, *stage.lineage, point.index)
            states = space.sample(cfg.samples, rng)
            report.deep_states += len(states)
            images = ((space.hash(s), space.image(s)) for s in states)
        for h, img in images:
            raise_pending()
            f = self.check_deep_image(stage, point, h, img, report)
            if f is not None:
                report.add(f)
                if cfg.stop_at_first:
                    return

    def check_deep_image(self, stage: _Stage, point: Any, h: tuple[int, int], img: np.ndarray,
                         report: Report) -> Failure | None:
        """Recover one image of a run after recovery and check it against that run's oracle."""
        data, errors = self._deep_outcome(h, img, report, base=stage.runtime)
        ok, cands = stage.oracle.check(point.index, data)
        race = self._torn_read(h, img, stage.runtime, point.index, stage.trace)
        if race:
            return self._failure("torn", point, h, img, race, cands, data, stage, report)
        if ok and not errors:
            return None
        kind = ("crash" if isinstance(data, tuple) and data[:1] == ("recovery raised",)
                else "data") if not ok else "invariant"
        msg = "recovered data matches no correct outcome" if not ok else "; ".join(errors[:3])
        return self._failure(kind, point, h, img, msg, cands, data, stage, report)

    def stage_for(self, lineage: Sequence[int]) -> _Stage:
        """Rebuild the run after recovery that a depth >= 2 failure belongs to: ``lineage``
        lists the crash point of each level whose all-persisted image was recovered."""
        self._deep_seen = set()
        self._deep_outcomes = {}
        stage = _Stage(1, self.trace, self.model, self.oracle, self.history,
                       self.session.runtime, self.session.workload, [], "", ())
        rep = Report(self.cfg, self.rt_name, workload_label(self.session.workload))
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
                 stage: _Stage | None = None, report: Report | None = None) -> Failure:
        """The failure at crash point ``point`` with everything a human needs: the event, the
        persist step, labelled addresses and what persisted. When ``report`` would only count
        it (it already keeps ``max_failures`` earlier ones), a bare failure without that text."""
        k = point.index
        tr = stage.trace if stage is not None else self.trace
        kinds = tr.events["kind"]
        last = next((i for i in range(k - 1, -1, -1) if kinds[i] != Ev.WB), None)
        ev = tr.describe(last) if last is not None else "(start of trace)"
        if k < len(tr):
            ev += f"; next: {tr.describe(k)}"
        t = float(tr.events["time"][k - 1]) if k > 0 else 0.0
        step = self.step_of(last) if stage is None and last is not None else ""
        if isinstance(data, RecoveryCrash):
            if kind in ("data", "crash"):
                kind, message = "crash", data.message
            elif kind == "idempotence":
                message = f"{message}: {data.message}"
        depth, lineage = (stage.depth, stage.lineage) if stage is not None else (1, ())
        if report is not None and not report.keeps((depth, lineage, k, h, kind)):
            return Failure(kind=kind, point=k, since=point.since, reason=point.reason, event="",
                           time_ns=0.0, image_hash=h, message=message, expected=[], recovered="",
                           persisted=[], image=img, depth=depth, lineage=lineage, config=self.cfg)
        labels = self.labeller(k, stage)
        fix = None
        if self.robust and kind == "data":
            message, fix = self._not_robust(point, h, img, stage, labels)
        return Failure(
            kind=kind, point=k, since=point.since, reason=point.reason, fix=fix,
            event=labels.annotate(ev), time_ns=t, image_hash=h, message=labels.annotate(message),
            expected=[(f"strict persistency, the first {key.stores} stores persisted: "
                       if isinstance(key, Cut) else f"per-thread prefix {key}: ") + _short(exp)
                      for key, exp in cands],
            recovered=_short(data), persisted=self.persisted_lines(point, img, tr, labels),
            image=img.copy(), depth=stage.depth if stage is not None else 1,
            origin=stage.origin if stage is not None else "", step=step or "",
            lineage=stage.lineage if stage is not None else (), config=self.cfg,
            unreproducible=self.unreproducible)

    def _torn_read(self, h: tuple[int, int], img: np.ndarray, rt: Runtime, k: int,
                   trace: Trace) -> str:
        """A persistency race: recovery read a word holding part of a store issued as pieces
        before crash point ``k`` (a PM program's store declared tearable, or a wide store it
        declared atomic) by ``rt``, the runtime that ran ``trace``; "" when it did not."""
        torn = getattr(rt, "torn_stores", None)
        wide = getattr(rt, "wide_stores", None)
        if not torn and not wide:
            return ""
        kept = trace.meta.get("kept")
        full_k = (int(kept[k - 1]) + 1 if k else 0) if kept is not None else k
        base = trace.pm_base
        words = img.view(np.uint64)
        ev = trace.events
        stores = np.isin(ev["kind"], (Ev.STORE, Ev.NTSTORE)) | (
            (ev["kind"] == Ev.RMW) & (ev["aux"] == 1))
        full = kept if kept is not None else np.arange(len(ev))

        def later_values(a: int, after: int) -> set[int]:
            """Values stored to ``a`` after full-trace index ``after`` and before the crash."""
            sel = stores & (ev["addr"] == a) & (full > after) & (full < full_k)
            return set(ev["value"][sel].tolist())

        found: list[tuple[list[int], str]] = []
        for step, site, a, old, new, pieces in torn or ():
            cur = int(words[(a - base) >> 3])
            piece = next((p for p in pieces[:-1] if p[0] < full_k and p[1] == cur
                          and cur not in (old, new)), None)
            if piece is not None and cur in later_values(a, pieces[-1][0]):
                piece = None  # a later store wrote the same value: not necessarily a tear
            if piece is not None:
                off = a - getattr(rt, "region_base", 0)
                where = f" at {site_text(site)}" if site else ""
                found.append(([a], f"persistency race: recovery read offset {off:#x} holding "
                                   f"{cur:#x}, the first {piece[2]} bits of the torn store{where} "
                                   f"(step {step!r}, declared tearable) and the rest of the old "
                                   "value; store it atomically (one aligned 8-byte store), or "
                                   "guard it with a flag persisted after it that recovery "
                                   "checks before reading it"))
        for step, site, first, _, parts in wide or ():
            if first >= full_k:
                continue
            got = [int(words[(a - base) >> 3]) for a, _, _ in parts]
            new = [a for (a, o, v), g in zip(parts, got, strict=True) if g == v and o != v]
            old = [a for (a, o, v), g in zip(parts, got, strict=True) if g == o and o != v]
            if new and old:
                where = f" at {site_text(site)}" if site else ""
                found.append((new + old, f"persistency race: recovery read the {len(parts)}-word "
                                         f"store{where} (step {step!r}, declared atomic) partly "
                                         "persisted: no x86 store wider than 8 bytes is "
                                         "failure-atomic; publish it with a flag or pointer "
                                         "persisted after it, or checksum it"))
        if not found:
            return ""
        reads = self._reads_of(h, img, rt)
        return next((msg for addrs, msg in found
                     if any((a - base) >> 3 in reads for a in addrs)), "")

    def _reads_of(self, h: tuple[int, int], img: np.ndarray, rt: Runtime) -> Collection[int]:
        """The PM words recovery (by ``rt``'s kind) reads of image ``h``: the cached read set,
        else a tracked recovery of a copy."""
        reads = self._read_sets.get(h)
        if reads is None:
            self.recover(img.copy(), track=True, base=rt)
            reads = set(self.last_reads)
        return reads

    def _not_robust(self, point: Any, h: tuple[int, int], img: np.ndarray, stage: _Stage | None,
                    labels: Labeller) -> tuple[str, tuple[Any, Any] | None]:
        """The message of a robustness violation: the store pair whose persist order the image
        violates, among the words recovery read, and where a flush and fence restore it."""
        msg = "not robust: the recovered state is none that strict persistency could recover to"
        rt = stage.runtime if stage is not None else self.session.runtime
        reads = self._reads_of(h, img, rt)
        model = stage.model if stage is not None else self.model
        v = violation(model, point.index, img, reads)
        read_both = v is not None
        if v is None:
            v = violation(model, point.index, img)
        if v is None:
            return msg + " (no single pair of stores explains it)", None
        sites = {i: site for i, _, site in (getattr(rt, "sites", None) or ())}
        kept = model.trace.meta.get("kept")

        ev = model.trace.events

        def where(i: int) -> tuple[str, Any]:
            full = int(kept[i]) if kept is not None else i
            site = sites.get(full)
            if site is not None:
                label = labels.label(int(ev["addr"][i]))
                return f"store to {label} at {site_text(site)}", site
            step = self.step_of(i) if stage is None else None
            return f"event {i}, {model.trace.describe(i)}" + (
                f" (step {step})" if step else ""), None

        early, e_site = where(v.earlier)
        late, l_site = where(v.later)
        msg += (f": the {late} persisted while the earlier {early} did not"
                + (" (recovery read both words)" if read_both else ""))
        if e_site is not None and l_site is not None:
            off = v.earlier_addr - getattr(rt, "region_base", 0)
            msg += (f"; fix: before {l_site[0]} line {l_site[1]}, persist the store of "
                    f"{e_site[0]} line {e_site[1]}: a pm.clwb of its line (offset {off:#x} in "
                    "this run), then pm.sfence()")
            return msg, (e_site, l_site)
        return msg + "; fix: flush the earlier store's line and fence before the later store", None

    def labeller(self, k: int, stage: _Stage | None = None) -> Labeller:
        """Names for the runtime's addresses at crash point ``k``; log records are found in the
        image in which every store before ``k`` persisted."""
        model = stage.model if stage is not None else self.model
        ix = model.index
        words = ix.image_at(ix.hi_at(k)).view(np.uint64)
        pm0 = model.trace.pm_base

        def memory(addr: int) -> int | None:
            w = (addr - pm0) >> 3
            return int(words[w]) if 0 <= w < len(words) else None

        return Labeller.of(stage.runtime if stage is not None else self.session.runtime, memory)

    def step_of(self, i: int) -> str | None:
        """The named persist step event ``i`` of the (reduced) trace belongs to."""
        kept = self.trace.meta.get("kept")
        j = int(kept[i]) if kept is not None else i
        return step_at(self.step_log, j, int(self.trace.events["tid"][i]))

    def persisted_lines(self, point: Any, img: np.ndarray, trace: Trace | None = None,
                        labels: Labeller | None = None) -> list[str]:
        """For each line with stores before the point: how many of them the image holds, and
        (with ``labels``) what the stored words are."""
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
            what = labels.words(int(ev["addr"][i]) for i in stores) if labels else ""
            out.append(f"line {line:#x}" + (f" ({what})" if what else "") + f": {desc}")
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


def workload_label(wl: Workload) -> str:
    """The workload a report names: a registered name for pmsim's own workloads, the ``name``
    a user's class sets itself, else the class's import path (or class name), never a
    ``name`` its class inherited."""
    cls = type(wl)
    path, _ = workload_reference(cls)
    if path and ":" not in path:
        return path
    own = cls.__dict__.get("name")
    return own if isinstance(own, str) and own else path or cls.__qualname__


def _machine_for(layout: Layout, base: MachineConfig) -> MachineConfig:
    """``base`` with its PM region cut to ``layout`` (whole pages): small images are cheap."""
    size = -(-(layout.end - base.pm_region.base) // 4096) * 4096
    pm = base.pm_region
    return base.replace(regions=tuple(replace(r, size=max(size, 4096)) if r is pm else r
                                      for r in base.regions))


def _trusted(cls: type[Runtime]) -> bool:
    """Whether ``cls`` is one of pmsim's own runtimes (or a switch of one), not a mutant."""
    name, _ = reference(cls)
    return (name == getattr(cls, "name", None) and cls.__module__.startswith("pmsim.runtimes.")
            and not cls.mutations)


_NOT_CRASH = "this is a bug in the workload or its model, not a crash-consistency bug"


def _fresh_copy(wl: Workload) -> Workload:
    """A copy of ``wl`` with no recorded transactions, random streams or locks, sharing no
    mutable state with it (campaigns and shards never disturb each other or the caller)."""
    out = copy.copy(wl)
    out.executed, out._rngs, out.locks = {}, {}, []
    try:
        out.__dict__ = copy.deepcopy(out.__dict__)
    except Exception:  # noqa: BLE001 - state that cannot be copied stays shared
        pass
    return out


def _fresh(wl: Workload) -> Workload | None:
    """A new instance like ``wl`` (its class, threads, seed, txs, parameters) with no Python
    state from a run; None when its class cannot be built that way."""
    try:
        fresh = type(wl)(threads=wl.threads, seed=wl.seed, txs=wl.txs,
                         **{f.name: getattr(wl.p, f.name) for f in fields(wl.p)})
    except Exception:  # noqa: BLE001 - a constructor of its own: skip this part of the check
        return None
    return fresh if fresh.p == wl.p else None


def _crash_free_problem(s: Session, recover: Callable[[np.ndarray], tuple[Any, Hashable,
                                                                           list[str], Any]]
                        ) -> str | None:
    """What is wrong with a workload's data after its crash-free run ``s``: as the run left
    them (unless a transaction is still open: a program may stop inside one), then after a
    clean restart (``recover`` on the image the run left). None if nothing."""
    wl, rt = s.workload, s.runtime
    wrong = getattr(wl, "mismatch", "")
    if wrong:  # a PM program's operation returned what its model does not
        return f"an operation's result disagrees with the model in the crash-free run: {wrong}"
    try:
        expected = wl.expected(rt.commit_order)
    except BaseException as e:
        if not _caught(e):
            raise
        return (f"the workload's model raised {_raised(e)}, replaying the crash-free run's "
                f"{len(rt.commit_order)} committed transactions; {_NOT_CRASH}")
    if all(tx is None for tx in rt.active):
        try:
            got = wl.app_data(rt)
        except BaseException as e:
            if not _caught(e):
                raise
            return (f"reading the workload's data after a crash-free run raised "
                    f"{_raised(e)}; {_NOT_CRASH}")
        if got != expected:
            return (f"the workload's data after a crash-free run disagrees with its model: got "
                    f"{_short(got)}, expected {_short(expected)}; {_NOT_CRASH}")
    rt2, got, errors, _ = recover(s.machine.pm_image())
    fresh = _fresh(wl)
    if rt2 is not None and fresh is not None:  # a restarted program remembers nothing
        try:
            got = fresh.app_data(rt2)
        except BaseException as e:
            if not _caught(e):
                raise
            return (f"reading the workload's data after a crash-free run and a clean restart "
                    f"raised {_raised(e)}; {_NOT_CRASH}")
    if got != expected:
        return (f"the workload's data after a crash-free run and a clean restart disagrees with "
                f"its model: got {_short(got)}, expected {_short(expected)}; {_NOT_CRASH}")
    if errors:
        return (f"after a crash-free run and a clean restart the runtime's invariants fail: "
                f"{'; '.join(errors[:3])}; the workload's live_objects() must return exactly "
                f"the heap objects its data reach; {_NOT_CRASH}")
    return None


def _finished(rt: Runtime) -> Callable[[], int]:
    """The progress count of runs on ``rt``: transactions committed or aborted, and the
    background threads' finished work."""
    return run_progress(rt)


def _caught(e: BaseException) -> bool:
    """Whether a failure of code run on a run's or a recovered image's behalf is reported (as a
    finding or a crash-free problem) rather than passed on: any Exception (pmsim's own errors
    too), or a SystemExit or self-raised KeyboardInterrupt of user code; never a stop request,
    a Hang or GeneratorExit."""
    return isinstance(e, Exception) or user_raised(e)


def _raised(e: BaseException) -> str:
    """``KeyError: 3 in Class.method (file, line N: source)``: what user code raised, where."""
    if isinstance(e, SystemExit):
        what = f"SystemExit({e.code!r}) (sys.exit)"
    elif isinstance(e, KeyboardInterrupt):
        what = "KeyboardInterrupt (raised by the code itself: no Ctrl-C was pressed)"
    else:
        what = f"{type(e).__name__}: {e}"
    return what + user_where(e)


def _reraise(e: BaseException, context: str) -> NoReturn:
    """Raise ``e``, as a UserCodeError naming the user's frame if user code failed (a loop
    that did not terminate too), ``context`` saying when."""
    if isinstance(e, Hang):
        raise hang_error(e, context, e.detail) from e
    reraise(e, context)


def _rng(*words: int) -> np.random.Generator:
    """The generator of one random choice: seeded by the campaign's seed and by where the
    choice is made (a kind tag and crash points), never by which job makes it."""
    return np.random.default_rng(list(words))


class Interrupted(KeyboardInterrupt):
    """:func:`fuzz` was interrupted (Ctrl-C, or a signal raised as KeyboardInterrupt).

    ``report`` holds what the units finished by then found, marked ``partial``. It is a
    KeyboardInterrupt, so code that does not look for it stops as on any Ctrl-C.
    """

    def __init__(self, report: Report) -> None:
        super().__init__(f"crash fuzzing interrupted after {report.points} of "
                         f"{report.points_planned} crash points")
        self.report = report


@dataclass(frozen=True)
class _Job:
    """What every unit of one :func:`fuzz` call needs; ``token`` tells calls apart, so a worker
    builds one campaign per call and never reuses one from an earlier call."""

    cfg: FuzzConfig
    runtime: RuntimeArg | None
    workload: WorkloadArg | None
    machine: MachineConfig | None
    token: tuple[int, int]


@dataclass
class _Unit:
    """One unit of a campaign's work. ``key`` is its place in report order: chunk ``c`` is
    ``(c, 0)``, the idempotence check of the crash point at position ``pos`` of chunk ``c`` is
    ``(c, 1, pos)``, the runs after recovery are ``(chunks, 0)``."""

    key: tuple[int, ...]
    kind: str  # "chunk", "idempotence" or "deep"
    lo: int = 0  # chunk: crash points [lo, hi) of the campaign; idempotence: the point lo
    hi: int = 0
    image_hash: tuple[int, int] = (0, 0)
    image: np.ndarray | None = field(default=None, repr=False)


@dataclass
class _Done:
    """What one unit found: its report, the hashes of the images it recovered (an (n, 2) array,
    for ``distinct_images``) and, for a chunk, its idempotence candidates (point, hash, image)."""

    report: Report
    hashes: np.ndarray
    candidates: list[tuple[int, tuple[int, int], np.ndarray]]


_CALLS = itertools.count()
_LOCAL = threading.local()


def _points(camp: Campaign) -> list[Any]:
    cfg = camp.cfg
    return camp.model.points(cfg.points, n=cfg.sampled_points, rng=_rng(cfg.seed, 2))


BEFORE_CRASH = "before any crash (building the campaign: the workload, its crash-free run)"


def _build(cfg: FuzzConfig, runtime: RuntimeArg | None, workload: WorkloadArg | None,
           machine: MachineConfig | None) -> tuple[Campaign, list[Any]]:
    """The campaign and its crash points; user code failing meanwhile is a UserCodeError."""
    try:
        camp = Campaign(cfg, runtime, workload, machine)
        return camp, _points(camp)
    except BaseException as e:
        _reraise(e, BEFORE_CRASH)


def _campaign(job: _Job) -> tuple[Campaign, list[Any]]:
    """This worker thread's campaign for ``job`` and its crash points, built once per call."""
    got = getattr(_LOCAL, "campaign", None)
    if got is None or got[0] != job.token:
        _LOCAL.campaign = None  # let the previous call's campaign go before building this one
        got = _LOCAL.campaign = (job.token, *_build(job.cfg, job.runtime, job.workload,
                                                    job.machine))
    return got[1], got[2]


def _plan(job: _Job) -> Report:
    """The empty report of ``job``'s campaign: its config (as the campaign recorded it), names,
    trace and transaction counts, and how many crash points it chose."""
    camp, points = _campaign(job)
    return _header(camp, points)


def _header(camp: Campaign, points: Sequence[Any]) -> Report:
    """The empty report of ``camp``, holding the finding of its crash-free run if it has one
    (no crash point is then checked: the reference the images are judged by is wrong)."""
    failure = camp.crash_free_failure
    rep = Report(camp.cfg, camp.rt_name, workload_label(camp.session.workload), len(camp.trace),
                 len(camp.history.commit_order), points_planned=0 if failure else len(points),
                 notes=list(camp.notes), paths=dict(camp.paths))
    if failure is not None:
        rep.add(failure)
    return rep


def _run_unit(job: _Job, unit: _Unit) -> _Done:
    """Run ``unit`` in this worker (a process or a thread of an executor). User code failing
    is a UserCodeError here, where its traceback is still at hand."""
    camp, points = _campaign(job)
    try:
        return _do_unit(camp, points, unit)
    except BaseException as e:
        _reraise(e, "checking crash images")


def _do_unit(camp: Campaign, points: Sequence[Any], unit: _Unit) -> _Done:
    """Run ``unit`` on ``camp`` from empty caches, so that what it counts and finds depends on
    the unit alone, not on the units the worker ran before."""
    cfg = camp.cfg
    camp._outcomes = {}
    camp._new_tx_done = set()
    camp._idem_done = set()
    camp._read_sets = {}
    rep = Report(cfg, camp.rt_name, workload_label(camp.session.workload))
    candidates: list[tuple[int, tuple[int, int], np.ndarray]] = []
    if unit.kind == "chunk":
        chosen: set[tuple[int, int]] = set()
        for pos in range(unit.lo, unit.hi):
            raise_pending()
            got = camp.check_point(points[pos], rep, collect=len(chosen) < cfg.idempotence)
            if got is not None and got[0] not in chosen:
                chosen.add(got[0])
                candidates.append((pos, got[0], got[1]))
            if cfg.stop_at_first and rep.failure_count:
                break
    elif unit.kind == "idempotence":
        assert unit.image is not None
        failure = camp._check_idempotence(points[unit.lo], unit.image_hash, unit.image, None, rep)
        if failure is not None:
            rep.add(failure)
    else:
        camp.crash_deeper(points, rep)
    hashes = np.array(sorted(camp._outcomes), np.uint64).reshape(-1, 2)
    return _Done(rep, hashes, candidates)


class _Schedule:
    """The units of one campaign, which to run next, and the merge of what finished ones found.

    Units: chunks of CHUNK_POINTS crash points in trace order; the idempotence checks; the runs
    after recovery (depth >= 2). The idempotence images are the first ``cfg.idempotence``
    distinct candidates in trace order; each chunk reports its first that many, and as soon as
    every chunk before one has finished its candidates are chosen, and their checks run before
    later chunks. Merging is order-independent; with ``stop_at_first`` the report is the units
    in key order up to the first that failed, once every unit before it has finished.
    """

    def __init__(self, header: Report, deep_first: bool) -> None:
        self.cfg = cfg = header.config
        self.header = header
        n = header.points_planned
        self.chunks = -(-n // CHUNK_POINTS)
        self.heap: list[tuple[tuple[int, ...], int, _Unit]] = []
        self.created: set[tuple[int, ...]] = set()
        self.finished: set[tuple[int, ...]] = set()
        self._seq = itertools.count()
        for c in range(self.chunks):
            self._push(_Unit((c, 0), "chunk", c * CHUNK_POINTS, min(n, (c + 1) * CHUNK_POINTS)))
        if cfg.depth > 1:
            self._push(_Unit((self.chunks, 0), "deep"), first=deep_first)
        self.candidates: dict[int, list[tuple[int, tuple[int, int], np.ndarray]]] = {}
        self.prefix = 0  # chunks [0, prefix) have finished
        self.chosen: set[tuple[int, int]] = set()
        self.kept: dict[tuple[int, ...], _Done] = {}  # stop_at_first: every finished unit
        self.merged = self._empty()  # otherwise: their merge, and their hashes
        self.hashes: list[np.ndarray] = []

    def _empty(self) -> Report:
        return replace(self.header, failures=[])

    def _push(self, unit: _Unit, first: bool = False) -> None:
        self.created.add(unit.key)
        heapq.heappush(self.heap, ((-1,) if first else unit.key, next(self._seq), unit))

    def pop(self) -> _Unit | None:
        """The next unit to run: chunks and their idempotence checks in key order (the runs
        after recovery first when ``deep_first``: the longest unit, started early)."""
        return heapq.heappop(self.heap)[2] if self.heap else None

    def finish(self, unit: _Unit, done: _Done) -> None:
        if unit.kind == "chunk":
            self.candidates[unit.key[0]] = done.candidates
            done.candidates = []
        if self.cfg.stop_at_first:
            self.kept[unit.key] = done
        else:
            self.merged.merge(done.report)
            self.hashes.append(done.hashes)
        self.finished.add(unit.key)
        while self.prefix < self.chunks and (self.prefix, 0) in self.finished:
            for pos, h, img in self.candidates.pop(self.prefix):
                if len(self.chosen) < self.cfg.idempotence and h not in self.chosen:
                    self.chosen.add(h)
                    self._push(_Unit((self.prefix, 1, pos), "idempotence", pos, pos, h, img))
            self.prefix += 1

    def stop_key(self) -> tuple[int, ...] | None:
        """With ``stop_at_first``: the first failing unit, once every unit before it finished."""
        failing = [k for k, d in self.kept.items() if d.report.failure_count]
        if not failing:
            return None
        first = min(failing)
        return first if all(k in self.finished for k in self.created if k < first) else None

    def report(self, stop: tuple[int, ...] | None = None, partial: bool = False) -> Report:
        """The merged report: every finished unit, or those up to ``stop``."""
        if self.cfg.stop_at_first:
            rep, hashes = self._empty(), []
            for k in sorted(self.kept):
                if stop is None or k <= stop:
                    rep.merge(self.kept[k].report)
                    hashes.append(self.kept[k].hashes)
        else:
            rep, hashes = replace(self.merged, failures=list(self.merged.failures)), self.hashes
        rep.distinct_images = len(np.unique(np.concatenate(hashes), axis=0)) if hashes else 0
        rep.partial = partial
        return rep


def _fuzz_config(cfg: Any, overrides: dict[str, Any]) -> FuzzConfig:
    """``cfg`` with ``overrides`` (FuzzConfig fields) applied, each checked."""
    if cfg is None:
        cfg = FuzzConfig()
    elif not isinstance(cfg, FuzzConfig):
        hint = " (use FuzzConfig(**d) or FuzzConfig.from_dict(d))" if isinstance(cfg, dict) else ""
        raise ConfigError(f"fuzz: expected a FuzzConfig, got a {type(cfg).__name__}{hint}")
    known = {f.name for f in fields(FuzzConfig)}
    for name in overrides:
        if name not in known:
            raise unknown("FuzzConfig field", name, known)
    return replace(cfg, **overrides) if overrides else cfg


def fuzz(cfg: FuzzConfig | None = None, *, runtime: RuntimeArg | None = None,
         workload: WorkloadArg | None = None, machine: MachineConfig | None = None,
         executor: Executor | None = None, shards: int = 1,
         progress: Callable[[int, int], None] | None = None, **overrides: Any) -> Report:
    """Run a campaign; ``overrides`` are FuzzConfig fields. Returns the merged :class:`Report`.

    The work is cut into units fixed by the config (chunks of CHUNK_POINTS crash points, the
    idempotence checks, the runs after recovery; see ``_Schedule``). Each unit starts from
    empty caches and draws every sample from a generator seeded by the seed and the crash
    point, so the report (everything but ``seconds``) is the same whether units run here one
    after the other or ``shards`` at a time (two each queued) on ``executor``, whose workers
    each redo the deterministic crash-free run once. Reports are merged as units finish;
    ``progress(finished, units)`` is called after each.

    Ctrl-C (KeyboardInterrupt) raises :class:`Interrupted`, whose ``report`` is the finished
    units' merge, marked partial. Units not yet started on ``executor`` are cancelled; running
    ones are its owner's to stop (``crashfuzz run`` terminates its worker processes).
    """
    cfg = _fuzz_config(cfg, overrides)
    if machine is not None and not isinstance(machine, MachineConfig):
        raise ConfigError(f"fuzz(machine={machine!r}): expected a MachineConfig, e.g. "
                          "pmsim.preset('optane-adr') or fuzz_machine(domain, threads, seed)")
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise ConfigError(f"fuzz(shards={shards!r}): the number of units run at once must be an "
                          "integer >= 1")
    with catching():  # a KeyboardInterrupt raised by user code is told from a real Ctrl-C
        if cfg.schedules > 1:
            return _explore(cfg, runtime, workload, machine, executor, shards, progress)
        return _fuzz(cfg, runtime, workload, machine, executor, shards, progress)


def _explore(cfg: FuzzConfig, runtime: RuntimeArg | None, workload: WorkloadArg | None,
             machine: MachineConfig | None, executor: Executor | None, shards: int,
             progress: Callable[[int, int], None] | None) -> Report:
    """Crash-test ``cfg.schedules`` interleavings (schedule 0, then drawn ones), each whose
    crash-free trace is new; one report, each failure with its schedule in its config."""
    t0 = time.perf_counter()
    seen: set[tuple[int, int]] = set()
    total: Report | None = None
    ran = 0
    for i in range(cfg.schedules):
        one = replace(cfg, schedules=1, schedule_index=i)
        ran += 1
        built = _build(one, runtime, workload, machine)
        h = built[0].trace_hash
        if h in seen:
            continue
        seen.add(h)
        try:
            rep = _fuzz(one, runtime, workload, machine, executor, shards, progress, built)
        except Interrupted as e:
            if total is not None:
                total.merge(e.report)
                e.report = total
            raise
        if total is None:
            total = replace(rep, config=replace(rep.config, schedules=cfg.schedules,
                                                schedule_index=0), paths=dict(rep.paths))
        else:
            total.merge(rep)
            for p, n in rep.paths.items():
                total.paths[p] = total.paths.get(p, 0) + n
        if cfg.stop_at_first and not rep.ok:
            break
    assert total is not None
    total.schedules, total.distinct_traces = ran, len(seen)
    total.seconds = time.perf_counter() - t0
    return total


def _fuzz(cfg: FuzzConfig, runtime: RuntimeArg | None, workload: WorkloadArg | None,
          machine: MachineConfig | None, executor: Executor | None, shards: int,
          progress: Callable[[int, int], None] | None,
          built: tuple[Campaign, list[Any]] | None = None) -> Report:
    t0 = time.perf_counter()
    job = _Job(cfg, runtime, workload, machine, (os.getpid(), next(_CALLS)))
    pool = executor if executor is not None and shards > 1 else None
    sched: _Schedule | None = None
    header = Report(cfg, cfg.runtime, cfg.workload)
    running: dict[Future[_Done], _Unit] = {}
    stop = None
    try:
        if pool is None:
            camp, points = built or _build(cfg, runtime, workload, machine)
            header = _header(camp, points)
        else:
            header = pool.submit(_plan, job).result()
        if header.failure_count:  # found before any crash
            header.seconds = time.perf_counter() - t0
            return header
        sched = _Schedule(header, deep_first=pool is not None and not cfg.stop_at_first)
        while stop is None:
            if pool is None:
                unit = sched.pop()
                if unit is None:
                    break
                try:
                    done = _do_unit(camp, points, unit)
                except BaseException as e:
                    _reraise(e, "checking crash images")
                sched.finish(unit, done)
            else:
                while len(running) < 2 * shards and (unit := sched.pop()) is not None:
                    running[pool.submit(_run_unit, job, unit)] = unit
                if not running:
                    break
                ready, _ = wait(running, return_when=FIRST_COMPLETED)
                for f in ready:
                    sched.finish(running.pop(f), f.result())
            if progress:
                progress(len(sched.finished), len(sched.created))
            stop = sched.stop_key() if cfg.stop_at_first else None
    except KeyboardInterrupt as e:
        rep = sched.report(partial=True) if sched is not None else replace(header, partial=True)
        rep.seconds = time.perf_counter() - t0
        raise Interrupted(rep) from e
    finally:
        for f in running:
            f.cancel()
    rep = sched.report(stop)
    rep.seconds = time.perf_counter() - t0
    return rep


def check_failures(report: Report) -> None:
    """Raise AssertionError with a readable report if the campaign found failures."""
    if report.ok:
        return
    from .report import format_report

    raise AssertionError(format_report(report))


__all__ = ["Campaign", "Failure", "FuzzConfig", "Interrupted", "RecoveryCrash", "Report",
           "check_failures", "fuzz", "fuzz_machine", "PmsimError"]
