"""Yada: STAMP's Delaunay mesh refinement (Minh et al., IISWC'08; Ruppert's algorithm), its
transactions.

A Delaunay triangulation of ``points`` random points in the unit square (and its four corners)
is refined until no triangle has an angle below ``min_angle`` degrees. The mesh lives in PM:
each triangle an object of its three vertices (IEEE doubles), its three neighbours (across the
edge opposite each vertex; 0 on the hull) and a garbage flag; the bad triangles wait in a
shared work queue. The hull is the square's four sides (the initial triangulation grows from
the square's two halves), so a hull edge is a boundary segment and needs no other mark. Every
thread repeats STAMP's loop:

- **take a bad triangle**: pop the work queue (STAMP's ``TMHEAP_REMOVE``; read-only once empty);
- **refine it** (STAMP's ``TMREGION_REFINE``), unless it is already garbage: grow the cavity of
  its circumcentre (breadth-first over neighbours, every triangle whose circumcircle holds the
  centre). If the search reaches a boundary segment the centre encroaches (it lies in the
  segment's closed diametral circle, as STAMP's ``element_isInCircumCircle``, or beyond the
  segment, outside the square), split the segment instead: insert its midpoint (its cavity
  grown the same way from the triangle on the segment, the fan left open there, so that the
  segment's halves are hull edges) and, unless that took the bad triangle out of the mesh,
  grow the centre's cavity again; else insert the centre. An insertion marks its cavity's
  triangles garbage, allocates a fan of new triangles joining the point to the cavity's
  border, links them to each other and to the triangles outside (a write in each), and keeps
  the new bad triangles in a thread-local list (less those a later insertion of the same
  refinement took out). The splits and the centre are one transaction, as in STAMP, whose
  ``TMregion_refine`` refines the encroached segment and regrows the region within the same
  one;
- **hand over the bad ones** (STAMP's ``TMREGION_TRANSFERBAD``): push that list on the queue.

A thread stops when it finds the queue empty, as in STAMP; the refined mesh has no angle below
``min_angle``, at the hull too. Degenerate cases are settled by the geometry, the same in the
runtimes and the model: a neighbour across an edge the new point does not lie strictly inside
of joins the cavity (so the fan never folds); a midpoint lies exactly on its side of the square
(both ends share that coordinate), and the fan gets no triangle on the split segment, whose
halves become hull edges; a side's midpoint encroaches no segment of another side (the corners
are right angles, and input points), so splits do not cascade; a centre on a side (a right
triangle's, on its hypotenuse) encroaches it. Ruppert's algorithm is proven to finish up to
about 20.7 degrees (the default 20 is below); above that it finishes in practice (up to the
30 allowed, on the inputs tried), and the sequential refinement that sizes the PM stops with
an error past ``20 * (points + 4) + 1000`` inserted points, a refinement past 64 splits.

What pmsim leaves out: the input is random points, not STAMP's ``633.2`` mesh files; a bad
triangle is a skinny one only (STAMP also counts a triangle with an obtuse angle as bad, and
inserts the midpoint of the edge opposite it, inside the mesh too); a segment is split only
when a circumcentre encroaches it, as STAMP does (not when a vertex does, Ruppert's eager
rule); the work queue is first in, first out (STAMP's heap orders by the element's quality); a
garbage triangle is not freed. ``visit_ns`` of compute is charged for each triangle a cavity
search reads or tests (the circumcircle test, STAMP's uninstrumented arithmetic; a refinement
reads a triangle once, its later searches test it again). The reference model refines its own
copy of the mesh by the same geometry, so it checks every triangle the runtimes leave in PM.
"""

from __future__ import annotations

import math
import struct
from collections import deque
from collections.abc import Callable, Generator, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import check_types, param
from ..errors import PmsimError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import FINISHED, Model, Workload, check_range, register_workload
from .structures import INIT_STREAM, InitTx, WalkedImage, drive

