"""Lu, Shu, Sun, Mutlu, "Loose-Ordering Consistency for Persistent Memory" (LOC, ICCD 2014):
experiments and claims L1-L15.

The spec card (``loc.md``) §8 gives the setup, §9 the claims, §10 the defaults. The machine is
the ``loc-gem5`` preset (Table I: gem5 at 1 GHz, three cache levels, 8 banks of 168 ns memory),
one core and one thread (§10). The protocols are S-WAL (``swal``: software redo logging with
clflush/mfence), H-WAL (``hwal``: hardware logging, strict ordering), EC-WAL (``loc-ec``: Eager
Commit only) and LOC-WAL (``loc``: Eager Commit and Speculative Persistence, speculation degree
``sd``, swept as a runtime option). Throughput is normalised, as in the paper, to a run with no
transaction support: ``locks``, the volatile lock-based program (data at home in PM, no logs,
flushes or fences), on the same machine, workload, parameters and seed.

Four of the paper's six workloads exist in pmsim: B+Tree (``btree``, one tree of 4 KB nodes
holding 200 pairs of 8 B keys and 4 B values, a word each), Hash (``hashtable``), RBTree
(``rbtree``) and SPS (``sps``), each with the card's §10 transaction sizes (4 operations, half
inserts and half deletes; 8 swaps). SDG (a Boost adjacency-list graph) and SQLite are not, so
every average here is over the four, against the paper's six-workload averages. The card asks
for data sets of at least 4x the 1 MB LLC, which every workload has at the full scale (B+Tree:
196,608 initial keys build 1,433 nodes in 4 KB blocks, 5.6 MiB; the tree is built by inserting
every key, untimed, about 0.3 ms of wall time each). The quick scale keeps every data set inside
the LLC, so it measures ordering and logging costs but little of the cache-pressure effect
(L14). The hardware-logging runtimes get the paper's 32 MB log area (§IV-B).

Fig. 9's latency sweep sets the PM read and write latency and the DRAM latency together (the
paper's memory is one NVM): one experiment per workload and latency, 35, 95 and 1000 ns; the
168 ns point is Fig. 6's rows (the same machine). Kiln and LOC-Kiln (L4, L5) need a non-volatile
LLC, which pmsim does not model.

L15 is a correctness claim: its check runs small crash-fuzz campaigns of LOC-WAL (the oracle of
card §5), counts the version-overflow spills in them, and reads the LOC mutants' rows of the
committed kill matrix (``docs/kill-matrix.txt``), as the unified comparison does.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..claims import (
    SAME,
    TOLERANCE,
    Checks,
    Claim,
    Experiment,
    Finding,
    MissingRows,
    Paper,
    Rows,
    about,
    fmt_interval,
    inside,
    register_paper,
    same,
)
from ..plots import Figure

PRESET = ("loc-gem5",)
BASE, SWAL, HWAL, EC, LOC = "locks", "swal", "hwal", "loc-ec", "loc"
WAL = (BASE, SWAL, HWAL, EC, LOC)
NAMES = {BASE: "no tx support", SWAL: "S-WAL", HWAL: "H-WAL", EC: "EC-WAL", LOC: "LOC-WAL"}
SDS, QUICK_SDS = (1, 2, 4, 8, 16, 32), (1, 4, 16, 32)
SD_DEFAULT = 16
LATENCY_NS = 168
SWEEP_NS = (35, 95, 1000)
"""Fig. 9's latencies besides the default 168 ns (whose rows are Fig. 6's)."""
TXS, WARMUP, QUICK_TXS, QUICK_WARMUP = 2000, 500, 60, 10
LOG_GROUPS = (32 << 20) // 512
"""The paper's 32 MB log area (§IV-B) in block groups of 8 lines: the ``log_groups`` option of
the hardware-logging runtimes (their default sizes the ring for crash fuzzing)."""
LOG = {"log_groups": (LOG_GROUPS,)}

WORKLOADS: dict[str, tuple[str, str, dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    # key: (workload, the paper's name, params, full-scale data set, quick data set)
    "btree": ("btree", "B+Tree",
              {"trees": 1, "node_keys": 200, "value_words": 1, "ops_per_tx": 4,
               "insert_pct": 50.0, "delete_pct": 50.0},
              {"keys": 3 << 17, "initial": 3 << 16}, {"keys": 1024, "initial": 512}),
    "hash": ("hashtable", "Hash",
             {"ops_per_tx": 4, "insert_pct": 50.0, "delete_pct": 50.0},
             {"slots": 1 << 18, "keys": 1 << 18, "initial": 1 << 17},
             {"slots": 4096, "keys": 4096, "initial": 2048}),
    "rbtree": ("rbtree", "RBTree",
               {"trees": 1, "ops_per_tx": 4, "insert_pct": 50.0, "delete_pct": 50.0},
               {"keys": 1 << 17, "initial": 1 << 16}, {"keys": 1024, "initial": 512}),
    "sps": ("sps", "SPS", {"swaps": 8, "string_words": 1}, {"entries": 1 << 19},
            {"entries": 4096}),
}
"""pmsim's four of the paper's six workloads (card §8, Table II; §10 transaction sizes). The
data sets are not given: the full scale follows §10's "at least 4x the LLC" (the module's
docstring gives B+Tree's), the quick scale fits in the LLC."""
KEYS = tuple(WORKLOADS)

PAPER_AVG = {SWAL: 0.316, HWAL: 0.331, LOC: 0.651, EC: 0.352}
"""Card L1-L3, L8: six-workload average normalised throughput (EC-WAL: H-WAL + 6.4%)."""
SD_AVG = {1: 0.353, 16: 0.651, 32: 0.689}
"""Card L9: LOC-WAL's average at speculation degrees 1, 16 and 32."""
SD_GAIN = 0.955
"""Card L9: +95.5% from SD 1 to SD 32."""


def _machine(ns: int) -> dict[str, float]:
    """The memory latency of Fig. 9: PM reads and writes and DRAM all at ``ns``."""
    return {"pm.read_ns": float(ns), "pm.write_ns": float(ns), "dram.latency_ns": float(ns)}


