"""A hash table with per-slot commit tokens (open addressing, linear probing).

Each slot is ``[key, value]``; the key is the slot's commit token: an insert persists the value
first and then the key, so a crash leaves the slot either empty (or deleted) or complete. An
update of an existing key is one 8-byte store; a delete writes the tombstone key. This is the
slot protocol of persistent hash tables such as level hashing's (Zuo et al., OSDI 2018),
without the resizing.
"""

from __future__ import annotations

from collections.abc import Hashable

from ..api import PM, PMProgram, operation
from .common import DictModel, key_args, key_value_args

SLOTS = 16
EMPTY, TOMB = 0, (1 << 64) - 1
KEYS = 6


_key = key_args(KEYS)
_key_value = key_value_args(KEYS)


class SlotHash(PMProgram):
    """Per-slot commit tokens: value persisted, then the key."""

    size = 16 * SLOTS
    model = DictModel
    steps = {"put.value": "persist the new slot's value before its key",
             "put.token": "persist the key: the slot's commit token",
             "put.update": "persist an in-place value update (one atomic word)",
             "delete.tomb": "persist the tombstone"}

    def _find(self, pm: PM, k: int) -> tuple[int | None, int | None]:
        """(slot holding k, first reusable slot) along k's probe chain."""
        free = None
        for i in range(SLOTS):
            s = 16 * ((k * 7 + i) % SLOTS)
            key = pm.load(s)
            if key == k:
                return s, free
            if key == TOMB and free is None:
                free = s
            if key == EMPTY:
                return None, s if free is None else free
        return None, free

    @operation(args=_key_value, weight=3)
    def put(self, pm: PM, k: int, v: int) -> None:
        s, free = self._find(pm, k)
        if s is not None:
            pm.store(s + 8, v)
            pm.persist(s + 8, step="put.update")
            return
        if free is None:
            raise RuntimeError("SlotHash is full")
        self._insert(pm, free, k, v)

    def _insert(self, pm: PM, s: int, k: int, v: int) -> None:
        pm.store(s + 8, v)
        pm.persist(s + 8, step="put.value")
        pm.store(s, k)
        pm.persist(s, step="put.token")

    @operation(args=_key)
    def delete(self, pm: PM, k: int) -> bool:
        s, _ = self._find(pm, k)
        if s is None:
            return False
        pm.store(s, TOMB)
        pm.persist(s, step="delete.tomb")
        return True

    @operation(args=_key)
    def get(self, pm: PM, k: int) -> int | None:
        s, _ = self._find(pm, k)
        return None if s is None else pm.load(s + 8)

    def state(self, pm: PM) -> Hashable:
        words = pm.load_words(0, 2 * SLOTS)
        return frozenset((words[i], words[i + 1]) for i in range(0, 2 * SLOTS, 2)
                         if words[i] not in (EMPTY, TOMB))

    def check(self, pm: PM) -> list[str]:
        words = pm.load_words(0, 2 * SLOTS)
        keys = [w for w in words[0::2] if w not in (EMPTY, TOMB)]
        return [f"key {k} is in {keys.count(k)} slots" for k in sorted(set(keys))
                if keys.count(k) > 1]


class SlotHashOneFlush(SlotHash):
    """BROKEN: the commit token persisted together with its payload (one flush and fence for
    value and key): the key may persist first, and a crash exposes a key with a stale value."""

    def _insert(self, pm: PM, s: int, k: int, v: int) -> None:
        pm.store(s + 8, v)
        pm.store(s, k)
        pm.persist(s, 16, step="put.slot")
