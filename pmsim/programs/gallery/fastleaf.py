"""A B+-tree leaf with in-place shifting inserts and deletes, FAST-style (Hwang et al.,
FAST 2018): the sorted keys end at the first zero, and readers skip a key equal to the one
before it.

An insert shifts the keys after its position one slot right, from the end, one 8-byte store at
a time, each persisted before the next (under x86 only 8-byte atoms are failure-atomic, so a
line's stores may persist in any order unless fenced); at every step the leaf reads as the old
set, with one key transiently duplicated. The new key then overwrites the duplicate. A delete
shifts left the same way and ends by clearing the last slot.
"""

from __future__ import annotations

from collections.abc import Hashable

from ..api import PM, PMProgram, operation
from .common import key_args

SLOTS = 16
KEYS = 12


_key = key_args(KEYS)


class SetModel:
    """The reference: a set of keys."""

    def __init__(self) -> None:
        self.keys: set[int] = set()

    def insert(self, k: int) -> bool:
        if k in self.keys:
            return False
        self.keys.add(k)
        return True

    def delete(self, k: int) -> bool:
        if k not in self.keys:
            return False
        self.keys.remove(k)
        return True

    def contains(self, k: int) -> bool:
        return k in self.keys

    def state(self) -> Hashable:
        return tuple(sorted(self.keys))


def read_keys(pm: PM) -> list[int]:
    """The leaf's keys: up to the first zero, skipping a transient duplicate."""
    out: list[int] = []
    for w in pm.load_words(0, SLOTS):
        if w == 0:
            break
        if not out or w != out[-1]:
            out.append(w)
    return out


class FastLeaf(PMProgram):
    """Shift one slot at a time, each store persisted before the next."""

    size = 8 * (SLOTS + 1)  # a zero after the last slot terminates a full leaf
    model = SetModel
    paths = ("shift", "append", "full")

    def _put(self, pm: PM, slot: int, key: int) -> None:
        pm.store(8 * slot, key)
        pm.persist(8 * slot, step="shift.persist")

    @operation(args=_key, weight=2)
    def insert(self, pm: PM, k: int) -> bool:
        keys = read_keys(pm)
        if k in keys:
            return False
        n = len(keys)
        if n == SLOTS:
            pm.path("full")
            return False
        pos = sum(1 for x in keys if x < k)
        pm.path("shift" if pos < n else "append")
        for i in range(n, pos, -1):  # slot i takes slot i-1's key: a duplicate, never a gap
            self._put(pm, i, keys[i - 1])
        self._put(pm, pos, k)
        return True

    @operation(args=_key)
    def delete(self, pm: PM, k: int) -> bool:
        keys = read_keys(pm)
        if k not in keys:
            return False
        pos, n = keys.index(k), len(keys)
        for i in range(pos, n - 1):  # slot i takes slot i+1's key
            self._put(pm, i, keys[i + 1])
        self._put(pm, n - 1, 0)
        return True

    @operation(args=_key)
    def contains(self, pm: PM, k: int) -> bool:
        return k in read_keys(pm)

    def state(self, pm: PM) -> Hashable:
        return tuple(read_keys(pm))

    def check(self, pm: PM) -> list[str]:
        keys = read_keys(pm)
        return [] if keys == sorted(keys) else [f"the leaf is not sorted: {keys}"]


class FastLeafBatched(FastLeaf):
    """BROKEN: the shift's stores persisted together at the end (one flush and fence for the
    whole leaf), trusting the cache line to keep them in order: under x86's 8-byte atomicity a
    later slot may persist before an earlier one, and a crash loses or duplicates a key."""

    def insert(self, pm: PM, k: int) -> bool:
        self._batch = True
        try:
            return super().insert(pm, k)
        finally:
            self._batch = False
            pm.persist(0, 8 * SLOTS, step="shift.persist-leaf")

    def _put(self, pm: PM, slot: int, key: int) -> None:
        if getattr(self, "_batch", False):
            pm.store(8 * slot, key)
        else:
            super()._put(pm, slot, key)