def _sizes(key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    _, _, _, full, quick = WORKLOADS[key]
    return {"size": (full,)}, {"size": (quick,)}


def _fig6(key: str) -> Experiment:
    wl, bench, params, _, _ = WORKLOADS[key]
    axes, quick = _sizes(key)
    return Experiment(
        f"fig6-{key}", f"{bench}: S-WAL, H-WAL, EC-WAL and LOC-WAL against no transaction "
        "support (Figs. 6, 7)", wl, WAL, PRESET, axes=axes, quick_axes=quick, params=params,
        options=LOG, threads=(1,), txs=TXS, warmup=WARMUP, quick_txs=QUICK_TXS,
        quick_warmup=QUICK_WARMUP,
        source="Figs. 6, 7",
        figures=(Figure(f"fig6-{key}", f"{bench}: normalised throughput (Figs. 6, 7)",
                        x="workload", y="throughput", xlabel="workload",
                        ylabel="throughput / no tx support", panels="preset", kind="bar",
                        normalise=BASE, order=WAL),))


def _fig8(key: str) -> Experiment:
    wl, bench, params, _, _ = WORKLOADS[key]
    axes, quick = _sizes(key)
    return Experiment(
        f"fig8-{key}", f"{bench}: LOC-WAL against the speculation degree (Fig. 8)", wl, (LOC,),
        PRESET, axes=axes, quick_axes=quick, params=params, threads=(1,),
        options={"sd": SDS, **LOG}, quick_options={"sd": QUICK_SDS}, txs=TXS, warmup=WARMUP,
        quick_txs=QUICK_TXS, quick_warmup=QUICK_WARMUP, source="Fig. 8",
        figures=(Figure(f"fig8-{key}", f"{bench}: LOC-WAL vs speculation degree (Fig. 8)",
                        x="sd", y="throughput", xlabel="speculation degree",
                        ylabel="throughput (ktx/s)", yscale=1e-3, panels="workload",
                        where=(("runtime", LOC),)),))


def _fig9(key: str, ns: int) -> Experiment:
    wl, bench, params, _, _ = WORKLOADS[key]
    axes, quick = _sizes(key)
    return Experiment(
        f"fig9-{key}-{ns}ns", f"{bench}: H-WAL and LOC-WAL at {ns} ns memory (Fig. 9)", wl,
        (BASE, HWAL, LOC), PRESET, axes=axes, quick_axes=quick, params=params,
        machine=_machine(ns), options=LOG, threads=(1,), txs=TXS, warmup=WARMUP,
        quick_txs=QUICK_TXS,
        quick_warmup=QUICK_WARMUP, source="Fig. 9")


FIG6 = tuple(_fig6(k) for k in KEYS)
FIG8 = tuple(_fig8(k) for k in KEYS)
FIG9 = tuple(_fig9(k, ns) for k in KEYS for ns in SWEEP_NS)
EXPERIMENTS = (*FIG6, *FIG8, *FIG9)


# -- helpers over rows -----------------------------------------------------------------------------

def _exp(rows: Rows, name: str) -> Rows:
    """The rows of experiment ``name``; MissingRows (the claim is "not run") if there are none."""
    sel = rows.where(experiment=name)
    if not sel:
        raise MissingRows(f"no measured row with experiment={name}")
    return sel


def _tp(sel: Rows, runtime: str, **eq: Any) -> float:
    return sel.get("throughput", runtime=runtime, **eq)


def normalised(rows: Rows, key: str, runtime: str, ns: int = LATENCY_NS) -> float:
    """``runtime``'s throughput on workload ``key`` over the no-transaction baseline's, at memory
    latency ``ns`` (Fig. 6's rows at 168 ns, Fig. 9's otherwise)."""
    sel = _at_latency(rows, key, ns)
    return _tp(sel, runtime) / _tp(sel, BASE)


def _at_latency(rows: Rows, key: str, ns: int) -> Rows:
    """Workload ``key``'s rows at memory latency ``ns``: Fig. 6's at 168 ns, Fig. 9's otherwise."""
    return _exp(rows, f"fig6-{key}" if ns == LATENCY_NS else f"fig9-{key}-{ns}ns")


def normalised_sd(rows: Rows, key: str, sd: int) -> float:
    """LOC-WAL at speculation degree ``sd`` (Fig. 8's rows) over the baseline of Fig. 6."""
    return _tp(_exp(rows, f"fig8-{key}"), LOC, sd=sd) / _tp(_exp(rows, f"fig6-{key}"), BASE)


def average(fn: Callable[[str], float]) -> tuple[float, dict[str, float]]:
    """The arithmetic mean over the four workloads (card §10) and the per-workload values."""
    per = {k: fn(k) for k in KEYS}
    return statistics.fmean(per.values()), per


def sds_of(rows: Rows) -> list[int]:
    """The speculation degrees Fig. 8's rows cover on every workload."""
    common: set[int] | None = None
    for k in KEYS:
        got = {int(v) for v in _exp(rows, f"fig8-{k}").where(runtime=LOC).values("sd")}
        common = got if common is None else common & got
    if not common:
        raise MissingRows("no speculation degree measured on every workload")
    return sorted(common)


def counter(r: Mapping[str, Any], name: str) -> float | None:
    """A runtime counter of a row by its name, bare or with a family prefix (``loc.coalesced``);
    None if the row has no such column."""
    if name in r:
        return float(r[name])
    for k, v in r.items():
        if k.endswith("." + name):
            return float(v)
    return None


def per_tx(sel: Rows, name: str) -> float | None:
    """Counter ``name`` per committed transaction, averaged over ``sel``; None if absent."""
    vals = []
    for r in sel:
        v = counter(r, name)
        if v is None:
            return None
        vals.append(v / max(float(r.get("commits", 0.0)), 1.0))
    return statistics.fmean(vals) if vals else None


def near(target: float) -> tuple[float, float]:
    """The accepted interval of an absolute normalised throughput: the paper's within a factor
    :data:`TOLERANCE` either way."""
    return target / TOLERANCE, target * TOLERANCE


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _signed(x: float) -> str:
    return f"{100 * x:+.1f}%"


def _each(per: Mapping[str, float], fmt: str = ".3f") -> str:
    return ", ".join(f"{WORKLOADS[k][1]} {v:{fmt}}" for k, v in per.items())


def _change(a: float, b: float, fmt: str) -> str:
    """"rise from a to b", "fall from a to b" or "stay at a", as ``fmt`` prints them."""
    x, y = f"{a:{fmt}}", f"{b:{fmt}}"
    return f"stay at {x}" if x == y else f"{'rise' if b > a else 'fall'} from {x} to {y}"


def _level(c: Checks, what: str, v: float, target: float, why: str) -> None:
    iv = near(target)
    c.expect(inside(v, iv), f"{what} {v:.3f} (paper {target:.3f}, {fmt_interval(iv)}), "
             f"overhead {_pct(1 - v)} (paper {_pct(1 - target)})",
             f"{what} averages {v:.3f} against the paper's {target:.3f}: {why}")


UNKNOWN = ("the paper's average includes SDG and SQLite and gives neither its data sets nor its "
           "transaction sizes")


def _card_sets(rows: Rows) -> bool:
    """Whether Fig. 6's rows ran the card's data sets (the full scale's, >= 4x the LLC)."""
    return all(r.get(p) == v for k in KEYS for r in _exp(rows, f"fig6-{k}")
               for p, v in WORKLOADS[k][3].items())


def _gap(rows: Rows, name: str, per: Mapping[str, float], target: float, detail: str) -> str:
    """Why a mean normalised throughput (``per``: each workload's) is off the paper's
    ``target``, by its direction: the time ``name`` adds to each workload's baseline, ``detail``,
    and, below the paper at data sets smaller than the card's, the baseline's LLC misses."""
    add = _each({k: 1 / v - 1 for k, v in per.items()}, "+.0%")
    if statistics.fmean(per.values()) > target:
        return f"{name} adds only {add} to the baseline's transaction time, {detail}; {UNKNOWN}"
    out = f"{name} adds {add} to the baseline's transaction time, {detail}; "
    if _card_sets(rows):
        return out + UNKNOWN
    ns = {k: 1e9 / _tp(_exp(rows, f"fig6-{k}"), BASE) for k in KEYS}
    miss = {k: _llc_per_tx(_exp(rows, f"fig6-{k}").where(runtime=BASE)) for k in KEYS}
    seen = "" if any(v is None for v in miss.values()) else (
        f", missing the LLC {_each(miss, '.1f')} times")
    return out + (f"this run's data sets are smaller than the card's (>= 4x the LLC): the "
                  f"baseline takes {_each(ns, '.0f')} ns per transaction{seen}, so the time "
                  f"{name} adds weighs more against it")


def _stall_share(sel: Rows) -> float | None:
    """The share of its transaction time ``sel`` (one runtime's rows) stalls at its ordering
    points (its ``close_stall_ns``; None without that counter)."""
    ns = per_tx(sel, "close_stall_ns")
    return None if ns is None else ns * statistics.fmean(float(r["throughput"]) for r in sel) / 1e9


def _mean(vals: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in vals) else statistics.fmean(
        v for v in vals if v is not None)


def profile(rows: Rows, runtime: str) -> dict[str, float | None]:
    """Where ``runtime``'s time goes, as means over the workloads of Fig. 6's rows, averaged as
    the normalised throughputs are: the share of its transaction time beyond the baseline's
    (``extra``, 1 - normalised) and stalled at its ordering points (``stall``; None without the
    counter); NVM bytes, flushes and fences per transaction."""
    per: dict[str, list[float | None]] = {n: [] for n in ("extra", "stall", "bytes", "flush",
                                                          "fence")}
    for k in KEYS:
        mine = _exp(rows, f"fig6-{k}").where(runtime=runtime)
        per["extra"].append(1 - normalised(rows, k, runtime))
        per["stall"].append(_stall_share(mine))
        for name, col in (("bytes", "pm_bytes_per_tx"), ("flush", "flush_per_tx"),
                          ("fence", "fence_per_tx")):
            per[name].append(statistics.fmean(float(r.get(col, 0.0)) for r in mine))
    return {n: _mean(vs) for n, vs in per.items()}


def cost(rows: Rows, runtime: str) -> str:
    """One clause saying where ``runtime``'s time goes (see :func:`profile`): two shares of its
    own transaction time, neither a part of the other."""
    p = profile(rows, runtime)
    out = (f"{NAMES[runtime]} spends {_pct(p['extra'] or 0.0)} of its transaction time beyond "
           "the baseline's")
    if p["stall"] is not None:
        out += f" and {_pct(p['stall'])} stalled at its ordering points,"
    return out + f" and writes {p['bytes']:.0f} NVM bytes per transaction"


def _traffic(sel: Rows) -> tuple[float, float | None]:
    """NVM bytes per transaction of ``sel`` (one runtime's rows) and, of them, the log's own
    lines (log, META and window-record lines, 64 B each; None without those counters)."""
    nvm = statistics.fmean(float(r.get("pm_bytes_per_tx", 0.0)) for r in sel)
    lines = [per_tx(sel, n) for n in ("log_lines", "meta_lines", "record_lines")]
    return nvm, None if any(v is None for v in lines) else 64 * sum(v or 0.0 for v in lines)


def _sd(rows: Rows, key: str, sd: int) -> Rows:
    return _exp(rows, f"fig8-{key}").where(runtime=LOC, sd=sd)


def _spills(rows: Rows, sds: Sequence[int]) -> float | None:
    """Version-overflow spills of Fig. 8's LOC-WAL rows at speculation degrees ``sds`` (None if
    no row has the counter)."""
    got = [counter(r, "overflow") for k in KEYS for r in _exp(rows, f"fig8-{k}").where(
        runtime=LOC, sd=tuple(sds))]
    return None if all(v is None for v in got) else sum(v or 0.0 for v in got)


def _grew(rows: Rows, lo: int, hi: int) -> str:
    """What grew in LOC-WAL's NVM writes from SD ``lo`` to ``hi``, per workload: the log's own
    lines and the write-backs of cached lines (the rest), or the NVM bytes without the line
    counters."""
    parts: dict[str, dict[str, tuple[float, float]]] = {}
    for k in KEYS:
        (b0, l0), (b1, l1) = _traffic(_sd(rows, k, lo)), _traffic(_sd(rows, k, hi))
        if l0 is None or l1 is None:
            parts.setdefault("the NVM bytes", {})[k] = (b0, b1)
        else:
            parts.setdefault("the log's own lines", {})[k] = (l0, l1)
            parts.setdefault("the write-backs of cached lines", {})[k] = (b0 - l0, b1 - l1)
    up = {what: ", ".join(f"{WORKLOADS[k][1]} {a:.0f} → {b:.0f}" for k, (a, b) in per.items()
                          if round(b) > round(a)) for what, per in parts.items()}
    grew = [f"{what} grew ({u} bytes per transaction)" for what, u in up.items() if u]
    flat = [what for what, u in up.items() if not u]
    if not grew:
        return " and ".join(flat) + " grew on no workload"
    return " and ".join(grew) + (f", while {' and '.join(flat)} grew on no workload" if flat else "")


def _stalls(stall: float | None, nbytes: float, where: str) -> str:
    """A participial clause: the share of its transaction time a runtime stalls ``where`` (if
    measured) and the NVM bytes it writes per transaction."""
    out = "" if stall is None else f"stalling {_pct(stall)} of its own transaction time {where} and "
    return out + f"writing {nbytes:.0f} NVM bytes per transaction"


def _window(sd: int) -> str:
    return "at its one wait per transaction" if sd == 1 else (
        f"at its one wait per window of {sd} transactions")


# -- claims ----------------------------------------------------------------------------------------

def check_l1(rows: Rows) -> Finding:
    c = Checks()
    avg, per = average(lambda k: normalised(rows, k, SWAL))
    c.note(_each(per))
    p = profile(rows, SWAL)
    _level(c, "S-WAL", avg, PAPER_AVG[SWAL], _gap(
        rows, "S-WAL", per, PAPER_AVG[SWAL], f"with {p['flush']:.1f} clflushes and "
        f"{p['fence']:.1f} fences, writing {p['bytes']:.0f} NVM bytes per transaction"))
    return c.finding()


def check_l2(rows: Rows) -> Finding:
    c = Checks()
    avg, per = average(lambda k: normalised(rows, k, HWAL))
    c.note(_each(per))
    p = profile(rows, HWAL)
    _level(c, "H-WAL", avg, PAPER_AVG[HWAL], _gap(
        rows, "H-WAL", per, PAPER_AVG[HWAL],
        _stalls(p["stall"], p["bytes"] or 0.0, "at its two waits per transaction")))
    return c.finding()


def check_l3(rows: Rows) -> Finding:
    c = Checks()
    loc, per = average(lambda k: normalised(rows, k, LOC))
    h, _ = average(lambda k: normalised(rows, k, HWAL))
    s, _ = average(lambda k: normalised(rows, k, SWAL))
    c.note(_each(per))
    p = profile(rows, LOC)
    _level(c, "LOC-WAL", loc, PAPER_AVG[LOC], _gap(
        rows, "LOC-WAL", per, PAPER_AVG[LOC],
        _stalls(p["stall"], p["bytes"] or 0.0, _window(SD_DEFAULT))))
    for rt, base, target in ((HWAL, h, 1.97), (SWAL, s, 2.06)):
        r, iv = loc / base, about(target)
        c.expect(inside(r, iv), f"LOC-WAL/{NAMES[rt]} {r:.2f}x (paper ≈{target:g}x, "
                 f"{fmt_interval(iv)})",
                 f"LOC-WAL is {r:.2f}x {NAMES[rt]}, not ≈{target:g}x: {cost(rows, rt)}; "
                 f"{cost(rows, LOC)}")
    return c.finding()


def check_l6(rows: Rows) -> Finding:
    c = Checks()
    worst = (0.0, "", "")
    for rt in (SWAL, HWAL):
        for k in KEYS:
            slow = 1 / normalised(rows, k, rt)
            if slow > worst[0]:
                worst = (slow, NAMES[rt], WORKLOADS[k][1])
    iv = about(10.0)
    c.expect(inside(worst[0], iv), f"largest slowdown {worst[0]:.1f}x ({worst[1]} on "
             f"{worst[2]}; paper up to ~10x, {fmt_interval(iv)})",
             f"strict ordering slows the worst workload {worst[0]:.1f}x ({worst[1]} on "
             f"{worst[2]}), not ~10x: the paper's worst case is not named and may be SDG or "
             "SQLite, whose large, scattered write sets pmsim's four workloads do not have")
    return c.finding()


def check_l7(rows: Rows) -> Finding:
    c = Checks()
    s, _ = average(lambda k: normalised(rows, k, SWAL))
    h, _ = average(lambda k: normalised(rows, k, HWAL))
    r = s / h
    c.expect(s <= h and r >= 0.8, f"S-WAL/H-WAL {r:.3f} (paper 0.316/0.331 = 0.955; test "
             "[0.8, 1])",
             f"S-WAL runs at {r:.2f}x H-WAL, not slightly below it: {cost(rows, SWAL)}, with "
             f"{profile(rows, SWAL)['flush']:.1f} clflushes per transaction; {cost(rows, HWAL)}")
    return c.finding()


def check_l8(rows: Rows) -> Finding:
    c = Checks()
    ec, per = average(lambda k: normalised(rows, k, EC))
    h, _ = average(lambda k: normalised(rows, k, HWAL))
    gain = {k: normalised(rows, k, EC) / normalised(rows, k, HWAL) - 1 for k in KEYS}
    c.note("EC-WAL over H-WAL: " + _each({k: 100 * v for k, v in gain.items()}, "+.1f") + " %")
    c.note(f"EC-WAL {ec:.3f} (paper ≈{PAPER_AVG[EC]:.3f})")
    r, iv = ec / h, about(1.064)
    c.expect(inside(r, iv), f"EC-WAL/H-WAL {r:.3f} (paper 1.064, {fmt_interval(iv)})",
             f"EC-WAL is {100 * (r - 1):+.1f}% against H-WAL, not +6.4%: "
             f"{cost(rows, EC)}; {cost(rows, HWAL)}")
    return c.finding()


RISE = 0.02
"""L9, L13: a curve grows only if its last point exceeds its first by more than this fraction."""
SD_STEP = 0.02
"""L9: no step of the speculation-degree curve may fall by more than this fraction."""
LAT_STEP = 0.01
"""L12, L13: no step of a latency curve may move against the claim by more than this fraction."""


def _trend(curve: Mapping[int, float], step: float,
           rising: bool = True) -> tuple[float, list[tuple[int, int]]]:
    """A curve's change from its first point to its last, and its steps that move against the
    expected direction (fall if ``rising``, else rise) by more than the fraction ``step``."""
    xs = list(curve)
    against = [(a, b) for a, b in zip(xs, xs[1:], strict=False)
               if (curve[b] < curve[a] * (1 - step) if rising else curve[b] > curve[a] * (1 + step))]
    return curve[xs[-1]] / curve[xs[0]] - 1, against


def _at_sd(rows: Rows, sd: int) -> tuple[float | None, float]:
    """LOC-WAL at speculation degree ``sd`` (Fig. 8's rows), means over the workloads: the share
    of its transaction time stalled at window closes (None without the counter) and its NVM
    bytes per transaction."""
    sels = [_sd(rows, k, sd) for k in KEYS]
    return _mean([_stall_share(s) for s in sels]), statistics.fmean(_traffic(s)[0] for s in sels)


def _sd_why(rows: Rows, lo: int, hi: int) -> str:
    """What the rows show from SD ``lo`` to ``hi``: the version-overflow spills (if counted)
    and what grew in the NVM writes (:func:`_grew`)."""
    n, grew = _spills(rows, (lo, hi)), _grew(rows, lo, hi)
    if n is None:
        return grew
    if n == 0:
        return f"no version overflowed at SD {lo} or {hi} (0 spills); {grew}"
    return f"version overflow spilled {n:.0f} versions to the log at SD {lo} and {hi}; {grew}"


def check_l9(rows: Rows) -> Finding:
    c = Checks()
    sds = sds_of(rows)
    lo, hi = sds[0], sds[-1]
    curve = {sd: average(lambda k, sd=sd: normalised_sd(rows, k, sd))[0] for sd in sds}
    c.note("SD " + ", ".join(f"{sd}: {v:.3f}" for sd, v in curve.items())
           + " (paper 1: 0.353, 16: 0.651, 32: 0.689)")
    at = {sd: _at_sd(rows, sd) for sd in sds}
    for sd in (lo, hi):
        if sd in SD_AVG:
            _level(c, f"SD = {sd}", curve[sd], SD_AVG[sd], _gap(
                rows, f"LOC-WAL at SD {sd}", {k: normalised_sd(rows, k, sd) for k in KEYS},
                SD_AVG[sd], _stalls(at[sd][0], at[sd][1], _window(sd))))
    r = curve[hi] / curve[lo]
    gains = {k: normalised_sd(rows, k, hi) / normalised_sd(rows, k, lo) - 1 for k in KEYS}
    c.note(f"mean per-workload gain {_signed(statistics.fmean(gains.values()))}")
    (s0, b0), (s1, b1) = at[lo], at[hi]
    moved = ("" if s0 is None or s1 is None else f"its stalls at window closes "
             f"{_change(s0, s1, '.1%')} of its transaction time and ") + (
        f"its NVM writes {_change(b0, b1, '.0f')} bytes per transaction")
    if (lo, hi) == (1, 32):
        iv = about(1 + SD_GAIN)
        top = curve[lo] * (1 + SD_GAIN)
        ceiling = (f"; at SD 1 it already runs at {curve[lo]:.3f} of the baseline (paper 0.353), "
                   f"so the paper's +95.5% would take it to {top:.3f}, beyond the baseline itself"
                   if curve[lo] * iv[0] > 1 else "")
        c.expect(inside(r, iv), f"SD 1 → 32 {_signed(r - 1)} (paper +95.5%, {fmt_interval(iv)})",
                 f"LOC-WAL {'gains' if r >= 1 else 'loses'} {_pct(abs(r - 1))} from SD 1 to 32, "
                 f"not +95.5%: {moved}{ceiling}")
    rise, drops = _trend(curve, SD_STEP)
    grows = rise > RISE and not drops
    how = "grows" if grows else "falls" if rise < 0 else "does not grow"
    steps = ", ".join(f"{a}→{b}" for a, b in drops)
    c.expect(grows, f"{how} with SD ({_signed(rise)} from SD {lo} to {hi}"
             + (f"; steps down {steps}" if drops else "") + "; test: more than +2%, no step down "
             "of more than 2%)",
             f"LOC-WAL's throughput {how} from SD {lo} to {hi} ({curve[lo]:.3f} → "
             f"{curve[hi]:.3f}; per workload {_each(gains, '+.1%')}"
             + (f"; steps down {steps}" if drops else "") + "): "
             + ("; ".join(f"from SD {a} to {b}, {_sd_why(rows, a, b)}" for a, b in drops)
                if drops else _sd_why(rows, lo, hi)))
    return c.finding()


def check_l10(rows: Rows) -> Finding:
    c = Checks()
    ec, per_ec = average(lambda k: normalised(rows, k, EC))
    one, per_one = average(lambda k: normalised_sd(rows, k, 1))
    c.note("SD 1: " + _each(per_one) + "; EC-WAL: " + _each(per_ec))
    c.expect(same(one, ec), f"LOC-WAL at SD 1 {one:.3f} vs EC-WAL {ec:.3f} (paper 0.353 vs "
             f"≈0.352; within {_pct(SAME)})",
             f"LOC-WAL at SD 1 ({one:.3f}) and EC-WAL ({ec:.3f}) differ by more than "
             f"{_pct(SAME)}: the two runtimes are not the same protocol at SD 1")
    return c.finding()


def check_l11(rows: Rows) -> Finding:
    c = Checks()
    h, _ = average(lambda k: normalised(rows, k, HWAL))
    ec, _ = average(lambda k: normalised(rows, k, EC))
    loc, _ = average(lambda k: normalised(rows, k, LOC))
    total = loc - h
    share = (ec - h) / total if total > 0 else float("nan")
    c.expect(total > 0 and 0.0 <= share <= 0.2,
             f"H-WAL → LOC-WAL +{total:.3f} (paper +0.320), EC's share {_pct(share)} (paper ≈7%,"
             " test [0, 20%])",
             f"LOC-WAL does not beat H-WAL: {cost(rows, HWAL)}; {cost(rows, LOC)}"
             if total <= 0 else
             f"Eager Commit gives {_pct(share)} of the gain, not ≈7%: {cost(rows, EC)}; "
             f"{cost(rows, HWAL)}")
    r, iv = loc / ec, about(1.85)
    c.expect(inside(r, iv), f"SP alone LOC-WAL/EC-WAL {r:.2f}x (paper ≈1.85x, "
             f"{fmt_interval(iv)})",
             f"Speculative Persistence alone is {r:.2f}x, not ≈1.85x: {cost(rows, EC)}; "
             f"{cost(rows, LOC)}")
    return c.finding()


def _latency_curve(rows: Rows, fn: Callable[[str, int], float]) -> dict[int, float]:
    return {ns: average(lambda k, ns=ns: fn(k, ns))[0]
            for ns in sorted((*SWEEP_NS, LATENCY_NS))}


def check_l12(rows: Rows) -> Finding:
    c = Checks()
    curve = _latency_curve(rows, lambda k, ns: normalised(rows, k, HWAL, ns))
    c.note("H-WAL " + ", ".join(f"{ns} ns: {v:.3f}" for ns, v in curve.items()))
    lat = list(curve)
    change, ups = _trend(curve, LAT_STEP, rising=False)
    drop = -change
    c.expect(not ups and drop > RISE, f"falls as latency rises ({_signed(-drop)} from {lat[0]} "
             f"to {lat[-1]} ns; test: a fall of more than {RISE:.0%}, no step rising by more than "
             f"{LAT_STEP:.0%})",
             "H-WAL's normalised throughput does not fall with latency"
             + (" (rises " + ", ".join(f"{a}→{b} ns" for a, b in ups) + ")" if ups else "")
             + ": the baseline slows with latency too, and at short latencies H-WAL's waits "
             "are a small part of either")
    return c.finding()


def check_l13(rows: Rows) -> Finding:
    c = Checks()
    curve = _latency_curve(rows, lambda k, ns: normalised(rows, k, LOC, ns)
                           / normalised(rows, k, HWAL, ns))
    c.note("LOC-WAL/H-WAL " + ", ".join(f"{ns} ns: {v:.3f}x" for ns, v in curve.items()))
    lat = list(curve)
    lo, hi = lat[0], lat[-1]
    rise, downs = _trend(curve, LAT_STEP)
    grows = rise > RISE and not downs
    falls = ", ".join(f"{a}→{b} ns" for a, b in downs)
    per = {k: normalised(rows, k, LOC, hi) / normalised(rows, k, HWAL, hi) for k in KEYS}
    nvm = {rt: average(lambda k, rt=rt: _at_latency(rows, k, hi).get("pm_bytes_per_tx",
                                                                      runtime=rt))[0]
           for rt in (LOC, HWAL)}
    c.expect(grows, f"the improvement {'grows' if grows else 'does not grow'} with latency "
             f"({_signed(rise)} from {lo} to {hi} ns" + (f"; falls {falls}" if downs else "")
             + f"; test: more than +{RISE:.0%}, no step falling by more than {LAT_STEP:.0%})",
             f"LOC-WAL's gain over H-WAL does not grow with latency ({curve[lo]:.3f}x at {lo} ns, "
             f"{curve[hi]:.3f}x at {hi} ns, {_signed(rise)}" + (f"; falls {falls}" if downs else "")
             + f"): at {hi} ns it is {_each(per, '.3f')} times H-WAL, and LOC-WAL writes "
             f"{nvm[LOC]:.0f} NVM bytes per transaction against H-WAL's {nvm[HWAL]:.0f}"
             + (", about the same traffic" if same(nvm[LOC], nvm[HWAL]) else ""))
    return c.finding()


LLC_MISS_COLUMNS = ("llc_misses_per_tx", "llc_miss_per_tx", "llc_misses")


def _llc_per_tx(sel: Rows) -> float | None:
    for col in LLC_MISS_COLUMNS:
        if all(col in r for r in sel):
            return per_tx(sel, col) if not col.endswith("_per_tx") else statistics.fmean(
                float(r[col]) for r in sel)
    return None


LLC_NOISE = 0.01
"""L14: mean LLC misses per transaction within this fraction of each other are the same."""


def check_l14(rows: Rows) -> Finding:
    c = Checks()
    t = {rt: [_traffic(_exp(rows, f"fig6-{k}").where(runtime=rt)) for k in KEYS]
         for rt in (HWAL, LOC)}
    w = {rt: statistics.fmean(b for b, _ in v) for rt, v in t.items()}
    log = {rt: _mean([ln for _, ln in v]) for rt, v in t.items()}
    split = "" if log[LOC] is None or log[HWAL] is None else (
        f": its log's own lines take {log[LOC]:.0f} against H-WAL's {log[HWAL]:.0f} bytes per "
        f"transaction, its write-backs of cached lines {w[LOC] - log[LOC]:.0f} against "
        f"{w[HWAL] - log[HWAL]:.0f}")
    c.expect(w[LOC] < w[HWAL], f"NVM bytes/tx LOC-WAL {w[LOC]:.0f} vs H-WAL {w[HWAL]:.0f} "
             "(test: fewer)",
             f"LOC-WAL writes {w[LOC]:.0f} NVM bytes per transaction, not fewer than H-WAL's "
             f"{w[HWAL]:.0f}{split}")
    miss = {rt: [_llc_per_tx(_exp(rows, f"fig6-{k}").where(runtime=rt)) for k in KEYS]
            for rt in (HWAL, LOC)}
    if any(v is None for vals in miss.values() for v in vals):
        raise MissingRows("rows without an llc_misses_per_tx column (saved by an older "
                          "pmsim): rerun the experiments")
    m = {rt: statistics.fmean(v for v in vals if v is not None) for rt, vals in miss.items()}
    rel = f", {_signed(m[LOC] / m[HWAL] - 1)}" if m[HWAL] else ""
    both = f"{m[LOC]:.2f} vs {m[HWAL]:.2f} per transaction{rel}"
    diff = {k: (a or 0.0) - (b or 0.0) for k, a, b in zip(KEYS, miss[LOC], miss[HWAL], strict=True)}
    even = same(m[LOC], m[HWAL], LLC_NOISE)
    c.expect(m[LOC] < m[HWAL] and not even, f"LLC misses/tx LOC-WAL {m[LOC]:.2f} vs H-WAL "
             f"{m[HWAL]:.2f}{rel} (test: more than {_pct(LLC_NOISE)} fewer)",
             f"LOC-WAL misses the LLC as often as H-WAL ({both}, within {_pct(LLC_NOISE)})" if even
             else f"LOC-WAL misses the LLC more often than H-WAL ({both}; LOC-WAL minus H-WAL per "
             f"workload {_each(diff, '+.2f')})")
    sds = sds_of(rows)
    lo, hi = sds[0], sds[-1]
    coal = {sd: [per_tx(_sd(rows, k, sd), "coalesced") for k in KEYS] for sd in (lo, hi)}
    if any(v is None for vals in coal.values() for v in vals):
        raise MissingRows("LOC-WAL rows without a 'coalesced' counter")
    cl = {sd: statistics.fmean(v for v in vals if v is not None) for sd, vals in coal.items()}
    c.expect(cl[hi] > cl[lo], f"coalesced versions/tx SD {lo}: {cl[lo]:.2f}, SD {hi}: "
             f"{cl[hi]:.2f}",
             "coalescing does not grow with the speculation degree: pmsim's workloads rewrite "
             "few lines across the transactions of a window")
    bw = {sd: _at_sd(rows, sd)[1] for sd in (lo, hi)}
    c.expect(bw[hi] <= bw[lo], f"NVM bytes/tx SD {lo}: {bw[lo]:.0f}, SD {hi}: {bw[hi]:.0f}",
             f"NVM writes do not fall from SD {lo} to {hi} ({bw[lo]:.0f} → {bw[hi]:.0f} bytes per "
             f"transaction): {_sd_why(rows, lo, hi)}")
    return c.finding()


# -- L15: crash consistency -----------------------------------------------------------------------

FUZZ_CAMPAIGNS: tuple[tuple[str, dict[str, Any], int], ...] = (
    (LOC, {"entries": 16, "swaps": 2}, 24),
    ("loc-spill", {"entries": 16, "swaps": 2}, 12),
)
"""L15's campaigns: (runtime, SPS parameters, transactions). LOC-WAL at its default SD 16 over
more than one window; ``loc-spill`` (SD 4, one version way per LLC set) spills a version to the
log at every second write of a line, so recovery meets overflowed, re-logged lines and
count-carrying stubs. Sixteen 8-byte entries share two lines: every transaction of a window
writes a new version of the same lines."""
FUZZ_CONFIG: dict[str, Any] = {"domain": "pdom1", "depth": 1, "idempotence": 2,
                               "budget": 16384, "max_failures": 3}


@functools.cache
def crash_campaigns() -> tuple[dict[str, Any], ...]:
    """The outcome of :data:`FUZZ_CAMPAIGNS` (computed once per process: the reports are
    deterministic)."""
    from crashfuzz import fuzz
    from crashfuzz.campaign import fuzz_machine

    from ...workloads import Session

    out = []
    for rt, params, txs in FUZZ_CAMPAIGNS:
        rep = fuzz(runtime=rt, workload="sps", params=params, txs=txs, **FUZZ_CONFIG)
        s = Session.create(rt, "sps", fuzz_machine(FUZZ_CONFIG["domain"], 1, 0), threads=1,
                           seed=0, txs=txs, params=params, fit=True)
        s.run(txs)
        out.append({"runtime": rt, "ok": rep.ok, "failures": rep.failure_count,
                    "states": rep.states_checked, "points": rep.points,
                    "sampled": rep.points_sampled,
                    "first": rep.failures[0].summary()[:160] if rep.failures else "",
                    "overflow": counter(s.runtime.counters(), "overflow") or 0.0})
    return tuple(out)


def loc_kills() -> list[dict[str, Any]]:
    """The LOC-WAL mutants' rows of the committed kill matrix (none if it has none)."""
    from ..unified import read_kill_matrix

    return [r for r in read_kill_matrix() if r["mutant"].partition(":")[0] in (LOC, EC)]


def check_l15(rows: Rows) -> Finding:
    """Reads the rows only for the spills of the measured runs; the verdict comes from crash
    fuzzing (card §5's oracle), which the rows cannot show."""
    c = Checks()
    spills = sum(counter(r, "overflow") or 0.0 for k in KEYS
                 for r in _exp(rows, f"fig8-{k}").where(runtime=LOC))
    c.note(f"{spills:.0f} version-overflow spills in the Fig. 8 runs")
    try:
        camps = crash_campaigns()
    except Exception as e:  # a campaign that cannot run is a finding, not a crash of the board
        c.expect(False, "crash fuzz did not run", f"the crash-fuzz campaign of LOC-WAL failed "
                 f"to run ({type(e).__name__}: {e})")
        return c.finding()
    for f in camps:
        extra = f", {f['sampled']} points sampled" if f["sampled"] else ""
        c.expect(f["ok"], f"crashfuzz {f['runtime']} on SPS: {f['states']} crash states at "
                 f"{f['points']} points{extra}, {f['overflow']:.0f} spills, "
                 f"{f['failures']} failures",
                 f"crash fuzzing {f['runtime']} found {f['failures']} failures ({f['first']})")
    c.expect(any(f["overflow"] > 0 for f in camps), "version overflow exercised",
             "no campaign overflowed a version set, so recovery after a spill went untested")
    kills = loc_kills()
    if kills:
        bad = [f"{r['mutant']} {r['domain']}" for r in kills if r["killed"] != r["expected_kill"]]
        bugs = [r for r in kills if r["expected_kill"]]
        c.expect(not bad, f"kill matrix: {sum(r['killed'] for r in bugs)}/{len(bugs)} LOC "
                 "mutants killed where they are bugs",
                 f"the kill matrix has LOC mutants against expectation: {', '.join(bad)}")
    else:
        c.note("no LOC mutants in docs/kill-matrix.txt")
    return c.finding()


FIG6_NAMES = tuple(e.name for e in FIG6)
FIG8_NAMES = tuple(e.name for e in FIG8)
FIG9_NAMES = tuple(e.name for e in FIG9)
NO_NVLLC = ("pmsim has no non-volatile LLC: its caches are volatile in PDOM-0/1, and PDOM-2 "
            "makes every level persistent, not the LLC alone, so Kiln's NV-LLC that doubles as "
            "the log cannot be modelled")
CLAIMS: Sequence[Claim] = (
    Claim("L1", "Fig. 6, §V-B", "S-WAL normalised throughput 0.316 (overhead 68.4%), "
          "six-workload average", "mean over B+Tree, Hash, RBTree, SPS within a factor 1.5 of "
          "0.316", FIG6_NAMES, check_l1),
    Claim("L2", "Fig. 6", "H-WAL 0.331 (overhead 66.9%)", "mean over the four workloads "
          "within a factor 1.5 of 0.331", FIG6_NAMES, check_l2),
    Claim("L3", "Fig. 6", "LOC-WAL (SD = 16) 0.651 (overhead 34.9%): ≈1.97x H-WAL, ≈2.06x "
          "S-WAL", "mean within a factor 1.5 of 0.651; LOC/H-WAL in about(1.97), LOC/S-WAL in "
          "about(2.06)", FIG6_NAMES, check_l3),
    Claim("L4", "Fig. 6", "LOC-Kiln 0.811 (overhead 18.9%), ≈1.25x LOC-WAL",
          status="out of reach", reason=NO_NVLLC),
    Claim("L5", "Fig. 6", "LOC-Kiln > Kiln: LOC is complementary to a non-volatile LLC",
          status="out of reach", reason=NO_NVLLC),
    Claim("L6", "§I, §V-B", "Strict ordering slows some memory-intensive workloads by up to "
          "~10x", "largest S-/H-WAL slowdown over the baseline across workloads in about(10)",
          FIG6_NAMES, check_l6, "qualitative"),
    Claim("L7", "§V-B", "S-WAL is only slightly below H-WAL: dropping the second cached copy "
          "does not greatly reduce the overhead", "S-WAL ≤ H-WAL and S-WAL/H-WAL ≥ 0.8 (means)",
          FIG6_NAMES, check_l7, "qualitative"),
    Claim("L8", "Fig. 7, §V-C", "EC-WAL beats H-WAL by 6.4% on average (≈0.352)",
          "mean EC-WAL / mean H-WAL in about(1.064)", FIG6_NAMES, check_l8),
    Claim("L9", "Fig. 8, §V-D", "LOC-WAL grows with SD: 0.353 at SD 1 → 0.689 at SD 32 "
          "(+95.5%); 0.651 at SD 16", "SD 1 and SD 32 means within a factor 1.5 of the paper's; "
          "SD 32/SD 1 in about(1.955); grows: SD 32 more than 2% above SD 1 and no step down of "
          "more than 2%",
          FIG6_NAMES + FIG8_NAMES, check_l9),
    Claim("L10", "Fig. 8 vs Fig. 7 [I]", "LOC-WAL at SD 1 (0.353) ≈ EC-WAL (≈0.352)",
          f"means within {_pct(SAME)} (LOC-WAL at SD 1 is EC-WAL by construction: a check of "
          "pmsim's implementation)", FIG6_NAMES + FIG8_NAMES, check_l10, "self-check"),
    Claim("L11", "Figs. 6-8 [I]", "Of the H-WAL → LOC-WAL gain EC gives ≈7%, SP ≈93%; SP alone "
          "≈1.85x EC-WAL", "EC's share of the gain in [0, 20%]; LOC/EC in about(1.85)",
          FIG6_NAMES, check_l11),
    Claim("L12", "Fig. 9, §V-E", "H-WAL's normalised throughput falls as memory latency rises "
          "(35, 95, 168, 1000 ns)", "mean over the workloads never rises by more than 1% from one "
          "latency to the next and ends more than 2% below its value at 35 ns",
          FIG6_NAMES + FIG9_NAMES, check_l12, "qualitative"),
    Claim("L13", "Fig. 9", "LOC-WAL's improvement over H-WAL grows with latency",
          "mean LOC/H-WAL never falls by more than 1% from one latency to the next and ends more "
          "than 2% above its value at 35 ns",
          FIG6_NAMES + FIG9_NAMES, check_l13, "qualitative"),
    Claim("L14", "§III-B, §V-D", "The gains come from fewer forced writebacks and cross-tx "
          "coalescing (fewer NVM writes), both growing with SD",
          "NVM bytes/tx LOC < H-WAL; LLC misses/tx LOC more than 1% below H-WAL's; coalesced "
          "versions/tx higher and NVM bytes/tx no higher at the largest SD than at the "
          "smallest", FIG6_NAMES + FIG8_NAMES, check_l14, "qualitative"),
    Claim("L15", "§III-B, §III-C", "Version overflow never breaks correctness; recovery yields "
          "the in-order committed prefix", "small crash-fuzz campaigns on SPS of LOC-WAL (SD "
          "16) and of loc-spill (version overflow at every second write) find no failure; LOC "
          "mutants in the committed kill matrix killed exactly where expected", FIG8_NAMES,
          check_l15, "qualitative"),
)

AVERAGE = "average"
"""The x of the mean over pmsim's four workloads in :data:`FIG6_FIGURE`."""


def fig6_rows(rows: Rows) -> list[dict[str, Any]]:
    """Fig. 6 as measured: each runtime's normalised throughput per workload and their mean
    (card §10's average, over pmsim's four workloads), one row each."""
    out: list[dict[str, Any]] = []
    for rt in (SWAL, HWAL, EC, LOC):
        try:
            mean, per = average(lambda k, rt=rt: normalised(rows, k, rt))
        except MissingRows:
            continue
        out += [{"runtime": NAMES[rt], "preset": PRESET[0], "workload": WORKLOADS[k][1],
                 "normalised": v} for k, v in per.items()]
        out.append({"runtime": NAMES[rt], "preset": PRESET[0], "workload": AVERAGE,
                    "normalised": mean})
    return out


FIG6_FIGURE = Figure(
    "loc-fig6", "Normalised throughput and its mean (Fig. 6)", x="workload",
    y="normalised", xlabel="", ylabel="throughput / no tx support", panels="preset",
    series="runtime", kind="bar", order=tuple(NAMES[r] for r in (SWAL, HWAL, EC, LOC)),
    published=tuple((NAMES[r], AVERAGE, v) for r, v in PAPER_AVG.items()))
"""Fig. 6 beside the paper's six-workload averages (stars on the mean; the paper gives its
per-workload bars as an image only)."""

PAPER = register_paper(Paper(
    "loc", "Loose-Ordering Consistency for Persistent Memory",
    "Y. Lu, J. Shu, L. Sun, O. Mutlu, Loose-Ordering Consistency for Persistent Memory, "
    "IEEE International Conference on Computer Design (ICCD), 2014.",
    "loc.md", EXPERIMENTS, CLAIMS, figures=(FIG6_FIGURE,), figure_rows=fig6_rows))

__all__ = ["CLAIMS", "EXPERIMENTS", "FIG6_FIGURE", "PAPER", "WORKLOADS", "average", "counter",
           "crash_campaigns", "fig6_rows", "normalised", "normalised_sd", "per_tx", "sds_of"]