POP, REFINE, TRANSFER = 0, 1, 2
"""First element of an op: ``(POP, tid)``, ``(REFINE, tid, slot)`` (the queue slot the pop
took), ``(TRANSFER, tid, handles, keys)``."""
N0, GARBAGE, WORDS = 6, 9, 10
"""A triangle's words: x0, y0, x1, y1, x2, y2 (double bits), three neighbours, and 0 while it
is in the mesh, else the next triangle of its thread's garbage list with the low bit set."""
MAX_SPLITS = 64
"""Boundary segments one refinement may split before it stops the run with an error (each
split halves a segment near the circumcentre, which a few take out of the mesh)."""
VISIT_NS = 40 / 1.8
"""Compute per triangle a cavity search reads or tests: a circumcircle test, about 40 cycles
[A], at the 1.8 GHz of NV-HTM's Xeon E5-2648 v4."""
Point = tuple[float, float]
Key = tuple[tuple[int, int], ...]
CORNERS: tuple[Point, ...] = ((0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0))
"""The unit square's corners, counter-clockwise: input points of every mesh."""


def bits(x: float) -> int:
    return int.from_bytes(struct.pack("<d", x), "little")


def unbits(w: int) -> float:
    return float(struct.unpack("<d", int(w).to_bytes(8, "little"))[0])


def key_of(tri: tuple[Point, Point, Point]) -> Key:
    """A triangle's identity: its vertices' bits, sorted."""
    return tuple(sorted((bits(x), bits(y)) for x, y in tri))


def circumcircle(a: Point, b: Point, c: Point) -> tuple[Point, float]:
    """Centre and squared radius."""
    d = 2 * (a[0] * (b[1] - c[1]) + b[0] * (c[1] - a[1]) + c[0] * (a[1] - b[1]))
    if d == 0:
        return (math.inf, math.inf), math.inf
    a2, b2, c2 = a[0] ** 2 + a[1] ** 2, b[0] ** 2 + b[1] ** 2, c[0] ** 2 + c[1] ** 2
    ux = (a2 * (b[1] - c[1]) + b2 * (c[1] - a[1]) + c2 * (a[1] - b[1])) / d
    uy = (a2 * (c[0] - b[0]) + b2 * (a[0] - c[0]) + c2 * (b[0] - a[0])) / d
    return (ux, uy), (a[0] - ux) ** 2 + (a[1] - uy) ** 2


def holds(tri: tuple[Point, Point, Point], p: Point) -> bool:
    """Whether ``p`` lies strictly inside the triangle's circumcircle."""
    (ux, uy), r2 = circumcircle(*tri)
    return (p[0] - ux) ** 2 + (p[1] - uy) ** 2 < r2 * (1 - 1e-12)


def min_angle(tri: tuple[Point, Point, Point]) -> float:
    """The triangle's smallest angle in degrees."""
    out = 180.0
    for i in range(3):
        a, b, c = tri[i], tri[(i + 1) % 3], tri[(i + 2) % 3]
        v1, v2 = (b[0] - a[0], b[1] - a[1]), (c[0] - a[0], c[1] - a[1])
        n = math.hypot(*v1) * math.hypot(*v2)
        if n == 0:
            return 0.0
        cos = max(-1.0, min(1.0, (v1[0] * v2[0] + v1[1] * v2[1]) / n))
        out = min(out, math.degrees(math.acos(cos)))
    return out


def inside(p: Point) -> bool:
    return 0.0 < p[0] < 1.0 and 0.0 < p[1] < 1.0


def delaunay(points: list[Point]) -> list[tuple[Point, Point, Point]]:
    """Bowyer-Watson from the square's two halves: the Delaunay triangles of the square's
    corners and ``points`` (strictly inside it; corners among them are skipped),
    counter-clockwise. Every hull edge lies on a side of the square (plain Bowyer-Watson's
    enclosing triangle loses the flat triangles along a side whose circumcircles hold one of
    its vertices)."""
    c = CORNERS
    tris: list[tuple[Point, Point, Point]] = [(c[0], c[1], c[2]), (c[0], c[2], c[3])]
    for p in points:
        if p in c:
            continue
        if not inside(p):
            raise PmsimError(f"yada: the point {p} lies outside the square")
        bad = [t for t in tris if holds(t, p)]
        edges: dict[tuple[Point, Point], int] = {}
        for t in bad:
            for i in range(3):
                e = (t[i], t[(i + 1) % 3])
                r = (e[1], e[0])
                if r in edges:
                    del edges[r]
                else:
                    edges[e] = 1
        tris = [t for t in tris if t not in bad] + [(a, b, p) for a, b in edges]
    return tris


def orient(a: Point, b: Point, p: Point) -> float:
    """Twice the signed area of the triangle ``a, b, p``: positive when ``p`` lies left of the
    line from ``a`` to ``b``."""
    return (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])


