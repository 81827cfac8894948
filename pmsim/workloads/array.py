"""Array and Array-RAW (card §7, from SoftWrAP): ``per_tx`` contiguous slots from a random start;
a slot is read whole, or read and written with every integer incremented.

Array copies a read-write slot and writes it back with one TXN_WRITE (no read-after-write);
Array-RAW reads and writes each integer in place (one log record per integer). Which slots of a
transaction are read-write is a random subset of size ``round(per_tx * write_pct / 100)``.
Slots start at zero, so a slot's value counts the committed transactions that wrote it.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import check_most, check_types, param
from ..errors import ConfigError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import MASK64, Model, Workload, check_range, register_workload

MAX_WORDS = 1 << 28
"""Most words of slot data (2 GiB): the PM region is capped at 4 GiB."""
MAX_TX_WORDS = 1 << 20
"""Most words one transaction writes (logs are sized for a transaction)."""
MAX_LOCKS = 1 << 18
"""Most application locks a workload creates (each is a SimPy resource)."""


@dataclass(frozen=True)
class ArrayParams:
    slots: int = param(4096, "slots", "array length (the paper uses 10 M; slots x slot_words "
                       "at most 2**28 words, 2 GiB)")
    slot_words: int = param(4, "words", "slot size in 8-byte integers (paper: 4 and 64; at most "
                            "4096)")
    per_tx: int = param(20, "slots", "contiguous slots each transaction touches (per_tx x "
                        "slot_words at most 2**20 words)")
    write_pct: float = param(50.0, "%", "share of the touched slots that are read-write")
    lock_stripe: int = param(64, "slots", "slots per application lock (multi-threaded runs; at "
                             "most 2**18 locks)")

    def __post_init__(self) -> None:
        check_types(self, "workload 'array': parameter ")
        check_range("array", "slot_words", self.slot_words, 1, 4096)
        check_range("array", "per_tx", self.per_tx, 1)
        check_range("array", "slots", self.slots, self.per_tx)
        check_range("array", "write_pct", self.write_pct, 0, 100)
        check_range("array", "lock_stripe", self.lock_stripe, 1)
        label = "workload 'array': parameter "
        check_most(label, "slots", self.slots, MAX_WORDS // self.slot_words,
                   f"slots x slot_words must be at most 2**28 words (2 GiB; a PM region holds "
                   f"at most 4 GiB), so with slot_words={self.slot_words} use slots <= "
                   f"{MAX_WORDS // self.slot_words}")
        check_most(label, "per_tx", self.per_tx, MAX_TX_WORDS // self.slot_words,
                   f"a transaction may write at most 2**20 words (its logs are sized for it), so "
                   f"with slot_words={self.slot_words} use per_tx <= "
                   f"{MAX_TX_WORDS // self.slot_words}")
        if -(-self.slots // self.lock_stripe) > MAX_LOCKS:
            raise ConfigError(f"{label}lock_stripe={self.lock_stripe!r} is too small: "
                              f"slots={self.slots} / lock_stripe gives more than {MAX_LOCKS} "
                              "application locks; use lock_stripe >= "
                              f"{-(-self.slots // MAX_LOCKS)}")


class ArrayModel(Model):
    def __init__(self, words: int) -> None:
        self.words = words
        self.count: dict[int, int] = {}

    def apply(self, op: tuple[int, int]) -> None:
        start, mask = op
        j = 0
        while mask:
            if mask & 1:
                self.count[start + j] = (self.count.get(start + j, 0) + 1) & MASK64
            mask >>= 1
            j += 1

    def snapshot(self) -> Hashable:
        w = self.words
        return tuple((s, (c,) * w) for s, c in sorted(self.count.items()) if c)


@register_workload
class Array(Workload):
    """Array: whole-slot TXN_WRITEs."""

    name = "array"
    Params = ArrayParams
    help = "per_tx contiguous slots from a random start; write_pct of them incremented"
    raw = False

    @property
    def writes(self) -> int:
        """Read-write slots per transaction."""
        return int(round(self.p.per_tx * self.p.write_pct / 100))

    def spec(self) -> PMSpec:
        p = self.p
        w = self.writes
        written = None if self.txs is None else min(p.slots, self.threads * self.txs * w)
        calls = w * (p.slot_words if self.raw else 1)
        return PMSpec(statics=(StaticArray("slots", p.slots, p.slot_words, written),),
                      max_tx_writes=calls, max_tx_words=w * p.slot_words, max_tx_allocs=0,
                      max_tx_objects=w)

    def nlocks(self) -> int:
        return -(-self.p.slots // self.p.lock_stripe) if self.threads > 1 else 0

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[int, int]:
        p = self.p
        start = int(rng.integers(0, p.slots - p.per_tx + 1))
        mask = 0
        for j in rng.choice(p.per_tx, size=self.writes, replace=False).tolist():
            mask |= 1 << j
        return start, mask

    def locks_of(self, op: tuple[int, int]) -> range:
        start, stripe = op[0], self.p.lock_stripe
        return range(start // stripe, (start + self.p.per_tx - 1) // stripe + 1)

    def body(self, tx: Any, op: tuple[int, int]) -> Generator[Any, Any, None]:
        p = self.p
        start, mask = op
        w = p.slot_words
        static = tx.rt.static
        for j in range(p.per_tx):
            if j:
                yield from tx.pause()
            obj = static("slots", start + j)
            if not mask >> j & 1:
                tx.read_words(obj, 0, w)
            elif self.raw:
                for i in range(w):
                    tx.write(obj, i, (tx.read(obj, i) + 1) & MASK64)
            else:
                tx.write_words(obj, 0, [(v + 1) & MASK64 for v in tx.read_words(obj, 0, w)])

    def model(self) -> Model:
        return ArrayModel(self.p.slot_words)

    def read_data(self, rt: Runtime) -> Hashable:
        """``((slot, (words...)), ...)`` for every non-zero slot, converted to Python ints in
        bulk (the crash fuzzer reads this once per recovered image)."""
        arr = rt.peek_static("slots")
        if arr.shape[1] == 1:
            col = arr[:, 0]
            rows = col.nonzero()[0]
            return tuple(zip(rows.tolist(), zip(col[rows].tolist()), strict=True))
        rows = arr.any(axis=1).nonzero()[0]
        return tuple(zip(rows.tolist(), map(tuple, arr[rows].tolist()), strict=True))


@register_workload
class ArrayRAW(Array):
    """Array-RAW: each integer read and written in place."""

    name = "array-raw"
    help = "as array, but each integer of a read-write slot is read and written in place"
    raw = True
