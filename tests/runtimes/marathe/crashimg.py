"""A small crash-image generator and oracle for the runtime tests.

At each crash point (just before every fence, and at the end) it builds, from the trace, the
image holding only what was guaranteed persistent (PDOM-1: flushed and fenced, or evicted),
that image plus each single line with unpersisted stores, and the image with everything
visible. PDOM-2 images are prefixes of the store order. The oracle accepts the reference data
after per-thread prefixes of the committed transactions between "durable" and "begun".
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from pmsim import Machine
from pmsim.trace import Ev, Mark
from pmsim.workloads import Session

FENCES = {int(Ev.SFENCE), int(Ev.MFENCE), int(Ev.RMW)}


@dataclass
class Failure:
    point: int
    what: str


def _stores(ev: np.ndarray) -> list[tuple[int, int, int]]:
    out = []
    for i, (k, aux, addr, val) in enumerate(zip(ev["kind"].tolist(), ev["aux"].tolist(),
                                                ev["addr"].tolist(), ev["value"].tolist(),
                                                strict=True)):
        if k in (Ev.STORE, Ev.NTSTORE) or (k == Ev.RMW and aux == 1):
            out.append((i, addr, val))
    return out


def images(trace, domain: str, k: int) -> Iterator[np.ndarray]:
    """Crash images at point ``k`` (before event k)."""
    ev = trace.events[:k]
    base = trace.base.view(np.uint64).copy()
    pmb = trace.pm_base
    stores = _stores(ev)

    def build(upto: dict[int, int], full: set[int]) -> np.ndarray:
        img = base.copy()
        for i, addr, val in stores:
            line = addr >> 6
            if line in full or i <= upto.get(line, -1):
                img[(addr - pmb) >> 3] = val
        return img.view(np.uint8)

    if domain == "pdom2":  # everything visible is persistent
        yield _prefix(base, stores, k, pmb)
        return
    last: dict[int, int] = {}
    guaranteed: dict[int, int] = {}
    pending: dict[int, dict[int, int]] = {}
    kinds, tids, auxs, addrs = (ev[f].tolist() for f in ("kind", "tid", "aux", "addr"))
    for i, (kd, t, aux, addr) in enumerate(zip(kinds, tids, auxs, addrs, strict=True)):
        line = addr >> 6
        if kd in (Ev.STORE, Ev.NTSTORE) or (kd == Ev.RMW and aux == 1):
            last[line] = i
            if kd == Ev.NTSTORE:
                pending.setdefault(t, {})[line] = i
        if kd in (Ev.CLWB, Ev.CLFLUSHOPT) and line in last:
            pending.setdefault(t, {})[line] = last[line]
        elif kd == Ev.CLFLUSH and line in last:
            guaranteed[line] = max(guaranteed.get(line, -1), last[line])
        elif kd == Ev.WB and aux == 0 and line in last:
            guaranteed[line] = max(guaranteed.get(line, -1), last[line])
        if kd in FENCES and (domain == "pdom1" or kd == Ev.RMW):
            for ln, j in pending.pop(t, {}).items():
                guaranteed[ln] = max(guaranteed.get(ln, -1), j)
        if kd == Ev.PCOMMIT and domain == "pdom0":
            for ln, j in pending.pop(t, {}).items():
                guaranteed[ln] = max(guaranteed.get(ln, -1), j)
    low = build(guaranteed, set())
    yield low
    by_line: dict[int, list[tuple[int, int, int]]] = {}
    for st in stores:
        if st[0] > guaranteed.get(st[1] >> 6, -1):
            by_line.setdefault(st[1] >> 6, []).append(st)

    def plus(lines: dict[int, int]) -> np.ndarray:
        img = low.view(np.uint64).copy()
        for ln, upto in lines.items():
            for i, addr, val in by_line[ln]:
                if i <= upto:
                    img[(addr - pmb) >> 3] = val
        return img.view(np.uint8)

    dirty = list(by_line)
    for ln in dirty:  # one line persisted further, store by store
        for i, _, _ in by_line[ln]:
            yield plus({ln: i})
    if len(dirty) > 1:
        for ln in dirty:  # everything but one line
            yield plus({x: k for x in dirty if x != ln})
        yield plus(dict.fromkeys(dirty, k))


def _prefix(base: np.ndarray, stores: list[tuple[int, int, int]], lim: int, pmb: int) -> np.ndarray:
    img = base.copy()
    for i, addr, val in stores:
        if i > lim:
            break
        img[(addr - pmb) >> 3] = val
    return img.view(np.uint8)


def crash_points(trace, domain: str) -> list[int]:
    """Before every fence (PDOM-0/1) or after every store (PDOM-2), after every durability
    acknowledgement, and at the end."""
    kinds = trace.events["kind"]
    aux = trace.events["aux"]
    if domain == "pdom2":
        pts = {i + 1 for i, _, _ in _stores(trace.events)}
    else:
        pts = {i for i, kd in enumerate(kinds.tolist()) if kd in FENCES}
    pts |= {i + 1 for i in np.flatnonzero((kinds == Ev.MARK) & (aux == Mark.TX_DURABLE)).tolist()}
    pts.add(len(kinds))
    return sorted(pts)


def acceptable(session: Session, trace, k: int) -> set:
    """Reference snapshots acceptable after a crash at point k."""
    ev = trace.events
    marks = np.flatnonzero(ev["kind"] == Ev.MARK).tolist()
    begin, durable = {}, {}
    for i in marks:
        code, txid = int(ev["aux"][i]), int(ev["value"][i])
        if code == Mark.TX_BEGIN:
            begin[txid] = i
        elif code == Mark.TX_DURABLE:
            durable[txid] = i
    order = session.runtime.commit_order
    per: dict[int, list[int]] = {}
    for t in sorted(order, key=lambda x: begin[x]):
        per.setdefault(t >> 32, []).append(t)
    tids = sorted(per)
    ranges = []
    for t in tids:
        lo = sum(1 for x in per[t] if durable.get(x, 1 << 62) < k)
        hi = sum(1 for x in per[t] if begin[x] < k)
        ranges.append(range(lo, hi + 1))
    out = set()
    for combo in itertools.product(*ranges):
        chosen = set()
        for t, n in zip(tids, combo, strict=True):
            chosen.update(per[t][:n])
        out.add(session.workload.expected([x for x in order if x in chosen]))
    return out


def crash_check(session: Session, txs: int, max_failures: int = 1) -> list[Failure]:
    """Run crash-free, then recover every image at every crash point; return failures."""
    session.run(txs)
    if not session.check():
        return [Failure(-1, "crash-free run disagrees with the reference model")]
    trace = session.machine.trace()
    domain = session.machine.config.domain
    scratch = Machine(session.machine.config, backend=session.machine.backend)
    fails: list[Failure] = []
    for k in crash_points(trace, domain):
        ok = acceptable(session, trace, k)
        for img in images(trace, domain, k):
            rec = session.recover(img, scratch)
            if rec.errors:
                fails.append(Failure(k, "; ".join(rec.errors[:3])))
            elif rec.data not in ok:
                fails.append(Failure(k, f"data {rec.data!r} not in {sorted(ok, key=repr)[:3]!r}"))
            if len(fails) >= max_failures:
                return fails
    return fails