def midpoint(a: Point, b: Point) -> Point:
    """The middle of a segment (on a side of the square, exactly on it: both ends share the
    side's coordinate)."""
    return (a[0] + b[0]) / 2, (a[1] + b[1]) / 2


def encroaches(p: Point, a: Point, b: Point) -> bool:
    """Whether ``p`` encroaches the boundary segment from ``a`` to ``b`` (a hull edge, the
    mesh on its left): ``p`` lies in its diametral circle (closed, as STAMP's
    ``element_isInCircumCircle``) or not strictly on the mesh's side of it (outside the
    square)."""
    m = midpoint(a, b)
    r2 = ((b[0] - a[0]) ** 2 + (b[1] - a[1]) ** 2) / 4
    return (p[0] - m[0]) ** 2 + (p[1] - m[1]) ** 2 <= r2 or orient(a, b, p) <= 0


def linked(tris: list[tuple[Point, Point, Point]]) -> list[list[int]]:
    """The words of counter-clockwise triangles, their neighbours numbered from 1 in the
    list's order (0: a hull edge)."""
    edges: dict[tuple[Point, Point], int] = {}
    for i, t in enumerate(tris):
        for k in range(3):
            edges[(t[(k + 1) % 3], t[(k + 2) % 3])] = i + 1
    return [[bits(v) for pt in t for v in pt]
            + [edges.get((t[(k + 2) % 3], t[(k + 1) % 3]), 0) for k in range(3)] + [0]
            for t in tris]


def bad(tri: tuple[Point, Point, Point], angle: float) -> bool:
    return min_angle(tri) < angle


@dataclass
class Refined:
    """What one refinement did: the triangles it took out of the mesh (each pushed on the
    garbage list), those it allocated (some of them taken out again by a later insertion of
    the same refinement), the new bad ones still in the mesh (with their keys), and the
    boundary segments it split."""

    cavity: list[int] = field(default_factory=list)
    made: list[int] = field(default_factory=list)
    bad: list[tuple[int, Key]] = field(default_factory=list)
    splits: int = 0


Border = list[tuple[Point, Point, int, int]]
"""A cavity's border edges, counter-clockwise: the ends, the triangle outside (0: the hull) and
the index of the edge in it."""


