"""The persistent allocator shared by every runtime (card §5): Hoard-like superblocks with a
persistent bitmap each and volatile free lists.

Persistent state is only the bitmaps (bit set iff the block is allocated). Allocation and free
calls touch volatile lists only; the transaction's allocation log (kept by the runtime) is
applied to the bitmaps with CAS after the commit point. Each size class is split into one
superblock per thread; a thread allocates from its own superblock first and takes blocks from
the others when it runs out. Within a superblock, never-used blocks are handed out by a bump
pointer, so a heap sized for millions of blocks needs no million-entry list.
"""

from __future__ import annotations

import bisect

import numpy as np

from ..config import LINE
from ..errors import PmsimError
from .layout import HeapClass, Layout, block_size

ALLOC, FREE = 0, 1
"""Allocation-log entry tags (the low bit of a block address)."""


SMALL_CLASS = 4096
"""Size classes of at most this many blocks are scanned as one Python int (much faster than
NumPy at the sizes crash fuzzing uses, where every recovered image rebuilds the lists);
larger classes are scanned with NumPy."""


class HeapExhausted(PmsimError):
    """The planned heap has no free block of the requested size class."""


class Allocator:
    """Volatile free lists over the persistent bitmaps of one layout."""

    def __init__(self, machine: object, layout: Layout) -> None:
        self.m = machine
        self.layout = layout
        self.classes = layout.heap
        self._starts = [c.base for c in self.classes]
        self._by_block = {c.block: i for i, c in enumerate(self.classes)}
        t = layout.threads
        # per class, per thread: a stack of free blocks (lowest on top) and a bump index
        self.free: list[list[list[int]]] = [[[] for _ in range(t)] for _ in self.classes]
        self.bump: list[list[int]] = [[c.per_thread * i for i in range(t)] for c in self.classes]

    # -- geometry ----------------------------------------------------------------------------
    def owner(self, addr: int) -> tuple[int, int]:
        """(class index, block index) of a block address, or a PmsimError for a non-block."""
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0:
            c = self.classes[i]
            if addr < c.end and (addr - c.base) % c.block == 0:
                return i, (addr - c.base) // c.block
        raise PmsimError(f"address {addr:#x} is not a heap block of this layout (freed twice, "
                         "or not allocated by the transaction API?)")

    def is_block(self, addr: int) -> bool:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i < 0:
            return False
        c = self.classes[i]
        return addr < c.end and (addr - c.base) % c.block == 0

    def bit_of(self, addr: int) -> tuple[int, int]:
        """(bitmap word address, bit mask) of a block."""
        ci, bi = self.owner(addr)
        return self.classes[ci].bitmap + 8 * (bi >> 6), 1 << (bi & 63)

    # -- volatile lists ------------------------------------------------------------------------
    def pop(self, tid: int, nbytes: int) -> int:
        """Take a free block of the size class holding ``nbytes``."""
        b = block_size(nbytes)
        ci = self._by_block.get(b)
        if ci is None:
            raise HeapExhausted(f"the layout has no heap blocks of {b} bytes: declare objects of "
                                "this size in the workload's PMSpec.heap")
        c = self.classes[ci]
        t = len(self.free[ci])
        for k in range(t):
            o = (tid + k) % t
            lst = self.free[ci][o]
            if lst:
                return c.base + c.block * lst.pop()
            if self.bump[ci][o] < c.per_thread * (o + 1):
                self.bump[ci][o] += 1
                return c.base + c.block * (self.bump[ci][o] - 1)
        raise HeapExhausted(f"the heap has no free {b}-byte block ({c.nblocks} planned): raise the "
                            "live-object bound in the workload's PMSpec.heap")

    def push(self, addr: int) -> None:
        """Return a block to its superblock's free list."""
        ci, bi = self.owner(addr)
        self.free[ci][bi // self.classes[ci].per_thread].append(bi)

    # -- persistent bitmaps ----------------------------------------------------------------------
    def flip(self, cpu: object, addr: int, allocated: bool) -> int:
        """Set (allocated) or clear a block's bit with CAS; returns the bitmap word's line.

        Idempotent: a bit already in the wanted state costs one load and no CAS.
        """
        word, mask = self.bit_of(addr)
        old = cpu.load(word)  # type: ignore[attr-defined]
        new = old | mask if allocated else old & ~mask
        if new != old:
            cpu.cas(word, old, new)  # type: ignore[attr-defined]
        return word & ~(LINE - 1)

    def _bitmap_words(self, c: HeapClass) -> np.ndarray:
        return self.m.pm_words(c.bitmap, (c.nblocks + 63) >> 6)  # type: ignore[attr-defined]

    def bitmap_bits(self, c: HeapClass) -> np.ndarray:
        """The class's bitmap as a bool array (untimed)."""
        raw = self._bitmap_words(c).view(np.uint8)
        return np.unpackbits(raw, bitorder="little")[: c.nblocks].astype(bool)

    def bitmap_int(self, c: HeapClass) -> int:
        """The class's bitmap as one Python int, bit i = block i (untimed)."""
        raw = self._bitmap_words(c).tobytes()
        return int.from_bytes(raw, "little") & ((1 << c.nblocks) - 1)

    def is_allocated(self, addr: int) -> bool:
        ci, bi = self.owner(addr)
        word, mask = self.bit_of(addr)
        return bool(self.m.peek(word) & mask)  # type: ignore[attr-defined]

    def allocated(self) -> set[int]:
        """Every block whose bit is set (untimed)."""
        out: set[int] = set()
        for c in self.classes:
            if c.nblocks > SMALL_CLASS:
                idx = np.flatnonzero(self.bitmap_bits(c))
                out.update((c.base + c.block * idx).tolist())
                continue
            x = self.bitmap_int(c)
            while x:
                low = x & -x
                out.add(c.base + c.block * (low.bit_length() - 1))
                x ^= low
        return out

    def rebuild(self) -> None:
        """Rebuild the volatile lists from the bitmaps (after format or recovery): per
        superblock, the bump index goes past the highest allocated block and the free blocks
        below it form the list (lowest on top)."""
        for ci, c in enumerate(self.classes):
            if c.nblocks <= SMALL_CLASS:
                self._rebuild_small(ci, c)
                continue
            bits = self.bitmap_bits(c)
            for t in range(len(self.free[ci])):
                lo, hi = c.per_thread * t, c.per_thread * (t + 1)
                used = np.flatnonzero(bits[lo:hi])
                top = lo + (int(used[-1]) + 1 if used.size else 0)
                holes = np.flatnonzero(~bits[lo:top]) + lo
                self.free[ci][t] = holes[::-1].tolist()
                self.bump[ci][t] = top

    def _rebuild_small(self, ci: int, c: HeapClass) -> None:
        """:meth:`rebuild` of one class with the bitmap as a Python int."""
        x = self.bitmap_int(c)
        per = c.per_thread
        full = (1 << per) - 1
        for t in range(len(self.free[ci])):
            lo = per * t
            seg = (x >> lo) & full
            top = seg.bit_length()
            holes = []
            free = ~seg & ((1 << top) - 1)
            while free:  # highest first, so pop() hands out the lowest
                b = free.bit_length() - 1
                holes.append(lo + b)
                free ^= 1 << b
            self.free[ci][t] = holes
            self.bump[ci][t] = lo + top

    def volatile_free(self) -> set[int]:
        """Every block the volatile lists would hand out (for invariant checks)."""
        out: set[int] = set()
        for ci, c in enumerate(self.classes):
            base, block = c.base, c.block
            for t, lst in enumerate(self.free[ci]):
                out.update([base + block * b for b in lst])
                out.update(range(base + block * self.bump[ci][t],
                                 base + block * c.per_thread * (t + 1), block))
        return out
