"""DUDETx shadow paging (Liu et al. §3.6; papers/dudetx-decoupled.md §4, M9, M10, D10): the
shadow is smaller than PM, so it is a set of DRAM *frames* holding the pages Perform touches.

The application data ``[data_lo, data_hi)`` is cut into ``page_bytes`` pages; the shadow holds
``frames`` of them (default: ``shadow_fraction`` of the pages, at least ``min_frames``). A page
table maps pages to frames. A Perform access to a page that is not resident *faults*:

1. **Touching-ID wait.** Each page keeps the ID of the last transaction that wrote it (its
   *touching ID*, set at dtmEnd for the pages of the write set; DRAM, not persisted). The home
   copy in PM is current only up to R, the last ID Reproduce finished, so the page may be loaded
   only once ``touching ID <= R``. Until then the attempt aborts (its pins released) and the
   thread waits for R before it retries ([F]: the paper's thread spins inside the fault; an
   attempt here cannot block inside a read, so it rolls back first).
2. **Frame.** A free frame, else a victim by the *clock* (second-chance) policy over unpinned
   frames, preferring *clean* pages (touching ID <= R: reloading them needs no wait); a page
   written after R is discarded only when no clean page is unpinned. A page is *pinned* while a
   live attempt has translated an address in it (software mode: its ``ref`` count), so an
   eviction never drops an attempt's uncommitted write-through data or its STM read set. With
   every frame pinned the attempt aborts and waits for an unpin.
3. **Eviction discards** (step ``dudetx.page.evict``): the page is unmapped and nothing is
   written back, since every committed update is in a log (card M9: only Reproduce and
   recovery write PM data). The tests check that no PM store falls in a paging step.
4. **Load** (step ``dudetx.page.load``): copy the page's words from their homes in PM into the
   frame (timed loads and stores), stamp the STM locks of the frame with the current clock (a
   transaction with an older snapshot must validate before it trusts the new contents; the lock
   table is sized so that no two frame stripes share a lock), map it.

**Hardware mode** (``dudetx-paging``, §3.6.1): translation is free (page table and TLB); a fault
is a trap into the user-level handler (Dune over VT-x, ``hw_fault_ns``); each eviction is a TLB
shootdown: the evicting thread pays ``shootdown_ns`` (IPIs, waiting for every core), and every
other worker pays ``shootdown_remote_ns`` (interrupt, INVVPID, TLB refill) at its next access.

**Software mode** (``dudetx-paging-sw``, §3.6.2, Alg. 3): a one-level page table in DRAM of
16-byte entries ``(frame, ref)``. Every dtmRead/dtmWrite translates: a load of the entry's frame,
a load of ``ref``, and a CAS ``ref -> ref + 1`` (contended: the line moves between the cores
that use the page), plus ``sw_translate_ns``. At the attempt's end each pinned page's ``ref``
drops by its count (one CAS; Alg. 3 leaves the release out). A fault is a library call
(``sw_fault_ns``); eviction is a CAS ``ref 0 -> -1`` with no shootdown.

Paging writes no PM and changes only timing: the data a run leaves equals plain ``dudetx``'s.
Recovery is DUDETx's; the page table, frames and touching IDs restart empty. Statistics:
``faults``, ``evictions``, ``touch_waits``/``touch_wait_ns``, ``frame_waits``/``frame_wait_ns``,
``shootdowns``, ``page_aborts`` (the STM counts them as ``locked`` aborts).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from ...errors import ConfigError, PmsimError, StallError
from ...tm.stm import VERSION_SHIFT, AbortCause, Stm, StmConfig, StmTx
from ..base import Body, RuntimeCosts, Tx
from ..layout import Layout
from ..mutation import Mutant, patch
from ..registry import register_mutant, register_runtime, variant
from .dudetx import DudeTxRuntime, DudeTxTx

MASK64 = (1 << 64) - 1
PTE = 16
"""Bytes of a software page-table entry: the frame index, then ``ref`` (-1 = swapped out)."""
NONE = -1


def _lines(n: int) -> int:
    return -(-n // 64) * 64


class PagingStm(Stm):
    """The Perform STM, whose back-off first waits out a paging abort (touching ID or frame)."""

    def __init__(self, rt: DudeTxPagingRuntime, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.rt = rt

    def page_abort(self, stx: StmTx) -> None:
        """Roll the attempt back and unwind it (counted as a ``locked`` abort)."""
        self._abort(stx, AbortCause.LOCKED)

    def backoff(self, cpu: Any, failures: int) -> Generator[Any, Any, None]:
        why = self.rt._wait[cpu.tid]
        if why is None:
            yield from super().backoff(cpu, failures)
            return
        self.rt._wait[cpu.tid] = None
        yield from self.rt._page_wait(cpu, why)
        if why[0] == "frame":  # threads that all wait for a frame must not retry in lockstep
            yield from super().backoff(cpu, failures)


class PagingTx(DudeTxTx):
    """The object API with every access translated page by page."""

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        rt: DudeTxPagingRuntime = self.drt  # type: ignore[assignment]
        self.cpu.work(rt.costs.call_ns)
        out: list[int] = []
        for s, k in rt._spans(self, obj + 8 * field, n):
            out.extend(self.stx.read_range(s, k))
        return out

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        rt: DudeTxPagingRuntime = self.drt  # type: ignore[assignment]
        self.cpu.work(rt.costs.call_ns)
        wr = self.stx.write
        j = 0
        for s, k in rt._spans(self, obj + 8 * field, len(values)):
            for i in range(k):
                wr(s + 8 * i, values[j + i])
            j += k
        self.writes += 1


@register_runtime
class DudeTxPagingRuntime(DudeTxRuntime):
    """DUDETx with a shadow of ``frames`` DRAM pages: faults, touching-ID waits, eviction by
    discard; hardware translation (free; a TLB shootdown per eviction)."""

    name = "dudetx-paging"
    tx_class: ClassVar[type[DudeTxTx]] = PagingTx
    software: ClassVar[bool] = False
    """Translation: False = hardware (page table + TLB, §3.6.1), True = software (Alg. 3)."""
    page_bytes: ClassVar[int] = 4096
    """Bytes of a page, a power of two >= the STM stripe (paper: 4 KiB)."""
    frames: ClassVar[int] = 0
    """Frames of shadow memory; 0 = ``shadow_fraction`` of the data's pages."""
    shadow_fraction: ClassVar[float] = 0.25
    """Shadow size / data size when ``frames`` is 0 ([F]: NVM:DRAM = 4, where D10 says hardware
    paging still wins)."""
    min_frames: ClassVar[int] = 2
    """Fewest frames (a transaction of two pages must fit)."""
    stm_config: ClassVar[StmConfig] = StmConfig(design="write-through", locks=1 << 15)
    """The Perform STM; its lock table covers 1 MiB of frames without two stripes sharing a lock
    (checked: a page load stamps the frame's locks)."""
    hw_fault_ns: ClassVar[float] = 1000.0
    """[F] Hardware mode: the trap into Dune's user-level fault handler and back (VT-x exit,
    about 3,400 cycles at 3.4 GHz), beside the timed page copy."""
    shootdown_ns: ClassVar[float] = 5000.0
    """[F] Hardware mode: the evicting thread's TLB shootdown (IPI to every core, wait for their
    INVVPID acknowledgements; a few microseconds on a multi-socket Xeon)."""
    shootdown_remote_ns: ClassVar[float] = 2000.0
    """[F] Hardware mode: what each other worker loses per shootdown (interrupt entry and exit,
    INVVPID, TLB refills)."""
    sw_fault_ns: ClassVar[float] = 200.0
    """[F] Software mode: the swap-in call's bookkeeping, beside the timed page copy."""
    sw_translate_ns: ClassVar[float] = 2.0
    """[F] Software mode: address arithmetic of one translation, beside its two timed loads and
    the CAS on ``ref``."""
    page_wait_ns: ClassVar[float] = 200.0
    """Polling interval of a thread waiting for R (touching ID) or for a frame."""

    STEPS = {
        "dudetx.page.evict": ("group", "discard a victim page: unmap it (software mode: CAS its "
                              "ref 0 -> -1); no write-back, no PM store"),
        "dudetx.page.load": ("group", "copy a page's words from their homes in PM into a frame "
                             "(DRAM stores only), once its touching ID <= R"),
    }

    # -- geometry ----------------------------------------------------------------------------------
    @classmethod
    def geometry(cls, layout: Layout) -> tuple[int, int]:
        """``(pages, frames)`` of the layout's application data."""
        pb = cls.page_bytes
        stripe = cls.stm_config.stripe
        if pb < max(8, stripe) or pb & (pb - 1):
            raise ConfigError(f"{cls.name}: page_bytes={pb} must be a power of two >= the STM "
                              f"stripe ({stripe} bytes)")
        pages = -(-(layout.end - cls.data_start(layout)) // pb)
        n = cls.frames or int(np.ceil(cls.shadow_fraction * pages))
        if n < 1 or not 0 < cls.shadow_fraction <= 1:
            raise ConfigError(f"{cls.name}: frames={cls.frames}, shadow_fraction="
                              f"{cls.shadow_fraction}: use frames >= 1 or 0 < fraction <= 1")
        frames = min(pages, max(n, cls.min_frames))
        if frames * pb > cls.stm_config.locks * stripe:
            raise ConfigError(f"{cls.name}: {frames} frames of {pb} bytes exceed what the STM's "
                              f"{cls.stm_config.locks} locks cover without sharing one; raise "
                              "stm_config.locks or use fewer frames")
        return pages, frames

    @classmethod
    def _table_bytes(cls, pages: int) -> int:
        """DRAM of the page table (software mode's entries) and the touching IDs."""
        return _lines(PTE * pages) + _lines(8 * pages)

    @classmethod
    def dram_bytes(cls, layout: Layout) -> int:
        """DUDETx's DRAM with the full shadow replaced by the page table, the touching IDs and
        the frames."""
        pages, frames = cls.geometry(layout)
        full = layout.end - cls.data_start(layout)
        return (super().dram_bytes(layout) - full + cls._table_bytes(pages)
                + frames * cls.page_bytes)

    def __init__(self, machine: Any, layout: Layout, costs: RuntimeCosts | None = None) -> None:
        self._npages, self._nframes = self.geometry(layout)
        self._shift = self.page_bytes.bit_length() - 1
        self._pt = self._touch_base = self._frame_base = 0
        t = layout.threads
        self._wait: list[tuple[str, int] | None] = [None] * t
        self._pins: list[dict[int, int]] = [{} for _ in range(t)]
        self._paid = [0] * t
        self.faults = self.evictions = self.shootdowns = self.page_aborts = 0
        self.touch_waits = self.frame_waits = 0
        self.touch_wait_ns = self.frame_wait_ns = 0.0
        super().__init__(machine, layout, costs)
        dram = machine.config.dram_region
        self.stm = PagingStm(self, machine, self.stm_config, base=dram.base,
                             on_write=self._on_write, on_commit=self._on_commit,
                             on_abort=self._on_abort)

    def _shadow_base(self, dram_next: int) -> int:
        """The page table and touching IDs at ``dram_next``, the frames after them."""
        self._pt = dram_next
        self._touch_base = dram_next + _lines(PTE * self._npages)
        self._frame_base = dram_next + self._table_bytes(self._npages)
        return self._frame_base

    def _reset_volatile(self) -> None:
        """Also an empty shadow: no page mapped, every frame free, touching IDs 0 (recovery
        reproduced everything before any load)."""
        super()._reset_volatile()
        n, f = self._npages, self._nframes
        self._frame_of = [NONE] * n
        self._ref = [0] * n
        self._touch = [0] * n
        self._page_of = [NONE] * f
        self._refbit = [0] * f
        self._free_frames = list(range(f - 1, -1, -1))
        self._hand = 0
        self._unpins = 0
        mem = self.m.engine.mem
        r, w = mem.locate(self._pt)
        mem.arrays[r][w: w + 2 * n] = np.uint64(MASK64)
        r, w = mem.locate(self._touch_base)
        mem.arrays[r][w: w + n] = 0

    def _fill_shadow(self) -> None:
        """The shadow restarts empty; pages come in on demand."""

    def init_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        """Initial data at its home only (no page is resident yet)."""
        for i, v in enumerate(values):
            self.m.poke(self.field_addr(obj, field + i), v)

    # -- translation -----------------------------------------------------------------------------
    def _shadow(self, addr: int, n: int) -> int:
        raise PmsimError(f"{self.name}: a shadow address depends on the page's frame; translate "
                         "through the transaction (_translate), which pins the page")

    def _home(self, saddr: int) -> int:
        off = saddr - self._frame_base
        page = self._page_of[off >> self._shift]
        return self._data_lo + (page << self._shift) + (off & (self.page_bytes - 1))

    def _spans(self, tx: Tx, addr: int, n: int) -> Iterable[tuple[int, int]]:
        """``(shadow address, words)`` of each page's part of ``n`` words at ``addr``."""
        if addr & 7 or addr < self._data_lo or addr + 8 * n > self._data_hi:
            raise PmsimError(f"{self.name}: [{addr:#x}, {addr + 8 * n:#x}) is not application "
                             "data of this layout (a static object or a heap block)")
        pb = self.page_bytes
        out = []
        while n > 0:
            off = (addr - self._data_lo) & (pb - 1)
            k = min(n, (pb - off) // 8)
            out.append((self._translate(tx, addr, k), k))
            addr += 8 * k
            n -= k
        return out

    def _translate(self, tx: Tx, addr: int, words: int = 1) -> int:
        """The frame address of home ``addr``, for an access of ``words`` words of one page
        (software mode translates each word, as each dtmRead/dtmWrite does); faults the page
        in and pins it for the attempt."""
        cpu = tx.cpu
        tid = cpu.tid
        rel = addr - self._data_lo
        page = rel >> self._shift
        if self.software:
            e = self._pt + PTE * page
            cpu.load(e)
            cpu.load(e + 8)
        else:
            owed = self.shootdowns - self._paid[tid]
            if owed:
                cpu.work(owed * self.shootdown_remote_ns)
                self._paid[tid] = self.shootdowns
        f = self._frame_of[page]
        if f == NONE:
            f = self._fault(tx, page)
        if self.software:
            e = self._pt + PTE * page
            ref = self._ref[page]
            ld, cas = cpu.load, cpu.cas
            for i in range(words):
                if i:
                    ld(e)
                    ld(e + 8)
                cas(e + 8, ref + i, ref + i + 1)
            cpu.work(self.sw_translate_ns * words)
        else:
            words = 1
        pins = self._pins[tid]
        pins[page] = pins.get(page, 0) + words
        self._ref[page] += words
        self._refbit[f] = 1
        return self._frame_base + (f << self._shift) + (rel & (self.page_bytes - 1))

    def _unpin(self, cpu: Any, tid: int) -> None:
        """Release the attempt's pins (software mode: one CAS on each page's ref)."""
        pins = self._pins[tid]
        if not pins:
            return
        for page, k in pins.items():
            ref = self._ref[page]
            if self.software:
                cpu.cas(self._pt + PTE * page + 8, ref, ref - k)
            self._ref[page] = ref - k
        self._pins[tid] = {}
        self._unpins += 1

    # -- faults ----------------------------------------------------------------------------------
    def _must_wait(self, page: int, touch: int) -> bool:
        """The touching-ID wait: the home copy is current only once R reaches the page's last
        writer."""
        return touch > self.R

    def _fault(self, tx: Tx, page: int) -> int:
        """Swap ``page`` in; aborts the attempt (to wait) if it cannot be loaded yet."""
        cpu = tx.cpu
        tid = cpu.tid
        touch = int(cpu.load(self._touch_base + 8 * page))
        if self._must_wait(page, touch):
            self._abort_for(tx, ("touch", touch))
        if self._free_frames:
            f = self._free_frames.pop()
        else:
            f = self._victim()
            if f == NONE:
                if all(self._pins[tid].get(p, 0) == self._ref[p] for p in self._page_of):
                    raise ConfigError(f"{self.name}: a transaction of thread {tid} touches more "
                                      f"than the {self._nframes} frames of the shadow: raise "
                                      "frames or shadow_fraction")
                self._abort_for(tx, ("frame", self._unpins))
            self._evict(cpu, self._page_of[f], f)
        self._load_page(cpu, page, f)
        return f

    def _abort_for(self, tx: Tx, why: tuple[str, int]) -> None:
        self._wait[tx.tid] = why
        self.page_aborts += 1
        assert isinstance(tx, DudeTxTx)
        self.stm.page_abort(tx.stx)  # type: ignore[attr-defined]

    def _victim(self) -> int:
        """Clock (second chance) over unpinned frames, preferring clean pages (touching ID <=
        R); NONE if every frame is pinned."""
        n = self._nframes
        dirty = NONE
        for _ in range(2 * n):
            f = self._hand
            self._hand = (f + 1) % n
            p = self._page_of[f]
            if self._ref[p]:
                continue
            if self._refbit[f]:
                self._refbit[f] = 0
                continue
            if self._touch[p] <= self.R:
                return f
            if dirty == NONE:
                dirty = f
        return dirty

    def _evict(self, cpu: Any, page: int, f: int) -> None:
        """Discard ``page`` from frame ``f``: unmap it; nothing reaches PM (card M9)."""
        with self.step(cpu, "dudetx.page.evict") as c:
            if self.software:
                e = self._pt + PTE * page
                c.cas(e + 8, 0, MASK64)
                c.store(e, MASK64)
        self._frame_of[page] = NONE
        self._page_of[f] = NONE
        self.evictions += 1
        if not self.software:
            cpu.work(self.shootdown_ns)
            self.shootdowns += 1
            self._paid[cpu.tid] = self.shootdowns

    def _load_page(self, cpu: Any, page: int, f: int) -> None:
        """Copy ``page`` from PM into frame ``f``, stamp the frame's STM locks, map it."""
        pb = self.page_bytes
        home = self._data_lo + (page << self._shift)
        fa = self._frame_base + (f << self._shift)
        cpu.work(self.sw_fault_ns if self.software else self.hw_fault_ns)
        with self.step(cpu, "dudetx.page.load") as c:
            ld, st = c.load, c.store
            for i in range(min(pb, self._data_hi - home) // 8):
                st(fa + 8 * i, ld(home + 8 * i))
        stm = self.stm
        word = int(cpu.load(stm.clock_addr)) << VERSION_SHIFT
        stride = stm.config.stripe
        for a in range(fa, fa + pb, stride):
            cpu.store(stm.lock_addr(stm.lock_of(a)), word)
        if self.software:
            e = self._pt + PTE * page
            cpu.store(e, f)
            cpu.store(e + 8, 0)
        self._frame_of[page] = f
        self._page_of[f] = page
        self._refbit[f] = 1
        self.faults += 1

    def _page_wait(self, cpu: Any, why: tuple[str, int]) -> Generator[Any, Any, None]:
        """Wait (between attempts) until R reaches the touching ID, or until a pin is released."""
        kind, arg = why
        t0 = cpu.clock
        if kind == "touch" and not self.background:
            raise PmsimError(f"{self.name}: a page waits for Reproduce (touching ID {arg} > R = "
                             f"{self.R}) but no reproduce thread runs; run workers with the "
                             "runtime's background threads (Session.run)")
        since, seen = cpu.clock, (self.R, self._unpins)
        while self.R < arg if kind == "touch" else self._unpins == arg:
            yield from self.idle(cpu, self.page_wait_ns)
            if (self.R, self._unpins) != seen:
                since, seen = cpu.clock, (self.R, self._unpins)
            elif cpu.clock - since > self.stall_ns:
                raise StallError(f"{self.name}: thread {cpu.tid} waited {self.stall_ns:,.0f} ns for "
                                 f"a page ({kind} {arg}) with no progress")
        if kind == "touch":
            self.touch_waits += 1
            self.touch_wait_ns += cpu.clock - t0
        else:
            self.frame_waits += 1
            self.frame_wait_ns += cpu.clock - t0

    # -- Perform hooks ---------------------------------------------------------------------------
    def run(self, cpu: Any, body: Body, locks: Iterable[Any] = (),
            on_begin: Callable[[Tx], None] | None = None) -> Generator[Any, Any, Tx]:
        """DUDETx's Perform; the attempt's pins are released however it ends."""
        tid = cpu.tid
        try:
            tx = yield from super().run(cpu, body, locks, on_begin)
        except BaseException:
            for page, k in self._pins[tid].items():  # the run is abandoned: no instruction
                self._ref[page] -= k
            self._pins[tid] = {}
            self._wait[tid] = None
            raise
        self._unpin(cpu, tid)
        return tx

    def _on_commit(self, stx: StmTx, ts: int) -> None:
        """dtmEnd: take the ID, then set it as the touching ID of every page written; unpin."""
        t = stx.tid
        pages = {(a - self._data_lo) >> self._shift for a, _ in self._cur[t]}
        super()._on_commit(stx, ts)
        ident = self._vq[t][-1].id
        st = stx.cpu.store
        for p in pages:
            self._touch[p] = ident
            st(self._touch_base + 8 * p, ident)
        self._unpin(stx.cpu, t)

    def _on_abort(self, stx: StmTx, cause: AbortCause | None) -> None:
        super()._on_abort(stx, cause)
        self._unpin(stx.cpu, stx.tid)

    def _set_bit(self, tx: Tx, block: int, allocated: bool) -> None:
        """Set or clear a block's bit in the shadow bitmap, through the page table."""
        assert isinstance(tx, DudeTxTx)
        word, mask = self.heap.bit_of(block)
        s = self._translate(tx, word)
        old = tx.stx.read(s)
        tx.stx.write(s, old | mask if allocated else old & ~mask)

    def counters(self) -> dict[str, float]:
        out = super().counters()
        out.update({"faults": self.faults, "evictions": self.evictions,
                    "shootdowns": self.shootdowns, "touch_waits": self.touch_waits,
                    "touch_wait_ns": self.touch_wait_ns, "frame_waits": self.frame_waits,
                    "frame_wait_ns": self.frame_wait_ns, "page_aborts": self.page_aborts})
        return out


DUDETX_PAGING_SW = variant(DudeTxPagingRuntime, "dudetx-paging-sw", software=True)
"""Software translation (Alg. 3): two loads and a CAS on ``ref`` per access, no shootdown."""

_TINY = {"page_bytes": 32, "shadow_fraction": 1 / 6, "min_frames": 3, "persist_batch_bytes": 1,
         "reproduce_batch": 2, "hw_fault_ns": 20.0, "shootdown_ns": 50.0,
         "shootdown_remote_ns": 20.0, "sw_fault_ns": 20.0}
DUDETX_PAGING_TINY = variant(DudeTxPagingRuntime, "dudetx-paging-tiny", **_TINY)
"""For fuzzing: pages of 32 bytes, a sixth of them resident (at least three frames),
dudetx-fine's batches (crash points whose states can be enumerated), and faults and shootdowns
cheap enough to outpace Reproduce, so pages are evicted and reloaded within a few transactions
and loads do wait for their touching IDs (on bank: 4 pages, 3 frames)."""
DUDETX_PAGING_SW_TINY = variant(DudeTxPagingRuntime, "dudetx-paging-sw-tiny", software=True,
                                **_TINY)
"""The tiny variant with software translation."""

__all__ = ["DUDETX_PAGING_SW", "DUDETX_PAGING_SW_TINY", "DUDETX_PAGING_TINY",
           "DudeTxPagingRuntime", "PagingStm", "PagingTx"]


def no_touching_wait(orig: Callable[..., Any]) -> Callable[..., Any]:
    """M10: a page is swapped in without waiting for Reproduce to pass its touching ID."""
    def _must_wait(self: Any, page: int, touch: int) -> bool:
        return False
    return _must_wait


def write_back_on_evict(orig: Callable[..., Any]) -> Callable[..., Any]:
    """M9 (paging): an evicted page is written back to its home in PM (store, clwb), as an OS
    writes back a dirty page."""
    def _evict(self: Any, cpu: Any, page: int, f: int) -> None:
        home = self._data_lo + (page << self._shift)
        fa = self._frame_base + (f << self._shift)
        with self.step(cpu, "dudetx.page.evict") as c:
            for i in range(min(self.page_bytes, self._data_hi - home) // 8):
                c.store(home + 8 * i, c.load(fa + 8 * i))
            for line in range(home & ~63, home + self.page_bytes, 64):
                c.clwb(line)
        orig(self, cpu, page, f)
    return _evict


for _m in (
    Mutant("dudetx-paging:M10", DUDETX_PAGING_TINY,
           (patch("_must_wait", no_touching_wait, "no touching-ID wait"),),
           why="a page is loaded from PM before Reproduce has replayed its last writer: a later "
               "transaction reads stale data and logs values derived from it (a lost update; no "
               "crash needed, the data after Reproduce differ from the serial oracle)",
           needs="a page evicted and reloaded before its writer is reproduced (two threads: "
                 "the fuzzer's small bank fits in one 32-byte page, its array does not)",
           threads=2, workload="array"),
    Mutant("dudetx-paging:M9", DUDETX_PAGING_TINY,
           (patch("_evict", write_back_on_evict, "evicted pages written back"),),
           why="an evicted page is written back to PM: writes of committed but not yet durable "
               "transactions reach PM ahead of their log, and a crash leaves them without the "
               "earlier transactions they depend on",
           needs="an eviction of a page written by a transaction not yet durable"),
):
    register_mutant(_m)
