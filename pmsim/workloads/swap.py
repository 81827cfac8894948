"""Swap: random swaps of array entries (Proteus SS, LOC SPS).

An array of ``entries`` strings of ``string_words`` 8-byte words; a transaction swaps ``swaps``
random pairs (each a read of both strings and a write of each into the other). String ``s``
starts at position ``s`` and its word k is ``s + 1 + k * GOLDEN``, so the data are always a
permutation of the initial strings and a torn string (words of two strings) is detected.

Two registered defaults: ``swap`` is Proteus's SS (one swap of 256 B strings per transaction,
array of 262,144 scaled down) and ``sps`` is LOC's SPS (8 swaps per transaction; entry size and
array size not given).
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import check_most, check_types, param
from ..errors import ConfigError, PmsimError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import MASK64, Model, Workload, check_range, register_workload

GOLDEN = 0x9E3779B97F4A7C15
MAX_WORDS = 1 << 28
"""Most words of array data (2 GiB): the PM region is capped at 4 GiB."""
MAX_LOCKS = 1 << 18


def string(s: int, words: int) -> list[int]:
    """The words of string ``s``."""
    return [(s + 1 + k * GOLDEN) & MASK64 for k in range(words)]


def _check(name: str, p: Any) -> None:
    label = f"workload {name!r}: parameter "
    check_types(p, label)
    check_range(name, "entries", p.entries, 2)
    check_range(name, "string_words", p.string_words, 1, 4096)
    check_range(name, "swaps", p.swaps, 1, 4096)
    check_range(name, "lock_stripe", p.lock_stripe, 1)
    check_most(label, "entries", p.entries, MAX_WORDS // p.string_words,
               f"entries x string_words must be at most 2**28 words (2 GiB), so with "
               f"string_words={p.string_words} use entries <= {MAX_WORDS // p.string_words}")
    check_most(label, "swaps", p.swaps, (1 << 20) // (2 * p.string_words),
               "a transaction may write at most 2**20 words (its logs are sized for it): use "
               f"swaps <= {(1 << 20) // (2 * p.string_words)}")
    if -(-p.entries // p.lock_stripe) > MAX_LOCKS:
        raise ConfigError(f"{label}lock_stripe={p.lock_stripe!r} is too small: entries / "
                          f"lock_stripe gives more than {MAX_LOCKS} application locks; use "
                          f"lock_stripe >= {-(-p.entries // MAX_LOCKS)}")


@dataclass(frozen=True)
class SwapParams:
    entries: int = param(4096, "strings", "array length (Proteus SS: 262,144)")
    string_words: int = param(32, "words", "string size in 8-byte words (Proteus SS: 256 B = 32)")
    swaps: int = param(1, "swaps", "swaps per transaction (Proteus SS: one swap per transaction)")
    lock_stripe: int = param(64, "strings", "entries per application lock (multi-threaded runs; "
                             "Proteus uses one lock per structure: lock_stripe >= entries)")

    def __post_init__(self) -> None:
        _check("swap", self)


@dataclass(frozen=True)
class SPSParams:
    entries: int = param(4096, "entries", "array length (LOC: not given, data sets >= 4x LLC; "
                         "documented default)")
    string_words: int = param(1, "words", "entry size in 8-byte words (LOC: not given; "
                              "documented default: one integer)")
    swaps: int = param(8, "swaps", "swaps per transaction (LOC's default: 8)")
    lock_stripe: int = param(64, "entries", "entries per application lock (multi-threaded runs)")

    def __post_init__(self) -> None:
        _check("sps", self)


class SwapModel(Model):
    """The reference: which string sits at each position."""

    def __init__(self) -> None:
        self.at: dict[int, int] = {}

    def apply(self, op: tuple[int, ...]) -> None:
        at = self.at
        for k in range(0, len(op), 2):
            i, j = op[k], op[k + 1]
            at[i], at[j] = at.get(j, j), at.get(i, i)

    def snapshot(self) -> Hashable:
        return tuple(sorted((i, s) for i, s in self.at.items() if s != i))


@register_workload
class Swap(Workload):
    """Proteus SS: swap random strings of an array."""

    name = "swap"
    Params = SwapParams
    help = "swap random pairs of strings in an array (Proteus SS)"
    fuzz_params = {"entries": 8, "string_words": 2, "swaps": 1}

    def spec(self) -> PMSpec:
        p = self.p
        return PMSpec(statics=(StaticArray("strings", p.entries, p.string_words),),
                      max_tx_writes=2 * p.swaps, max_tx_words=2 * p.swaps * p.string_words,
                      max_tx_allocs=0, max_tx_objects=min(2 * p.swaps, p.entries))

    def nlocks(self) -> int:
        return -(-self.p.entries // self.p.lock_stripe) if self.threads > 1 else 0

    def init_data(self, rt: Runtime) -> None:
        w = self.p.string_words
        for s in range(self.p.entries):
            rt.init_words(rt.static("strings", s), 0, string(s, w))

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[int, ...]:
        """``(i0, j0, i1, j1, ...)``: the pairs swapped, in order."""
        out: list[int] = []
        for _ in range(self.p.swaps):
            out.extend(int(x) for x in rng.choice(self.p.entries, size=2, replace=False))
        return tuple(out)

    def locks_of(self, op: tuple[int, ...]) -> list[int]:
        return [i // self.p.lock_stripe for i in op]

    def body(self, tx: Any, op: tuple[int, ...]) -> Generator[Any, Any, None]:
        w = self.p.string_words
        static = tx.rt.static
        for k in range(0, len(op), 2):
            if k:
                yield from tx.pause()
            a, b = static("strings", op[k]), static("strings", op[k + 1])
            sa, sb = tx.read_words(a, 0, w), tx.read_words(b, 0, w)
            tx.write_words(a, 0, sb)
            tx.write_words(b, 0, sa)

    def model(self) -> Model:
        return SwapModel()

    def check(self, rt: Runtime) -> None:
        """Raise PmsimError unless the array is a permutation of whole initial strings."""
        self._positions(rt)

    def _positions(self, rt: Runtime) -> np.ndarray:
        """The string at each position (a PmsimError for a torn or duplicated string)."""
        arr = rt.peek_static("strings")
        ids = arr[:, 0] - np.uint64(1)
        w = self.p.string_words
        if w > 1:
            k = (np.arange(w, dtype=np.uint64) * np.uint64(GOLDEN))[None, :]
            if not np.array_equal(arr, ids[:, None] + np.uint64(1) + k):
                raise PmsimError("a string is torn (its words belong to different strings)")
        n = self.p.entries
        if (ids >= n).any() or np.unique(ids).size != n:
            raise PmsimError("the array is not a permutation of the initial strings")
        return ids

    def read_data(self, rt: Runtime) -> Hashable:
        """``((position, string), ...)`` for every position not holding its own string."""
        ids = self._positions(rt)
        moved = np.flatnonzero(ids != np.arange(ids.size, dtype=np.uint64))
        return tuple(zip(moved.tolist(), ids[moved].tolist(), strict=True))


@register_workload
class SPS(Swap):
    """LOC's SPS: 8 random swaps of array entries per transaction."""

    name = "sps"
    Params = SPSParams
    help = "random swaps of array entries, 8 per transaction (LOC SPS)"
    fuzz_params = {"entries": 8, "swaps": 2}
