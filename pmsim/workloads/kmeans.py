"""Kmeans: the transactional core of STAMP's K-means clustering (Minh et al., IISWC'08).

Each thread takes the points of its chunk in turn. For a point it finds the nearest of the
``clusters`` centres outside any transaction (``clusters x features`` distance terms of
compute, ``term_ns`` each), then adds the point to that centre in one transaction: the
cluster's member count and each of its ``features`` running sums (STAMP's ``new_centers_len``
and ``new_centers``). After every ``chunk`` points it claims the next chunk with a one-word
transaction on the shared work index (STAMP's ``global_i``). Few clusters make the centres hot:
STAMP's Kmeans-High runs 15, Kmeans-Low 40, both on 32 features (its ``random-n65536-d32-c16``
input; ``-m15 -n15`` and ``-m40 -n40``).

As in STAMP the member counts of all clusters are one packed array (here one 8-byte word each,
so eight share a line: a hardware transaction that counts a point conflicts with one counting
a point of a neighbouring cluster), and each cluster's sums are an array of their own. The
points are random: a point's cluster is uniform over the clusters (STAMP's input draws its
points around 16 centres, so the clusters are about equally populated) and its features are
fixed-point numbers in [0, 1) (the transactions add them as 64-bit integers; the arithmetic
type does not change what a runtime logs or flushes). Counts and sums start at the zero a
formatted image holds.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import check_types, param
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import MASK64, Model, Workload, check_range, register_workload

POINT, CLAIM = 0, 1
"""First element of an op: ``(POINT, cluster, feature, ...)`` or ``(CLAIM,)``."""
FIXED_ONE = 1 << 20
"""A feature's fixed-point scale: features are integers in [0, FIXED_ONE)."""
BROADWELL_ADD_NS = 3 / 1.8
"""One distance term: a floating-point add on the loop-carried sum, 3 cycles of latency on
Broadwell (Intel 64 and IA-32 Architectures Optimization Reference Manual, ADDSS/ADDSD), at the
1.8 GHz of NV-HTM's Xeon E5-2648 v4; the subtract and multiply of the next term overlap it."""


@dataclass(frozen=True)
class KmeansParams:
    clusters: int = param(15, "clusters", "centres the points are assigned to (STAMP "
                          "Kmeans-High: 15, Kmeans-Low: 40)")
    features: int = param(32, "words", "features of a point (STAMP's input: 32)")
    chunk: int = param(3, "points", "points a thread takes per claim of the shared work index "
                       "(STAMP: 3)")
    term_ns: float = param(BROADWELL_ADD_NS, "ns", "compute per distance term of the "
                           "nearest-centre search, outside the transaction (default: 3 cycles "
                           "at 1.8 GHz, Broadwell's FP add latency)")

    def __post_init__(self) -> None:
        check_types(self, "workload 'kmeans': parameter ")
        check_range("kmeans", "clusters", self.clusters, 1, 4096)
        check_range("kmeans", "features", self.features, 1, 1024)
        check_range("kmeans", "chunk", self.chunk, 1, 1 << 20)
        check_range("kmeans", "term_ns", self.term_ns, 0, 1e6)


class KmeansModel(Model):
    def __init__(self, clusters: int, features: int) -> None:
        self.lens = [0] * clusters
        self.sums = [[0] * features for _ in range(clusters)]
        self.index = 0

    def apply(self, op: tuple[int, ...]) -> None:
        if op[0] == CLAIM:
            self.index = (self.index + op[1]) & MASK64
            return
        c = op[1]
        self.lens[c] += 1
        row = self.sums[c]
        for j, f in enumerate(op[2:]):
            row[j] = (row[j] + f) & MASK64

    def snapshot(self) -> Hashable:
        return (tuple(self.lens), tuple(tuple(r) for r in self.sums), self.index)


@register_workload
class Kmeans(Workload):
    """STAMP's K-means: add a point to its nearest centre, claim work in chunks."""

    name = "kmeans"
    Params = KmeansParams
    help = ("STAMP's K-means: add each point to its nearest of N centres in a transaction "
            "(count + feature sums), claim work chunks on a shared index")
    fuzz_params = {"clusters": 2, "features": 2, "chunk": 2}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._taken: dict[int, int] = {}

    def spec(self) -> PMSpec:
        p = self.p
        n = p.features + 1
        return PMSpec(statics=(StaticArray("lens", 1, p.clusters),
                               StaticArray("sums", p.clusters, p.features),
                               StaticArray("index", 1, 1)),
                      max_tx_writes=n, max_tx_words=n, max_tx_allocs=0, max_tx_objects=2)

    def nlocks(self) -> int:
        """One lock for the packed member counts (every point takes it, as the counts share
        lines) and one for the work index."""
        return 2

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[int, ...]:
        """A point of the thread's chunk, or, after ``chunk`` points, the claim of the next."""
        p = self.p
        taken = self._taken.get(tid, 0)
        if taken == p.chunk:
            self._taken[tid] = 0
            return (CLAIM, p.chunk)
        self._taken[tid] = taken + 1
        c = int(rng.integers(0, p.clusters))
        return (POINT, c, *(int(x) for x in rng.integers(0, FIXED_ONE, size=p.features)))

    def transaction(self, cpu: Any, rt: Runtime, op: Any) -> Generator[Any, Any, None]:
        """The nearest-centre search (outside the transaction), then the transaction."""
        if op[0] == POINT and self.p.term_ns:
            cpu.work(self.p.clusters * self.p.features * self.p.term_ns)
        yield from super().transaction(cpu, rt, op)

    def locks_of(self, op: tuple[int, ...]) -> tuple[int]:
        return (1,) if op[0] == CLAIM else (0,)

    def body(self, tx: Any, op: tuple[int, ...]) -> Generator[Any, Any, bool]:
        static = tx.rt.static
        if op[0] == CLAIM:
            o = static("index", 0)
            tx.write(o, 0, (tx.read(o, 0) + op[1]) & MASK64)
            return True
        c, feats = op[1], op[2:]
        lens = static("lens", 0)
        tx.write(lens, c, (tx.read(lens, c) + 1) & MASK64)
        yield from tx.pause()
        row = static("sums", c)
        old = tx.read_words(row, 0, len(feats))
        tx.write_words(row, 0, [(a + b) & MASK64 for a, b in zip(old, feats, strict=True)])
        return True

    def model(self) -> Model:
        return KmeansModel(self.p.clusters, self.p.features)

    def read_data(self, rt: Runtime) -> Hashable:
        lens = rt.peek_static("lens")[0]
        sums = rt.peek_static("sums")
        return (tuple(int(v) for v in lens), tuple(tuple(int(v) for v in r) for r in sums),
                int(rt.peek_static("index")[0, 0]))