class Mesh:
    """The refinement over some storage: ``read(h)`` a triangle's words, ``alloc(words)`` a new
    one, ``write(h, field, value)``; pmsim's transactions and the reference model share it.

    A hull edge (neighbour 0) is a boundary segment: every hull edge lies on a side of the
    square (the mesh is convex and its corners are input points), so no further mark is
    needed; a split leaves the two halves on the hull."""

    def __init__(self, read: Callable[[int], list[int]], alloc: Callable[[list[int]], int],
                 write: Callable[[int, int, int], None]) -> None:
        self.read, self.alloc, self.write = read, alloc, write
        self.garbage = 0
        """The head of the garbage list the cavities are pushed on."""
        self.centres = self.splits = 0
        """Circumcentres inserted and boundary segments split, over every refinement."""
        self._seen: dict[int, list[int]] = {}
        self._visit: Callable[[], None] = lambda: None
        self._pause: Callable[[], Iterable[Any]] = tuple

    @staticmethod
    def tri(w: list[int]) -> tuple[Point, Point, Point]:
        return ((unbits(w[0]), unbits(w[1])), (unbits(w[2]), unbits(w[3])),
                (unbits(w[4]), unbits(w[5])))

    def refine(self, h: int, angle: float, visit: Callable[[], None] = lambda: None,
               pause: Callable[[], Iterable[Any]] = tuple
               ) -> Generator[Any, Any, Refined | None]:
        """Refine triangle ``h`` (a generator: ``pause`` after each triangle the cavity
        searches read; ``visit`` for each triangle read or tested), as STAMP's
        ``TMregion_refine``: grow the cavity of its circumcentre; if that reaches a boundary
        segment the centre encroaches (or lies beyond), split the segment at its midpoint
        instead and, unless that took ``h`` out of the mesh, grow the centre's cavity again;
        else insert the centre. None when ``h`` is garbage."""
        self._seen, self._visit, self._pause = {}, visit, pause
        w = self.read(h)
        visit()
        if w[GARBAGE]:
            return None
        self._seen[h] = w
        c, _ = circumcircle(*self.tri(w))
        out = Refined()
        while True:
            cavity, border, hit = yield from self._search(h, c, None)
            if hit is None:
                if not inside(c):
                    raise PmsimError(f"yada: the circumcentre {c} of triangle {h:#x} lies "
                                     "outside the square, yet no boundary segment of its "
                                     "cavity is encroached")
                self._fill(c, cavity, border, angle, out)
                self.centres += 1
                break
            if out.splits == MAX_SPLITS:
                raise PmsimError(f"yada: refining triangle {h:#x} split {MAX_SPLITS} "
                                 f"boundary segments and its circumcentre {c} still "
                                 "encroaches one")
            x, i = hit
            tx = self.tri(self._seen[x])
            m = midpoint(tx[(i + 1) % 3], tx[(i + 2) % 3])
            cavity, border, _ = yield from self._search(x, m, hit)
            self._fill(m, cavity, border, angle, out)
            self.splits += 1
            out.splits += 1
            if self._seen[h][GARBAGE]:
                break
        out.bad = [(t, k) for t, k in out.bad if not self._seen[t][GARBAGE]]
        return out

    def _search(self, seed: int, p: Point, segment: tuple[int, int] | None
                ) -> Generator[Any, Any, tuple[dict[int, list[int]], Border,
                                               tuple[int, int] | None]]:
        """The cavity of point ``p`` (breadth-first from ``seed``: every triangle whose
        circumcircle holds ``p``, and every one across an edge ``p`` does not lie strictly
        inside of, so that the fan around ``p`` never folds), its border, and the first hull
        edge (triangle, edge index) ``p`` encroaches, where the search stops; ``segment``:
        the hull edge ``p`` splits, which stays out of the border (no encroachment is looked
        for then: a side's midpoint encroaches no segment of another side)."""
        cavity = {seed: self._seen[seed]}
        rejected: dict[int, list[int]] = {}  # neighbours outside the cavity, as read
        border: Border = []
        frontier = deque([seed])
        while frontier:
            x = frontier.popleft()
            tx = self.tri(cavity[x])
            for i in range(3):
                a, b = tx[(i + 1) % 3], tx[(i + 2) % 3]
                n = int(cavity[x][N0 + i])
                if n in cavity:
                    continue
                if not n:
                    if segment is None:
                        if encroaches(p, a, b):
                            return cavity, border, (x, i)
                    elif (x, i) == segment:
                        continue
                    elif orient(a, b, p) <= 0:
                        raise PmsimError(f"yada: the midpoint {p} lies beyond the hull edge "
                                         f"{a}-{b} of its cavity")
                    border.append((a, b, 0, -1))
                    continue
                if n in rejected and orient(a, b, p) <= 0:
                    cavity[n] = rejected.pop(n)  # p on or beyond this edge: the fan would fold
                    frontier.append(n)
                    border[:] = [e for e in border if e[2] != n]
                    continue
                if n not in rejected:
                    known = n in self._seen
                    wn = self._seen[n] if known else self.read(n)
                    self._visit()
                    if not known:
                        self._seen[n] = wn
                        yield from self._pause()
                    if holds(self.tri(wn), p) or orient(a, b, p) <= 0:
                        cavity[n] = wn
                        frontier.append(n)
                        continue
                    rejected[n] = wn
                tn = self.tri(rejected[n])
                j = next(k for k in range(3) if {tn[(k + 1) % 3], tn[(k + 2) % 3]} == {a, b})
                border.append((a, b, n, j))
        return cavity, border, None

    def _fill(self, p: Point, cavity: dict[int, list[int]], border: Border, angle: float,
              out: Refined) -> None:
        """Retriangulate: a fan of new triangles joining ``p`` to the border (open at a split
        segment, whose halves stay on the hull), linked to each other and to the triangles
        outside; the cavity's triangles marked garbage."""
        by_start: dict[Point, int] = {}
        by_end: dict[Point, int] = {}
        made = []
        for a, b, n, j in border:
            w = [bits(a[0]), bits(a[1]), bits(b[0]), bits(b[1]), bits(p[0]), bits(p[1]),
                 0, 0, n, 0]
            t = self.alloc(w)
            self._seen[t] = list(w)
            by_start[a], by_end[b] = t, t
            made.append((t, (a, b, p), n, j))
        for t, (a, b, _p), n, j in made:
            for f, v in ((N0, by_start.get(b, 0)), (N0 + 1, by_end.get(a, 0))):
                if v:
                    self._write(t, f, v)
            if n:
                self._write(n, N0 + j, t)
        for x in cavity:
            self._write(x, GARBAGE, self.garbage | 1)
            self.garbage = x
        out.cavity += cavity
        out.made += [t for t, _, _, _ in made]
        out.bad += [(t, key_of(tri)) for t, tri, _, _ in made if bad(tri, angle)]

    def _write(self, h: int, f: int, v: int) -> None:
        self.write(h, f, v)
        if h in self._seen:
            self._seen[h][f] = v


