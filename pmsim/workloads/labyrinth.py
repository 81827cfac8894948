"""Labyrinth: STAMP's maze router (Minh et al., IISWC'08; Lee's algorithm), its transactions.

``paths`` pairs of random points of an ``x`` by ``y`` by ``z`` grid wait in a shared work
queue (STAMP's random mazes: no walls, the pairs shuffled). Every thread repeats STAMP's
``router_solve``:

- **take a pair**: pop the work queue (read its pop index and the pair, advance the index;
  read-only once the queue is empty);
- **route it**: copy the whole grid into thread-private memory (STAMP's ``grid_copy``, a plain
  ``memcpy`` inside the transaction: :meth:`Tx.read_plain`, which hardware TM tracks like any
  load and a software TM does not), expand a breadth-first wave from the source over the copy
  (Lee's algorithm: every empty neighbour of a cell gets its distance plus one) until it
  reaches the destination, trace the path back choosing the lowest neighbour (a turn costs
  ``bend_cost`` more), then lay the path on the shared grid: each interior point is read and
  written full (STAMP's ``TMgrid_addPath``). A point found taken (the copy was stale, as a
  software TM allows) restarts the routing (STAMP's ``TM_RESTART``); no path leaves the grid
  unchanged;
- once the queue is empty, **publish** the thread's routed paths (STAMP inserts its path
  vector into a shared list; here its count is written to the thread's slot), and stop.

The expansion and traceback run on private memory and are not instrumented in STAMP; pmsim
charges ``expand_ns`` of compute per cell the wave reaches, and does not model the private
copy's stores: at STAMP's larger inputs (512 x 512 x 7) the copy alone overflows a hardware
transaction's write capacity, which pmsim does not see (the default, STAMP's input for
simulators ``random-x32-y32-z3-n96``, copies 384 lines, within it). The routed path is recorded
with the transaction's parameters, so the reference model lays exactly the path the committed
attempt laid (an attempt with a stale copy may route differently from a fresh one).

The work is fixed by the input, as in STAMP: a thread stops once it has published.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import check_types, param
from ..errors import ConfigError, PmsimError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import FINISHED, Model, Workload, check_range, register_workload

POP, ROUTE, PUBLISH = 0, 1, 2
"""First element of an op: ``(POP, tid)``, ``(ROUTE, tid, pair)`` (the committed attempt
appends its path's interior points), ``(PUBLISH, tid, routed)``."""
EMPTY, FULL = 0, 1
"""A shared grid point: free, or on a laid path (STAMP: -1 and -2)."""
CELLS_PER_LINE = 8
EXPAND_NS = 20 / 1.8
"""Compute per cell the wave reaches: six neighbour loads, compares and a queue push, about 20
cycles [A], at the 1.8 GHz of NV-HTM's Xeon E5-2648 v4."""
MOVES = ((1, 0, 0), (0, 1, 0), (0, 0, 1), (-1, 0, 0), (0, -1, 0), (0, 0, -1))
"""STAMP's traceback order: +x, +y, +z, -x, -y, -z (its expansion order differs only in which
equal-distance neighbour is queued first, not in the distances)."""


@dataclass(frozen=True)
class LabyrinthParams:
    x: int = param(32, "points", "grid width (STAMP's simulator input random-x32-y32-z3-n96)")
    y: int = param(32, "points", "grid depth")
    z: int = param(3, "points", "grid layers")
    paths: int = param(96, "pairs", "source-destination pairs to route")
    bend_cost: int = param(1, "", "extra cost of a turn in the traceback (STAMP -b: 1)")
    expand_ns: float = param(EXPAND_NS, "ns", "compute per cell the expansion reaches (default: "
                             "about 20 cycles at 1.8 GHz)")

    def __post_init__(self) -> None:
        check_types(self, "workload 'labyrinth': parameter ")
        for name in ("x", "y", "z"):
            check_range("labyrinth", name, getattr(self, name), 1, 4096)
        check_range("labyrinth", "paths", self.paths, 1, 1 << 20)
        check_range("labyrinth", "bend_cost", self.bend_cost, 0, 1 << 20)
        check_range("labyrinth", "expand_ns", self.expand_ns, 0, 1e6)
        if self.x * self.y * self.z < 2:
            raise ConfigError("workload 'labyrinth': the grid needs at least 2 points; raise "
                              "x, y or z")


def generate(seed: int, x: int, y: int, z: int, paths: int) -> list[tuple[int, int]]:
    """Random source-destination pairs of distinct points (cell indices), in queue order."""
    rng = np.random.default_rng([seed, 0x1AB])
    cells = x * y * z
    out = []
    for _ in range(paths):
        a, b = (int(v) for v in rng.choice(cells, size=2, replace=False))
        out.append((a, b))
    return out


def route(grid: list[int], dims: tuple[int, int, int], src: int, dst: int, bend: int
          ) -> tuple[list[int] | None, int]:
    """STAMP's ``PdoExpansion`` and ``PdoTraceback`` on a copy of the grid (EMPTY/FULL):
    the path's points from the destination back to the source, or None; and the number of
    cells the wave reached."""
    nx, ny, nz = dims
    inf = 1 << 62
    dist = [inf if v == EMPTY else -1 for v in grid]  # -1: full
    dist[src], dist[dst] = 0, inf
    q = deque([src])
    reached = 1
    found = False
    while q:
        cur = q.popleft()
        if cur == dst:
            found = True
            break
        cx, rest = cur % nx, cur // nx
        cy, cz = rest % ny, rest // ny
        v = dist[cur] + 1
        for dx, dy, dz in MOVES:
            px, py, pz = cx + dx, cy + dy, cz + dz
            if 0 <= px < nx and 0 <= py < ny and 0 <= pz < nz:
                n = px + nx * (py + ny * pz)
                if dist[n] > v:
                    dist[n] = v
                    q.append(n)
                    reached += 1
    if not found:
        return None, reached
    path = [dst]
    cur, mom = dst, None
    taken = {dst}
    while dist[cur] != 0:
        cx, rest = cur % nx, cur // nx
        cy, cz = rest % ny, rest // ny
        best, best_v, best_m = cur, dist[cur], mom
        for use_mom in (True, False):
            for m in MOVES:
                px, py, pz = cx + m[0], cy + m[1], cz + m[2]
                if not (0 <= px < nx and 0 <= py < ny and 0 <= pz < nz):
                    continue
                n = px + nx * (py + ny * pz)
                if n in taken or dist[n] < 0 or dist[n] == inf:
                    continue
                b = bend if use_mom and mom is not None and mom != m else 0
                if dist[n] + b <= best_v:
                    best, best_v, best_m = n, dist[n], m
            if best != cur:
                break
        if best == cur:
            return None, reached
        cur, mom = best, best_m
        taken.add(cur)
        path.append(cur)
    return path, reached


class LabyrinthModel(Model):
    def __init__(self, dims: tuple[int, int, int], pairs: list[tuple[int, int]], bend: int
                 ) -> None:
        self.dims, self.pairs, self.bend = dims, pairs, bend
        self.grid = [EMPTY] * (dims[0] * dims[1] * dims[2])
        self.pop = 0
        self.published: dict[int, int] = {}

    def apply(self, op: tuple[Any, ...]) -> None:
        if op[0] == POP:
            self.pop = min(self.pop + 1, len(self.pairs))
        elif op[0] == PUBLISH:
            self.published[op[1]] = op[2]
        elif op[2] >= 0:
            points = op[3] if len(op) > 3 else interior(self.grid, self.dims,
                                                        self.pairs[op[2]], self.bend)
            for c in points:
                self.grid[c] = FULL

    def snapshot(self) -> Hashable:
        return (self.pop, tuple(i for i, v in enumerate(self.grid) if v),
                tuple(sorted((t, v) for t, v in self.published.items() if v)))


def interior(grid: list[int], dims: tuple[int, int, int], pair: tuple[int, int],
             bend: int) -> tuple[int, ...]:
    """The interior points of the path routed on ``grid`` (empty if none)."""
    path, _ = route(grid, dims, pair[0], pair[1], bend)
    return tuple(path[1:-1]) if path else ()


@register_workload
class Labyrinth(Workload):
    """STAMP's Labyrinth: route point pairs through a shared 3-D grid, one path a transaction."""

    name = "labyrinth"
    Params = LabyrinthParams
    help = ("STAMP's Labyrinth: threads pop point pairs off a shared queue and lay each "
            "routed path on a shared grid they copy whole inside the transaction")
    fuzz_params = {"x": 4, "y": 3, "z": 1, "paths": 3, "expand_ns": 0.0}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        p = self.p
        self.dims = (p.x, p.y, p.z)
        self.cells = p.x * p.y * p.z
        self.lines = -(-self.cells // CELLS_PER_LINE)
        self.pairs = generate(self.seed, p.x, p.y, p.z, p.paths)
        self.resume(None)

    def resume(self, order: Any) -> None:
        """A recovered run's threads start with a pop (a pair popped before the crash and not
        routed is lost, as STAMP's would be); their routed counts restart at 0."""
        self._next: dict[int, int] = {}
        self._held: dict[int, int] = {}
        self._routed: dict[int, int] = {}
        self._laid: dict[int, bool] = {}

    def spec(self) -> PMSpec:
        lines = self.lines
        longest = self.cells
        return PMSpec(statics=(StaticArray("grid", lines, CELLS_PER_LINE),
                               StaticArray("queue", 1, 2), StaticArray("pairs", self.p.paths, 2),
                               StaticArray("published", self.threads, 1)),
                      max_tx_writes=longest, max_tx_words=longest, max_tx_allocs=0,
                      max_tx_objects=lines + 1)

    def nlocks(self) -> int:
        """The work queue and the grid: one lock each."""
        return 2

    def locks_of(self, op: tuple[Any, ...]) -> tuple[int, ...]:
        return (1,) if op[0] == ROUTE else (0,)

    def init_data(self, rt: Runtime) -> None:
        for i, (a, b) in enumerate(self.pairs):
            rt.init_words(rt.static("pairs", i), 0, [a, b])
        rt.init_words(rt.static("queue", 0), 0, [0, len(self.pairs)])

    def next_op(self, tid: int, rng: np.random.Generator) -> Any:
        """Pop, route what the pop took, ...; publish once the queue is empty; then done."""
        k = self._next.get(tid, POP)
        if k == FINISHED:
            return FINISHED
        if k == POP:
            if self._laid.pop(tid, False):
                self._routed[tid] = self._routed.get(tid, 0) + 1
            self._next[tid] = ROUTE
            return (POP, tid)
        if k == ROUTE:
            pair = self._held.pop(tid, -1)
            if pair >= 0:
                self._next[tid] = POP
                return (ROUTE, tid, pair)
        self._next[tid] = FINISHED
        return (PUBLISH, tid, self._routed.get(tid, 0))

    def body(self, tx: Any, op: tuple[Any, ...]) -> Generator[Any, Any, None]:
        static = tx.rt.static
        if op[0] == POP:
            q = static("queue", 0)
            pop, n = (int(w) for w in tx.read_words(q, 0, 2))
            if pop >= n:
                self._held[op[1]] = -1
                return
            tx.read_words(static("pairs", pop), 0, 2)
            tx.write(q, 0, pop + 1)
            self._held[op[1]] = pop
            return
        if op[0] == PUBLISH:
            tx.write(static("published", op[1]), 0, op[2])
            return
        yield from self._route(tx, op)

    def _route(self, tx: Any, op: tuple[Any, ...]) -> Generator[Any, Any, None]:
        static = tx.rt.static
        tid, pair = op[1], op[2]
        src, dst = (int(w) for w in tx.read_words(static("pairs", pair), 0, 2))
        if not (0 <= src < self.cells and 0 <= dst < self.cells):
            raise PmsimError(f"labyrinth: pair {pair} names points {src}, {dst} outside the "
                             f"grid of {self.cells}")
        rows = [static("grid", r) for r in range(self.lines)]
        while True:
            copy = [int(v) for r in rows for v in tx.read_plain(r, 0, CELLS_PER_LINE)]
            yield from tx.pause()
            path, reached = route(copy[: self.cells], self.dims, src, dst, self.p.bend_cost)
            tx.cpu.work(reached * self.p.expand_ns)
            yield from tx.pause()
            points = tuple(path[1:-1]) if path else ()
            if all(not tx.read(rows[c // CELLS_PER_LINE], c % CELLS_PER_LINE) for c in points):
                break
        for c in points:
            tx.write(rows[c // CELLS_PER_LINE], c % CELLS_PER_LINE, FULL)
        self.executed[tx.txid] = (*op[:3], points)
        self._laid[tid] = path is not None

    def model(self) -> Model:
        return LabyrinthModel(self.dims, self.pairs, self.p.bend_cost)

    def read_data(self, rt: Runtime) -> Hashable:
        grid = rt.peek_static("grid").reshape(-1)[: self.cells]
        bad = [int(v) for v in grid if v not in (EMPTY, FULL)]
        if bad:
            raise PmsimError(f"labyrinth: a grid point holds {bad[0]}, neither empty nor full")
        pop = int(rt.peek_static("queue")[0, 0])
        pub = rt.peek_static("published")[:, 0]
        return (pop, tuple(int(i) for i in np.flatnonzero(grid)),
                tuple((t, int(v)) for t, v in enumerate(pub) if v))


__all__ = ["Labyrinth", "LabyrinthParams"]
