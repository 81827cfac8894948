"""A lock-free append-only log: threads reserve slots with a CAS on the tail, fill them, and
any thread advances the persistent watermark over the filled prefix.

The watermark is the commit point: recovery keeps the entries below it, resets the tail to it
and clears the slots above it (a recovery that writes). An append returns once the watermark
covers its slot, helping to advance it over slots other threads filled. A thread that advances
the watermark over another thread's slot must first persist that entry (helping): the other
thread may have stored it and not yet flushed it. Whether a run exposes that window depends on
the interleaving: ``pm.pause()`` marks the switch points schedule exploration acts on.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from typing import Any

from ..api import PM, PMProgram, operation

TAIL, MARK, FIRST = 0, 64, 128
CAPACITY = 32
STRIDE = 64  # one slot per cache line: a thread's flush of its slot flushes no other's


class AppendModel:
    """The reference: a list; an append returns its slot (None when the log is full)."""

    def __init__(self) -> None:
        self.items: list[int] = []
        self.reserved = 0

    def append(self, v: int) -> int | None:
        if self.reserved >= CAPACITY:
            return None
        self.reserved += 1
        self.items.append(v)
        return len(self.items) - 1

    def state(self) -> Hashable:
        return tuple(self.items)


class LFLog(PMProgram):
    """Persist your own entry; persist the entries you advance the watermark over."""

    size = FIRST + STRIDE * CAPACITY
    model = AppendModel
    paths = ("help", "wait", "full")

    @operation(args=lambda rng: (int(rng.integers(1, 1 << 32)),))
    def append(self, pm: PM, v: int) -> Generator[Any, Any, int | None]:
        while True:
            i = pm.load(TAIL)
            if pm.cas(TAIL, i, i + 1, step="append.reserve") == i:
                break
        pm.linearize()
        if i >= CAPACITY:
            pm.path("full")
            return None
        slot = FIRST + STRIDE * i
        pm.store(slot, v)
        yield from pm.pause()
        pm.persist(slot, step="append.entry")
        while (w := pm.load(MARK)) <= i:
            j = w
            while j <= i and pm.load(FIRST + STRIDE * j):
                j += 1
            if j == w:  # the slot at the watermark is reserved but not filled yet
                pm.path("wait")
                yield from pm.pause()
                continue
            if j - w > 1 or w != i:
                pm.path("help")
            self._help(pm, w, j)
            if pm.cas(MARK, w, j, step="advance.mark") == w:
                pm.persist(MARK, step="advance.persist")
        return i

    def _help(self, pm: PM, lo: int, hi: int) -> None:
        """Persist the entries of slots ``[lo, hi)`` before the watermark covers them."""
        pm.persist(FIRST + STRIDE * lo, STRIDE * (hi - lo), step="advance.help")

    def recover(self, pm: PM) -> None:
        mark = min(pm.load(MARK), CAPACITY)
        for j in range(mark, CAPACITY):
            if pm.load(FIRST + STRIDE * j):
                pm.store(FIRST + STRIDE * j, 0)
        pm.persist(FIRST, STRIDE * CAPACITY, step="recover.clear")
        pm.store(TAIL, mark)
        pm.persist(TAIL, step="recover.tail")

    def entries(self, pm: PM) -> list[int]:
        return [pm.load(FIRST + STRIDE * j) for j in range(min(pm.load(MARK), CAPACITY))]

    def state(self, pm: PM) -> Hashable:
        return tuple(self.entries(pm))

    def check(self, pm: PM) -> list[str]:
        return [f"slot {j} below the watermark is empty"
                for j, v in enumerate(self.entries(pm)) if not v]


class LFLogNoHelp(LFLog):
    """BROKEN: the watermark is advanced over slots other threads filled without persisting
    them. Only an interleaving in which a thread advances the watermark between another
    thread's store and its flush exposes it: a crash then keeps the watermark and loses the
    entry."""

    def _help(self, pm: PM, lo: int, hi: int) -> None:
        return None
