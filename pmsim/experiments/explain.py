"""Counterfactual explanations: which modelled mechanism flips a claim's verdict.

For every claim that differs, ``pmsim reproduce PAPER --explain`` reruns the experiments the
claim reads with one mechanism switched to its other state (each :class:`Toggle`: the
prefetchers, the out-of-order core's store buffer and overlapped misses, WPQ write merging, the
on-DIMM buffer, Hyper-Threading; of the workloads, the K-V store's server time per request
and the papers' TPC-C sizing; of the run, its length with its logs, where an experiment allows
it), evaluates the
claim on those rows, and reports the verdict with the time a transaction spends per component.
The scoreboard then reads "holds with X" or "differs under every modelled mechanism": a cause
measured, not asserted.

A toggle applies to a point only if the point's machine has the mechanism to switch (the DIMM
model cannot be switched on where no DIMM was calibrated); a claim none of whose points it
applies to is not rerun for it. The reruns are sweep points like any other, so ``--cache`` keeps
them and ``--jobs``/``--dask`` spread them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config import MachineConfig
from ..presets import preset
from .claims import Paper, Rows, get_paper, measure, run_points, scoreboard
from .sweep import point_identity

COMPONENTS: tuple[tuple[str, str], ...] = (
    ("work_ns_per_tx", "compute"), ("barrier_stall_ns_per_tx", "barrier stalls"),
    ("wpq_stall_ns_per_tx", "WPQ waits"), ("sb_stall_ns_per_tx", "store-buffer stalls"))
"""Row columns of thread time per transaction by component; the rest of a transaction's thread
time is memory latency the core did not hide (exposed misses) and lock or HTM waits."""


@dataclass(frozen=True)
class Toggle:
    """One mechanism switched to its other state: ``name`` as the scoreboard prints it
    ("with X"), whether a machine has it to switch, and the machine overrides that do. A
    mechanism of the workload rather than the machine also gives ``params``: the workload
    parameter overrides for a point, or None where the point's workload lacks it. One of the
    run's size gives ``reshape``: the point's own fields to replace (transactions, warm-up,
    runtime options), or None where it does not apply."""

    name: str
    help: str
    applies: Callable[[MachineConfig], bool]
    overrides: Callable[[MachineConfig], dict[str, Any]]
    params: Callable[[Mapping[str, Any]], dict[str, Any] | None] | None = None
    reshape: Callable[[Mapping[str, Any]], dict[str, Any] | None] | None = None


def _prefetch_on(c: MachineConfig) -> bool:
    return c.prefetch.stream or c.prefetch.adjacent


def _no_request_time(point: Mapping[str, Any]) -> dict[str, Any] | None:
    """A K-V point's server time per request set to zero (None for other points)."""
    params = dict(point.get("params") or {})
    if point.get("workload") != "kv" or not (params.get("get_ns") or params.get("put_ns")):
        return None
    return {"get_ns": 0.0, "put_ns": 0.0}


def _shares_cores(point: Mapping[str, Any]) -> dict[str, Any] | None:
    """{} for a point whose threads (with the runtime's helpers) outnumber the preset's physical
    cores, so that some share one; None where none does (turning Hyper-Threading off changes
    nothing there)."""
    from ..runtimes.registry import get_runtime

    cfg = preset(point["preset"]).replace(**dict(point.get("machine") or {}))
    threads = int(point["threads"])
    cores = threads + get_runtime(point["runtime"]).extra_cores(threads)
    return {} if cfg.core.physical_cores and cores > cfg.core.physical_cores else None


def _unsized_tpcc(point: Mapping[str, Any]) -> dict[str, Any] | None:
    """A TPC-C point sized as a paper ran it (NV-HTM's HTM port, DUDETx's New-Order work) back
    to TPC-C's own profiles with no added work (None for other points)."""
    params = dict(point.get("params") or {})
    if point.get("workload") != "tpcc" or (params.get("port", "full") == "full"
                                           and not params.get("new_order_ns")):
        return None
    return {"port": "full", "new_order_ns": 0.0}


LONGER = 10
"""How many times longer the "runs 10x longer" counterfactual makes a run and its logs."""


def lengthened(point: Mapping[str, Any], factor: int = LONGER) -> dict[str, Any] | None:
    """The fields that make a point with a log (a ``log_slots`` option) of an experiment that
    allows it (``Experiment.longer_runs``) ``factor`` times longer: its transactions, warm-up
    and log, so the log holds ``factor`` times as many transactions in a run as long in
    proportion; None for others."""
    opts = dict(point.get("options") or {})
    if "log_slots" not in opts or not point.get("paper"):
        return None
    exps = {e.name: e for e in get_paper(str(point["paper"])).experiments}
    exp = exps.get(str(point.get("experiment")))
    if exp is None or not exp.longer_runs:
        return None
    opts["log_slots"] = int(opts["log_slots"]) * factor
    return {"txs": int(point["txs"]) * factor, "warmup": int(point["warmup"]) * factor,
            "options": opts}


