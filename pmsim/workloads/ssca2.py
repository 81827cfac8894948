"""SSCA2: the transactional core of STAMP's SSCA2 kernel 1 (Minh et al., IISWC'08).

Kernel 1 builds a graph's adjacency arrays. Its transactions add an implied edge: a thread
that finds that vertex ``v`` lacks the reverse of an edge ``i -> v`` increments ``v``'s
in-degree and stores ``i`` in ``v``'s slot of the implied-edge list, at the old in-degree
(STAMP's ``computeGraph``: ``inDegree[v]`` and ``impliedEdgeList[v * MAX_CLUSTER_SIZE +
inDegree]``). With STAMP's ``-s20`` the graph has 2**20 vertices, so two transactions rarely
touch the same vertex: short, small, almost conflict-free transactions whose cost is the log.

Before each transaction the thread scans ``v``'s adjacency for the reverse edge outside any
transaction: ``scan_ns`` of compute, by default two dependent cache misses to DRAM (``v``'s
index and degree, then its list). The in-degrees are one packed array (eight to a line, as
STAMP's ``long`` array); the implied-edge list keeps ``max_cluster`` slots a vertex. A vertex
whose slots are full takes no more implied edges here (STAMP spills them to a side array, a
case its inputs rarely reach: the graph's degrees are small). The graph starts empty: every
degree and slot is the zero a formatted image holds.
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

LINE_WORDS = 8
"""In-degrees a cache line holds (STAMP's array of 8-byte ``long``)."""
SCAN_NS = 2 * 90.0
"""Two dependent DRAM misses of NV-HTM's Xeon (the ``nvhtm-xeon`` preset's 90 ns memory
latency): the reverse-edge scan reads ``v``'s index and degree, then its adjacency list."""


@dataclass(frozen=True)
class Ssca2Params:
    vertices: int = param(1 << 16, "vertices", "vertices of the graph (STAMP -s20: 2**20)")
    max_cluster: int = param(4, "slots", "implied-edge slots a vertex (STAMP's "
                             "MAX_CLUSTER_SIZE)")
    scan_ns: float = param(SCAN_NS, "ns", "compute of the reverse-edge scan before each "
                           "transaction (default: two dependent 90 ns DRAM misses)")

    def __post_init__(self) -> None:
        check_types(self, "workload 'ssca2': parameter ")
        check_range("ssca2", "vertices", self.vertices, 2, 1 << 22)
        check_range("ssca2", "max_cluster", self.max_cluster, 1, 64)
        check_range("ssca2", "scan_ns", self.scan_ns, 0, 1e6)


class Ssca2Model(Model):
    def __init__(self, vertices: int, slots: int) -> None:
        self.degree = [0] * vertices
        self.edges = [[0] * slots for _ in range(vertices)]

    def apply(self, op: tuple[int, int]) -> None:
        v, i = op
        d = self.degree[v]
        if d < len(self.edges[v]):
            self.degree[v] = d + 1
            self.edges[v][d] = i

    def snapshot(self) -> Hashable:
        return tuple((d, tuple(e)) for d, e in zip(self.degree, self.edges, strict=True) if d)


@register_workload
class Ssca2(Workload):
    """STAMP's SSCA2 kernel 1: add an implied edge to a random vertex's adjacency."""

    name = "ssca2"
    Params = Ssca2Params
    help = ("STAMP's SSCA2 kernel 1: increment a random vertex's in-degree and store the "
            "implied edge in its slot (tiny, almost conflict-free transactions)")
    fuzz_params = {"vertices": 4, "max_cluster": 2}

    def spec(self) -> PMSpec:
        p = self.p
        return PMSpec(statics=(StaticArray("degree", -(-p.vertices // LINE_WORDS), LINE_WORDS),
                               StaticArray("edges", p.vertices, p.max_cluster)),
                      max_tx_writes=2, max_tx_words=2, max_tx_allocs=0, max_tx_objects=2)

    def nlocks(self) -> int:
        return 1

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[int, int]:
        """``(v, i)``: add ``i`` to ``v``'s implied edges."""
        v, i = (int(x) for x in rng.integers(0, self.p.vertices, size=2))
        return (v, i)

    def transaction(self, cpu: Any, rt: Runtime, op: Any) -> Generator[Any, Any, None]:
        """The reverse-edge scan (outside the transaction), then the transaction."""
        if self.p.scan_ns:
            cpu.work(self.p.scan_ns)
        yield from super().transaction(cpu, rt, op)

    def locks_of(self, op: tuple[int, int]) -> tuple[int]:
        return (0,)

    def body(self, tx: Any, op: tuple[int, int]) -> Generator[Any, Any, bool]:
        static = tx.rt.static
        v, i = op
        deg, f = static("degree", v // LINE_WORDS), v % LINE_WORDS
        d = tx.read(deg, f)
        if d >= self.p.max_cluster:
            return True
        tx.write(deg, f, d + 1)
        yield from tx.pause()
        tx.write(static("edges", v), d, i & MASK64)
        return True

    def model(self) -> Model:
        return Ssca2Model(self.p.vertices, self.p.max_cluster)

    def read_data(self, rt: Runtime) -> Hashable:
        degree = rt.peek_static("degree").reshape(-1)[: self.p.vertices]
        edges = rt.peek_static("edges")
        return tuple((int(d), tuple(int(x) for x in edges[v]))
                     for v, d in enumerate(degree) if d)
