"""Items that move between two bins, each marked by a presence flag per bin.

A move sets the destination flag, persists it, then clears the source flag: a crash between
the two leaves the item in both bins, never in neither, and recovery removes the duplicate (a
recovery that writes). This is the "two-flag move" of persistent indexes that relocate an
entry (level hashing's cuckoo displacement, CCEH's segment split).
"""

from __future__ import annotations

from collections.abc import Hashable

from ..api import PM, PMProgram, operation

ITEMS = 8
BIN_A, BIN_B = 0, 64  # one cache line of flags per bin


class BinsModel:
    """The reference: the bin (0 or 1) of each item."""

    def __init__(self) -> None:
        self.where = [0] * ITEMS

    def move(self, i: int) -> int:
        self.where[i] ^= 1
        return self.where[i]

    def state(self) -> Hashable:
        return tuple(self.where)


class TwoBins(PMProgram):
    """Set the destination flag, persist, clear the source flag; recovery deduplicates."""

    size = 128
    model = BinsModel

    def init(self, pm: PM) -> None:
        for i in range(ITEMS):
            pm.store(BIN_A + 8 * i, 1)

    @operation(args=lambda rng: (int(rng.integers(ITEMS)),))
    def move(self, pm: PM, i: int) -> int:
        src, dst = (BIN_A, BIN_B) if pm.load(BIN_A + 8 * i) else (BIN_B, BIN_A)
        self._move(pm, src + 8 * i, dst + 8 * i)
        return 1 if dst == BIN_B else 0

    def _move(self, pm: PM, src: int, dst: int) -> None:
        pm.store(dst, 1)
        pm.persist(dst, step="move.set-dst")
        pm.store(src, 0)
        pm.persist(src, step="move.clear-src")

    def recover(self, pm: PM) -> None:
        for i in range(ITEMS):
            if pm.load(BIN_A + 8 * i) and pm.load(BIN_B + 8 * i):
                pm.store(BIN_B + 8 * i, 0)  # the move had not finished: undo it
                pm.persist(BIN_B + 8 * i, step="recover.dedupe")

    def state(self, pm: PM) -> Hashable:
        a, b = pm.load_words(BIN_A, ITEMS), pm.load_words(BIN_B, ITEMS)
        return tuple(1 if y and not x else 0 if x and not y else -1 for x, y in zip(a, b, strict=True))

    def check(self, pm: PM) -> list[str]:
        a, b = pm.load_words(BIN_A, ITEMS), pm.load_words(BIN_B, ITEMS)
        return [f"item {i} is in {'both bins' if x and y else 'no bin'}"
                for i, (x, y) in enumerate(zip(a, b, strict=True)) if bool(x) == bool(y)]


class TwoBinsUnordered(TwoBins):
    """BROKEN: the two flags of a move persisted together: the cleared source may persist
    before the set destination, and a crash loses the item."""

    def _move(self, pm: PM, src: int, dst: int) -> None:
        pm.store(dst, 1)
        pm.store(src, 0)
        pm.flush(dst, step="move.flush-dst")
        pm.persist(src, step="move.clear-src")
