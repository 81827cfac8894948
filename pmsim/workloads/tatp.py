"""TATP-like: the Update-Location transaction of the Telecom Application Transaction Processing
benchmark (DUDETx: "1 search + 1 update").

Subscribers are a static table of rows ``[sub_nbr, vlr_location, msc_location, bits]``; a hash
index (linear probing, buckets ``[sub_nbr, s_id + 1]``, built at setup and never written) maps a
subscriber number to its row. Update-Location searches the index for ``sub_nbr`` and writes the
row's ``vlr_location``; the optional Get-Subscriber-Data reads a row by ``s_id`` (read-only).
Subscriber ids follow TATP's non-uniform distribution unless ``nonuniform`` is off. DUDETx
stores the table in a B+-tree or a hash table; this is the hash variant.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..config import check_most, check_types, param
from ..errors import PmsimError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import MASK64, Model, Workload, check_range, register_workload

UPDATE_LOCATION, GET_SUBSCRIBER = 0, 1
SUB_NBR, VLR, MSC, BITS = 0, 1, 2, 3  # subscriber row fields
ROW = 4
GOLDEN = 0x9E3779B97F4A7C15
MAX_LOCKS = 1024


def initial_vlr(s: int) -> int:
    """Subscriber ``s``'s vlr_location at setup."""
    return (s * 2654435761 + 12345) & 0xFFFFFFFF


def nurand_a(subscribers: int) -> int:
    """TATP's constant A of the non-uniform subscriber-id distribution."""
    if subscribers <= 1_000_000:
        return 65535
    return 1048575 if subscribers <= 10_000_000 else 2097151


@dataclass(frozen=True)
class TATPParams:
    subscribers: int = param(1000, "subscribers", "subscriber rows (TATP's scale unit is "
                             "100,000; DUDETx does not give it: documented default)")
    get_pct: float = param(0.0, "%", "share of Get-Subscriber-Data (read-only); the rest are "
                           "Update-Location (DUDETx runs Update-Location only)")
    nonuniform: bool = param(True, "", "draw subscriber ids with TATP's non-uniform "
                             "((rand(0, A) | rand(1, P)) % P), else uniformly")

    def __post_init__(self) -> None:
        label = "workload 'tatp': parameter "
        check_types(self, label)
        check_range("tatp", "subscribers", self.subscribers, 1)
        check_most(label, "subscribers", self.subscribers, 1 << 24,
                   "use at most 2**24 = 16777216 subscribers")
        check_range("tatp", "get_pct", self.get_pct, 0, 100)


class TATPModel(Model):
    """The reference: every subscriber's vlr_location."""

    def __init__(self, subscribers: int) -> None:
        self.vlr = [initial_vlr(s) for s in range(subscribers)]

    def apply(self, op: tuple[int, int, int]) -> None:
        kind, s, vlr = op
        if kind == UPDATE_LOCATION:
            self.vlr[s] = vlr

    def snapshot(self) -> Hashable:
        return tuple(self.vlr)


@register_workload
class TATP(Workload):
    name = "tatp"
    Params = TATPParams
    help = "TATP Update-Location: a hash-index search and one row update (DUDETx)"
    fuzz_params = {"subscribers": 6, "get_pct": 25.0}

    @property
    def buckets(self) -> int:
        """Index buckets: the power of two at least twice the subscribers (load <= 1/2)."""
        return 1 << max(1, (2 * self.p.subscribers - 1).bit_length())

    def bucket_of(self, key: int) -> int:
        """The home bucket of a subscriber number (Fibonacci hashing)."""
        bits = self.buckets.bit_length() - 1
        return ((key * GOLDEN) & MASK64) >> (64 - bits)

    @cached_property
    def index(self) -> np.ndarray:
        """The index as setup writes it: ``(buckets, 2)`` of ``[sub_nbr, s_id + 1]``."""
        idx = np.zeros((self.buckets, 2), dtype=np.uint64)
        for s in range(self.p.subscribers):
            b = self.bucket_of(s + 1)
            while idx[b, 0]:
                b = (b + 1) % self.buckets
            idx[b] = (s + 1, s + 1)
        return idx

    def spec(self) -> PMSpec:
        return PMSpec(statics=(StaticArray("subscribers", self.p.subscribers, ROW),
                               StaticArray("index", self.buckets, 2)),
                      max_tx_writes=1, max_tx_words=1, max_tx_allocs=0, max_tx_objects=1)

    def nlocks(self) -> int:
        return min(self.p.subscribers, MAX_LOCKS)

    def init_data(self, rt: Runtime) -> None:
        for s in range(self.p.subscribers):
            rt.init_words(rt.static("subscribers", s), 0,
                          [s + 1, initial_vlr(s), (s * 40503 + 7) & 0xFFFFFFFF, s & 0xFF])
        for b in np.flatnonzero(self.index[:, 0]).tolist():
            rt.init_words(rt.static("index", b), 0, [int(v) for v in self.index[b]])

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[int, int, int]:
        """``(kind, s_id, vlr_location)``."""
        n = self.p.subscribers
        kind = GET_SUBSCRIBER if float(rng.random()) * 100 < self.p.get_pct else UPDATE_LOCATION
        if self.p.nonuniform:
            s = (int(rng.integers(0, nurand_a(n) + 1)) | int(rng.integers(1, n + 1))) % n
        else:
            s = int(rng.integers(0, n))
        return kind, s, int(rng.integers(1, 1 << 32))

    def locks_of(self, op: tuple[int, int, int]) -> tuple[int]:
        return (op[1] % self.nlocks(),)

    def body(self, tx: Any, op: tuple[int, int, int]) -> Generator[Any, Any, bool]:
        kind, s, vlr = op
        static = tx.rt.static
        if kind == GET_SUBSCRIBER:
            tx.read_words(static("subscribers", s), 0, ROW)
            return True
        key = s + 1
        b = self.bucket_of(key)
        for probe in range(self.buckets):
            if probe:
                yield from tx.pause()
            k, v = tx.read_words(static("index", b), 0, 2)
            if k == key:
                break
            if k == 0:
                return False  # no such subscriber number: TATP's Update-Location fails
            b = (b + 1) % self.buckets
        else:
            return False
        row = static("subscribers", v - 1)
        if tx.read(row, SUB_NBR) != key:
            return False
        tx.write(row, VLR, vlr)
        return True

    def model(self) -> Model:
        return TATPModel(self.p.subscribers)

    def _rows(self, rt: Runtime) -> np.ndarray:
        rows = rt.peek_static("subscribers")
        if not np.array_equal(rows[:, SUB_NBR], np.arange(1, self.p.subscribers + 1,
                                                          dtype=np.uint64)):
            raise PmsimError("a subscriber row's sub_nbr changed")
        if not np.array_equal(rt.peek_static("index"), self.index):
            raise PmsimError("the subscriber index changed")
        return rows

    def check(self, rt: Runtime) -> None:
        """Raise PmsimError unless the rows' keys and the index are as setup wrote them."""
        self._rows(rt)

    def read_data(self, rt: Runtime) -> Hashable:
        return tuple(self._rows(rt)[:, VLR].tolist())