TOGGLES: tuple[Toggle, ...] = (
    Toggle("prefetchers toggled", "the L2 streamer and adjacent-line prefetcher off where the "
           "preset has them, on where it does not",
           lambda c: True,
           lambda c: {"prefetch.stream": not _prefetch_on(c),
                      "prefetch.adjacent": not _prefetch_on(c)}),
    Toggle("core model toggled", "an in-order blocking core where the preset's is out of order "
           "(no store buffer, no overlapped misses), out of order where it is in order",
           lambda c: True,
           lambda c: {"core.model": "inorder" if c.core.model == "ooo" else "ooo"}),
    Toggle("WPQ merging toggled", "the memory controller merges a write into a queued write to "
           "its line (or stops merging where the preset merges)",
           lambda c: True,
           lambda c: {"pm.merge_writes": not c.pm.merge_writes}),
    Toggle("DIMM buffer off", "PM as banked 64 B media with no on-DIMM buffer and no 256 B "
           "media lines (only where the preset models DIMMs)",
           lambda c: c.pm.dimm.dimms > 0,
           lambda c: {"pm.dimm.dimms": 0}),
    Toggle("request time off", "the K-V store's server time per request outside the "
           "transaction (its socket I/O, `get_ns`/`put_ns`) set to zero: the store as a "
           "library call (only where an experiment gives it one)",
           lambda c: True, lambda c: {}, params=_no_request_time),
    Toggle("Hyper-Threading off", "a core for every thread where threads share the preset's "
           "physical cores (no shared L1, L2 or HTM capacity, full-speed compute)",
           lambda c: c.core.physical_cores > 0, lambda c: {"core.physical_cores": 0},
           params=_shares_cores),
    Toggle("paper sizing off", "TPC-C's full profiles with no added work, where an experiment "
           "sizes TPC-C as its paper ran it (NV-HTM's HTM port; DUDETx's 110k-cycle New-Order)",
           lambda c: True, lambda c: {}, params=_unsized_tpcc),
    Toggle(f"runs {LONGER}x longer", f"transactions, warm-up and log sizes {LONGER} times "
           "larger, where an experiment allows it (NV-HTM's Fig. 4: its logs, sized to the run, "
           "then hold ten times as many transactions, nearer the paper's 40 MB)",
           lambda c: True, lambda c: {}, reshape=lengthened),
)


