"""YCSB-like: reads and updates of Zipf-distributed keys in a key-value store (DUDETx Figs. 4-5).

Records are a static table of ``value_words`` words indexed by key (the store's index is not
modelled: DUDETx keeps them in a B+-tree). A transaction runs ``ops_per_tx`` operations, each a
read of a whole record or an update rewriting it. Keys come from YCSB's Zipfian generator
(:class:`Zipfian`), scrambled with FNV-1a as YCSB's ScrambledZipfianGenerator does. Records
start zeroed (the load phase is implicit); an update writes ``value + k * GOLDEN`` into word k,
so a torn record is detected.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import check_most, check_types, param
from ..errors import PmsimError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import MASK64, Model, Workload, check_range, register_workload

READ, UPDATE = 0, 1
GOLDEN = 0x9E3779B97F4A7C15
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MAX_LOCKS = 1024
MAX_RECORDS = 1 << 24


def fnv64(values: np.ndarray) -> np.ndarray:
    """YCSB's ``fnvhash64`` of each value (FNV-1a over its 8 little-endian bytes, then the
    absolute value as a signed 64-bit integer), vectorized."""
    v = np.asarray(values, dtype=np.uint64)
    h = np.full(v.shape, FNV_OFFSET, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for _ in range(8):
            h ^= v & np.uint64(0xFF)
            h *= np.uint64(FNV_PRIME)
            v = v >> np.uint64(8)
    signed = h.view(np.int64)
    return np.where(signed < 0, (~h) + np.uint64(1), h)


class Zipfian:
    """Items ``0..n-1`` with ``P(rank i) ~ 1 / (i + 1) ** theta``, deterministic from the rng.

    For ``theta < 1`` this is YCSB's ZipfianGenerator (Gray et al.'s method: one
    ``rng.random()`` per item, ranks 0 and 1 exact, the tail approximated); for ``theta >= 1``,
    where that method does not apply, it inverts the exact CDF (one ``rng.random()`` and a
    binary search). ``scrambled`` maps rank r to ``fnv64(r) % n`` (YCSB's ScrambledZipfian,
    which draws ranks over 10**10 items; here over n, so every rank keeps its popularity).
    """

    def __init__(self, n: int, theta: float, scrambled: bool = False) -> None:
        if n < 1 or theta < 0:
            raise ValueError(f"Zipfian needs n >= 1 and theta >= 0, got n={n}, theta={theta}")
        self.n, self.theta, self.scrambled = n, theta, scrambled
        weights = np.arange(1, n + 1, dtype=np.float64) ** -theta
        self.zetan = float(weights.sum())
        if theta < 1:
            self.alpha = 1.0 / (1.0 - theta)
            zeta2 = 1.0 + 0.5 ** theta if n > 1 else 1.0
            self.eta = ((1 - (2.0 / n) ** (1 - theta)) / (1 - zeta2 / self.zetan)
                        if n > 2 else 0.0)
            self.half = 0.5 ** theta
            self.cdf = None
        else:
            self.cdf = np.cumsum(weights) / self.zetan
        self.perm = (fnv64(np.arange(n, dtype=np.uint64)) % np.uint64(n)).astype(np.int64) \
            if scrambled else None

    def pmf(self) -> np.ndarray:
        """The exact Zipf probability of each rank (what the sampler approximates)."""
        return np.arange(1, self.n + 1, dtype=np.float64) ** -self.theta / self.zetan

    def rank(self, rng: np.random.Generator) -> int:
        """A rank (0 is the most popular)."""
        u = float(rng.random())
        if self.cdf is not None:
            return min(int(np.searchsorted(self.cdf, u, side="right")), self.n - 1)
        uz = u * self.zetan
        if uz < 1.0:
            return 0
        if uz < 1.0 + self.half:
            return 1
        return min(int(self.n * (self.eta * u - self.eta + 1) ** self.alpha), self.n - 1)

    def sample(self, rng: np.random.Generator) -> int:
        """An item: the rank, scrambled if asked."""
        r = self.rank(rng)
        return int(self.perm[r]) if self.perm is not None else r


@dataclass(frozen=True)
class YCSBParams:
    records: int = param(10_000, "records", "records in the store (DUDETx Fig. 4: 10K)")
    theta: float = param(0.99, "", "Zipf constant (DUDETx: 0.99; Fig. 5 also 1.07; 0 = uniform)")
    read_pct: float = param(50.0, "%", "share of reads, the rest updates (DUDETx's Session Store "
                            "= YCSB workload A: 50/50; Fig. 5 runs updates only: 0)")
    value_words: int = param(8, "words", "record size in 8-byte words (not given by DUDETx; "
                             "documented default 64 B; YCSB's own default is 1 KB = 128)")
    ops_per_tx: int = param(1, "ops", "operations per transaction (not given by DUDETx: "
                            "documented default, one YCSB operation each)")
    scrambled: bool = param(True, "", "scramble ranks over the key space with FNV-1a (YCSB's "
                            "ScrambledZipfian); off: key 0 is the most popular")

    def __post_init__(self) -> None:
        label = "workload 'ycsb': parameter "
        check_types(self, label)
        check_range("ycsb", "records", self.records, 1)
        check_most(label, "records", self.records, MAX_RECORDS,
                   "use at most 2**24 = 16777216 records (the sampler keeps per-key tables)")
        check_range("ycsb", "theta", self.theta, 0, 10)
        check_range("ycsb", "read_pct", self.read_pct, 0, 100)
        check_range("ycsb", "value_words", self.value_words, 1, 4096)
        check_range("ycsb", "ops_per_tx", self.ops_per_tx, 1)
        check_most(label, "ops_per_tx", self.ops_per_tx, (1 << 20) // self.value_words,
                   "a transaction may write at most 2**20 words (its logs are sized for it): "
                   f"use ops_per_tx <= {(1 << 20) // self.value_words}")


def record(value: int, words: int) -> list[int]:
    """The words an update with ``value`` writes."""
    return [(value + k * GOLDEN) & MASK64 for k in range(words)]


class YCSBModel(Model):
    """The reference: the last value written to each key."""

    def __init__(self, words: int) -> None:
        self.words = words
        self.value: dict[int, int] = {}

    def apply(self, op: tuple[tuple[int, int, int], ...]) -> None:
        for kind, key, value in op:
            if kind == UPDATE:
                self.value[key] = value

    def snapshot(self) -> Hashable:
        return tuple((k, tuple(record(v, self.words))) for k, v in sorted(self.value.items()))


@register_workload
class YCSB(Workload):
    name = "ycsb"
    Params = YCSBParams
    help = "YCSB-like reads/updates of Zipf-distributed keys (DUDETx's Session Store)"
    fuzz_params = {"records": 8, "value_words": 2, "ops_per_tx": 2, "read_pct": 25.0}

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.zipf = Zipfian(self.p.records, self.p.theta, self.p.scrambled)

    def spec(self) -> PMSpec:
        p = self.p
        n = p.ops_per_tx if p.read_pct < 100 else 0
        written = None if self.txs is None else min(p.records, self.threads * self.txs * n)
        return PMSpec(statics=(StaticArray("records", p.records, p.value_words, written),),
                      max_tx_writes=n, max_tx_words=n * p.value_words, max_tx_allocs=0,
                      max_tx_objects=min(n, p.records))

    def nlocks(self) -> int:
        return min(self.p.records, MAX_LOCKS)

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[tuple[int, int, int], ...]:
        """``((kind, key, value), ...)``, one triple per operation."""
        ops = []
        for _ in range(self.p.ops_per_tx):
            kind = READ if float(rng.random()) * 100 < self.p.read_pct else UPDATE
            ops.append((kind, self.zipf.sample(rng), int(rng.integers(1, 1 << 62))))
        return tuple(ops)

    def locks_of(self, op: tuple[tuple[int, int, int], ...]) -> list[int]:
        n = self.nlocks()
        return [key % n for _, key, _ in op]

    def body(self, tx: Any, op: tuple[tuple[int, int, int], ...]) -> Generator[Any, Any, None]:
        w = self.p.value_words
        for j, (kind, key, value) in enumerate(op):
            if j:
                yield from tx.pause()
            obj = tx.rt.static("records", key)
            if kind == READ:
                tx.read_words(obj, 0, w)
            else:
                tx.write_words(obj, 0, record(value, w))

    def model(self) -> Model:
        return YCSBModel(self.p.value_words)

    def read_data(self, rt: Runtime) -> Hashable:
        """``((key, (words...)), ...)`` for every written record; a PmsimError if one is torn."""
        arr = rt.peek_static("records")
        rows = arr.any(axis=1).nonzero()[0]
        got = arr[rows]
        w = self.p.value_words
        with np.errstate(over="ignore"):
            want = got[:, :1] + (np.arange(w, dtype=np.uint64) * np.uint64(GOLDEN))[None, :]
        if not np.array_equal(got, want):
            raise PmsimError("a record is torn (its words come from different updates)")
        return tuple(zip(rows.tolist(), map(tuple, got.tolist()), strict=True))
