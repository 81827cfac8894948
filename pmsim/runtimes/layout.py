"""Where a runtime's persistent structures live in PM, planned from what a workload needs.

A :class:`PMSpec` says what the application needs (static object arrays, heap objects, the
largest transaction); a runtime family turns it into a :class:`Layout`: a global header, one
descriptor per thread (header line, allocation log, undo/redo log or COW write set), the static
objects and the heap (one size class per power of two, each split into per-thread superblocks
with a persistent bitmap). The layout is a pure function of its inputs, so a recovery runtime
built from the same layout finds everything where the crashed one left it. PM that the layout
does not touch is never read, and zero-initialised PM costs nothing: a 10 M-slot array is only an
address range.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from ..config import LINE
from ..errors import ConfigError

MIN_BLOCK = 16
"""Smallest heap block (bytes): block addresses keep their low 4 bits free for log tags."""
MAX_BLOCK = 1 << 16


def _up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def block_size(nbytes: int) -> int:
    """The size class (a power of two >= MIN_BLOCK) that holds ``nbytes``."""
    if nbytes <= 0:
        raise ConfigError(f"cannot allocate {nbytes} bytes: allocate at least one word")
    b = MIN_BLOCK
    while b < nbytes:
        b <<= 1
    if b > MAX_BLOCK:
        raise ConfigError(f"an object of {nbytes} bytes exceeds the largest heap block "
                          f"({MAX_BLOCK} bytes); split it into smaller objects")
    return b


@dataclass(frozen=True)
class StaticArray:
    """``count`` objects of ``words`` 8-byte fields, laid out at format time (e.g. array slots).

    ``written`` bounds how many distinct objects of the array a run writes (COW gives each a
    heap payload once written); None means all of them.
    """

    name: str
    count: int
    words: int
    written: int | None = None


@dataclass(frozen=True)
class PMSpec:
    """What an application needs from the persistent layout.

    ``heap`` lists ``(min_words, max_words, live)``: at most ``live`` heap objects with between
    ``min_words`` and ``max_words`` fields are allocated at any time. The ``max_tx_*`` fields
    bound one transaction: TXN_WRITE calls, words written, alloc/free calls, objects written.
    ``conservative_log``: a hand-written undo log of this program covers every line a
    transaction reads as well as those it writes, the nodes its rebalancing might modify (the
    Proteus card's tree programs, papers/proteus.md §8); runtimes that log what the programmer
    names (``pmem``) honour it.
    """

    statics: tuple[StaticArray, ...] = ()
    heap: tuple[tuple[int, int, int], ...] = ()
    max_tx_writes: int = 64
    max_tx_words: int = 256
    max_tx_allocs: int = 16
    max_tx_objects: int = 64
    conservative_log: bool = field(default=False, repr=False)  # not in the fingerprint: no byte moves

    def __post_init__(self) -> None:
        names = [s.name for s in self.statics]
        if len(set(names)) != len(names):
            raise ConfigError(f"PMSpec: duplicate static array names {names}; rename one")
        for s in self.statics:
            if s.count < 0 or s.words <= 0:
                raise ConfigError(f"PMSpec: static array {s.name!r} needs count >= 0 and words >= 1")
        for h in self.heap:
            if len(h) != 3 or not 1 <= h[0] <= h[1] or h[2] < 0:
                raise ConfigError(f"PMSpec.heap entry {h!r}: expected (min_words, max_words, live) "
                                  "with 1 <= min_words <= max_words and live >= 0")
        for v in ("max_tx_writes", "max_tx_words", "max_tx_allocs", "max_tx_objects"):
            if getattr(self, v) < 0:
                raise ConfigError(f"PMSpec.{v} must be >= 0")


@dataclass(frozen=True)
class StaticPlace:
    """A static array placed in PM: object i starts at ``base + i * stride``."""

    name: str
    base: int
    count: int
    words: int
    stride: int

    def obj(self, i: int) -> int:
        if not 0 <= i < self.count:
            raise ConfigError(f"static array {self.name!r} has {self.count} objects; index {i} "
                              "is out of range")
        return self.base + i * self.stride


@dataclass(frozen=True)
class HeapClass:
    """One size class: ``nblocks`` blocks of ``block`` bytes from ``base``; bit i of the bitmap
    (64 bits per word from ``bitmap``) is set iff block i is allocated. Thread t owns the
    superblock of blocks ``[t * per_thread, (t + 1) * per_thread)``."""

    block: int
    base: int
    nblocks: int
    bitmap: int
    per_thread: int

    @property
    def end(self) -> int:
        return self.base + self.block * self.nblocks


@dataclass(frozen=True)
class Layout:
    """The persistent layout of one runtime family over one PM range."""

    family: str
    base: int
    size: int
    threads: int
    desc: tuple[int, ...]
    alloc_log: tuple[int, ...]
    alloc_cap: int
    log: tuple[int, ...]
    log_bytes: int
    statics: tuple[StaticPlace, ...]
    heap: tuple[HeapClass, ...]
    spec: PMSpec = field(compare=True)

    @property
    def end(self) -> int:
        return self.base + self.size

    def static(self, name: str) -> StaticPlace:
        for s in self.statics:
            if s.name == name:
                return s
        from ..errors import unknown

        raise unknown("static array", name, [s.name for s in self.statics])

    def is_data(self, addr: int, nbytes: int) -> bool:
        """Whether ``[addr, addr + nbytes)`` lies in application data (a static array or a
        class's blocks), never in headers, logs or bitmaps: recovery writes nowhere else."""
        for s in self.statics:
            if s.base <= addr and addr + nbytes <= s.base + s.count * s.stride:
                return True
        for c in self.heap:
            if c.base <= addr and addr + nbytes <= c.end:
                return True
        return False

    def fingerprint(self) -> int:
        """A 63-bit hash of the layout, stored in PM so a mismatched recovery fails loudly.

        Computed once per instance: recovery checks it on every crash image, and hashing the
        nested dataclass (for a shared cache) costs more than the check itself.
        """
        fp = self.__dict__.get("_fingerprint")
        if fp is None:
            h = hashlib.blake2b(repr(self).encode(), digest_size=8).digest()
            fp = int.from_bytes(h, "little") >> 1
            self.__dict__["_fingerprint"] = fp  # frozen: bypass __setattr__, as cached_property
        return fp


def plan(family: str, spec: PMSpec, threads: int, base: int, *,
         obj_bytes: Callable[[int], int], stride_of: Callable[[int], int], log_bytes: int,
         alloc_cap: int, extra_heap: dict[int, int]) -> Layout:
    """Place every structure; ``obj_bytes(words)`` is the bytes of a heap object with ``words``
    fields, ``stride_of(words)`` the stride of a static one, ``extra_heap`` adds runtime-owned
    blocks (block bytes -> count)."""
    if threads <= 0:
        raise ConfigError(f"a layout needs at least one thread, got {threads}")
    if base % LINE:
        raise ConfigError(f"layout base {base:#x} is not 64-byte aligned")
    addr = base + LINE  # global header line
    desc, alog, logs = [], [], []
    alog_bytes = _up(max(alloc_cap, 1) * 8, LINE)
    log_bytes = _up(max(log_bytes, LINE), LINE)
    for _ in range(threads):
        desc.append(addr)
        addr += LINE
        alog.append(addr)
        addr += alog_bytes
        logs.append(addr)
        addr += log_bytes
    statics = []
    for s in spec.statics:
        stride = stride_of(s.words)
        addr = _up(addr, LINE)
        statics.append(StaticPlace(s.name, addr, s.count, s.words, stride))
        addr += s.count * stride
    need: dict[int, int] = {}
    for lo, hi, live in spec.heap:
        for b in {block_size(obj_bytes(w)) for w in range(lo, hi + 1)}:
            need[b] = need.get(b, 0) + live
    for b, n in extra_heap.items():
        need[b] = need.get(b, 0) + n
    classes = []
    for b in sorted(need):
        # slack: blocks freed but not yet back on a list at the end of a transaction
        per_thread = _up(-(-need[b] // threads) + spec.max_tx_allocs + spec.max_tx_objects + 2, 8)
        nblocks = per_thread * threads
        addr = _up(addr, LINE)
        bitmap = addr
        addr += _up(nblocks // 8, LINE)
        addr = _up(addr, max(LINE, min(b, 4096)))
        classes.append(HeapClass(b, addr, nblocks, bitmap, per_thread))
        addr += b * nblocks
    size = _up(addr - base, LINE)
    return Layout(family, base, size, threads, tuple(desc), tuple(alog), alloc_cap, tuple(logs),
                  log_bytes, tuple(statics), tuple(classes), spec)
