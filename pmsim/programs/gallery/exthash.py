"""Extendible hashing with directory doubling and segment splits (a small CCEH-like table).

The root holds the global depth G and a directory of 2^G segment pointers. A segment is one
cache line: its local depth L and three ``[key, value]`` slots. An insert into a full segment
splits it: a new segment receives the keys whose bit L is set and is persisted whole; only then
do the directory entries for that half point to it (each an atomic 8-byte store, persisted), and
only then does the old segment take depth L+1. A key is found in its directory entry's segment
if its hash agrees with the segment's local depth, so a crash anywhere in a split leaves every
key reachable exactly once; stale copies in the old segment are filtered out and reused as free
slots. When L = G the directory doubles first: the upper half is copied and persisted, then G
is incremented (the doubling's commit point).
"""

from __future__ import annotations

from collections.abc import Hashable

from ..api import PM, PMProgram, operation
from .common import DictModel, key_args, key_value_args

DEPTH, DIR = 0, 64
MAX_DEPTH = 3
SLOTS = 3
SEG = 64
KEYS = 12


def h(k: int) -> int:
    """The hash: keys 1..12 spread at most two per bucket of three bits, so no segment of depth
    3 overflows (no layout-dependent "full")."""
    return (k * 5) % 16


_key = key_args(KEYS)
_key_value = key_value_args(KEYS)