def measure_counterfactual(point: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`~.claims.measure` of a toggled point, labelled with its toggle."""
    row = measure(point)
    row["counterfactual"] = point["counterfactual"]
    row["origin"] = point["origin"]
    return row


def _toggled(points: Sequence[Mapping[str, Any]], t: Toggle) -> list[dict[str, Any]]:
    out = []
    for p in points:
        cfg = preset(p["preset"]).replace(**dict(p.get("machine") or {}))
        if not t.applies(cfg):
            continue
        shape: dict[str, Any] = {}
        if t.reshape is not None:
            more_shape = t.reshape(p)
            if more_shape is None:
                continue
            shape = more_shape
        params = dict(p.get("params") or {})
        if t.params is not None:
            more = t.params(p)
            if more is None:
                continue
            params.update(more)
        machine = {**dict(p.get("machine") or {}), **t.overrides(cfg)}
        out.append({**p, **shape, "params": params, "machine": machine,
                    "counterfactual": t.name, "origin": ident(p)})
    return out


def ident(point: Mapping[str, Any]) -> str:
    """A point's identity, as the counterfactuals of it name it: a digest of the whole point,
    so that a cached counterfactual stays valid when other experiments are added or removed."""
    return point_identity(ident, point)[:24]


def _origin(row: Mapping[str, Any], points: Sequence[Mapping[str, Any]]) -> str:
    """The identity of the point a row as run measured ("": none): the same experiment,
    runtime, thread count, workload parameters and runtime options."""
    for p in points:
        if (row.get("experiment") == p.get("experiment") and row.get("runtime") == p["runtime"]
                and int(row.get("threads", -1)) == int(p["threads"])
                and all(row.get(k) == v for k, v in (p.get("params") or {}).items())
                and all(row.get(k) == v for k, v in (p.get("options") or {}).items())):
            return ident(p)
    return ""


def components(rows: Sequence[Mapping[str, Any]]) -> str:
    """Mean thread time per transaction by component over ``rows``, as one phrase."""
    rows = [r for r in rows if float(r.get("commits", 0) or 0) > 0]
    if not rows:
        return "-"
    total = sum(float(r["sim_ns"]) * int(r["threads"]) / float(r["commits"]) for r in rows)
    parts = {label: sum(float(r.get(col, 0.0) or 0.0) for r in rows) for col, label in COMPONENTS}
    n = len(rows)
    rest = max(total - sum(parts.values()), 0.0)
    text = ", ".join(f"{label} {v / n:,.0f}" for label, v in parts.items() if v > 0)
    return (f"{total / n:,.0f} ns/tx of thread time: " + text
            + (", " if text else "") + f"misses and waits {rest / n:,.0f}")


def explain(paper: Paper, rows: Sequence[Mapping[str, Any]], quick: bool, scale: float = 1.0,
            **sweep: Any) -> dict[str, Any]:
    """Rerun the experiments of every claim that differs with each toggle that applies to
    them; returns the saved form: the experiments rerun and the toggled rows (each with its
    ``counterfactual`` and ``origin``). :func:`entries` evaluates the claims on them, whenever
    the results are rendered, so the table always follows the predicates of the day."""
    board = {r["claim"]: r for r in scoreboard(paper, rows)}
    differs = [c for c in paper.claims if board[c.id]["verdict"] == "differs"]
    exps = sorted({e for c in differs for e in c.experiments})
    if not exps:
        return {"experiments": [], "rows": []}
    base_points = paper.points(quick, scale, exps)
    points = [p for t in TOGGLES for p in _toggled(base_points, t)]
    trows = run_points(points, measure_counterfactual, label=f"{paper.name} counterfactuals",
                       **sweep)
    return {"experiments": exps, "rows": trows}


def entries(paper: Paper, rows: Sequence[Mapping[str, Any]], saved: Mapping[str, Any],
            quick: bool, scale: float = 1.0) -> list[dict[str, Any]]:
    """One row per (claim that differs, toggle that applies to its experiments): the verdict
    with the toggle, what the predicate measured, and the time components of the claim's rows
    as run and as toggled. ``saved``: what :func:`explain` returned. A claim whose experiments
    were not all rerun (it differed only after the counterfactuals ran) has none."""
    board = {r["claim"]: r for r in scoreboard(paper, rows)}
    rerun = set(saved.get("experiments", ()))
    trows = saved.get("rows", ())
    out = []
    for c in paper.claims:
        if board[c.id]["verdict"] != "differs" or not set(c.experiments) <= rerun:
            continue
        base_points = paper.points(quick, scale, sorted(c.experiments))
        mine = [r for r in rows if r.get("experiment") in c.experiments]
        kept = [r for r in rows if r.get("experiment") not in c.experiments]
        as_run = components(mine)
        for t in TOGGLES:
            alt = [r for r in trows if r["counterfactual"] == t.name
                   and r.get("experiment") in c.experiments]
            if not alt:
                continue
            clean = [{k: v for k, v in r.items() if k not in ("counterfactual", "origin")}
                     for r in alt]
            toggled = {str(r["origin"]) for r in alt}
            # a point the toggle does not apply to (a K-V or TPC-C toggle beside a claim's
            # other workloads, Hyper-Threading where the threads have a core each) keeps its
            # row as run
            same = [r for r in mine if _origin(r, base_points) not in toggled]
            got = c.evaluate(Rows([*kept, *same, *clean]))
            out.append({"claim": c.id, "toggle": t.name, "verdict": got["verdict"],
                        "measured": got["measured"], "as run": as_run,
                        "toggled": components(clean)})
    return out


NOT_RERUN = "not rerun: it differed only after the counterfactuals ran (rerun with --explain)"


def counterfactual_cell(paper: Paper, board_row: Mapping[str, Any],
                        why: Sequence[Mapping[str, Any]], saved: Any) -> str:
    """The scoreboard's counterfactual column for one claim: :func:`summary_line`, or
    :data:`NOT_RERUN` for a claim that differs but whose experiments the saved reruns
    (:func:`explain`'s form) do not all cover."""
    if isinstance(saved, Mapping) and board_row["verdict"] == "differs":
        exps = next(set(c.experiments) for c in paper.claims if c.id == board_row["claim"])
        if not exps <= set(saved.get("experiments", ())):
            return NOT_RERUN
    return summary_line(board_row["claim"], why) or "-"


def summary_line(claim: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """"holds with X" (every toggle that flips it), or "differs under every modelled
    mechanism"."""
    mine = [r for r in rows if r["claim"] == claim]
    if not mine:
        return ""
    flips = [r["toggle"] for r in mine if r["verdict"] == "holds"]
    if flips:
        return "holds with " + " or ".join(flips)
    return "differs under every modelled mechanism"
