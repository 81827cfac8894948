"""The mutation suite: every registered mutant, fuzzed in every domain, as a kill matrix.

Mutants are fuzzed with ``reduce=False``: a runtime's declaration of recovery-irrelevant
words (:meth:`Runtime.crash_irrelevant`) holds for the correct runtime, not necessarily for a
broken one. A mutant (:class:`pmsim.runtimes.mutation.Mutant`, registered in
``pmsim.runtimes.registry.MUTANTS``) is a runtime plus data mutations over its named persist
steps. It must be *killed* (the fuzzer reports a failure) in each domain where it is a bug, and
must survive where it is harmless (a dropped persist barrier under PDOM-2). Each mutant is tried
on a list of workloads until one kills it; the row records which. Campaigns run at the default
crash depth (2), so bugs that need a second crash inside the run after recovery are caught.

A failing campaign kills the mutant only if the unmodified runtime (the mutant's base) passes
the same campaign: otherwise the failure is the base's own (a bug of the protocol, or a workload
it cannot run), says nothing about the mutation, and the row is ``base-fails``, never as
expected. Base campaigns are cached per (base runtime, config) in the process, so the mutants
of one protocol share them.

Pairs whose domain the mutant's runtime does not support
(:attr:`~pmsim.runtimes.Runtime.supported_domains`) are not run: :func:`kill_one` refuses them,
:func:`kill_matrix` leaves them out and lists them (:attr:`KillMatrix.skipped`), and refuses
a request in which no pair is supported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pmsim.errors import PmsimError
from pmsim.runtimes.mutation import Mutant
from pmsim.runtimes.registry import MUTANTS, get_mutant, get_runtime, reference
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
    """One mutant in one domain. ``killed``: a campaign failed on the mutant and the base
    runtime passed the same campaign (or refused it with a clear error, the check the mutant
    removes); ``base``: ``"passes"``, ``"refuses"``, ``"fails"`` (the failure was the base's own:
    not a kill) or ``"-"`` (no campaign failed on the mutant, or the base check was
    skipped: ``check_base=False``)."""

    mutant: str
    domain: str
    expected_kill: bool
    killed: bool
    workload: str
    first_point: int | None
    failure: str
    states: int
    seconds: float
    base: str = "-"

    @property
    def verdict(self) -> str:
        """``yes``, ``no`` or ``base-fails`` (the matrix's killed column)."""
        return "base-fails" if self.base == "fails" else "yes" if self.killed else "no"

    @property
    def as_expected(self) -> bool:
        return self.base != "fails" and self.killed == self.expected_kill


class KillMatrix(list[KillRow]):
    """The rows of :func:`kill_matrix`, and ``skipped``: one note per domain naming the
    mutants not run there because their runtime does not support it."""

    skipped: list[str]

    def __init__(self, rows: Iterable[KillRow] = (), skipped: Sequence[str] = ()) -> None:
        super().__init__(rows)
        self.skipped = list(skipped)


_BASE_RESULTS: dict[tuple[Any, FuzzConfig], tuple[bool, str]] = {}
"""Outcomes of base-runtime campaigns, (passed, first failure), by (runtime, config): a
campaign is deterministic, so the mutants of one protocol share them."""


def base_result(cls: type, cfg: FuzzConfig) -> tuple[str, str]:
    """How the unmodified runtime ``cls`` does on campaign ``cfg`` (its ``runtime`` field is
    replaced by ``cls``): ``("passes", "")``, ``("fails", first failure)``, or ``("refuses",
    its error)`` when it rejects the run with a clear error (a workload it cannot serve, whose
    check the mutant removed); cached per (runtime, config)."""
    ref = reference(cls)[0]
    cfg = replace(cfg, runtime=ref or cfg.runtime)
    key = (ref or cls, cfg)
    if key not in _BASE_RESULTS:
        try:
            rep = fuzz(cfg, runtime=None if ref else cls)
        except PmsimError as e:
            _BASE_RESULTS[key] = ("refuses", str(e))
        else:
            _BASE_RESULTS[key] = (("passes", "") if rep.ok
                                  else ("fails", rep.failures[0].summary()))
    return _BASE_RESULTS[key]


def trials(base: FuzzConfig, first: str = "", txs: int = 0,
           params: tuple[tuple[str, Any], ...] = (), prefer: str = "",
           runtime_cls: type | None = None) -> Iterable[FuzzConfig]:
    """The campaigns that try to kill a mutant: ``first`` (its own workload with ``params``,
    ``txs`` transactions per thread if given), then the matrix's trial workloads. ``prefer``
    (a workload among them, e.g. the one that killed the mutant in a committed matrix) moves
    that campaign to the front, the others keep their order; a name that is not among them
    changes nothing. Each campaign is the same whatever the order, so a mutant is killed (on
    some campaign) or survives all of them either way."""
    from pmsim.errors import PmsimError, UnknownNameError
    from pmsim.programs import program_of
    from pmsim.runtimes.registry import get_runtime
    from pmsim.workloads.base import get_workload

    try:
        program = program_of(get_runtime(runtime_cls if runtime_cls is not None else base.runtime))
    except PmsimError:  # a base known only as a class (a mutant's): not a PM program's path
        program = None
    if program is not None:  # its own operations (a campaign runs them whatever the workload)
        yield replace(base, workload=base.runtime if runtime_cls is None else program.__name__,
                      txs=txs or base.txs)
        return

    def ordered() -> Iterable[FuzzConfig]:
        if first:
            yield replace(base, workload=first, params=tuple(params), txs=txs or base.txs)
        for name, trial_params in WORKLOAD_TRIALS:
            try:
                cls = get_workload(name)
            except UnknownNameError:
                continue
            fields = getattr(cls.Params, "__dataclass_fields__", {})
            if all(k in fields for k, _ in trial_params):
                yield replace(base, workload=name, params=trial_params)

    cfgs = list(ordered())
    front = next((i for i, c in enumerate(cfgs) if prefer and c.workload == prefer), 0)
    yield from cfgs[front:front + 1] + cfgs[:front] + cfgs[front + 1:]


def kill_one(mutant: Mutant, domain: str, base: FuzzConfig, runtime: str | None = None,
             check_base: bool = True, prefer: str = "") -> KillRow:
    """Fuzz ``mutant`` (registered, loaded by import path, or neither) in ``domain`` on the trial
    workloads until a campaign fails; that campaign is then run on the mutant's base runtime,
    and the row is a kill only if the base passes it. ``runtime``: the string that names the
    mutant (its registered name or import path, found by default), which the campaigns' configs
    carry. ``check_base=False`` skips the base campaign (the row's ``base`` is then "-"): a
    passing base campaign runs to its end, which can cost minutes where the mutant's failure
    took a second, so quick checks of a kill leave it to the full matrix. ``prefer``: a trial
    workload to try first (see :func:`trials`; killed or not is the same, only sooner). Raises
    :class:`~pmsim.errors.UnsupportedDomainError` for a domain its runtime does not support."""
    t0 = time.perf_counter()
    states = 0
    last = None
    if runtime is None:
        runtime = mutant.name if MUTANTS.get(mutant.name) is mutant else import_path(mutant)[0]
    cls = None if runtime is not None else mutant.build()
    (cls or get_runtime(runtime or mutant.base_name)).check_domain(domain)
    for cfg in trials(replace(base, runtime=runtime or mutant.base_name, domain=domain,
                              threads=max(base.threads, mutant.threads), stop_at_first=True),
                      mutant.workload, mutant.txs, mutant.params, prefer):
        rep = fuzz(cfg, runtime=cls)
        states += rep.states_checked
        last = cfg
        if not rep.ok:
            failure = rep.failures[0].summary()
            if not check_base:
                return KillRow(mutant.name, domain, domain in mutant.domains, True, cfg.workload,
                               rep.first_failure_point, failure, states,
                               time.perf_counter() - t0)
            base, base_failure = base_result(mutant.base, cfg)
            if base == "fails":
                failure = f"the base runtime fails too: {base_failure}"
            return KillRow(mutant.name, domain, domain in mutant.domains, base != "fails",
                           cfg.workload, rep.first_failure_point, failure, states,
                           time.perf_counter() - t0, base)
    return KillRow(mutant.name, domain, domain in mutant.domains, False,
                   last.workload if last else "-", None, "", states, time.perf_counter() - t0)


def kill_matrix(mutants: Sequence[str] | None = None, domains: Sequence[str] = DOMAINS,
                base: FuzzConfig | None = None,
                progress: Callable[[KillRow], None] | None = None,
                check_base: bool = True,
                prefer: Mapping[tuple[str, str], str] | None = None) -> KillMatrix:
    """Fuzz every mutant (default: all registered) in every domain its runtime supports; one
    row each. A mutant is a registered name or the import path of a module-level Mutant
    (``"my_mutants.py:m"``). Pairs in an unsupported domain are listed in the result's
    ``skipped``; if no pair is supported, the refusal is raised
    (:class:`~pmsim.errors.UnsupportedDomainError`). ``prefer``: by (mutant, domain), the trial
    workload to try first (e.g. the one that killed it in the committed matrix, so that a
    quick check of a kill does not first run the campaigns it survives)."""
    base = base or FuzzConfig(txs=8, idempotence=2, reduce=False, budget=4096,
                              new_tx=3, new_tx_every_image=True)
    if mutants is None:
        get_mutant("undo:U1")  # loads the built-in runtimes and their mutants
        names = sorted(MUTANTS)
    else:
        names = list(mutants)
    pairs, refused = [], {}
    for name in names:
        m = get_mutant(name)
        for d in domains:
            if d in m.base.supported_domains:
                pairs.append((name, m, d))
            else:
                refused.setdefault(d, []).append(name)
    if refused and not pairs:
        d, (name, *_) = next(iter(refused.items()))
        get_runtime(name).check_domain(d)
    rows = KillMatrix(skipped=[
        f"not run in {d}, which their runtime does not support: {', '.join(ns)} (see "
        "supported_domains)" for d, ns in refused.items()])
    for name, m, d in pairs:
        row = kill_one(m, d, base, name, check_base, (prefer or {}).get((name, d), ""))
        rows.append(row)
        if progress:
            progress(row)
    return rows


def format_matrix(rows: Sequence[KillRow]) -> str:
    """The matrix as a text table; ``killed`` is yes, no or base-fails, ``base`` whether the
    unmodified runtime passed the campaign that failed on the mutant; the notes of a
    :class:`KillMatrix`'s skipped pairs follow it."""
    from pmsim.stats import format_table

    recs = [{"mutant": r.mutant, "domain": r.domain,
             "killed": r.verdict,
             "expected": "kill" if r.expected_kill else "survive",
             "ok": "ok" if r.as_expected else "UNEXPECTED",
             "base": r.base,
             "workload": r.workload,
             "first point": "-" if r.first_point is None else r.first_point,
             "states": r.states, "s": round(r.seconds, 2),
             "failure": r.failure[:70]} for r in rows]
    skipped = getattr(rows, "skipped", ())
    return format_table(recs) + ("\n\n" + "\n".join(skipped) if skipped else "")
