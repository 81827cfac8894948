"""Synthetic rows for the Marathe experiments: a closed-form world in which every claim the model
reaches holds, with knobs that make each claim differ (tests of the predicates)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

BARRIER = {"pdom0": 500.0, "pdom1": 100.0, "pdom2": 0.0}
DOMS = ("pdom0", "pdom1", "pdom2")


@dataclass(frozen=True)
class World:
    barrier: tuple[float, float, float] = (500.0, 100.0, 0.0)
    undo_write: float = 1000.0  # non-PB cost of undo's writes per transaction at 100% (slot 4)
    redo_write: float = 2250.0
    redo_base: float = 4000.0
    cow4: float = 1.1  # COW latency / slowest of undo, redo (slot 4)
    cow64: float = 50.0  # COW latency / fastest (slot 64)
    undo64_write: float = 16000.0  # includes the checksum: undo visibly slower (~1.2x) at 100%
    raw_undo: float = 0.3
    raw_redo: float = 1.5
    eager: tuple[float, float, float] = (1.6, 1.25, 1.02)
    kv_undo: float = 1.0  # undo throughput / redo's
    kv_drop: tuple[float, float] = (0.88, 0.86)  # PDOM-1/PDOM-2, PDOM-0/PDOM-1
    redo_pbs: float = 4.0

    def b(self, dom: str) -> float:
        return self.barrier[DOMS.index(dom)]


def _row(exp: str, rt: str, dom: str, **kw: Any) -> dict[str, Any]:
    return {"paper": "marathe", "experiment": exp, "runtime": rt, "domain": dom,
            "preset": f"marathe-{dom}", "threads": 1, **kw}


def _array(w: World, rt: str, dom: str, f: float, slot: int) -> tuple[float, float]:
    """(latency, PBs) of one Array transaction, write fraction f."""
    k = 20 * f
    if slot == 4:
        non = {"undo": 4000 + w.undo_write * f, "undo-2pb": 4000 + 800 * f,
               "redo": w.redo_base + w.redo_write * f}
    else:
        non = {"undo": 50000 + w.undo64_write * f, "undo-2pb": 50000 + 6000 * f,
               "redo": 50000 + 6000 * f}
    pbs = {"undo": k + 2 if k else 0, "undo-2pb": 2 * k + 2 if k else 0,
           "redo": w.redo_pbs if k else 0}
    if rt == "cow":
        lat = {r: non[r] + pbs[r] * w.b(dom) for r in ("undo", "redo")}
        return ((w.cow4 * max(lat.values())) if slot == 4 else w.cow64 * min(lat.values()),
                4.0 if k else 0.0)
    return non[rt] + pbs[rt] * w.b(dom), pbs[rt]


def _raw(w: World, rt: str, dom: str, f: float) -> float:
    if rt == "cow":
        return 1.03 * _array(w, "cow", dom, f, 4)[0]
    base, _ = _array(replace(w, barrier=(0.0, 0.0, 0.0)), rt, dom, f, 4)
    if rt == "undo":
        pbs = 4 * 20 * f + 2 if f else 0
        return base * (1 + w.raw_undo * f) + pbs * w.b(dom)
    return base * (1 + w.raw_redo * f) + (4 if f else 0) * w.b(dom)


def _stalls(barrier_ns: float) -> dict[str, float]:
    """The stall counters of a row of this world: its barriers' fixed cost, no store buffer."""
    return {"barrier_stall_ns_per_tx": barrier_ns, "sb_stall_ns_per_tx": 0.0}


def rows(w: World = World()) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for dom in DOMS:
        for slot in (4, 64):
            for wp in (0, 50, 100):
                for rt in ("undo", "undo-2pb", "redo", "cow"):
                    lat, pb = _array(w, rt, dom, wp / 100, slot)
                    out.append(_row(f"array-slot{slot}", rt, dom, write_pct=wp, slot_words=slot,
                                    lat_p50=lat, pb_per_tx=pb, throughput=1e9 / lat,
                                    llc_misses_per_tx=2.0 if rt == "cow" else 1.0,
                                    **_stalls(pb * w.b(dom))))
        for wp in (0, 25, 50, 100):
            for rt in ("undo", "redo", "cow"):
                lat = _raw(w, rt, dom, wp / 100)
                out.append(_row("raw-slot4", rt, dom, write_pct=wp, lat_p50=lat,
                                pb_per_tx=0.0, throughput=1e9 / lat))
        for x in (4, 16):
            for rt in ("undo", "redo", "cow"):
                lazy = 2000 + 500 * x + (x + 4 if rt == "undo" else 4) * w.b(dom)
                pb = float(x + 4 if rt == "undo" else 4)
                out.append(_row("alloc-x", rt, dom, x=x, lat_p50=lazy, pb_per_tx=pb,
                                **_stalls(pb * w.b(dom))))
                out.append(_row("alloc-x", f"{rt}-eager", dom, x=x,
                                lat_p50=lazy * w.eager[DOMS.index(dom)], pb_per_tx=2.0 * x,
                                **_stalls(2.0 * x * w.b(dom))))
        scale = {"pdom2": 1.0, "pdom1": w.kv_drop[0], "pdom0": w.kv_drop[0] * w.kv_drop[1]}
        for th in (1, 2):
            for get in (90.0, 50.0):
                base = 1e6 * th * scale[dom]
                for rt, t in (("undo", base * w.kv_undo), ("redo", base), ("cow", 0.8 * base)):
                    out.append({**_row("kv", rt, dom, throughput=t, lat_p50=1e9 / t,
                                       get_pct=get, put_pct=100 - get), "threads": th})
    return out
