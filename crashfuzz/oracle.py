"""The oracle: which application states are correct after a crash at a given point.

A crash-free run gives, per thread, the transactions that committed, in order, and where in the
trace each one began and had its durability acknowledged. After a crash at point k a recovered
image is correct iff its application data equals the reference model after applying a set S of
committed transactions such that, for every thread t, S holds a *prefix* of t's committed
transactions of length n_t with

    durable_t(k) <= n_t <= begun_t(k)

(durable_t: acknowledged before k; begun_t: begun before k), applied in the run's commit order.

With one thread this is DESIGN.md's "first j transactions, acknowledged <= j <= begun". With
several threads the set of durable transactions need not be a prefix of the global commit order:
two transactions on different threads that share no lock may reach their commit points in one
order and persist them in the other. Per-thread prefixes accept exactly those outcomes; the
real-time order is still enforced, because a transaction that began after another was
acknowledged is only counted once that one is (it is below every later point's lower bound).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from pmsim.trace import Ev, Mark, Trace


@dataclass
class TxHistory:
    """What the crash-free run did: per-thread committed txids and their marker positions."""

    commit_order: list[int]  # txids in serialization order (default: of their TX_COMMIT markers)
    by_thread: dict[int, list[int]]  # tid -> committed txids in program order
    begin_pos: dict[int, int]  # txid -> trace index of TX_BEGIN
    durable_pos: dict[int, int]  # txid -> trace index of TX_DURABLE (absent: never acked)
    _bounds: dict[int, dict[int, tuple[int, int]]] = field(default_factory=dict, repr=False)

    @classmethod
    def from_trace(cls, trace: Trace, order: Sequence[int] = ()) -> TxHistory:
        """The history of ``trace``; ``order``: the runtime's serialization order
        (``Runtime.commit_order``), which places a read-only transaction at its snapshot where
        its TX_COMMIT marker may come later; the committed transactions it omits keep their
        marker order after it."""
        ev = trace.events
        marks = np.nonzero(ev["kind"] == Ev.MARK)[0]
        begin: dict[int, int] = {}
        durable: dict[int, int] = {}
        committed: list[int] = []
        aborted: set[int] = set()
        for i in marks.tolist():
            code = int(ev["aux"][i])
            txid = int(ev["value"][i])
            if code == Mark.TX_BEGIN:
                begin[txid] = i
            elif code == Mark.TX_COMMIT:
                committed.append(txid)
            elif code == Mark.TX_DURABLE:
                durable[txid] = i
            elif code == Mark.TX_ABORT:
                aborted.add(txid)
        committed = [t for t in committed if t not in aborted]
        if order:
            known = set(committed)
            first = [t for t in order if t in known]
            seen = set(first)
            committed = first + [t for t in committed if t not in seen]
        by_thread: dict[int, list[int]] = {}
        for txid in sorted(committed, key=lambda t: begin.get(t, -1)):
            by_thread.setdefault(txid >> 32, []).append(txid)
        return cls(committed, by_thread, begin, durable)

    def bounds(self, k: int) -> dict[int, tuple[int, int]]:
        """Per thread, (durable before k, begun before k) counted over committed transactions."""
        cached = self._bounds.get(k)
        if cached is not None:
            return cached
        out: dict[int, tuple[int, int]] = {}
        for tid, txs in self.by_thread.items():
            lo = sum(1 for t in txs if self.durable_pos.get(t, 1 << 62) < k)
            hi = sum(1 for t in txs if self.begin_pos.get(t, 1 << 62) < k)
            out[tid] = (lo, max(lo, hi))
        self._bounds[k] = out
        return out


@dataclass
class Oracle:
    """Acceptable application snapshots per crash point, computed lazily and cached."""

    history: TxHistory
    expected: Callable[[Sequence[int]], Hashable]  # txids in commit order -> snapshot
    _cache: dict[tuple, Hashable] = field(default_factory=dict)
    _points: dict[int, tuple[list[tuple[tuple[int, ...], Hashable]],
                             dict[Hashable, Hashable] | None]] = field(default_factory=dict,
                                                                       repr=False)

    def candidates(self, k: int) -> list[tuple[tuple[int, ...], Hashable]]:
        """(per-thread prefix lengths, expected snapshot) for every acceptable outcome at k."""
        return self._at(k)[0]

    def _at(self, k: int) -> tuple[list[tuple[tuple[int, ...], Hashable]],
                                   dict[Hashable, Hashable] | None]:
        """The candidates at k and their snapshots as a dict (each maps to itself; None if one
        is unhashable), computed once per point: a campaign checks many images at each."""
        got = self._points.get(k)
        if got is None:
            cands = self._candidates(k)
            try:
                accepted: dict[Hashable, Hashable] | None = {exp: exp for _, exp in cands}
            except TypeError:
                accepted = None
            got = self._points[k] = (cands, accepted)
        return got

    def _candidates(self, k: int) -> list[tuple[tuple[int, ...], Hashable]]:
        bounds = self.history.bounds(k)
        tids = sorted(bounds)
        ranges = [range(bounds[t][0], bounds[t][1] + 1) for t in tids]
        out = []
        for combo in itertools.product(*ranges):
            key = tuple(combo)
            if key not in self._cache:
                chosen: set[int] = set()
                for t, n in zip(tids, combo, strict=True):
                    chosen.update(self.history.by_thread[t][:n])
                order = [x for x in self.history.commit_order if x in chosen]
                self._cache[key] = self.expected(order)
            out.append((key, self._cache[key]))
        return out

    def check(self, k: int, snapshot: Hashable) -> tuple[bool, list[tuple[tuple[int, ...], Hashable]]]:
        """Whether ``snapshot`` is acceptable at point k, and the candidates it was compared with."""
        cands, accepted = self._at(k)
        if accepted is not None:
            try:
                return snapshot in accepted, cands
            except TypeError:  # an unhashable snapshot: compare one by one
                pass
        return any(snapshot == exp for _, exp in cands), cands

    def canonical(self, k: int, snapshot: Hashable) -> Hashable:
        """The acceptable snapshot at point k equal to ``snapshot`` (one shared object), or
        ``snapshot`` itself. A campaign keeps every recovered image's data; sharing the
        oracle's copy frees the duplicate at once instead of leaving thousands of tuples for
        the cyclic garbage collector to traverse."""
        accepted = self._at(k)[1]
        if accepted is None:
            return snapshot
        try:
            return accepted.get(snapshot, snapshot)
        except TypeError:
            return snapshot
