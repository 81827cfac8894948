"""The mutation suite: every registered mutant, fuzzed in every domain, as a kill matrix.

Mutants are fuzzed with ``reduce=False``: a runtime's declaration of recovery-irrelevant
words (:meth:`Runtime.crash_irrelevant`) holds for the correct runtime, not necessarily for a
broken one. A mutant (:class:`pmsim.runtimes.mutation.Mutant`, registered in
``pmsim.runtimes.registry.MUTANTS``) is a runtime plus data mutations over its named persist
steps. It must be *killed* (the fuzzer reports a failure) in each domain where it is a bug, and
must survive where it is harmless (a dropped persist barrier under PDOM-2). Each mutant is tried
on a list of workloads until one kills it; the row records which. Campaigns run at the default
crash depth (2), so bugs that need a second crash inside the run after recovery are caught.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pmsim.runtimes.mutation import Mutant
from pmsim.runtimes.registry import MUTANTS, get_mutant
from pmsim.usercode import import_path

from .campaign import FuzzConfig, fuzz

DOMAINS = ("pdom0", "pdom1", "pdom2")

WORKLOAD_TRIALS: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = (
    ("array", ()),
    ("alloc-x", (("abort_pct", 30.0),)),
    ("kv", ()),
    ("array-raw", ()),
    ("bank", ()),
)
"""(workload, params) tried in order until the mutant is killed."""


@dataclass
class KillRow:
    """One mutant in one domain."""

    mutant: str
    domain: str
    expected_kill: bool
    killed: bool
    workload: str
    first_point: int | None
    failure: str
    states: int
    seconds: float

    @property
    def as_expected(self) -> bool:
        return self.killed == self.expected_kill


def trials(base: FuzzConfig, first: str = "", txs: int = 0,
           params: tuple[tuple[str, Any], ...] = ()) -> Iterable[FuzzConfig]:
    """The campaigns that try to kill a mutant: ``first`` (its own workload with ``params``,
    ``txs`` transactions per thread if given), then the matrix's trial workloads."""
    from pmsim.errors import UnknownNameError
    from pmsim.workloads.base import get_workload

    if first:
        yield replace(base, workload=first, params=tuple(params), txs=txs or base.txs)
    for name, params in WORKLOAD_TRIALS:
        try:
            cls = get_workload(name)
        except UnknownNameError:
            continue
        fields = getattr(cls.Params, "__dataclass_fields__", {})
        if all(k in fields for k, _ in params):
            yield replace(base, workload=name, params=params)


def kill_one(mutant: Mutant, domain: str, base: FuzzConfig, runtime: str | None = None) -> KillRow:
    """Fuzz ``mutant`` (registered, loaded by import path, or neither) in ``domain`` on the trial
    workloads until killed. ``runtime``: the string that names it (its registered name or
    import path, found by default), which the campaigns' configs carry."""
    t0 = time.perf_counter()
    states = 0
    last = None
    if runtime is None:
        runtime = mutant.name if MUTANTS.get(mutant.name) is mutant else import_path(mutant)[0]
    cls = None if runtime is not None else mutant.build()
    for cfg in trials(replace(base, runtime=runtime or mutant.base_name, domain=domain,
                              threads=max(base.threads, mutant.threads), stop_at_first=True),
                      mutant.workload, mutant.txs, mutant.params):
        rep = fuzz(cfg, runtime=cls)
        states += rep.states_checked
        last = cfg
        if not rep.ok:
            f = rep.failures[0]
            return KillRow(mutant.name, domain, domain in mutant.domains, True, cfg.workload,
                           rep.first_failure_point, f.summary(), states, time.perf_counter() - t0)
    return KillRow(mutant.name, domain, domain in mutant.domains, False,
                   last.workload if last else "-", None, "", states, time.perf_counter() - t0)


def kill_matrix(mutants: Sequence[str] | None = None, domains: Sequence[str] = DOMAINS,
                base: FuzzConfig | None = None,
                progress: Callable[[KillRow], None] | None = None) -> list[KillRow]:
    """Fuzz every mutant (default: all registered) in every domain; one row each. A mutant is
    a registered name or the import path of a module-level Mutant (``"my_mutants.py:m"``)."""
    base = base or FuzzConfig(txs=8, idempotence=2, reduce=False, budget=4096,
                              new_tx=3, new_tx_every_image=True)
    if mutants is None:
        get_mutant("undo:U1")  # loads the built-in runtimes and their mutants
        names = sorted(MUTANTS)
    else:
        names = list(mutants)
    rows = []
    for name in names:
        m = get_mutant(name)
        for d in domains:
            if d not in m.base.supported_domains:
                continue
            row = kill_one(m, d, base, name)
            rows.append(row)
            if progress:
                progress(row)
    return rows


def format_matrix(rows: Sequence[KillRow]) -> str:
    from pmsim.stats import format_table

    recs = [{"mutant": r.mutant, "domain": r.domain,
             "killed": "yes" if r.killed else "no",
             "expected": "kill" if r.expected_kill else "survive",
             "ok": "ok" if r.as_expected else "UNEXPECTED",
             "workload": r.workload,
             "first point": "-" if r.first_point is None else r.first_point,
             "states": r.states, "s": round(r.seconds, 2),
             "failure": r.failure[:70]} for r in rows]
    return format_table(recs)
