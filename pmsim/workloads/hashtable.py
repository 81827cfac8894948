"""HashTable: a fixed-size open-addressing hash table with linear probing (DUDETx §6.1).

The table is a static array of ``slots`` slots ``[key, value words...]``; key 0 marks an empty
slot and TOMB a deleted one. A key lives in the window of ``probe_limit`` slots from its home
slot ``mix(key) % slots`` (wrapping around). A lookup scans the window up to the first empty
slot; an insert updates the key's value, or takes the first deleted or empty slot it passed,
and does nothing when the window holds neither (that part of the table is full); a delete
marks the slot deleted (a tombstone, so no other key moves: a transaction touches only its
keys' windows). Locks stripe the slots (``lock_stripe`` slots a lock), and an operation takes
the locks of every stripe its window crosses.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any

from ..config import param
from ..errors import PmsimError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import MASK64, Model, check_range, register_workload
from .structures import (
    DELETE,
    INSERT,
    LOOKUP,
    MAX_LOCKS,
    MapWorkload,
    TxOp,
    check_locks,
    check_map_params,
    check_value,
    drive,
    mix,
    value_words,
)

EMPTY, TOMB = 0, MASK64
KEY, VALUE = 0, 1  # fields of a slot


@dataclass(frozen=True)
class HashTableParams:
    slots: int = param(4096, "slots", "table size, fixed (DUDETx: a fixed-size table; its size is "
                       "not given, so 4096 is a default; at most 2**24)")
    keys: int = param(1 << 24, "keys", "key space: keys are 1..keys (DUDETx: random 64-bit keys; "
                      "default 2**24, so nearly every insert is of a new key)")
    initial: int = param(1024, "keys", "keys inserted before the run (not given in DUDETx; "
                         "default a quarter of the slots)")
    probe_limit: int = param(16, "slots", "the window of slots a key may live in from its home "
                             "slot (not given in DUDETx; default 16)")
    lock_stripe: int = param(64, "slots", "slots per application lock (multi-threaded runs; "
                             "DUDETx's NVML baseline uses fine-grained locks, size not given)")
    insert_pct: float = param(100.0, "%", "share of inserts (DUDETx: 100% inserts)")
    delete_pct: float = param(0.0, "%", "share of deletes (the rest are lookups)")
    ops_per_tx: int = param(1, "ops", "operations per transaction (DUDETx: one insert)")
    value_words: int = param(1, "words", "words per value (DUDETx: 64-bit values)")

    def __post_init__(self) -> None:
        check_map_params("hashtable", self, 1)
        check_range("hashtable", "slots", self.slots, 1, 1 << 24)
        check_range("hashtable", "initial", self.initial, 0, self.slots)
        check_range("hashtable", "probe_limit", self.probe_limit, 1, self.slots)
        check_range("hashtable", "lock_stripe", self.lock_stripe, 1)
        check_locks("hashtable", "lock_stripe", self.lock_stripe, -(-self.slots // self.lock_stripe),
                    f"use lock_stripe >= {-(-self.slots // MAX_LOCKS)}")


def probe(key_at: Any, key: int, home: int, window: int, slots: int,
          pause: Any) -> Generator[Any, Any, tuple[int, int]]:
    """Scan ``key``'s window: ``(slot holding key or -1, first free slot passed or -1)``.

    ``key_at(slot)`` reads a slot's key; ``pause()`` is the body's interleaving point. The
    model runs the same scan on its own table, so both agree on where every key goes.
    """
    free = -1
    for i in range(window):
        if i:
            yield from pause()
        s = (home + i) % slots
        k = key_at(s)
        if k == key:
            return s, free
        if k == EMPTY:
            return -1, s if free < 0 else free
        if k == TOMB and free < 0:
            free = s
    return -1, free


def _no_pause() -> tuple[()]:
    return ()


class HashTableModel(Model):
    """The reference: the same table in Python lists, probed the same way."""

    def __init__(self, p: HashTableParams, initial: list[tuple[int, int]]) -> None:
        self.p = p
        self.keys = [EMPTY] * p.slots
        self.vals = [0] * p.slots
        for k, v in initial:
            self.apply(((INSERT, 0, k, v),))

    def apply(self, op: TxOp) -> None:
        p = self.p
        for kind, _, key, value in op:
            found, free = drive(probe(self.keys.__getitem__, key, mix(key) % p.slots,
                                      p.probe_limit, p.slots, _no_pause))
            if kind == INSERT:
                s = found if found >= 0 else free
                if s >= 0:
                    self.keys[s], self.vals[s] = key, value
            elif kind == DELETE and found >= 0:
                self.keys[found] = TOMB

    def snapshot(self) -> Hashable:
        return (tuple(sorted((k, v) for k, v in zip(self.keys, self.vals, strict=True)
                             if k not in (EMPTY, TOMB))),)


@register_workload
class HashTable(MapWorkload):
    name = "hashtable"
    Params = HashTableParams
    help = "linear-probing hash table of fixed size (DUDETx HashTable): inserts, deletes, lookups"
    fuzz_params = {"slots": 8, "keys": 16, "initial": 3, "probe_limit": 4, "lock_stripe": 4,
                   "insert_pct": 60.0, "delete_pct": 30.0}

    def home(self, key: int) -> int:
        return mix(key) % self.p.slots

    def spec(self) -> PMSpec:
        p = self.p
        n = p.ops_per_tx
        written = None if self.txs is None else min(p.slots, self.threads * self.txs * n)
        return PMSpec(statics=(StaticArray("slots", p.slots, 1 + p.value_words, written),),
                      max_tx_writes=n, max_tx_words=n * (1 + p.value_words), max_tx_allocs=0,
                      max_tx_objects=n)

    def nlocks(self) -> int:
        return -(-self.p.slots // self.p.lock_stripe) if self.threads > 1 else 0

    def locks_of(self, op: TxOp) -> list[int]:
        p = self.p
        stripes = -(-p.slots // p.lock_stripe)
        out: set[int] = set()
        for _, _, key, _ in op:
            first = self.home(key)
            last = first + p.probe_limit - 1
            if last < p.slots:
                out.update(range(first // p.lock_stripe, last // p.lock_stripe + 1))
            else:
                out.update(range(first // p.lock_stripe, stripes))
                out.update(range(0, (last - p.slots) // p.lock_stripe + 1))
        return sorted(out)

    def body(self, tx: Any, op: TxOp) -> Generator[Any, Any, None]:
        p = self.p
        static = tx.rt.static

        def key_at(s: int) -> int:
            return int(tx.read(static("slots", s), KEY))

        for j, (kind, _, key, value) in enumerate(op):
            if j:
                yield from tx.pause()
            found, free = yield from probe(key_at, key, self.home(key), p.probe_limit, p.slots,
                                           tx.pause)
            if kind == INSERT:
                vals = value_words(value, p.value_words)
                if found >= 0:
                    tx.write_words(static("slots", found), VALUE, vals)
                elif free >= 0:
                    tx.write_words(static("slots", free), KEY, [key, *vals])
            elif kind == DELETE and found >= 0:
                tx.write(static("slots", found), KEY, TOMB)
            elif kind == LOOKUP and found >= 0:
                tx.read_words(static("slots", found), VALUE, p.value_words)

    def model(self) -> Model:
        return HashTableModel(self.p, self.initial_items()[0])

    def read_data(self, rt: Runtime) -> Hashable:
        """The sorted items; a PmsimError when a key is out of range, twice in the table, out
        of its window or behind an empty slot of its window (no scan would find it)."""
        p = self.p
        arr = rt.peek_static("slots")
        keys = arr[:, KEY].tolist()
        items: dict[int, int] = {}
        for s in (arr[:, KEY] != EMPTY).nonzero()[0].tolist():
            k = keys[s]
            if k == TOMB:
                continue
            if not 1 <= k <= p.keys:
                raise PmsimError(f"slot {s} holds key {k}, outside 1..{p.keys}")
            if k in items:
                raise PmsimError(f"key {k} is in the table twice")
            home = self.home(k)
            dist = (s - home) % p.slots
            if dist >= p.probe_limit:
                raise PmsimError(f"key {k} is in slot {s}, outside its window from slot {home}")
            if any(keys[(home + i) % p.slots] == EMPTY for i in range(dist)):
                raise PmsimError(f"key {k} in slot {s} is behind an empty slot of its window")
            items[k] = check_value(arr[s, VALUE:].tolist(), f"slot {s}")
        return (tuple(sorted(items.items())),)
