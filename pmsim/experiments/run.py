"""Run a workload on a runtime and measure it: what ``pmsim run`` prints.

Figures are per measured period (after an optional warm-up): throughput in committed
transactions per simulated second, percentiles of per-transaction simulated latency (begin,
lock waits included, to the return of commit/abort), and per-transaction persist barriers,
flushes, fences and bytes written to PM media.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..config import MachineConfig
from ..errors import ConfigError, PmsimError
from ..presets import preset
from ..runtimes.costs import RuntimeCosts
from ..runtimes.mutation import Mutant
from ..runtimes.registry import reference
from ..stats import total
from ..usercode import display_name
from ..workloads.base import WorkloadArg, non_default_params
from ..workloads.base import reference as workload_reference
from ..workloads.session import Session


@dataclass
class RunResult:
    """Measured figures of one run, with everything needed to reproduce it."""

    runtime: str
    workload: str
    domain: str
    threads: int
    txs: int
    commits: int
    aborts: int
    sim_ns: float
    throughput: float
    lat_p50: float
    lat_p90: float
    lat_p99: float
    pb_per_tx: float
    flush_per_tx: float
    fence_per_tx: float
    pm_bytes_per_tx: float
    wall_s: float
    ack_p50: float = 0.0
    ack_p90: float = 0.0
    ack_p99: float = 0.0
    llc_misses_per_tx: float = 0.0
    work_ns_per_tx: float = 0.0
    barrier_stall_ns_per_tx: float = 0.0
    wpq_stall_ns_per_tx: float = 0.0
    sb_stall_ns_per_tx: float = 0.0
    counters: dict[str, float] = field(default_factory=dict)
    facts: dict[str, float] = field(default_factory=dict)
    """Figures the runtime settled itself (:meth:`~pmsim.runtimes.base.Runtime.facts`), as
    they are: columns beside the counters, not a change over the measured period."""
    params: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    backend: str = ""
    version: str = ""

    @property
    def tx_per_wall_s(self) -> float:
        return self.txs / self.wall_s if self.wall_s > 0 else float("inf")

    def row(self) -> dict[str, Any]:
        """A flat record (no nested config) for tables and CSV."""
        d = asdict(self)
        d.pop("config")
        d.update(d.pop("counters"))
        d.update(d.pop("facts"))
        d["params"] = ";".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        d["tx_per_wall_s"] = self.tx_per_wall_s
        return d


METRICS: tuple[tuple[str, str, str], ...] = (
    ("throughput", "tx/s", "committed transactions per simulated second"),
    ("lat_p50", "ns", "median transaction latency"),
    ("lat_p90", "ns", "90th percentile latency"),
    ("lat_p99", "ns", "99th percentile latency"),
    ("pb_per_tx", "", "persist barriers per transaction"),
    ("flush_per_tx", "", "clwb + clflushopt + clflush per transaction"),
    ("fence_per_tx", "", "sfence + mfence per transaction"),
    ("pm_bytes_per_tx", "B", "bytes written to PM media per transaction"),
    ("ack_p50", "ns", "median begin-to-durability-acknowledgement latency (= lat_p50 for a "
                      "runtime that is durable when commit returns)"),
    ("ack_p90", "ns", "90th percentile acknowledgement latency"),
    ("ack_p99", "ns", "99th percentile acknowledgement latency"),
    ("commits", "", "committed transactions"),
    ("aborts", "", "transactions aborted for good (the body returned False); hardware and STM "
                   "aborts that were retried are counters (hw.aborts.<cause>, stm.aborts...)"),
    ("sim_ns", "ns", "simulated time of the measured period on the worker threads (a "
                     "background thread's drain after the last transaction is not counted)"),
    ("wall_s", "s", "wall-clock time of the measured period"),
)


HW_ABORT_CAUSES = ("conflict", "capacity", "explicit", "flush", "lock")
"""Causes of hardware transaction aborts (the machine's ``htm_aborts_<cause>`` statistics)."""


def hw_abort_counters(before: Any, after: Any) -> dict[str, float]:
    """Hardware transactions over a period from two machine stats totals: ``hw.begins``,
    ``hw.commits``, ``hw.aborts`` and ``hw.aborts.<cause>``; empty when no hardware
    transaction began (so runs without HTM keep their columns)."""
    begins = float(after["htm_begins"] - before["htm_begins"])
    if not begins:
        return {}
    out = {"hw.begins": begins, "hw.commits": float(after["htm_commits"] - before["htm_commits"])}
    causes = {c: float(after[f"htm_aborts_{c}"] - before[f"htm_aborts_{c}"])
              for c in HW_ABORT_CAUSES}
    out["hw.aborts"] = sum(causes.values())
    out.update({f"hw.aborts.{c}": v for c, v in causes.items()})
    return out


def abort_summary(r: RunResult) -> str:
    """One line on aborts: transactions given up, and hardware aborts by cause (retried)."""
    text = f"aborts: {r.aborts:,} transaction(s) given up"
    hw = r.counters.get("hw.aborts")
    if hw is None:
        return text
    causes = ", ".join(f"{c} {int(r.counters[f'hw.aborts.{c}']):,}" for c in HW_ABORT_CAUSES
                       if r.counters.get(f"hw.aborts.{c}"))
    return (f"{text}; {int(hw):,} hardware abort(s) in {int(r.counters['hw.begins']):,} "
            f"hardware transactions, each retried or run on the fallback path"
            + (f" (by abort status: {causes}; lock = xabort(0xFF) on a taken fallback lock)"
               if causes else ""))


def _label(obj: Any, ref: Any) -> str:
    """What a RunResult records for a runtime or workload argument: the string as given, or
    for a class the name or import path that finds it again."""
    if isinstance(obj, str):
        return obj
    if isinstance(obj, Mutant):
        return obj.name
    cls = obj if isinstance(obj, type) else type(obj)
    return ref(cls)[0] or display_name(cls)


def _config(config: MachineConfig | str | None) -> MachineConfig:
    """A machine config from a MachineConfig, a preset name or None (the defaults)."""
    if config is None:
        return MachineConfig()
    if isinstance(config, str):
        return preset(config)
    if not isinstance(config, MachineConfig):
        raise ConfigError(f"run_experiment: config must be a MachineConfig or a preset name, "
                          f"got {type(config).__name__} {config!r}")
    return config


def _check_count(name: str, v: Any, lo: int, hi: int | None = None) -> None:
    if not isinstance(v, int) or isinstance(v, bool) or v < lo or (hi is not None and v > hi):
        valid = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise ConfigError(f"run_experiment: {name} must be an integer {valid}, got {v!r}")


def run_experiment(runtime: str | type | Mutant, workload: WorkloadArg,
                   config: MachineConfig | str | None = None, threads: int = 1, txs: int = 1000,
                   warmup: int = 0, seed: int | None = None,
                   params: Mapping[str, Any] | None = None, costs: RuntimeCosts | None = None,
                   backend: str | None = None, stall_seconds: float | None = None) -> RunResult:
    """Run ``warmup`` then ``txs`` transactions per thread; measure the second phase.

    ``runtime`` and ``workload`` take every form :meth:`Session.create` takes (names, import
    paths ``"file.py:Class"``, classes, a workload instance); the result records names or
    import paths, and for an instance its non-default parameters. ``stall_seconds``: the
    runs' stall bound (:meth:`Session.run`; default its own)."""
    from .. import __version__

    cfg = _config(config)
    _check_count("threads", threads, 1, 64)
    _check_count("txs", txs, 1)
    _check_count("warmup", warmup, 0)
    seed = cfg.seed if seed is None else seed
    _check_count("seed", seed, 0, (1 << 64) - 1)
    if params is not None and not isinstance(params, Mapping):
        raise ConfigError(f"run_experiment: params must be a mapping of parameter names to "
                          f"values, e.g. {{'slots': 64}}, got {type(params).__name__} {params!r}")
    s = Session.create(runtime, workload, cfg, threads=threads, seed=seed, txs=warmup + txs,
                       params=params, costs=costs, backend=backend)
    if not params and not isinstance(workload, str | type):
        params = non_default_params(s.workload)
    runtime = _label(runtime, reference)
    workload = _label(workload, workload_reference)
    m, rt = s.machine, s.runtime
    if warmup:
        s.run(warmup, stall_seconds)
    before = total(m.stats())
    workers = m.cpus[:threads]
    t0 = max(c.clock for c in workers)
    acks = getattr(rt, "ack_latencies", rt.latencies)
    n_lat, n_ack, c0, a0 = len(rt.latencies), len(acks), rt.commits, rt.aborts
    k0 = rt.counters()
    wall = time.perf_counter()
    s.run(txs, stall_seconds)
    wall = time.perf_counter() - wall
    after = total(m.stats())

    def delta(*names: str) -> float:
        return float(sum(after[n] - before[n] for n in names))

    sim = max(c.clock for c in workers) - t0
    commits, aborts = rt.commits - c0, rt.aborts - a0
    n = max(commits + aborts, 1)
    lat = np.array(rt.latencies[n_lat:]) if len(rt.latencies) > n_lat else np.zeros(1)
    p50, p90, p99 = (float(x) for x in np.percentile(lat, [50, 90, 99]))
    ack = np.array(acks[n_ack:]) if len(acks) > n_ack else np.zeros(1)
    a50, a90, a99 = (float(x) for x in np.percentile(ack, [50, 90, 99]))
    k1 = rt.counters()
    counters = {k: float(v - k0.get(k, 0)) for k, v in k1.items()}
    counters.update(hw_abort_counters(before, after))
    return RunResult(
        runtime=runtime, workload=workload, domain=m.config.domain, threads=threads,
        txs=commits + aborts, commits=commits, aborts=aborts, sim_ns=sim,
        throughput=commits / sim * 1e9 if sim > 0 else 0.0,
        lat_p50=p50, lat_p90=p90, lat_p99=p99,
        pb_per_tx=delta("persist_barriers") / n,
        flush_per_tx=delta("clwb", "clflushopt", "clflush") / n,
        fence_per_tx=delta("sfence", "mfence") / n,
        pm_bytes_per_tx=delta("pm_write_bytes") / n,
        wall_s=wall, ack_p50=a50, ack_p90=a90, ack_p99=a99,
        llc_misses_per_tx=delta("llc_misses") / n,
        work_ns_per_tx=delta("work_ns") / max(commits, 1),
        barrier_stall_ns_per_tx=delta("barrier_stall_ns") / max(commits, 1),
        wpq_stall_ns_per_tx=delta("wpq_stall_ns") / max(commits, 1),
        sb_stall_ns_per_tx=delta("sb_stall_ns") / max(commits, 1), counters=counters,
        facts=rt.facts(),
        params=dict(params or {}), config=m.config.to_dict(), seed=seed,
        backend=m.backend, version=__version__)


def unsupported(point: Mapping[str, Any]) -> str:
    """Why the runtime of a sweep point (``runtime`` or ``mutant``) refuses the point's domain
    (``domain``, else ``machine["domain"]``, else the preset's), or ``""`` when it supports it
    or the point does not say (the point function then reports any error itself)."""
    from ..runtimes.registry import get_runtime

    if not isinstance(point, Mapping):
        return ""
    try:
        if isinstance(point.get("mutant"), str):
            cls = get_runtime(point["mutant"])
        elif isinstance(point.get("runtime"), str):
            cls = get_runtime(point["runtime"])
        else:
            return ""
        machine = point.get("machine") or {}
        domain = point.get("domain") or (machine.get("domain") if isinstance(machine, Mapping)
                                         else None)
        if domain is None and isinstance(point.get("preset"), str):
            domain = preset(point["preset"]).domain
    except PmsimError:
        return ""
    return cls.domain_problem(domain) if isinstance(domain, str) else ""


def supported_points(points: Sequence[Mapping[str, Any]]
                     ) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The points whose runtime supports their domain, and a note for each one left out."""
    keep, notes = [], []
    for i, p in enumerate(points):
        why = unsupported(p)
        if why:
            notes.append(f"point {i} not run: {why}")
        else:
            keep.append(p)
    return keep, notes
