"""The robustness oracle: correct without a model, as PSan (Gorjiara et al., 2022) defines it.

A program is *robust* if every state it can recover to under the chosen persistency model
(px86 or line, PDOM-0/1/2) is also a state it could recover to under **strict persistency**,
where stores persist in their visibility order: after a crash at point k, the persisted stores
are a prefix of the first n_k stores of the trace's store order (x86-TSO's visibility order).
So the acceptable recovered states at k are what recovery makes of those n_k + 1 prefix images
(:class:`RobustOracle`); each is recovered once.

For an image whose recovered state is none of them, :func:`violation` names the pair of stores
whose persist order was violated: a later store the image holds, and an earlier one it lacks,
both to words that recovery read. Persisting the earlier one before the later (a ``clwb`` of its
line and an ``sfence`` right after it) restores the order; :func:`fix_text` says so in the
program's terms, and a PM program can be re-fuzzed with that fix applied
(``crashfuzz.repair_program``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pmsim.trace import Ev

from .model import image_hash
from .oracle import Oracle, TxHistory
from .states import CrashModel

ORACLES = ("auto", "model", "robust")
"""``model``: the workload's reference model; ``robust``: strict-persistency cuts; ``auto``:
the model when the workload has one (a PM program may not), else robustness."""


class Cut(tuple[int, ...]):
    """An acceptable outcome's key: zero per thread (no reference transactions) and the number
    of stores of the strict-persistency prefix it came from."""

    stores: int

    def __new__(cls, threads: int, stores: int) -> Cut:
        c = super().__new__(cls, (0,) * threads)
        c.stores = stores
        return c


class RobustOracle(Oracle):
    """Acceptable states at point k: the recovered states of the images in which exactly the
    first j stores of the store order persisted, for every j up to the stores before k."""

    def __init__(self, history: TxHistory, model: CrashModel,
                 view: Callable[[np.ndarray], Hashable]) -> None:
        super().__init__(history, _no_reference)
        self.crash_model = model
        self.view = view
        self._views: list[Hashable] = []
        self._seen: dict[tuple[int, int], Hashable] = {}
        self._threads = len(history.by_thread)

    @staticmethod
    def failed(state: Hashable) -> bool:
        """Whether ``state`` is a recovery (or data reader) that raised or did not end."""
        from .campaign import RecoveryCrash  # the campaign imports this module

        return isinstance(state, RecoveryCrash)

    def state_after(self, j: int) -> Hashable:
        """The recovered state of the image holding exactly the first ``j`` stores."""
        ix = self.crash_model.index
        while len(self._views) <= j:
            img = ix.image_at(ix.counts_of_prefix(len(self._views)))
            h = image_hash(img)
            got = self._seen.get(h)
            if got is None:
                got = self._seen[h] = self.view(img)
            self._views.append(got)
        return self._views[j]

    def _candidates(self, k: int) -> list[tuple[tuple[int, ...], Hashable]]:
        n = self.crash_model.index.stores_before(k)
        out: dict[Any, tuple[tuple[int, ...], Hashable]] = {}
        plain: list[tuple[tuple[int, ...], Hashable]] = []
        for j in range(n + 1):
            v = self.state_after(j)
            if self.failed(v):  # a prefix whose recovery raised is no correct state: the
                continue       # image itself is checked (and reported) as a crash image too
            try:
                if v not in out:
                    out[v] = (Cut(self._threads, j), v)
            except TypeError:
                plain.append((Cut(self._threads, j), v))
        return list(out.values()) + plain


def _no_reference(order: Sequence[int]) -> Hashable:
    raise AssertionError("the robustness oracle has no reference model")


@dataclass(frozen=True)
class Violation:
    """Two stores persisted out of their visibility order: ``later`` persisted, ``earlier``
    (to another word, issued before it) did not. Trace event indices and byte addresses."""

    earlier: int
    later: int
    earlier_addr: int
    later_addr: int


def violation(model: CrashModel, k: int, img: np.ndarray,
              reads: Collection[int] | None = None) -> Violation | None:
    """The violated store pair of ``img`` at point ``k``, among the PM words ``reads`` (word
    indices; all written words when None). Each word's value allows the prefix lengths j of
    the intervals where the word holds it; the word whose earliest allowed j is the largest,
    against the word whose latest allowed j is the smallest, is a pair no prefix satisfies when
    the first exceeds the second. None otherwise (the words read agree with some prefix, or
    disagree only through values that recur, which no single pair explains)."""
    ix = model.index
    tr = model.trace
    n = ix.stores_before(k)
    ev = tr.events
    pos = ix.store_event[:n]
    words = ((ev["addr"][pos].astype(np.int64) - tr.pm_base) >> 3)
    vals = ev["value"][pos].astype(np.uint64)
    base = tr.base.view(np.uint64)
    got = img.view(np.uint64)
    wanted = None if reads is None else set(int(w) for w in reads)
    lo_best = (-1, -1)  # (lower bound, word)
    hi_best = (n + 1, -1)
    by_word: dict[int, list[int]] = {}
    for g, w in enumerate(words.tolist()):
        by_word.setdefault(w, []).append(g)
    for w, gs in by_word.items():
        if wanted is not None and w not in wanted:
            continue
        cur = got[w]
        # intervals [bounds[i], ends[i]] of prefix lengths j in which the word holds its i-th
        # value (0: the base); lo is the earliest j allowing cur, hi the latest
        bounds = [0] + [g + 1 for g in gs]
        ends = [g for g in gs] + [n]
        match = [i for i in range(len(bounds))
                 if (base[w] if i == 0 else vals[gs[i - 1]]) == cur]
        if not match:
            continue  # a value no prefix has (a torn or foreign store): not this oracle's pair
        lo, hi = bounds[match[0]], ends[match[-1]]
        if lo > lo_best[0]:
            lo_best = (lo, w)
        if hi < hi_best[0]:
            hi_best = (hi, w)
    if lo_best[0] <= hi_best[0]:
        return None
    later_g, earlier_g = lo_best[0] - 1, hi_best[0]
    return Violation(int(pos[earlier_g]), int(pos[later_g]),
                     int(ev["addr"][pos[earlier_g]]), int(ev["addr"][pos[later_g]]))


def store_kind(trace: Any, i: int) -> str:
    k = int(trace.events["kind"][i])
    return {int(Ev.STORE): "store", int(Ev.NTSTORE): "ntstore", int(Ev.RMW): "locked RMW"}.get(
        k, "store")


__all__ = ["ORACLES", "Cut", "RobustOracle", "Violation", "violation"]