@dataclass(frozen=True)
class YadaParams:
    points: int = param(633, "points", "random points of the initial mesh (default: as many as "
                        "STAMP's simulator input, the mesh 633.2)")
    min_angle: float = param(20.0, "degrees", "smallest angle a refined triangle may have "
                             "(STAMP -a: 20 for its simulator input)")
    visit_ns: float = param(VISIT_NS, "ns", "compute per triangle a cavity search reads or tests "
                            "(default: about 40 cycles at 1.8 GHz)")
    slack: float = param(2.0, "", "capacity of the triangle heap and the queue, and the bound "
                         "on a transaction's cavity and fan, over a sequential refinement's "
                         "(concurrent orders differ)")

    def __post_init__(self) -> None:
        check_types(self, "workload 'yada': parameter ")
        check_range("yada", "points", self.points, 1, 20000)
        check_range("yada", "min_angle", self.min_angle, 1.0, 30.0)
        check_range("yada", "visit_ns", self.visit_ns, 0, 1e6)
        check_range("yada", "slack", self.slack, 1.0, 100.0)


class YadaModel(Model):
    """The mesh as the reference refines it (in a dictionary), the queue as keys."""

    def __init__(self, tris: list[list[int]], queue: list[Key], angle: float) -> None:
        self.words = {i + 1: list(w) for i, w in enumerate(tris)}
        self.queue = list(queue)
        self.pop = 0
        self.angle = angle
        self.by_key = {key_of(Mesh.tri(w)): h for h, w in self.words.items()}
        self.mesh = Mesh(lambda h: list(self.words[h]), self._alloc, self._write)

    def _alloc(self, w: list[int]) -> int:
        h = len(self.words) + 1
        self.words[h] = list(w)
        self.by_key[key_of(Mesh.tri(w))] = h
        return h

    def _write(self, h: int, f: int, v: int) -> None:
        self.words[h][f] = v

    def apply(self, op: tuple[Any, ...]) -> None:
        if op[0] == POP:
            self.pop = min(self.pop + 1, len(self.queue))
        elif op[0] == REFINE:
            drive(self.mesh.refine(self.by_key[self.queue[op[2]]], self.angle))
        else:
            self.queue.extend(op[3])

    def snapshot(self) -> Hashable:
        live = sorted(key_of(Mesh.tri(w)) for w in self.words.values() if not w[GARBAGE])
        return tuple(live), self.pop, tuple(self.queue)


