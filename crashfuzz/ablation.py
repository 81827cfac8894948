"""Automatic ablation: which named persist steps does a protocol need, in which domain.

``ablate("undo")`` drops each named persist step of the runtime in turn, drops only the
cache-line flushes of each group step seen both storing and flushing (``drop_flush(step)``: the
same stores, unflushed), and swaps each pair of adjacent steps seen in a crash-free run
(``swap(a, b)``: ``a``'s stores, flushes and fences are issued right after ``b``), and fuzzes
every such mutant in every persistence domain on a list of workloads until one kills it. Each
(mutation, domain) cell is

* ``needed``: killed; the row keeps the workload and the first failing crash point;
* ``redundant``: survived campaigns that were exhaustive at every crash point, at every depth,
  on every workload tried — within those workloads, the step is not needed in that domain;
* ``undetermined``: survived, but some crash point was sampled;
* ``stalls``: a thread waited past the runtime's stall bound (:class:`~pmsim.errors.StallError`)
  in some run: the step is needed for progress (a liveness step), whatever it does for crash
  consistency;
* ``not exercised``: no crash-free run of the workloads tried issues the step (recovery steps
  are always tried: every campaign runs recovery; so are hardware edge steps, which no run
  issues: the runtime hands them to the crash-state model).

Domains the runtime does not support (:attr:`~pmsim.runtimes.Runtime.supported_domains`) are
left out, each with a note in the result's ``skipped``; a request in none it supports is
refused (:class:`~pmsim.errors.UnsupportedDomainError`).

A redundant cell is either harmless in that domain (under PDOM-2 every visible store is
persistent, in order, so flushes and barriers order nothing) or a coverage gap of the workloads;
:func:`explain` says which it can tell, and ``docs/ablation-*.md`` carries the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pmsim.errors import StallError
from pmsim.runtimes.mutation import Drop, DropFlush, Mutation, mutate, swap
from pmsim.runtimes.registry import get_runtime
from pmsim.runtimes.steps import FLUSH_OPS, step_ops
from pmsim.trace import Ev

from .campaign import Campaign, FuzzConfig, fuzz
from .mutants import DOMAINS, WORKLOAD_TRIALS, trials

VERDICTS = ("needed", "redundant", "undetermined", "stalls", "not exercised")


@dataclass
class AblationCell:
    """One mutation of one runtime in one domain."""

    runtime: str
    mutation: str  # "drop(step)", "drop_flush(step)" or "swap(a, b)"
    step: str
    kind: str  # the step's kind, or "swap"
    domain: str
    verdict: str
    workload: str
    first_point: int | None
    failure: str
    states: int
    seconds: float

    @property
    def note(self) -> str:
        return explain(self)


class Ablation(list[AblationCell]):
    """The cells of :func:`ablate`, and ``skipped``: a note for each requested domain the
    runtime does not support (not run)."""

    skipped: list[str]

    def __init__(self, cells: Iterable[AblationCell] = (), skipped: Sequence[str] = ()) -> None:
        super().__init__(cells)
        self.skipped = list(skipped)


def explain(cell: AblationCell) -> str:
    """The reason a cell is what it is, where a general rule gives one."""
    if cell.verdict == "needed":
        return cell.failure
    if cell.verdict == "stalls":
        return f"a liveness step: without it a thread never makes progress ({cell.failure})"
    if cell.verdict == "not exercised":
        return "no workload tried issues this step"
    if cell.domain == "pdom2" and (cell.kind in ("pb", "flush", "fence", "order")
                                   or cell.mutation.startswith("drop_flush(")):
        return ("harmless in PDOM-2: every visible store is persistent, in program order, so "
                "flushes and barriers order nothing")
    return ""


def steps_seen(runtime: str | type, cfg: FuzzConfig) -> tuple[set[str], list[tuple[str, str]]]:
    """Steps the crash-free runs of the trial workloads issue, and adjacent pairs (in order)."""
    seen: set[str] = set()
    pairs: dict[tuple[str, str], None] = {}
    cls = runtime if isinstance(runtime, type) else None
    for c in trials(replace(cfg, runtime=runtime if isinstance(runtime, str) else cfg.runtime),
                    runtime_cls=cls):
        camp = Campaign(replace(c, depth=1), cls)
        last: dict[int, str] = {}
        for _, tid, name in camp.step_log:
            seen.add(name)
            prev = last.get(tid)
            if prev is not None and prev != name:
                pairs[(prev, name)] = None
            last[tid] = name
    return seen, list(pairs)


def flushing_groups(runtime: str | type, cfg: FuzzConfig) -> set[str]:
    """Group steps that, in the crash-free runs of the trial workloads, issue both stores and
    cache-line flushes: for them ``drop_flush`` (the same stores, unflushed) differs from both
    ``drop`` and the unmodified step."""
    stores = {int(Ev.STORE), int(Ev.NTSTORE)}
    flushes = {int(getattr(Ev, op.upper())) for op in FLUSH_OPS}
    found: set[str] = set()
    cls = runtime if isinstance(runtime, type) else None
    for c in trials(replace(cfg, runtime=runtime if isinstance(runtime, str) else cfg.runtime),
                    runtime_cls=cls):
        camp = Campaign(replace(c, depth=1), cls)
        hook = camp.session.runtime.hook
        ev = camp.full_trace.events
        ops = step_ops(hook.spans or () if hook else (), ev["kind"], ev["tid"])
        found |= {name for name, got in ops.items() if got & stores and got & flushes}
    kinds = {s.name: s.kind for s in get_runtime(runtime).persist_steps()}
    return {name for name in found if kinds.get(name) == "group"}


def ablation_size(runtime: str, steps: Iterable[str] | None, swaps: bool, base: FuzzConfig,
                  domains: Sequence[str] = DOMAINS) -> int:
    """How many cells :func:`ablate` computes with these arguments (a progress display's
    total): each planned mutation in each supported domain."""
    _, domains, _, _, muts = _plan(runtime, domains, steps, swaps, base)
    return len(muts) * len(domains)


def _fuzz_until_killed(cls: type, domain: str, base: FuzzConfig) -> tuple[str, str, int | None, str,
                                                                          int]:
    """(verdict, workload, first point, failure, states) over the trial workloads."""
    states = 0
    exhaustive = True
    last = "-"
    for cfg in trials(replace(base, domain=domain, stop_at_first=True), runtime_cls=cls):
        try:
            rep = fuzz(cfg, runtime=cls)
        except StallError as e:
            return "stalls", cfg.workload, None, str(e), states
        states += rep.states_checked + rep.deep_states
        last = cfg.workload
        if not rep.ok:
            f = rep.failures[0]
            return "needed", cfg.workload, rep.first_failure_point, f.summary(), states
        exhaustive = exhaustive and rep.exhaustive and not rep.deep_points_sampled
    return ("redundant" if exhaustive else "undetermined"), last, None, "", states


def _plan(runtime: str | type, domains: Sequence[str], steps: Iterable[str] | None, swaps: bool,
          base: FuzzConfig | None) -> tuple[FuzzConfig, list[str], list[str], set[str],
                                             list[tuple[Mutation, str, str]]]:
    """What :func:`ablate` runs: its base config, the supported domains, notes on the refused
    ones, the steps the crash-free runs exercise, and the (mutation, step, kind) list."""
    cls = get_runtime(runtime)
    name = _name(runtime, cls)
    base = base or FuzzConfig(runtime=name, txs=8, idempotence=2, reduce=False, budget=4096,
                              new_tx=3, new_tx_every_image=True)
    base = replace(base, runtime=name)
    refused = [d for d in domains if d not in cls.supported_domains]
    skipped = [f"not run in {d}: {cls.domain_problem(d)}" for d in refused]
    domains = [d for d in domains if d in cls.supported_domains]
    if refused and not domains:
        cls.check_domain(refused[0])
    if base.domain not in cls.supported_domains and domains:
        base = replace(base, domain=domains[0])  # where the crash-free runs find the steps
    kinds = {s.name: s.kind for s in cls.persist_steps()}
    seen, pairs = steps_seen(runtime, base)
    wanted = list(kinds) if steps is None else list(steps)
    for s in wanted:
        if s not in kinds:
            from pmsim.errors import unknown

            raise unknown(f"persist step of {runtime}", s, kinds, f"persist steps of {runtime}")
    mixed = flushing_groups(runtime, base) if any(kinds[s] == "group" for s in wanted) else set()
    muts: list[tuple[Mutation, str, str]] = []
    for s in wanted:
        muts.append((Drop(s), s, kinds[s]))
        if s in mixed:
            muts.append((DropFlush(s), s, kinds[s]))
    if swaps and steps is None:
        muts += [(swap(a, b), f"{a} <-> {b}", "swap") for a, b in pairs]
    return base, domains, skipped, seen, muts


def _name(runtime: str | type, cls: type) -> str:
    """How cells and configs name ``runtime``: as given, or a class by its name."""
    return runtime if isinstance(runtime, str) else (getattr(cls, "name", "") or cls.__name__)


def ablate(runtime: str | type, domains: Sequence[str] = DOMAINS,
           steps: Iterable[str] | None = None, swaps: bool = True,
           base: FuzzConfig | None = None,
           progress: Callable[[AblationCell], None] | None = None) -> Ablation:
    """The necessity matrix of ``runtime`` (a name, an import path, a Runtime subclass or a PM
    program class): one cell per (mutation, supported domain)."""
    base, domains, skipped, seen, muts = _plan(runtime, domains, steps, swaps, base)
    cls = get_runtime(runtime)
    runtime = _name(runtime, cls)
    cells = Ablation(skipped=skipped)
    for m, step, kind in muts:
        label = str(m) if isinstance(m, Drop | DropFlush) else f"swap({step})"
        for d in domains:
            t0 = time.perf_counter()
            if isinstance(m, Drop) and step not in seen and "recover" not in step and kind != "edge":
                cell = AblationCell(runtime, label, step, kind, d, "not exercised", "-", None, "",
                                    0, 0.0)
            else:
                mcls = mutate(cls, [m], f"{runtime}~{label}")
                verdict, wl, point, failure, states = _fuzz_until_killed(mcls, d, base)
                cell = AblationCell(runtime, label, step, kind, d, verdict, wl, point, failure,
                                    states, time.perf_counter() - t0)
            cells.append(cell)
            if progress:
                progress(cell)
    return cells


def format_ablation(cells: Sequence[AblationCell], notes: dict[tuple[str, str], str] | None = None
                    ) -> str:
    """A Markdown necessity matrix (mutation x domain) and the notes on non-needed cells."""
    notes = notes or {}
    domains = list(dict.fromkeys(c.domain for c in cells))
    rows: dict[str, dict[str, AblationCell]] = {}
    for c in cells:
        rows.setdefault(c.mutation, {})[c.domain] = c
    out = ["| mutation | " + " | ".join(domains) + " |",
           "|---|" + "---|" * len(domains)]
    for label, by_d in rows.items():
        cells_txt = []
        for d in domains:
            c = by_d.get(d)
            if c is None:
                cells_txt.append("")
                continue
            txt = c.verdict
            if c.verdict == "needed":
                txt += f" ({c.workload}, point {c.first_point})"
            cells_txt.append(txt)
        out.append(f"| `{label}` | " + " | ".join(cells_txt) + " |")
    out.append("")
    expl = []
    for c in cells:
        if c.verdict == "needed":
            continue
        why = notes.get((c.mutation, c.domain)) or notes.get((c.mutation, "*")) or explain(c)
        expl.append(f"- `{c.mutation}` in {c.domain}: {c.verdict}" + (f" — {why}" if why else
                                                                     " — UNEXPLAINED"))
    if expl:
        out.append("Cells that are not `needed`:")
        out.append("")
        out.extend(expl)
    return "\n".join(out)


def cells_to_rows(cells: Sequence[AblationCell]) -> list[dict[str, Any]]:
    return [{"runtime": c.runtime, "mutation": c.mutation, "domain": c.domain,
             "verdict": c.verdict, "workload": c.workload, "first point": c.first_point,
             "states": c.states, "s": round(c.seconds, 2)} for c in cells]


__all__ = ["Ablation", "AblationCell", "VERDICTS", "WORKLOAD_TRIALS", "ablate", "cells_to_rows", "explain",
           "flushing_groups", "format_ablation", "steps_seen"]
