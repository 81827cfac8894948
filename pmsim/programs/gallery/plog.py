"""An append-only log with a persistent length: the entry is persisted, then the length.

The length word is the commit point of an append. The entries live in the region after the
length's cache line.
"""

from __future__ import annotations

from collections.abc import Hashable

from ..api import PM, PMProgram, operation

TAIL = 0
FIRST = 64
CAPACITY = 256


class LogModel:
    """The reference: a list."""

    def __init__(self) -> None:
        self.items: list[int] = []

    def append(self, v: int) -> bool:
        if len(self.items) == CAPACITY:
            return False
        self.items.append(v)
        return True

    def get(self, i: int) -> int | None:
        return self.items[i] if i < len(self.items) else None

    def state(self) -> Hashable:
        return tuple(self.items)


class PLog(PMProgram):
    """Persist the entry, then the length."""

    size = FIRST + 8 * CAPACITY
    model = LogModel

    @operation(args=lambda rng: (int(rng.integers(1, 1 << 32)),), weight=3)
    def append(self, pm: PM, v: int) -> bool:
        n = pm.load(TAIL)
        if n == CAPACITY:
            return False
        self._write(pm, n, v)
        return True

    def _write(self, pm: PM, n: int, v: int) -> None:
        pm.store(FIRST + 8 * n, v)
        pm.persist(FIRST + 8 * n, step="append.entry")
        pm.store(TAIL, n + 1)
        pm.persist(TAIL, step="append.length")

    @operation(args=lambda rng: (int(rng.integers(0, 8)),))
    def get(self, pm: PM, i: int) -> int | None:
        return pm.load(FIRST + 8 * i) if i < pm.load(TAIL) else None

    def state(self, pm: PM) -> Hashable:
        n = min(pm.load(TAIL), CAPACITY)
        return tuple(pm.load_words(FIRST, n))

    def check(self, pm: PM) -> list[str]:
        n = pm.load(TAIL)
        return [f"length {n} exceeds the capacity {CAPACITY}"] if n > CAPACITY else []


class PLogUnorderedLength(PLog):
    """BROKEN: a counter and an entry updated separately, flushed together: the length may
    persist before the entry, and the recovered log ends in an entry that was never written."""

    def _write(self, pm: PM, n: int, v: int) -> None:
        pm.store(FIRST + 8 * n, v)
        pm.store(TAIL, n + 1)
        pm.flush(FIRST + 8 * n, step="append.flush-entry")
        pm.persist(TAIL, step="append.length")