class ExtHash(PMProgram):
    """New segment persisted whole before the directory points to it."""

    size = DIR + 8 * (1 << MAX_DEPTH)
    heap_per_op = 2 * SEG  # a put may split twice
    model = DictModel
    paths = ("split", "doubling")

    def init(self, pm: PM) -> None:
        seg = pm.alloc(SEG, align=SEG)
        pm.store(DIR, seg)  # G = 0: one directory entry, one segment of depth 0

    # -- lookups ---------------------------------------------------------------------------
    def _segment(self, pm: PM, k: int) -> int:
        g = pm.load(DEPTH)
        return pm.load(DIR + 8 * (h(k) & ((1 << g) - 1)))

    @staticmethod
    def _mine(pm: PM, seg: int, k: int) -> bool:
        """Whether key ``k`` belongs in ``seg`` by the segment's local depth."""
        depth = pm.load(seg)
        return h(k) & ((1 << depth) - 1) == _pattern(pm, seg)

    def _find(self, pm: PM, seg: int, k: int) -> tuple[int | None, int | None]:
        """(slot holding k, first free slot) of ``seg``; a stale key is a free slot."""
        free = None
        for i in range(SLOTS):
            s = seg + 8 + 16 * i
            key = pm.load(s)
            if key == k and self._mine(pm, seg, k):
                return s, free
            if free is None and (key == 0 or not self._mine(pm, seg, key)):
                free = s
        return None, free

    # -- operations ------------------------------------------------------------------------
    @operation(args=_key_value, weight=3)
    def put(self, pm: PM, k: int, v: int) -> None:
        while True:
            seg = self._segment(pm, k)
            s, free = self._find(pm, seg, k)
            if s is not None:
                pm.store(s + 8, v)
                pm.persist(s + 8, step="put.update")
                return
            if free is not None:
                pm.store(free + 8, v)
                pm.persist(free + 8, step="put.value")
                pm.store(free, k)
                pm.persist(free, step="put.token")
                return
            self._split(pm, seg)

    def _split(self, pm: PM, seg: int) -> None:
        depth = pm.load(seg)
        g = pm.load(DEPTH)
        if depth == g:
            self._double(pm, g)
            g += 1
        pm.path("split")
        new = pm.alloc(SEG, align=SEG)
        bit = 1 << depth
        n = 0
        for i in range(SLOTS):
            key = pm.load(seg + 8 + 16 * i)
            if key and self._mine(pm, seg, key) and h(key) & bit:
                pm.store(new + 8 + 16 * n, key)
                pm.store(new + 16 + 16 * n, pm.load(seg + 16 + 16 * i))
                n += 1
        pm.store(new, depth + 1)
        self._publish(pm, seg, new, depth, g)
        pm.store(seg, depth + 1)
        pm.persist(seg, step="split.depth")

    def _publish(self, pm: PM, seg: int, new: int, depth: int, g: int) -> None:
        pm.persist(new, SEG, step="split.segment")
        self._point(pm, seg, new, depth, g)

    @staticmethod
    def _point(pm: PM, seg: int, new: int, depth: int, g: int) -> None:
        """Point the directory entries of ``seg``'s upper half at ``new``."""
        for i in range(1 << g):
            if pm.load(DIR + 8 * i) == seg and i & (1 << depth):
                pm.store(DIR + 8 * i, new)
        pm.persist(DIR, 8 << g, step="split.directory")

    def _double(self, pm: PM, g: int) -> None:
        pm.path("doubling")
        if g == MAX_DEPTH:
            raise RuntimeError("ExtHash: the directory is full (raise MAX_DEPTH)")
        for i in range(1 << g):
            pm.store(DIR + 8 * ((1 << g) + i), pm.load(DIR + 8 * i))
        pm.persist(DIR + 8 * (1 << g), 8 << g, step="double.copy")
        pm.store(DEPTH, g + 1)
        pm.persist(DEPTH, step="double.depth")

    @operation(args=_key)
    def delete(self, pm: PM, k: int) -> bool:
        seg = self._segment(pm, k)
        s, _ = self._find(pm, seg, k)
        if s is None:
            return False
        pm.store(s, 0)
        pm.persist(s, step="delete.clear")
        return True

    @operation(args=_key)
    def get(self, pm: PM, k: int) -> int | None:
        seg = self._segment(pm, k)
        s, _ = self._find(pm, seg, k)
        return None if s is None else pm.load(s + 8)

    # -- state -----------------------------------------------------------------------------
    def state(self, pm: PM) -> Hashable:
        out = {}
        g = pm.load(DEPTH)
        for i in range(1 << g):
            seg = pm.load(DIR + 8 * i)
            for j in range(SLOTS):
                key = pm.load(seg + 8 + 16 * j)
                if key and h(key) & ((1 << g) - 1) == i and self._mine(pm, seg, key):
                    out[key] = pm.load(seg + 16 + 16 * j)
        return frozenset(out.items())

    def check(self, pm: PM) -> list[str]:
        g = pm.load(DEPTH)
        errs = []
        for i in range(1 << g):
            seg = pm.load(DIR + 8 * i)
            depth = pm.load(seg)
            if depth > g:
                errs.append(f"segment {seg:#x} has local depth {depth} > global depth {g}")
            elif _pattern(pm, seg) != i & ((1 << depth) - 1):
                errs.append(f"directory entry {i} points at segment {seg:#x} of another pattern")
        return errs


def _pattern(pm: PM, seg: int) -> int:
    """The hash bits a segment's keys share, from the lowest directory entry pointing at it."""
    g = pm.load(DEPTH)
    depth = pm.load(seg)
    for i in range(1 << g):
        if pm.load(DIR + 8 * i) == seg:
            return i & ((1 << depth) - 1)
    return -1


class ExtHashEarlyDirectory(ExtHash):
    """BROKEN: a split that is not atomic: the directory points at the new segment before the
    segment is persistent (both flushed together after the directory update), so a crash can
    route half the keys to a segment that never reached PM."""

    def _publish(self, pm: PM, seg: int, new: int, depth: int, g: int) -> None:
        for i in range(1 << g):
            if pm.load(DIR + 8 * i) == seg and i & (1 << depth):
                pm.store(DIR + 8 * i, new)
        pm.flush(new, SEG, step="split.flush-segment")
        pm.persist(DIR, 8 << g, step="split.directory")
