"""Crash-state spaces: count, enumerate, sample, materialise and hash surviving PM images.

Usage::

    model = CrashModel(trace, order="line", domain="pdom1")
    for point in model.points():               # reduced, complete crash points
        space = model.space(point)
        if space.count <= budget:
            for (h1, h2), image in space.hashed_images():   # distinct images, image reused
                ...
        else:
            for state in space.sample(budget, rng):
                image = space.image(state)

A *state* is a tuple of prefix lengths, one per free chain (``space.free``: chains whose
``lo < hi``); fixed chains are implied. Three kinds of space:

* ``product``: no ordering edges left; every vector ``lo <= x <= hi`` (count: a product).
  PDOM-2 points inside an NT window (an issued non-temporal store not yet fenced) are products
  too: every visible store is persistent except such a store, which may be missing as long as
  no later store of its chain is persisted.
* ``ordered``: ordering edges remain (from edge providers: hardware designs, tests); the
  states are the down-closed sets of the persist order. Bound propagation makes every value
  in a chain's propagated range extendable, so enumeration never dead-ends, and counting is a
  memoised recursion that fixes one chain of an edge-connected component and splits the rest
  into independent components. Its cost is exponential only in how tangled the edges are (a
  star of edges around one line costs range x chains); without edges it is a product.
* ``prefix`` (PDOM-2, outside NT windows): prefixes ``a..b`` of the global store order
  (count ``b - a + 1``). A trace without issued non-temporal stores has no NT window, so its
  PDOM-2 spaces need no bounds sweep at all.

Images are hashed with two 64-bit multiset hashes (sums of per-word terms, see
:func:`crashfuzz.model.image_hash`), updated per store as enumeration steps one chain at a
time, so deduplication across states and crash points of one trace is exact with
overwhelming probability. The C core (``backend="c"``) runs the odometer and walks; the
pure-Python :class:`PyKernel` is its reference.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from pmsim.errors import ConfigError
from pmsim.machine import BACKENDS, default_backend
from pmsim.trace import Trace

from .model import (
    EDGE_PROVIDERS,
    FENCE_KINDS,
    EdgeProvider,
    LowerBounds,
    TraceIndex,
    actual_image,
    check_order_domain,
    collect_edges,
    sweep_python,
)
from .points import CrashPoint, MarkLog, make_point, nt_window, select_points, store_mask

_MASK = (1 << 64) - 1
State = tuple[int, ...]
_BATCH = 4096


# -- kernels -------------------------------------------------------------------------------------
class PyKernel:
    """Pure-Python reference of the C odometer and walk (``crash_odometer``, ``crash_walk``)."""

    name = "python"

    def __init__(self, ix: TraceIndex) -> None:
        self.off = ix.off.tolist()
        self.word = ix.st_word.tolist()
        self.val = ix.st_val.tolist()
        self.old = ix.st_old.tolist()
        self.d1 = ix.st_d1.tolist()
        self.d2 = ix.st_d2.tolist()

    def _step(self, c: int, a: int, b: int, img: np.ndarray, h: list[int]) -> None:
        base = self.off[c]
        if b > a:
            for s in range(base + a, base + b):
                img[self.word[s]] = self.val[s]
                h[0] = (h[0] + self.d1[s]) & _MASK
                h[1] = (h[1] + self.d2[s]) & _MASK
        else:
            for s in range(base + a - 1, base + b - 1, -1):
                img[self.word[s]] = self.old[s]
                h[0] = (h[0] - self.d1[s]) & _MASK
                h[1] = (h[1] - self.d2[s]) & _MASK

    def odometer(self, fchain: np.ndarray, rep_off: np.ndarray, reps: np.ndarray, digit: np.ndarray,
                 img: np.ndarray, h: np.ndarray, count: int, out_h: np.ndarray | None) -> None:
        fc, ro, rp, dg = fchain.tolist(), rep_off.tolist(), reps.tolist(), digit.tolist()
        hh = [int(h[0]), int(h[1])]
        for s in range(count):
            for i, c in enumerate(fc):
                r0, nr, d = ro[i], ro[i + 1] - ro[i], dg[i]
                if d + 1 < nr:
                    self._step(c, rp[r0 + d], rp[r0 + d + 1], img, hh)
                    dg[i] = d + 1
                    break
                self._step(c, rp[r0 + d], rp[r0], img, hh)
                dg[i] = 0
            if out_h is not None:
                out_h[s] = hh
        digit[:] = dg
        h[:] = hh

    def stepper(self, fchain: np.ndarray, rep_off: np.ndarray, reps: np.ndarray, digit: np.ndarray,
                img: np.ndarray, h: np.ndarray) -> Callable[[], None]:
        """A no-argument call advancing the odometer by one state."""
        return lambda: self.odometer(fchain, rep_off, reps, digit, img, h, 1, None)

    def walk(self, fchain: np.ndarray, x: np.ndarray, targets: np.ndarray, img: np.ndarray,
             h: np.ndarray, out_h: np.ndarray | None) -> None:
        fc, xs = fchain.tolist(), x.tolist()
        hh = [int(h[0]), int(h[1])]
        for s, tg in enumerate(np.asarray(targets).tolist()):
            for i, v in enumerate(tg):
                if v != xs[i]:
                    self._step(fc[i], xs[i], v, img, hh)
                    xs[i] = v
            if out_h is not None:
                out_h[s] = hh
        x[:] = xs
        h[:] = hh


def _kernel(ix: TraceIndex, backend: str) -> PyKernel:
    if backend == "python":
        return PyKernel(ix)
    from ._ccrash import CKernel

    return CKernel(ix)  # type: ignore[return-value]


def _randbelow(rng: np.random.Generator, n: int) -> int:
    """A uniform integer in ``[0, n)`` for any Python int ``n`` (rejection sampling)."""
    if n <= 1 << 62:
        return int(rng.integers(0, n))
    bits = n.bit_length()
    while True:
        r = int.from_bytes(rng.bytes((bits + 7) // 8), "little") >> (8 * ((bits + 7) // 8) - bits)
        if r < n:
            return r


# -- the ordered (edges) machinery ---------------------------------------------------------------
Bounds = dict[int, int]
LocalEdge = tuple[int, int, int, int]


def _propagate(lo: Bounds, hi: Bounds, edges: Sequence[LocalEdge]) -> bool:
    """Close the bounds under the edges (x_y >= j implies x_x >= i); False if empty."""
    changed = True
    while changed:
        changed = False
        for x, i, y, j in edges:
            if x not in lo or y not in lo:
                continue
            if lo[y] >= j and lo[x] < i:
                lo[x] = i
                changed = True
            if hi[x] < i and hi[y] >= j:
                hi[y] = j - 1
                changed = True
    return all(lo[c] <= hi[c] for c in lo)


class _Ordered:
    """Counting, enumeration and unranking of the down-closed states under edges.

    Local chain numbers ``0..F-1``. Enumeration order: chain ``F-1`` most significant, values
    ascending (the odometer's order when no edge remains).
    """

    def __init__(self, lo: list[int], hi: list[int], edges: list[LocalEdge]) -> None:
        self.lo = dict(enumerate(lo))
        self.hi = dict(enumerate(hi))
        self.edges = edges
        self.F = len(lo)
        self._memo: dict[tuple, int] = {}

    def _active(self, lo: Bounds, hi: Bounds) -> list[LocalEdge]:
        return [e for e in self.edges if e[0] in lo and e[2] in lo and lo[e[0]] < e[1] and hi[e[2]] >= e[3]]

    def count(self, lo: Bounds | None = None, hi: Bounds | None = None) -> int:
        lo = self.lo if lo is None else lo
        hi = self.hi if hi is None else hi
        active = self._active(lo, hi)
        parent = {c: c for e in active for c in (e[0], e[2])}

        def find(c: int) -> int:
            while parent[c] != c:
                parent[c] = parent[parent[c]]
                c = parent[c]
            return c

        for x, _, y, _ in active:
            parent[find(x)] = find(y)
        total = 1
        for c in lo:
            if c not in parent:
                total *= hi[c] - lo[c] + 1
        comps: dict[int, list[int]] = {}
        for c in parent:
            comps.setdefault(find(c), []).append(c)
        for comp in comps.values():
            total *= self._count_comp(tuple(sorted((c, lo[c], hi[c]) for c in comp)), active)
            if not total:
                return 0
        return total

    def _count_comp(self, key: tuple, active: list[LocalEdge]) -> int:
        got = self._memo.get(key)
        if got is not None:
            return got
        chains = {c for c, _, _ in key}
        edges = [e for e in active if e[0] in chains]
        deg: dict[int, int] = {}
        for x, _, y, _ in edges:
            deg[x] = deg.get(x, 0) + 1
            deg[y] = deg.get(y, 0) + 1
        pivot = max(sorted(deg), key=lambda c: deg[c])
        lo0 = {c: lo for c, lo, _ in key}
        hi0 = {c: hi for c, _, hi in key}
        total = 0
        for v in range(lo0[pivot], hi0[pivot] + 1):
            lo1, hi1 = dict(lo0), dict(hi0)
            lo1[pivot] = hi1[pivot] = v
            if _propagate(lo1, hi1, edges):
                del lo1[pivot], hi1[pivot]
                total += self.count(lo1, hi1)
        self._memo[key] = total
        return total

    def _fix(self, lo: Bounds, hi: Bounds, c: int, v: int) -> tuple[Bounds, Bounds]:
        lo1, hi1 = dict(lo), dict(hi)
        lo1[c] = hi1[c] = v
        if not _propagate(lo1, hi1, self.edges):
            raise AssertionError("persist order is cyclic: an edge provider broke the invariant")
        return lo1, hi1

    def states(self) -> Iterator[State]:
        F = self.F
        if F == 0:
            yield ()
            return
        x = [0] * F
        order = list(range(F - 1, -1, -1))
        bounds: list[tuple[Bounds, Bounds]] = [(self.lo, self.hi)] + [({}, {})] * F
        c0 = order[0]
        iters: list[Iterator[int]] = [iter(range(self.lo[c0], self.hi[c0] + 1))] + [iter(())] * F
        d = 0
        while d >= 0:
            v = next(iters[d], None)
            if v is None:
                d -= 1
                continue
            c = order[d]
            x[c] = v
            if d == F - 1:
                yield tuple(x)
                continue
            lo1, hi1 = self._fix(*bounds[d], c, v)
            bounds[d + 1] = (lo1, hi1)
            d += 1
            iters[d] = iter(range(lo1[order[d]], hi1[order[d]] + 1))

    def unrank(self, r: int) -> State:
        lo, hi = self.lo, self.hi
        x = [0] * self.F
        for c in range(self.F - 1, -1, -1):
            for v in range(lo[c], hi[c] + 1):
                lo1, hi1 = self._fix(lo, hi, c, v)
                rest_lo = {k: w for k, w in lo1.items() if k < c}
                rest_hi = {k: w for k, w in hi1.items() if k < c}
                n = self.count(rest_lo, rest_hi)
                if r < n:
                    x[c] = v
                    lo, hi = lo1, hi1
                    break
                r -= n
        return tuple(x)

    def contains(self, x: Sequence[int]) -> bool:
        if any(not self.lo[c] <= v <= self.hi[c] for c, v in enumerate(x)):
            return False
        return all(x[y] < j or x[xc] >= i for xc, i, y, j in self.edges)


# -- spaces --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Coverage:
    """What a choice of crash points covers: points, states (exact) and how many are enumerable."""

    points: int
    states: int
    max_states: int
    over_budget: int


class StateSpace:
    """Every PM image that may survive a crash at one point (or the union over its interval).

    ``chains`` are the chains with visible stores, ``lo``/``hi`` their effective bounds (``lo``
    includes what ordering edges force), ``free`` the chains with ``lo < hi`` in state order.
    """

    def __init__(self, model: CrashModel, point: CrashPoint, kind: str, chains: np.ndarray,
                 lo: np.ndarray, hi: np.ndarray, edges: list[LocalEdge],
                 prefix: tuple[int, int] | None = None) -> None:
        self.model = model
        self.point = point
        self.kind = kind
        self.chains = chains
        self.lo = lo
        self.hi = hi
        fmask = lo < hi
        self.free = chains[fmask]
        self.free_lo = lo[fmask]
        self.free_hi = hi[fmask]
        self._prefix = prefix
        self._ordered = (_Ordered(self.free_lo.tolist(), self.free_hi.tolist(), edges)
                         if kind == "ordered" else None)
        self._count: int | None = None
        self._lower: np.ndarray | None = None
        self._distinct: int | None = None

    # -- sizes ---------------------------------------------------------------------------------
    @property
    def chain_addr(self) -> np.ndarray:
        """Byte address of each chain in ``chains`` (its line, or its atom in px86 mode)."""
        return self.model.index.chain_addr[self.chains]

    @property
    def count(self) -> int:
        """Exact number of states (a Python int; nothing is enumerated)."""
        if self._count is None:
            if self.kind == "product":
                n = 1
                for a, b in zip(self.free_lo.tolist(), self.free_hi.tolist(), strict=True):
                    n *= b - a + 1
                self._count = n
            elif self.kind == "prefix":
                assert self._prefix is not None
                self._count = self._prefix[1] - self._prefix[0] + 1
            else:
                assert self._ordered is not None
                self._count = self._ordered.count()
        return self._count

    def distinct_count(self, limit: int = 200_000) -> int | None:
        """Number of distinct images (states can share one), or None when not cheap to know.

        Exact (per-chain factorisation) for product spaces; by hashing every state otherwise,
        when there are at most ``limit`` states.
        """
        if self._distinct is None:
            if self.kind == "product":
                n = 1
                for reps in self._reps(True):
                    n *= len(reps)
                self._distinct = n
            elif self.count <= limit:
                self._distinct = len({h for h, _ in self.hashed_images(distinct=True)})
        return self._distinct

    # -- states --------------------------------------------------------------------------------
    def exhaustive(self, limit: int | None = None) -> Iterator[State]:
        """Every state, lazily (memory proportional to the chains), in rank order."""
        it: Iterator[State]
        if self.kind == "product":
            ranges = [range(a, b + 1) for a, b in zip(self.free_lo.tolist(), self.free_hi.tolist(),
                                                       strict=True)]
            it = (tuple(reversed(t)) for t in itertools.product(*reversed(ranges)))
        elif self.kind == "prefix":
            it = self._prefix_states()
        else:
            assert self._ordered is not None
            it = self._ordered.states()
        return itertools.islice(it, limit)

    def _prefix_states(self) -> Iterator[State]:
        assert self._prefix is not None
        a, b = self._prefix
        pos = {int(c): i for i, c in enumerate(self.free.tolist())}
        x = self.free_lo.tolist()
        yield tuple(x)
        for c in self.model.index.store_chain[a:b].tolist():
            x[pos[c]] += 1
            yield tuple(x)

    def unrank(self, r: int) -> State:
        """The state of rank ``r`` (``0 <= r < count``) in :meth:`exhaustive` order."""
        if not 0 <= r < self.count:
            raise ConfigError(f"state rank {r} is outside 0..{self.count - 1}")
        if self.kind == "product":
            out = []
            for a, b in zip(self.free_lo.tolist(), self.free_hi.tolist(), strict=True):
                r, d = divmod(r, b - a + 1)
                out.append(a + d)
            return tuple(out)
        if self.kind == "prefix":
            assert self._prefix is not None
            cnt = self.model.index.counts_of_prefix(self._prefix[0] + r)
            return tuple(cnt[self.free].tolist())
        assert self._ordered is not None
        return self._ordered.unrank(r)

    def contains(self, state: Sequence[int]) -> bool:
        """True when ``state`` is one of this space's states."""
        if len(state) != len(self.free):
            return False
        if self.kind == "product":
            return all(a <= v <= b for v, a, b in zip(state, self.free_lo.tolist(),
                                                       self.free_hi.tolist(), strict=True))
        if self.kind == "prefix":
            return any(tuple(state) == s for s in self._prefix_states())
        assert self._ordered is not None
        return self._ordered.contains(list(state))

    def sample(self, n: int, rng: np.random.Generator) -> list[State]:
        """``min(n, count)`` distinct states, uniformly at random (exact: by uniform ranks)."""
        total = self.count
        if n >= total:
            ranks = list(range(total))
            rng.shuffle(ranks)
        else:
            seen: set[int] = set()
            ranks = []
            while len(ranks) < n:
                r = _randbelow(rng, total)
                if r not in seen:
                    seen.add(r)
                    ranks.append(r)
        return [self.unrank(r) for r in ranks]

    # -- images and hashes ---------------------------------------------------------------------
    def lower_image(self) -> np.ndarray:
        """The image with only the guaranteed stores (a fresh array)."""
        if self._lower is None:
            full = np.zeros(self.model.index.nchains, np.int64)
            full[self.chains] = self.lo
            self._lower = self.model.index.image_at(full)
        return self._lower.copy()

    def upper_image(self) -> np.ndarray:
        """The image with every visible store (a fresh array)."""
        full = np.zeros(self.model.index.nchains, np.int64)
        full[self.chains] = self.hi
        return self.model.index.image_at(full)

    def actual_image(self) -> np.ndarray:
        """The image the simulated hardware really held at this point (see model.actual_image)."""
        return self.model.actual_image(self.point.index)

    def _lower_hash(self) -> np.ndarray:
        ix = self.model.index
        h = [ix.base_hash[0], ix.base_hash[1]]
        g1, g2 = self.model.prefix_sums
        a = ix.off[self.chains]
        h[0] = (h[0] + int((g1[a + self.lo] - g1[a]).sum(dtype=np.uint64))) & _MASK
        h[1] = (h[1] + int((g2[a + self.lo] - g2[a]).sum(dtype=np.uint64))) & _MASK
        return np.array(h, np.uint64)

    def hash(self, state: Sequence[int]) -> tuple[int, int]:
        """The image hash of ``state`` (no image is built)."""
        ix = self.model.index
        g1, g2 = self.model.prefix_sums
        a = ix.off[self.free]
        x = np.asarray(state, np.int64)
        h = self._lower_hash()
        d1 = int((g1[a + x] - g1[a + self.free_lo]).sum(dtype=np.uint64))
        d2 = int((g2[a + x] - g2[a + self.free_lo]).sum(dtype=np.uint64))
        return (int(h[0]) + d1) & _MASK, (int(h[1]) + d2) & _MASK

    def image(self, state: Sequence[int], out: np.ndarray | None = None) -> np.ndarray:
        """The full PM image of ``state`` (into ``out`` when given)."""
        img = self.lower_image() if out is None else out
        if out is not None:
            out[:] = self.lower_image()
        x = self.free_lo.copy()
        h = self._lower_hash()
        self.model.kernel.walk(self.free, x, np.asarray([state], np.int64).reshape(1, -1),
                               img.view(np.uint64), h, None)
        return img

    def _reps(self, distinct: bool) -> list[np.ndarray]:
        """Per free chain, the prefix lengths to visit (first of each distinct chain content)."""
        out = []
        g1, g2 = self.model.prefix_sums
        off = self.model.index.off
        for c, a, b in zip(self.free.tolist(), self.free_lo.tolist(), self.free_hi.tolist(), strict=True):
            if not distinct or b - a < 1:
                out.append(np.arange(a, b + 1, dtype=np.int64))
                continue
            o = int(off[c])
            first: dict[tuple[int, int], int] = {}
            keys = zip(g1[o + a:o + b + 1].tolist(), g2[o + a:o + b + 1].tolist(), strict=True)
            for x, k in enumerate(keys, start=a):
                first.setdefault(k, x)
            out.append(np.fromiter(first.values(), np.int64, len(first)))
        return out

    def hashed_images(self, distinct: bool = True, limit: int | None = None
                      ) -> Iterator[tuple[tuple[int, int], np.ndarray]]:
        """Yield ``((h1, h2), image)`` per state, or per distinct image when ``distinct``.

        ``image`` is ONE buffer updated in place between yields: read it or copy it before
        advancing. Product spaces visit only one state per distinct image, without a set;
        other kinds skip repeated hashes with a set of seen hashes.
        """
        kern = self.model.kernel
        img = self.lower_image()
        words = img.view(np.uint64)
        h = self._lower_hash()
        produced = 0
        if self.kind == "product":
            reps = self._reps(distinct)
            total = 1
            for r in reps:
                total *= len(r)
            rep_off = np.zeros(len(reps) + 1, np.int64)
            rep_off[1:] = np.cumsum([len(r) for r in reps])
            flat = np.concatenate(reps) if reps else np.zeros(0, np.int64)
            digit = np.zeros(len(reps), np.int64)
            # the first rep of each chain is its lo, so img and h already hold state 0
            total = total if limit is None else min(total, limit)
            step = kern.stepper(self.free, rep_off, flat, digit, words, h)
            for s in range(total):
                if s:
                    step()
                yield (int(h[0]), int(h[1])), img
            return
        seen: set[tuple[int, int]] = set()
        x = self.free_lo.copy()
        for batch in _batches(self.exhaustive(), _BATCH):
            for st in batch:
                kern.walk(self.free, x, np.asarray([st], np.int64).reshape(1, -1), words, h, None)
                key = (int(h[0]), int(h[1]))
                if distinct:
                    if key in seen:
                        continue
                    seen.add(key)
                yield key, img
                produced += 1
                if limit is not None and produced >= limit:
                    return

    def images(self, distinct: bool = False, limit: int | None = None) -> Iterator[np.ndarray]:
        """Stream images in state order into one reused buffer (see :meth:`hashed_images`)."""
        for _, img in self.hashed_images(distinct=distinct, limit=limit):
            yield img

    def hashes(self, start: int = 0, count: int | None = None) -> np.ndarray:
        """Hashes of the states of rank ``start .. start+count-1`` as a ``(count, 2)`` uint64 array.

        Product spaces run the odometer in one batch call; ordered spaces enumerate from the
        beginning (cost proportional to ``start + count``).
        """
        total = self.count
        count = total - start if count is None else min(count, total - start)
        out = np.zeros((max(count, 0), 2), np.uint64)
        if count <= 0:
            return out
        kern = self.model.kernel
        state = self.unrank(start)
        img = self.image(state)
        h = np.array(self.hash(state), np.uint64)
        out[0] = h
        if self.kind == "product":
            reps = self._reps(False)
            rep_off = np.zeros(len(reps) + 1, np.int64)
            rep_off[1:] = np.cumsum([len(r) for r in reps])
            flat = np.concatenate(reps) if reps else np.zeros(0, np.int64)
            digit = np.asarray(state, np.int64) - self.free_lo
            kern.odometer(self.free, rep_off, flat, digit, img.view(np.uint64), h, count - 1, out[1:])
            return out
        x = np.asarray(state, np.int64)
        it = itertools.islice(self.exhaustive(), start + 1, start + count)
        row = 1
        for batch in _batches(it, _BATCH):
            tg = np.asarray(batch, np.int64).reshape(len(batch), -1)
            kern.walk(self.free, x, tg, img.view(np.uint64), h, out[row:row + len(batch)])
            row += len(batch)
        return out


def _batches(it: Iterator[State], n: int) -> Iterator[list[State]]:
    while True:
        b = list(itertools.islice(it, n))
        if not b:
            return
        yield b


# -- the model -----------------------------------------------------------------------------------
class CrashModel:
    """The crash-state model of one trace.

    ``order``: ``line`` (default) or ``px86``. ``domain``: ``pdom0``, ``pdom1`` or ``pdom2``
    (default: the trace's ``meta['domain']``, else ``pdom1``). ``backend``: ``c`` or
    ``python`` (default: ``$PMSIM_BACKEND``, else ``c`` when built). ``edge_providers``
    replaces the domain's default providers (``EDGE_PROVIDERS[domain]``);
    ``extra_edge_providers`` adds to them (the hook for hardware designs). In PDOM-2 the edges
    matter only while a non-temporal store may still be unpersisted: elsewhere a state is a
    prefix of the global store order, which respects every edge (an edge points forward).
    """

    def __init__(self, trace: Trace, order: str = "line", domain: str | None = None,
                 backend: str | None = None, edge_providers: Sequence[EdgeProvider] | None = None,
                 extra_edge_providers: Sequence[EdgeProvider] = ()) -> None:
        domain = domain or str(trace.meta.get("domain", "pdom1"))
        check_order_domain(order, domain)
        backend = backend or default_backend()
        if backend not in BACKENDS:
            raise ConfigError(f"unknown backend {backend!r}; use 'c' or 'python'")
        self.trace = trace
        self.order = order
        self.domain = domain
        self.backend = backend
        self.index = ix = TraceIndex(trace, order)
        self.marks = MarkLog(trace)
        self.kernel = _kernel(ix, backend)
        # PDOM-2 without issued non-temporal stores: every space is a range of prefixes
        self.window: np.ndarray | None = None
        self._moves = np.zeros(ix.n + 1, np.int64)  # stores and fences among events [0, k)
        self.lower: LowerBounds | None = None
        if domain != "pdom2" or ix.issued_nt:
            if backend == "c":
                from ._ccrash import sweep_c

                log = sweep_c(ix, domain)
            else:
                log = sweep_python(ix, domain)
            self.lower = LowerBounds(ix, log)
        if domain == "pdom2" and ix.issued_nt:
            self.window = nt_window(trace)
            fence = np.isin(ix.kind, FENCE_KINDS)
            self._moves = np.r_[0, np.cumsum(store_mask(trace) | fence)]
        providers = list(EDGE_PROVIDERS[domain] if edge_providers is None else edge_providers)
        providers += list(extra_edge_providers)
        self.edges = collect_edges(ix, domain, providers)
        z = np.zeros(1, np.uint64)
        self.prefix_sums = (np.concatenate([z, np.cumsum(ix.st_d1, dtype=np.uint64)]),
                            np.concatenate([z, np.cumsum(ix.st_d2, dtype=np.uint64)]))

    # -- points --------------------------------------------------------------------------------
    def points(self, kind: str = "reduced", n: int | None = None,
               rng: np.random.Generator | None = None) -> list[CrashPoint]:
        """Crash points: ``reduced`` (complete), ``every`` or ``sampled`` (see crashfuzz.points)."""
        return select_points(self.trace, kind, n, rng, self.domain)

    def point(self, index: int, since: int | None = None) -> CrashPoint:
        """One crash point (alone, or standing for the interval ``(since, index]``)."""
        return make_point(self.trace, index, since, "user", self.marks)

    def coverage(self, points: Sequence[CrashPoint], budget: int | None = None) -> Coverage:
        """Points and exact states the choice covers; ``over_budget``: points with more than ``budget``."""
        counts = [self.space(p).count for p in points]
        return Coverage(len(points), sum(counts), max(counts, default=0),
                        sum(1 for c in counts if budget is not None and c > budget))

    # -- spaces --------------------------------------------------------------------------------
    def bounds(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Raw ``(lo, hi)`` of every chain at point ``k`` (before edge propagation)."""
        ix = self.index
        hi = ix.hi_at(k)
        lo = hi.copy() if self.lower is None else self.lower.at(k)
        return lo, hi

    def space(self, point: CrashPoint | int) -> StateSpace:
        """The states of ``point`` (a CrashPoint, or an index meaning that point alone)."""
        if isinstance(point, int):
            point = self.point(point)
        ix = self.index
        k, j = point.index, point.since
        if not (0 <= k <= ix.n and -1 <= j < k):
            raise ConfigError(f"crash point {k} (since {j}) does not fit a trace of {ix.n} events")
        if self.domain == "pdom2":
            win = self.window
            if win is None or not win[j + 1:k + 1].any():
                a, b = ix.stores_before(j + 1), ix.stores_before(k)
                lo, hi = ix.counts_of_prefix(a), ix.counts_of_prefix(b)
                act = np.nonzero(hi > 0)[0]
                kind = "prefix" if b > a else "product"
                return StateSpace(self, point, kind, act, lo[act], hi[act], [], (a, b))
            if not win[j + 1:k + 1].all() or self._moves[k] != self._moves[j + 1]:
                raise ConfigError(f"crash points ({j}, {k}] in PDOM-2 span a store or fence while a "
                                  "non-temporal store may still be unpersisted, so their states "
                                  "are not one space; split the interval before each store there "
                                  "(the 'reduced' points do) or use since=None")
            lo, hi = self.bounds(k)
            return self._ordered(point, k, lo, hi)
        lo, hi = self.bounds(k)
        if j + 1 < k and not np.array_equal(self.bounds(j + 1)[0], lo):
            raise ConfigError(f"crash points ({j}, {k}] span a fence completion or a clflush, so "
                              "their states are not those of one point; split the interval there "
                              "(the 'reduced' points do) or use since=None")
        return self._ordered(point, k, lo, hi)

    def _ordered(self, point: CrashPoint, k: int, lo: np.ndarray, hi: np.ndarray) -> StateSpace:
        """The space between the bounds, restricted by the edges live at point ``k``."""
        act = np.nonzero(hi > 0)[0]
        e = self.edges
        edges = e[(e[:, 4] < k) & (k < e[:, 5])] if len(e) else e
        if not len(edges):
            return StateSpace(self, point, "product", act, lo[act], hi[act], [])
        lo_d = {int(c): int(lo[c]) for c in act}
        hi_d = {int(c): int(hi[c]) for c in act}
        glob = [tuple(e) for e in edges[:, :4].tolist()]
        _propagate(lo_d, hi_d, glob)  # type: ignore[arg-type]
        lo2 = np.array([lo_d[int(c)] for c in act], np.int64)
        hi2 = np.array([hi_d[int(c)] for c in act], np.int64)
        free = act[lo2 < hi2]
        local = {int(c): i for i, c in enumerate(free.tolist())}
        live = [(local[x], i, local[y], jj) for x, i, y, jj in glob
                if x in local and y in local and lo_d[x] < i and hi_d[y] >= jj]
        kind = "ordered" if live else "product"
        return StateSpace(self, point, kind, act, lo2, hi2, live)

    def actual_image(self, k: int) -> np.ndarray:
        """The image the simulated caches and WPQ really held at point ``k``."""
        return actual_image(self.index, self.domain, k)