@register_workload
class Yada(WalkedImage, Workload):
    """STAMP's Yada: refine a Delaunay mesh in PM, a bad triangle's cavity a transaction."""

    name = "yada"
    Params = YadaParams
    help = ("STAMP's Yada: threads pop bad triangles of a Delaunay mesh and retriangulate each "
            "one's cavity around its circumcentre")
    fuzz_params = {"points": 6, "min_angle": 25.0, "visit_ns": 0.0}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        p = self.p
        rng = np.random.default_rng([self.seed, INIT_STREAM])
        pts: list[Point] = list(CORNERS)
        pts += [(float(x), float(y)) for x, y in rng.uniform(0.02, 0.98, size=(p.points, 2))]
        tris = delaunay(pts)
        self.initial = linked(tris)
        self.initial_bad = [key_of(t) for t in tris if bad(t, p.min_angle)]
        total, pushed, cavity, border = self._sequential()
        self.capacity = int(total * p.slack) + 16
        self.queue_slots = int(pushed * p.slack) + 16
        self.cavity, self.border = int(cavity * p.slack) + 8, int(border * p.slack) + 8
        self.resume(None)

    def _sequential(self) -> tuple[int, int, int, int]:
        """Triangles, queue entries, the largest cavity and the largest fan of a refinement by
        one thread (they size the PM and bound a transaction; a refinement's cavities and fans
        summed over its segment splits and its centre). Keeps the run's counts in
        ``sequential``; stops with an error past ``max_points`` inserted points."""
        m = self.model()
        assert isinstance(m, YadaModel)
        cavity = border = 1
        refinements = 0
        limit = self.max_points()
        while m.pop < len(m.queue):
            h = m.by_key[m.queue[m.pop]]
            m.pop += 1
            out = drive(m.mesh.refine(h, self.p.min_angle))
            if out:
                refinements += 1
                m.queue.extend(k for _, k in out.bad)
                cavity, border = max(cavity, len(out.cavity)), max(border, len(out.made))
            if m.mesh.centres + m.mesh.splits > limit:
                raise PmsimError(
                    f"yada: refining {self.p.points} points to {self.p.min_angle} degrees "
                    f"inserted more than {limit} points without finishing (Ruppert's "
                    "algorithm is proven to finish only up to about 20.7 degrees; lower "
                    "min_angle)")
        self.sequential = {"refinements": refinements, "centres": m.mesh.centres,
                           "splits": m.mesh.splits, "pops": m.pop + 1}
        """The sequential refinement's counts: refinements of a triangle still in the mesh,
        circumcentres inserted, boundary segments split, pops (the last one empty)."""
        return len(m.words), len(m.queue), cavity, border

    def max_points(self) -> int:
        """The points a sequential refinement may insert before it counts as not finishing:
        far above what it inserts (633 points, seed 1: 589 at 20 degrees, 2,361 at 30)."""
        return 20 * (self.p.points + 4) + 1000

    def resume(self, order: Any) -> None:
        """A recovered run's threads start with a pop (a triangle popped before the crash and
        not refined stays bad, as STAMP's would)."""
        self._next: dict[int, int] = {}
        self._held: dict[int, int] = {}
        self._bad: dict[int, list[tuple[int, Key]]] = {}

    def spec(self) -> PMSpec:
        b, c = self.border, self.cavity
        return PMSpec(statics=(StaticArray("root", 1, 1), StaticArray("qhead", 1, 2),
                               StaticArray("queue", self.queue_slots, 1),
                               StaticArray("garbage", self.threads, 1)),
                      heap=((WORDS, WORDS, self.capacity),),
                      max_tx_writes=4 * b + c + 8, max_tx_words=(WORDS + 3) * b + c + 8,
                      max_tx_allocs=b, max_tx_objects=2 * b + c + 8)

    def nlocks(self) -> int:
        """The work queue and the mesh: one lock each."""
        return 2

    def locks_of(self, op: tuple[Any, ...]) -> tuple[int, ...]:
        return (1,) if op[0] == REFINE else (0,)

    def init_data(self, rt: Runtime) -> None:
        tx = InitTx(rt)
        handles = [tx.alloc(WORDS) for _ in self.initial]
        for h, w in zip(handles, self.initial, strict=True):
            tx.write_words(h, 0, w[:N0] + [handles[n - 1] if n else 0 for n in w[N0:GARBAGE]]
                           + [0])
        tx.write(rt.static("root", 0), 0, handles[0])
        by_key = {key_of(Mesh.tri(w)): h for h, w in zip(handles, self.initial, strict=True)}
        for i, k in enumerate(self.initial_bad):
            tx.write(rt.static("queue", i), 0, by_key[k])
        tx.write_words(rt.static("qhead", 0), 0, [0, len(self.initial_bad)])
        tx.flush()

    def next_op(self, tid: int, rng: np.random.Generator) -> Any:
        """Pop, refine what the pop took, hand over its bad triangles, ...; done when a pop
        finds the queue empty."""
        k = self._next.get(tid, POP)
        if k == POP:
            self._next[tid] = REFINE
            return (POP, tid)
        if k == REFINE:
            slot = self._held.pop(tid, -1)
            if slot < 0:
                return FINISHED
            self._next[tid] = TRANSFER
            return (REFINE, tid, slot)
        self._next[tid] = POP
        got = self._bad.pop(tid, [])
        return (TRANSFER, tid, tuple(h for h, _ in got), tuple(k for _, k in got))

    def body(self, tx: Any, op: tuple[Any, ...]) -> Generator[Any, Any, None]:
        static = tx.rt.static
        q = static("qhead", 0)
        if op[0] == POP:
            pop, push = (int(w) for w in tx.read_words(q, 0, 2))
            self._held[op[1]] = pop if pop < push else -1
            if pop < push:
                tx.write(q, 0, pop + 1)
            return
        if op[0] == TRANSFER:
            if not op[2]:
                return
            push = int(tx.read(q, 1))
            if push + len(op[2]) > self.queue_slots:
                raise PmsimError(f"yada: the work queue's {self.queue_slots} slots are full; "
                                 "raise slack")
            for i, h in enumerate(op[2]):
                tx.write(static("queue", push + i), 0, h)
            tx.write(q, 1, push + len(op[2]))
            return
        yield from self._refine(tx, op)

    def _refine(self, tx: Any, op: tuple[Any, ...]) -> Generator[Any, Any, None]:
        h = int(tx.read(tx.rt.static("queue", op[2]), 0))
        cost = self.p.visit_ns

        def read(x: int) -> list[int]:
            if not tx.rt.heap.is_block(x):
                raise PmsimError(f"yada: a link points to {x:#x}, which is not a heap block")
            return [int(v) for v in tx.read_words(x, 0, WORDS)]

        def alloc(w: list[int]) -> int:
            t = tx.alloc(WORDS)
            tx.write_words(t, 0, w)
            return int(t)

        mesh = Mesh(read, alloc, tx.write)
        head = tx.rt.static("garbage", op[1])
        mesh.garbage = int(tx.read(head, 0))
        out = yield from mesh.refine(h, self.p.min_angle, lambda: tx.cpu.work(cost), tx.pause)
        self._bad[op[1]] = out.bad if out else []
        if out:
            tx.write(head, 0, mesh.garbage)
            root = tx.rt.static("root", 0)
            if int(tx.read(root, 0)) in out.cavity:
                dead = set(out.cavity)
                tx.write(root, 0, next(t for t in out.made if t not in dead))

    def model(self) -> Model:
        return YadaModel(self.initial, self.initial_bad, self.p.min_angle)

    def _read(self, rt: Runtime) -> tuple[list[int], Hashable]:
        root = int(rt.peek_static("root")[0, 0])
        dead: list[int] = []
        for head in rt.peek_static("garbage")[:, 0]:
            x = int(head)
            while x:
                if not rt.heap.is_block(x) or len(dead) > self.capacity:
                    raise PmsimError(f"yada: a garbage list reaches {x:#x}, not a triangle")
                dead.append(x)
                g = int(rt.peek(x, GARBAGE))
                if not g & 1:
                    raise PmsimError(f"yada: triangle {x:#x} is on a garbage list but live")
                x = g & ~1
        seen = {root}
        todo = [root]
        live = []
        keys = []
        while todo:
            x = todo.pop()
            if not rt.heap.is_block(x):
                raise PmsimError(f"yada: a link points to {x:#x}, which is not a heap block")
            w = [int(v) for v in rt.peek_words(x, 0, WORDS)]
            if w[GARBAGE]:
                raise PmsimError(f"yada: triangle {x:#x} is reachable but garbage")
            live.append(x)
            keys.append(key_of(Mesh.tri(w)))
            for n in w[N0:GARBAGE]:
                if n and n not in seen:
                    seen.add(n)
                    todo.append(n)
        if len(live) > self.capacity:
            raise PmsimError("yada: the mesh holds more triangles than were ever allocated")
        pop, push = (int(v) for v in rt.peek_static("qhead")[0])
        if not 0 <= pop <= push <= self.queue_slots:
            raise PmsimError(f"yada: the queue's indices {pop}, {push} are out of range")
        queue = []
        for i in range(push):
            t = int(rt.peek_static("queue")[i, 0])
            if not rt.heap.is_block(t):
                raise PmsimError(f"yada: queue slot {i} holds {t:#x}, not a triangle")
            queue.append(key_of(Mesh.tri([int(v) for v in rt.peek_words(t, 0, WORDS)])))
        if set(dead) & set(live):
            raise PmsimError("yada: a triangle is both in the mesh and on a garbage list")
        return [*live, *dead], (tuple(sorted(keys)), pop, tuple(queue))


__all__ = ["Yada", "YadaParams"]
