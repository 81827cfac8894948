"""NV-HTM (Castro, Romano, Barreto, JPDC 2019; papers/nv-htm.md §3-§5): durable transactions on
unmodified best-effort HTM, with every persist moved out of the hardware transaction, and its
recovery.

**Working snapshot.** Bodies run in hardware transactions (:class:`~pmsim.tm.htm.HtmRunner`:
retries, then the single global lock) on the *working snapshot* (WS), a copy of the application
data in the machine's DRAM at a constant offset from its home (the paper's ``MAP_PRIVATE``
copy-on-write pages, pre-faulted: card §10). The *persistent snapshot* (PS) is the data's home
in PM; only the checkpointer and recovery write it.

**Logging.** Each write inside the transaction also stores ``(home, value)`` into the next
16-byte slot of the thread's circular redo log in PM (cached, in the HTM write set, not
flushed); slots are addressed by running positions (never reset), slot ``p`` at
``log + 2 lines + 16 * (p % slots)``. ``logCheckSpace`` keeps room for the entry and the
commit marker, else ``xabort(LOG_FULL)``; the retry first waits for the checkpointer.

**Commit** (card §3, with the card's fixes): before ``xend`` the transaction reads its
timestamp (rdtsc, with the machine's skew; then spins Δ = the largest skew); after ``xend``
(TX_COMMIT: the HTM serialization point) it advertises the timestamp in ``ts[t]`` (a DRAM
word per thread; +inf = idle), clwb's its entry lines, fences (F1), waits until every other
thread advertises a larger ``(ts, tid)`` (WAITCOMMIT), stores ``<COMMIT, ts>`` and the log's
persistent end pointer endP, clwb's both lines, fences (F2: the durable commit point,
TX_DURABLE) and resets ``ts[t]`` to +inf. The marker's first word is a hash of its position
and timestamp with the low bit set (entries hold even home addresses), so recovery rejects a
marker left by an older lap of the ring, or torn. A read-only transaction reads its timestamp
before ``xend``, resets ``ts[t]`` and waits for every thread advertising a timestamp <= its
own. The SGL path reads its timestamp and advertises it before releasing the lock, then does
the rest after the release.

**Checkpointer** (a background thread on a core of its own, or sharing worker 0's): when a
log passes ``prune_threshold`` of its slots, Backward Filtering Checkpointing over one
timestamp cut (the durable transaction of that log at the threshold): every durable
transaction with ``(ts, tid)`` <= the cut, newest first, entries newest first, each 8-byte
word stored into the PS once (its newest value), no flush; then clwb of every modified line
once, fence, and the atomic truncation through the checkpoint log: new startPs into
``tmp_ptrs`` (clwb, fence), ``CP-COMPLETED`` (clwb, fence), the startPs (clwb, fence), CPLog
destroyed (clwb, fence). Each new startP is just past the log's newest checkpointed
transaction (card §4, M21). ``cp_mode`` selects the paper's alternatives FFF/FNF.

**Recovery**: finish a completed CPLog (re-apply its startPs), parse each log's
``[startP, endP)`` into transactions ending in a valid marker, BFC over all of them in
timestamp order into the PS, clwb, fence, and truncate through the CPLog (startP = endP = just
past the last valid marker). A crash during it repeats it: the logs are intact until the
truncation, and replaying the newest value of every word is idempotent.

The serialization order is the HTM commit order: TX_COMMIT is marked right after ``xend`` (or
under the SGL), which for dependent transactions is the timestamp order recovery replays in
(card §5.3.1); independent transactions commute. Durability is the marker and endP fenced
after WAITCOMMIT (TX_DURABLE, emitted by the worker). docs/protocols/nvhtm/nvhtm.md describes the
protocol and where it departs from the paper; the card's mutants are data over the named
steps in :mod:`.mutants`.
"""

from __future__ import annotations

import dataclasses
import random
from collections import deque
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ...config import LINE
from ...errors import ConfigError, PmsimError, StallError
from ...hw.htm import XABORT_EXPLICIT, xabort_code
from ...tm.htm import HtmAbort, HtmRunner, HtmRunStats, check
from ...trace import Mark
from ..alloclog import ALLOC_STEPS, FreeListAlloc
from ..appdata import DramShadow
from ..base import Body, OptimisticRuntime, RuntimeCosts, Tx
from ..layout import Layout, PMSpec
from ..registry import register_runtime, variant

SLOT = 16
"""Bytes of a log slot: an entry ``(home, value)`` or a marker ``(hash(position, ts) << 1 | 1,
ts)``."""
PER_LINE = LINE // SLOT
MASK64 = (1 << 64) - 1
INF = MASK64
"""``ts[t]`` of an idle thread (+inf)."""
LOG_FULL = 0x10
"""xabort code of logCheckSpace (Alg. 1 L15)."""
G_CP = 3
"""Word of the global header line: the checkpoint log's state (0 none, CP_PRUNE, CP_RECOVER)."""
CP_PRUNE, CP_RECOVER = 1, 2
"""CP-COMPLETED of a pruning checkpoint (re-apply startPs) or of recovery (startPs and endPs)."""
META = 2 * LINE
"""Bytes before a log's first slot: a line holding endP (word 0, the worker's), a line holding
startP (word 0) and tmp_ptr (word 1), the checkpointer's."""
CP_MODES = ("bfc", "fff", "fnf")


def marker_word(pos: int, ts: int) -> int:
    """The first word of the commit marker with timestamp ``ts`` at running position ``pos``:
    a 63-bit FNV-1a hash of both, shifted over the odd tag bit. A marker left by an older lap
    of the ring, or torn (one of its words persisted, not the other), does not verify."""
    h = 0xCBF29CE484222325
    for w in (pos, ts):
        h = ((h ^ w) * 0x100000001B3) & MASK64
    return (h << 1 | 1) & MASK64


@dataclass(slots=True)
class LogTx:
    """A durably committed transaction in a log: slots ``[start, end - 1)`` hold its entries,
    slot ``end - 1`` its marker."""

    ts: int
    tid: int
    start: int
    end: int

    @property
    def key(self) -> tuple[int, int]:
        return (self.ts, self.tid)


@dataclass
class Counts:
    """Per-transaction PM traffic in the two counting modes of card §3."""

    updates: int = 0
    read_only: int = 0
    entries: int = 0
    """Data entries logged by committed update transactions (W summed)."""
    literal_words: int = 0
    """Literal A1: 8-byte words the workers store in PM (2 per entry, 2 marker, 1 endP)."""
    literal_flushes: int = 0
    """Literal A1: clwb's the workers issue (entry lines, marker line, endP line)."""
    paper_writes: int = 0
    """Paper-calibrated: 16-byte entries, data and marker (Table 1: 0.9 (W + 1))."""
    paper_flushes: int = 0
    """Paper-calibrated: distinct log lines of the entries and the marker."""
    cp_words: int = 0
    """Words the checkpointer (and recovery) stored into the PS."""
    cp_flushes: int = 0
    """PS lines the checkpointer flushed (its CPLog and pointer lines not counted)."""
    cp_runs: int = 0
    log_full: int = 0
    """Hardware attempts aborted by LOG_FULL."""
    log_waits: int = 0
    log_wait_ns: float = 0.0
    sgl_restarts: int = 0
    """SGL bodies run again after the log filled up under the lock."""
    wait_ns: float = 0.0
    """Time spent in WAITCOMMIT."""

    def per_tx(self) -> dict[str, float]:
        """Writes and flushes per committed transaction (read-only ones included, as Table 1),
        in both modes; ``*_total`` adds the checkpointer's."""
        n = max(self.updates + self.read_only, 1)
        return {
            "literal_words_per_tx": self.literal_words / n,
            "literal_flushes_per_tx": self.literal_flushes / n,
            "paper_writes_per_tx": self.paper_writes / n,
            "paper_flushes_per_tx": self.paper_flushes / n,
            "paper_writes_per_tx_total": (self.paper_writes + self.cp_words) / n,
            "paper_flushes_per_tx_total": (self.paper_flushes + self.cp_flushes) / n,
        }


def lines_of_slots(lo: int, hi: int, slots: int) -> list[int]:
    """Line indices (within the ring) of running positions ``[lo, hi)``, in order."""
    out: dict[int, None] = {}
    for p in range(lo, hi):
        out[(p % slots) // PER_LINE] = None
    return list(out)


class NvHtmTx(Tx):
    """The object API over one attempt on the working snapshot."""

    def __init__(self, rt: NvHtmRuntime, cpu: Any, txid: int) -> None:
        super().__init__(rt, cpu, txid)
        self.nrt = rt
        self.hw = False
        self.undo: list[tuple[int, int]] = []  # SGL path: (WS address, old value)
        self.nw = 0  # entries this attempt logged
        self.ts = INF

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        cpu = self.cpu
        a = self.nrt._shadow(obj + 8 * field, n)
        vals = cpu.load_words(a, n)
        if self.hw:
            check(cpu)
        return vals

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        self.nrt._write(self, obj + 8 * field, values)
        self.writes += 1

    def pause(self) -> Iterable[Any]:
        return self.cpu.maybe_yield(self.nrt._q)

    def reset(self) -> None:
        """Forget an aborted attempt: its blocks go back to the free lists."""
        for b in self.allocs:
            self.nrt.heap.push(b)
        self.allocs.clear()
        self.frees.clear()
        self.fresh.clear()
        self.undo.clear()
        self.writes = 0
        self.nw = 0
        self.ts = INF


class SglLogFull(PmsimError):
    """The log filled up under the SGL (a transaction may log more entries than its PMSpec
    declares words: writes to blocks it allocated are logged too): the body is undone and run
    again, still under the lock, once the checkpointer has emptied the log."""


class NvHtmRunner(HtmRunner):
    """The HTM runner with NV-HTM's BEGIN: before an attempt, wait for log space if the last
    one aborted with LOG_FULL, then advertise the begin timestamp; before the SGL, wait for
    room for the largest transaction the PMSpec declares."""

    def __init__(self, machine: Any, rt: NvHtmRuntime, lock: int, budget: int,
                 spin_ns: float) -> None:
        super().__init__(machine, lock, budget, spin_ns)
        self.rt = rt

    def wait_free(self, cpu: Any) -> Generator[Any, Any, None]:
        rt = self.rt
        if rt._log_full[cpu.tid]:
            yield from rt._wait_log(cpu, max(rt._rec, rt._slots // 2))
            rt._log_full[cpu.tid] = False
        yield from super().wait_free(cpu)
        rt._advertise_begin(cpu)

    def acquire(self, cpu: Any) -> Generator[Any, Any, int]:
        yield from self.rt._wait_log(cpu, self.rt._rec)
        held = yield from super().acquire(cpu)
        self.rt._advertise_begin(cpu)
        return held


@register_runtime
class NvHtmRuntime(FreeListAlloc, DramShadow, OptimisticRuntime):
    """NV-HTM: HTM on a DRAM working snapshot, per-thread PM redo logs ordered by physical
    timestamps, a background backward-filtering checkpointer."""

    name = "nvhtm"
    family = "nvhtm"
    log_slots: ClassVar[int] = 1024
    """16-byte slots of each thread's log (paper: 40 MB; at least two of the workload's largest
    transactions, rounded up to whole lines)."""
    largest_tx_slots: ClassVar[int] = 0
    """Slots of the largest transaction the log must hold (``log_slots`` is raised to two of
    them). 0: the bound the workload declares (``PMSpec.max_tx_words``), which can be far
    above what its transactions log (Vacation-High at 2**20 records declares 3,552 words;
    its largest transaction logs 47 slots); an experiment that measured its workload's largest
    transaction sets it so that a small log keeps its size. A transaction that does not fit an
    empty log still stops the run with an error that says so."""
    prune_threshold: ClassVar[float | None] = 0.5
    """Log occupancy (fraction of the slots) that starts a checkpoint (paper: 50%; the "85%"
    setting: 0.85). None = no pruning during the run (NLP): the checkpointer runs only when a
    log is full and when the run ends."""
    cp_mode: ClassVar[str] = "bfc"
    """Checkpointing: 'bfc' (backward filtering), 'fff' (forward, every write applied, each
    line flushed once), 'fnf' (forward, every write applied and its line flushed)."""
    clock: ClassVar[str] = "tsc"
    """Commit timestamps: 'tsc' (rdtsc, the paper) or 'logical' (NV-HTM^LC: a DRAM counter
    incremented inside the hardware transaction, card §7)."""
    flush_ns: ClassVar[float] = 0.0
    """Flush emulation (card §8): each clwb also spins this long (paper: 500 ns); 0 = the
    realistic mode only (clwb + sfence through the WPQ)."""
    skew_delta_ns: ClassVar[float | None] = None
    """Δ spun between the timestamp and xend (§5.3.2); None = the machine's largest TSC
    offset difference (0 with synchronized TSCs)."""
    tsc_skew_ns: ClassVar[tuple[float, ...]] = ()
    """Per-core TSC offsets this variant puts on the machine (fit_config), unless the machine
    already has some."""
    htm_budget: ClassVar[int] = 5
    """Hardware attempts before the SGL (card §10: 5)."""
    cp_shares_core: ClassVar[bool] = False
    """The checkpointer runs on worker 0's core (time-sliced) instead of a core of its own."""
    spin_ns: ClassVar[float] = 20.0
    """One poll of WAITCOMMIT or of the SGL."""
    cp_idle_ns: ClassVar[float] = 500.0
    log_wait_ns: ClassVar[float] = 200.0
    stall_ns: ClassVar[float] = 1e8
    """A thread that waits this long (simulated) with no progress raises: a hang is a bug."""
    marker_reserve: ClassVar[int] = 2
    """Slots logCheckSpace keeps free before an entry: the entry and the commit marker."""
    commit_gap_ns: ClassVar[float] = 0.0
    """Time a thread spends, after half of its commit points (drawn from the machine's seed),
    before going on (a stress knob: an interrupt there). Any gap is correct; a long one widens
    the windows the ordering mutants need (M3, M5-M8, M19)."""

    STEPS = {
        "nvhtm.begin.advertise": ("store", "ts[t] = rdtsc (DRAM), then mfence: the thread is in "
                                  "a transaction (Alg. 1 L9-10)"),
        "nvhtm.write.log": ("group", "store the entry (home, value) into the next log slot, inside "
                            "the hardware transaction (not flushed)"),
        "nvhtm.commit.advertise": ("store", "C3: ts[t] = the commit timestamp, after xend (or "
                                   "before the SGL is released)"),
        "nvhtm.commit.flush-entries": ("flush", "C4: clwb the lines of the transaction's entries"),
        "nvhtm.commit.fence-entries": ("order", "F1: the entries are persistent before the marker"),
        "nvhtm.commit.marker": ("group", "C6: store <COMMIT, ts> after the entries"),
        "nvhtm.commit.endp": ("store", "C6: store endP = just past the marker"),
        "nvhtm.commit.flush-marker": ("flush", "C7: clwb the marker's line and endP's line"),
        "nvhtm.commit.fence-marker": ("order", "F2: the durable commit point"),
        "nvhtm.commit.idle": ("store", "C8: ts[t] = +inf (after F2)"),
        "nvhtm.ro.idle": ("store", "read-only: ts[t] = +inf right after xend"),
        "nvhtm.abort.idle": ("store", "abort: ts[t] = +inf"),
        "nvhtm.cp.replay": ("group", "BFC: store the newest value of every word of the window "
                            "into the PS, newest transaction first (no flush)"),
        "nvhtm.cp.flush": ("flush", "clwb every PS line the replay modified, once"),
        "nvhtm.cp.fence": ("order", "the PS is persistent before the truncation"),
        "nvhtm.cp.cplog": ("group", "store the new startPs into tmp_ptrs; clwb"),
        "nvhtm.cp.fence-cplog": ("order", "tmp_ptrs persistent before CP-COMPLETED"),
        "nvhtm.cp.completed": ("group", "store CP-COMPLETED; clwb"),
        "nvhtm.cp.fence-completed": ("order", "CP-COMPLETED persistent before the startPs"),
        "nvhtm.cp.startp": ("group", "store the new startPs; clwb"),
        "nvhtm.cp.fence-startp": ("order", "the startPs persistent before the CPLog is destroyed"),
        "nvhtm.cp.destroy": ("group", "destroy the CPLog; clwb"),
        "nvhtm.cp.fence-destroy": ("order", "the CPLog is gone before the log space is reused"),
        "nvhtm.recover.redo-cplog": ("group", "a completed CPLog: store its startPs (and endPs); "
                                     "clwb"),
        "nvhtm.recover.fence-redo": ("order", "the re-applied pointers persistent before the "
                                     "CPLog is destroyed"),
        "nvhtm.recover.drop-cplog": ("group", "destroy the old CPLog; clwb"),
        "nvhtm.recover.fence-drop": ("order", "the old CPLog gone before the new one is written"),
        "nvhtm.recover.replay": ("group", "BFC over every durable transaction into the PS"),
        "nvhtm.recover.flush": ("flush", "clwb every PS line recovery modified, once"),
        "nvhtm.recover.fence": ("order", "the PS persistent before the truncation"),
        "nvhtm.recover.cplog": ("group", "store the new startPs into tmp_ptrs; clwb"),
        "nvhtm.recover.fence-cplog": ("order", "tmp_ptrs persistent before CP-COMPLETED"),
        "nvhtm.recover.completed": ("group", "store CP-COMPLETED (recovery); clwb"),
        "nvhtm.recover.fence-completed": ("order", "CP-COMPLETED persistent before the pointers"),
        "nvhtm.recover.startp": ("group", "store startP = endP = just past the last valid marker; "
                                 "clwb"),
        "nvhtm.recover.fence-startp": ("order", "the pointers persistent before the CPLog is "
                                       "destroyed"),
        "nvhtm.recover.destroy": ("group", "destroy the CPLog; clwb"),
        "nvhtm.recover.fence-destroy": ("order", "the truncation is persistent before new "
                                        "transactions"),
    }
    OMIT_STEPS = frozenset(ALLOC_STEPS)
    CHECKS = {
        "nvhtm.recover.marker": "a transaction counts only if its marker's first word encodes the "
                                "marker's own position (a marker of an older lap, or an endP that "
                                "persisted before its marker, ends the log)",
        "nvhtm.recover.bounds": "recovery reads each log only within [startP, endP)",
    }

    # -- layout ----------------------------------------------------------------------------------
    @classmethod
    def extra_cores(cls, threads: int) -> int:
        """One core for the checkpointer, unless it shares worker 0's."""
        return 0 if cls.cp_shares_core else 1

    @classmethod
    def record_slots(cls, spec: PMSpec) -> int:
        """Slots of the largest transaction: every word written, every alloc/free bit, the
        marker."""
        return spec.max_tx_words + spec.max_tx_allocs + 1

    @classmethod
    def slots_for(cls, spec: PMSpec) -> int:
        """Slots of each log: ``log_slots``, at least two of the largest transaction, in whole
        lines."""
        n = max(int(cls.log_slots), 2 * cls.room_slots(spec))
        return -(-n // PER_LINE) * PER_LINE

    @classmethod
    def room_slots(cls, spec: PMSpec) -> int:
        """Slots a log keeps room for before a transaction starts under the SGL:
        ``largest_tx_slots`` if set, else the largest transaction the workload declares."""
        room, declared = int(cls.largest_tx_slots), cls.record_slots(spec)
        return min(room, declared) if room > 0 else declared

    @classmethod
    def log_bytes(cls, spec: PMSpec) -> int:
        return META + SLOT * cls.slots_for(spec)

    @classmethod
    def alloc_cap(cls, spec: PMSpec) -> int:
        return 0  # allocation bits travel inside the redo log

    @staticmethod
    def data_start(layout: Layout) -> int:
        """The first byte of application data (statics, then the heap and its bitmaps)."""
        return -(-(layout.log[-1] + layout.log_bytes) // LINE) * LINE

    @classmethod
    def dram_bytes(cls, layout: Layout) -> int:
        """DRAM from the region's start: the SGL's line, the logical clock's line, one ts line
        per thread and the working snapshot."""
        return LINE * (2 + layout.threads) + layout.end - cls.data_start(layout)

    @classmethod
    def fit_config(cls, cfg: Any, layout: Layout) -> Any:
        """``cfg`` with its DRAM region grown (to a power of two) to hold :meth:`dram_bytes`,
        and this variant's TSC offsets if it has some and the machine none."""
        dram = cfg.dram_region
        if dram is None:
            raise ConfigError(f"{cls.name} keeps its working snapshot and timestamps in DRAM, but "
                              "the machine config has no 'dram' region: add one")
        need = cls.dram_bytes(layout)
        if dram.size < need:
            size = 1 << (need - 1).bit_length()
            cfg = cfg.replace(regions=tuple(dataclasses.replace(r, size=size) if r is dram else r
                                            for r in cfg.regions))
        if cls.tsc_skew_ns and not cfg.htm.tsc_skew_ns:
            cfg = cfg.replace(htm=dataclasses.replace(cfg.htm, tsc_skew_ns=tuple(cls.tsc_skew_ns)))
        return cfg

    def __init__(self, machine: Any, layout: Layout, costs: RuntimeCosts | None = None) -> None:
        super().__init__(machine, layout, costs)
        if self.cp_mode not in CP_MODES:
            raise ConfigError(f"{self.name}: cp_mode {self.cp_mode!r}; use one of {CP_MODES}")
        if self.clock not in ("tsc", "logical"):
            raise ConfigError(f"{self.name}: clock {self.clock!r}; use 'tsc' or 'logical'")
        thr = self.prune_threshold
        if thr is not None and not 0 < thr <= 1:
            raise ConfigError(f"{self.name}: prune_threshold must be in (0, 1] or None, got {thr}")
        lay = layout
        t = lay.threads
        self._slots = min(self.slots_for(lay.spec), (lay.log_bytes - META) // SLOT)
        self._rec = self.room_slots(lay.spec)
        if self._slots < self._rec + 1:
            raise ConfigError(f"{self.name}: a transaction of the workload takes up to "
                              f"{self._rec} slots but a log holds {self._slots}: raise log_slots")
        self._data_lo = self.data_start(lay)
        self._data_hi = lay.end
        dram = machine.config.dram_region
        need = self.dram_bytes(lay)
        if dram is None or need > dram.size:
            have = "no 'dram' region" if dram is None else f"a DRAM region of {dram.size} bytes"
            raise ConfigError(
                f"{self.name} keeps its working snapshot and timestamps in DRAM and needs {need} "
                f"bytes for this layout, but the machine has {have}: build the machine with "
                f"{type(self).__name__}.fit_config(cfg, layout) (Session.create does), or e.g. "
                f"--set regions.1.size={1 << (need - 1).bit_length()}")
        self._lock = dram.base
        self._lc = dram.base + LINE
        self._tsw = [dram.base + LINE * (2 + i) for i in range(t)]
        self._off = self._ws_base(dram.base + LINE * (2 + t)) - self._data_lo
        self.runner = NvHtmRunner(machine, self, self._lock, self.htm_budget, self.spin_ns)
        self._q = self.runner.quantum
        cfg = machine.config
        if self.skew_delta_ns is not None:
            self._delta = float(self.skew_delta_ns)
        else:
            offs = [cfg.htm.skew(c) for c in range(cfg.cores)]
            self._delta = max(offs) - min(offs)
        self._gap_rng = random.Random(cfg.seed)
        self.counts = Counts()
        self.commit_ts: dict[int, int] = {}
        """txid -> commit timestamp (update) or wait threshold (read-only)."""
        self.read_only_txids: list[int] = []
        self._begin_ts = [INF] * t
        self.ack_latencies: list[float] = []
        self._progress = 0
        self._replayed = 0  # words the checkpointer has stored (the stall watchdog's progress)
        self._reset_volatile()

    def _ws_base(self, dram_next: int) -> int:
        """Where the working snapshot of the first data byte lives (the first free DRAM line)."""
        return dram_next

    # -- persistent log geometry ------------------------------------------------------------------
    def _slot(self, t: int, pos: int) -> int:
        return self.layout.log[t] + META + SLOT * (pos % self._slots)

    def _endp_addr(self, t: int) -> int:
        return self.layout.log[t]

    def _startp_addr(self, t: int) -> int:
        return self.layout.log[t] + LINE

    def _tmp_addr(self, t: int) -> int:
        return self.layout.log[t] + LINE + 8

    def _gcp_addr(self) -> int:
        return self.layout.base + 8 * G_CP

    def _line(self, t: int, ring_line: int) -> int:
        return self.layout.log[t] + META + LINE * ring_line

    def _reset_volatile(self) -> None:
        """Volatile state as after a restart: cursors from the persisted pointers, every thread
        idle, nothing waiting to be checkpointed."""
        t = self.layout.threads
        peek = self.m.peek
        self._endp = [int(peek(self._endp_addr(i))) for i in range(t)]
        self._start = [int(peek(self._startp_addr(i))) for i in range(t)]
        self._end = list(self._endp)  # locEndP, the volatile tail cursor
        self._durable: list[deque[LogTx]] = [deque() for _ in range(t)]
        self._log_full = [False] * t
        self._cp_wanted: set[int] = set()
        for a in self._tsw:
            self.m.poke(a, INF)

    def _load(self) -> None:
        """Rebuild volatile state from PM; the working snapshot is a copy of the PS."""
        super()._load()
        self._reset_volatile()
        self._fill_shadow()

    # -- statistics --------------------------------------------------------------------------------
    def htm_stats(self) -> HtmRunStats:
        """Hardware attempts, commits, SGL fallbacks and aborts by cause (all threads)."""
        return self.runner.total()

    def counters(self) -> dict[str, float]:
        """Cumulative counters for result tables: the runner's attempts, commits, fallbacks and
        aborts by cause (``htm.*``, as the volatile ``htm`` runtime), LOG_FULL aborts, and the
        PM traffic of both counting modes (``nvhtm.*``; divide by commits for per-transaction
        figures)."""
        out = {f"htm.{k}": float(v) for k, v in dataclasses.asdict(self.runner.total()).items()}
        c = self.counts
        for f in dataclasses.fields(c):
            out[f"nvhtm.{f.name}"] = float(getattr(c, f.name))
        return out

    def facts(self) -> dict[str, float]:
        """The slots each log really has (``log_slots`` raised to hold two of the largest
        transaction, in whole lines): a run whose log was raised is not the log it asked for."""
        return {"nvhtm.log_slots": float(self._slots)}

    def report(self) -> dict[str, float]:
        """Aborts by cause, abort rate, and writes/flushes per transaction in both counting
        modes (card §3), with the checkpointer's work and the waits."""
        h = self.htm_stats()
        c = self.counts
        out: dict[str, float] = {f"htm_{k}": float(v) for k, v in h.as_dict().items()}
        out["log_full_aborts"] = float(c.log_full)
        out.update(c.per_tx())
        out.update(updates=float(c.updates), read_only=float(c.read_only),
                   cp_runs=float(c.cp_runs), cp_words=float(c.cp_words),
                   cp_flushes=float(c.cp_flushes), wait_ns=c.wait_ns, log_waits=float(c.log_waits),
                   log_wait_ns=c.log_wait_ns)
        return out

    # -- transactions -------------------------------------------------------------------------------
    def run(self, cpu: Any, body: Body, locks: Iterable[Any] = (),
            on_begin: Callable[[Tx], None] | None = None) -> Generator[Any, Any, Tx]:
        """Run ``body`` in hardware transactions (then under the SGL) on the working snapshot;
        return once it is durable (or aborted by the body)."""
        start = cpu.clock
        txid = self._next_txid(cpu)
        t = cpu.tid
        tx = NvHtmTx(self, cpu, txid)
        tx.start = start
        self.active[t] = tx
        cpu.mark(Mark.TX_BEGIN, txid)
        if on_begin is not None:
            on_begin(tx)

        def attempt(hw: bool) -> Generator[Any, Any, Any]:
            tx.hw = hw
            while True:
                try:
                    res = body(tx)
                    if isinstance(res, Generator):
                        res = yield from res
                    break
                except SglLogFull:
                    self.counts.sgl_restarts += 1
                    self._undo(tx)
                    self._end[t] = self._endp[t]
                    tx.reset()
                    yield from self._wait_log(cpu, self._slots)
            if res is not False and not self.ts_after_commit and (
                    hw or not self.sgl_ts_after_release):
                self._take_ts(cpu, tx)
                if not hw:  # catch up before the release makes the body visible
                    yield from cpu.maybe_yield(self._q)
            return res

        ok = yield from self.runner.run(cpu, attempt, lambda: self._on_commit(tx),
                                        lambda: self._on_abort(tx),
                                        lambda status: self._on_retry(tx, status))
        if ok:
            self.commits += 1
            if tx.ts == INF:  # (M19) the SGL path reads its timestamp after the release
                yield from self._gap(cpu)
                self._take_ts(cpu, tx)
                self.commit_ts[txid] = tx.ts
                if tx.nw:
                    self._advertise_commit(cpu, tx)
            if tx.nw:
                yield from self._durable_commit(cpu, tx)
            else:
                yield from self._wait_commit(cpu, tx.ts, INF)
                self.counts.read_only += 1
                self.read_only_txids.append(txid)
            cpu.mark(Mark.TX_DURABLE, txid)
            self.ack_latencies.append(cpu.clock - start)
            for b in tx.frees:
                self.heap.push(b)
        else:
            self.aborts += 1
        yield from self._finish(tx)
        return tx

    ts_after_commit: ClassVar[bool] = False
    """(M7) read the commit timestamp after xend instead of before."""
    sgl_ts_after_release: ClassVar[bool] = False
    """(M19) the SGL path reads and advertises its timestamp after releasing the lock."""

    def _advertise_begin(self, cpu: Any) -> None:
        """BEGIN: ts[t] = the clock, made visible (mfence) before the transaction starts."""
        t = cpu.tid
        v = self._begin_ts[t] = self._read_clock(cpu, t)
        self.st(cpu, "nvhtm.begin.advertise", self._tsw[t], v)
        cpu.mfence()

    def _read_clock(self, cpu: Any, t: int) -> int:
        """The timestamp a thread advertises at begin: rdtsc, or the logical clock's value."""
        if self.clock == "logical":
            return int(self.m.peek(self._lc))
        return int(cpu.rdtsc())

    def _take_ts(self, cpu: Any, tx: NvHtmTx) -> None:
        """C1 (and C1'): the commit timestamp, after the last access and before xend. The
        logical clock is incremented inside the transaction by an update (NV-HTM^LC)."""
        if self.clock == "logical":
            v = int(cpu.load(self._lc))
            if tx.nw:
                cpu.store(self._lc, v + 1)
                v += 1
            tx.ts = v
        else:
            tx.ts = int(cpu.rdtsc())
            if tx.nw and self._delta > 0:
                cpu.work(self._delta)
        if tx.hw:
            check(cpu)

    def _write(self, tx: NvHtmTx, home: int, values: Sequence[int]) -> None:
        """WRITE: logCheckSpace, the working-snapshot store and the log entry, per word."""
        cpu = tx.cpu
        t = tx.tid
        cpu.work(self.costs.call_ns)
        ws = self._shadow(home, len(values))
        with self.step(cpu, "nvhtm.write.log") as c:
            for i, v in enumerate(values):
                if self._slots - (self._end[t] - self._start[t]) < self.marker_reserve:
                    if tx.hw:
                        cpu.xabort(LOG_FULL)
                        raise HtmAbort(cpu.xstatus())
                    if self._endp[t] == self._start[t]:
                        raise ConfigError(f"{self.name}: a transaction of thread {t} logs more "
                                          f"than the {self._slots} slots of a log: raise "
                                          "log_slots (or largest_tx_slots, if set: a log "
                                          "holds at least two of it)")
                    raise SglLogFull(f"thread {t}'s log is full under the SGL")
                if not tx.hw:
                    tx.undo.append((ws + 8 * i, int(self.m.peek(ws + 8 * i))))
                cpu.store(ws + 8 * i, v)
                p = self._end[t]
                a = self._slot(t, p)
                c.store(a, home + 8 * i)
                c.store(a + 8, v)
                self._end[t] = p + 1
                tx.nw += 1
        if tx.hw:
            check(cpu)

    def _on_commit(self, tx: NvHtmTx) -> Generator[Any, Any, None]:
        """Right after xend (or under the SGL, before its release): the serialization point;
        then C3 (an update advertises its timestamp) or the read-only reset."""
        cpu = tx.cpu
        self.commit_order.append(tx.txid)
        cpu.mark(Mark.TX_COMMIT, tx.txid)
        if tx.hw:
            yield from self._gap(cpu)  # other threads may run before C3
        if self.ts_after_commit:
            self._take_ts(cpu, tx)
        if tx.ts != INF:
            self.commit_ts[tx.txid] = tx.ts
        if not tx.nw:
            self.st(cpu, "nvhtm.ro.idle", self._tsw[tx.tid], INF)
        elif tx.ts != INF:
            self._advertise_commit(cpu, tx)

    def _advertise_commit(self, cpu: Any, tx: NvHtmTx) -> None:
        """C3: ts[t] = the commit timestamp."""
        self.st(cpu, "nvhtm.commit.advertise", self._tsw[tx.tid], tx.ts)

    def _reset_attempt(self, tx: NvHtmTx) -> None:
        """ABORT handler: ts[t] = +inf, locEndP = endP; the attempt's blocks are returned."""
        t = tx.tid
        self.st(tx.cpu, "nvhtm.abort.idle", self._tsw[t], INF)
        self._end[t] = self._endp[t]
        tx.reset()

    def _on_retry(self, tx: NvHtmTx, status: int) -> None:
        """After a hardware abort: a LOG_FULL one makes the next attempt wait for log room."""
        if status & XABORT_EXPLICIT and xabort_code(status) == LOG_FULL:
            self.counts.log_full += 1
            self._log_full[tx.tid] = True
            self._cp_wanted.add(tx.tid)
        self._reset_attempt(tx)

    def _undo(self, tx: NvHtmTx) -> None:
        """Restore the working-snapshot words the SGL path's body stored, newest first."""
        st = tx.cpu.store
        for addr, old in reversed(tx.undo):
            st(addr, old)
        tx.undo.clear()

    def _on_abort(self, tx: NvHtmTx) -> None:
        """A user abort: undo the SGL path's working-snapshot stores, reset the attempt."""
        self._undo(tx)
        self._reset_attempt(tx)
        tx.cpu.mark(Mark.TX_ABORT, tx.txid)

    def _gap(self, cpu: Any) -> Generator[Any, Any, None]:
        """Right after a commit point: ``commit_gap_ns`` of other work half of the time (a
        stress knob: an interrupt or a preemption there), then let the other threads run."""
        if self.commit_gap_ns > 0 and self._gap_rng.random() < 0.5:
            cpu.work(self.commit_gap_ns)
        yield from cpu.maybe_yield(self._q)

    def _spin(self, cpu: Any) -> Generator[Any, Any, None]:
        cpu.work(self.spin_ns)
        return cpu.maybe_yield(self._q)

    def _wait_commit(self, cpu: Any, x: int, tid: int) -> Generator[Any, Any, None]:
        """WAITCOMMIT(x): for every other thread u, spin until (ts[u], u) > (x, tid). An update
        passes its own tid; a read-only transaction passes +inf (wait for every ts <= x)."""
        t0 = cpu.clock
        me = cpu.tid
        key = (x, tid)
        ld = cpu.load
        for u, a in enumerate(self._tsw):
            if u == me:
                continue
            since = cpu.clock
            while (int(ld(a)), u) <= key:
                yield from self._spin(cpu)
                if cpu.clock - since > self.stall_ns:
                    raise StallError(f"{self.name}: thread {me} waited {self.stall_ns:,.0f} ns for "
                                     f"thread {u}'s timestamp to pass {x}")
        self.counts.wait_ns += cpu.clock - t0

    def _flush(self, cpu: Any, name: str, lines: Sequence[int]) -> None:
        """clwb of ``lines`` as one step; with an emulated flush latency, each line's clwb
        followed by its ``flush_ns`` spin (the paper replaces every flush with such a spin, §6),
        so the write-backs leave one spin apart instead of all at once."""
        if self.flush_ns <= 0 or not lines:
            self.flush(cpu, name, lines)
            return
        for line in lines:
            self.flush(cpu, name, (line,))
            cpu.spin(self.flush_ns)

    def _flush_paced(self, cpu: Any, name: str, lines: Sequence[int]
                     ) -> Generator[Any, Any, None]:
        """:meth:`_flush` of many lines (a checkpoint's), letting the other threads run between
        two emulated flushes: thousands of spins in one go would put this thread's write-backs
        in the memory controller's queue far ahead of everyone else's."""
        if self.flush_ns <= 0:
            self._flush(cpu, name, lines)
            return
        for line in lines:
            self._flush(cpu, name, (line,))
            yield from cpu.maybe_yield()

    def _durable_commit(self, cpu: Any, tx: NvHtmTx) -> Generator[Any, Any, None]:
        """C4-C8: flush the entries, F1, WAITCOMMIT, marker and endP, flush, F2, ts = +inf."""
        t = tx.tid
        s, e = self._endp[t], self._end[t]
        ent = [self._line(t, i) for i in lines_of_slots(s, e, self._slots)]
        self._flush(cpu, "nvhtm.commit.flush-entries", ent)
        self.order(cpu, "nvhtm.commit.fence-entries")
        yield from self._wait_commit(cpu, tx.ts, t)
        if self._slots - (e - self._start[t]) < 1:
            raise PmsimError(f"{self.name}: thread {t}'s log has no room for the commit marker "
                             "(logCheckSpace must reserve it)")
        a = self._slot(t, e)
        with self.step(cpu, "nvhtm.commit.marker") as c:
            c.store(a, marker_word(e, tx.ts))
            c.store(a + 8, tx.ts)
        e += 1
        self._end[t] = e
        self.st(cpu, "nvhtm.commit.endp", self._endp_addr(t), e)
        yield from self._make_durable(cpu, tx, a & ~(LINE - 1))
        self._endp[t] = e
        self._durable[t].append(LogTx(tx.ts, t, s, e))
        self._count_update(s, e)
        thr = self.prune_threshold
        if thr is not None and e - self._start[t] >= thr * self._slots:
            self._cp_wanted.add(t)

    def _make_durable(self, cpu: Any, tx: NvHtmTx, mline: int) -> Generator[Any, Any, None]:
        """C7, F2 (the durable commit point), C8."""
        t = tx.tid
        self._flush(cpu, "nvhtm.commit.flush-marker", [mline, self._endp_addr(t)])
        self.order(cpu, "nvhtm.commit.fence-marker")
        self.st(cpu, "nvhtm.commit.idle", self._tsw[t], INF)
        yield from ()

    def _count_update(self, s: int, e: int) -> None:
        """Both counting modes for an update whose entries are ``[s, e - 1)``, marker ``e - 1``."""
        c = self.counts
        w = e - 1 - s
        c.updates += 1
        c.entries += w
        c.literal_words += 2 * w + 3
        c.literal_flushes += len(lines_of_slots(s, e - 1, self._slots)) + 2
        c.paper_writes += w + 1
        c.paper_flushes += len(lines_of_slots(s, e, self._slots))

    def _wait_log(self, cpu: Any, need: int) -> Generator[Any, Any, None]:
        """Block until the thread's log has ``need`` free slots (the checkpointer frees them)."""
        t = cpu.tid
        if self._slots - (self._end[t] - self._start[t]) >= need:
            return
        if not self.background:
            raise PmsimError(f"{self.name}: thread {t}'s log is full and no checkpointer runs; run "
                             "workers with the runtime's background threads (Session.run or "
                             "pmsim.runtimes.background.run_threads)")
        self.counts.log_waits += 1
        t0 = cpu.clock
        while self._slots - (self._end[t] - self._start[t]) < need:
            self._cp_wanted.add(t)
            seen, since = self._progress, cpu.clock
            yield from self.idle(cpu, self.log_wait_ns)
            if self._progress == seen and cpu.clock - since > self.stall_ns:
                raise StallError(f"{self.name}: thread {t} waited {self.stall_ns:,.0f} ns for log "
                                 "space with no checkpoint")
        self.counts.log_wait_ns += cpu.clock - t0

    # -- allocation: bits in the working snapshot's bitmap, logged --------------------------------
    def _set_bit(self, tx: Tx, block: int, allocated: bool) -> None:
        """Set or clear a block's bit in the working snapshot's bitmap (logged like any write)."""
        assert isinstance(tx, NvHtmTx)
        word, mask = self.heap.bit_of(block)
        old = tx.read_words(word, 0, 1)[0]
        self._write(tx, word, [old | mask if allocated else old & ~mask])

    # -- the checkpointer -------------------------------------------------------------------------
    def background_progress(self) -> int:
        """Words the checkpointer has replayed: a long checkpoint, with every worker waiting for
        log space, is progress."""
        return self._replayed

    def start_threads(self) -> None:
        tid = 0 if self.cp_shares_core else self.layout.threads
        self.spawn_background("checkpointer", tid, self._cp_loop)

    def _cp_loop(self, cpu: Any) -> Generator[Any, Any, None]:
        while True:
            if self._cp_wanted:
                t = min(self._cp_wanted)
                self._cp_wanted.discard(t)
                if self._durable[t]:
                    yield from self._checkpoint(cpu, t)
                    continue
            if self.stopping:
                if any(self._durable):
                    yield from self._checkpoint(cpu, None)
                    continue
                break
            yield from self.idle(cpu, self.cp_idle_ns)

    def _cut(self, t: int | None) -> tuple[int, int]:
        """The window's cut: the durable transaction of log ``t`` at the pruning threshold (the
        newest durable one that ends within it, else its oldest); None: everything durable."""
        if t is None:
            return max(q[-1].key for q in self._durable if q)
        q = self._durable[t]
        thr = self.prune_threshold if self.prune_threshold is not None else 1.0
        limit = self._start[t] + max(1, int(thr * self._slots))
        cut = q[0]
        for lt in q:
            if lt.end > limit:
                break
            cut = lt
        return cut.key

    def _window(self, t: int | None) -> list[LogTx]:
        """Every durable, not yet checkpointed transaction with (ts, tid) <= the cut (each
        log's prefix: a log's timestamps increase)."""
        cut = self._cut(t)
        out = []
        for q in self._durable:
            for lt in q:
                if lt.key > cut:
                    break
                out.append(lt)
        return out

    def _checkpoint(self, cpu: Any, t: int | None) -> Generator[Any, Any, None]:
        """One BFC: replay the window into the PS, flush, fence, truncate atomically."""
        window = self._window(t)
        lines, n = self._replay(cpu, window, "nvhtm.cp.replay")
        yield from cpu.maybe_yield()
        yield from self._flush_paced(cpu, "nvhtm.cp.flush", lines)
        self.order(cpu, "nvhtm.cp.fence")
        self.counts.cp_words += n
        self.counts.cp_flushes += len(lines)
        new = list(self._start)
        done = set()
        for lt in window:
            new[lt.tid] = max(new[lt.tid], self._new_start(lt))
            done.add(id(lt))
        self._truncate(cpu, new, CP_PRUNE, "nvhtm.cp")
        for u, q in enumerate(self._durable):
            while q and id(q[0]) in done:
                q.popleft()
            self._start[u] = new[u]
        self.counts.cp_runs += 1
        self._progress += 1
        yield from cpu.maybe_yield()

    def _new_start(self, lt: LogTx) -> int:
        """A log's new startP once ``lt`` is checkpointed: just past it (card §4)."""
        return lt.end

    def _entries(self, ld: Callable[[int], int], lt: LogTx) -> list[tuple[int, int]]:
        """A transaction's entries, loaded from its log slots, in log order."""
        out = []
        for p in range(lt.start, lt.end - 1):
            a = self._slot(lt.tid, p)
            out.append((int(ld(a)), int(ld(a + 8))))
        return out

    def _replay_order(self, txs: list[LogTx]) -> list[LogTx]:
        """BFC: newest (ts, tid) first; FFF/FNF: oldest first."""
        return sorted(txs, key=lambda lt: lt.key, reverse=self.cp_mode == "bfc")

    def _filter_key(self, addr: int) -> int:
        """What the filter map marks: the 8-byte word."""
        return addr

    def _tx_entries(self, entries: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """A transaction's entries in the order the replay visits them: BFC newest first (a
        duplicate write keeps its last value), forward modes in log order."""
        return entries[::-1] if self.cp_mode == "bfc" else entries

    def _replay(self, cpu: Any, txs: list[LogTx], step: str) -> tuple[list[int], int]:
        """Store the window into the PS (no flush); the lines to flush (FNF: one per write, in
        order) and the words stored."""
        lines: dict[int, None] = {}
        every: list[int] = []
        seen: set[int] = set()
        n = 0
        bfc = self.cp_mode == "bfc"
        with self.step(cpu, step) as c:
            ld, st = c.load, c.store
            for lt in self._replay_order(txs):
                for a, v in self._tx_entries(self._entries(ld, lt)):
                    if not self._is_home(a):
                        continue
                    if bfc:
                        k = self._filter_key(a)
                        if k in seen:
                            continue
                        seen.add(k)
                    st(a, v)
                    n += 1
                    line = a & ~(LINE - 1)
                    lines[line] = None
                    every.append(line)
            c.work(self.costs.copy_ns_per_byte * 16 * n)
        self._replayed += n
        return (every if self.cp_mode == "fnf" else list(lines)), n

    def _truncate(self, cpu: Any, new: list[int], kind: int, prefix: str) -> None:
        """Advance the startPs (and, after recovery, the endPs) atomically through the CPLog."""
        lay = self.layout
        t = lay.threads
        with self.step(cpu, prefix + ".cplog") as c:
            for u in range(t):
                c.store(self._tmp_addr(u), new[u])
                c.clwb(self._tmp_addr(u))
        self.order(cpu, prefix + ".fence-cplog")
        g = self._gcp_addr()
        with self.step(cpu, prefix + ".completed") as c:
            c.store(g, kind)
            c.clwb(g)
        self.order(cpu, prefix + ".fence-completed")
        with self.step(cpu, prefix + ".startp") as c:
            self._store_pointers(c, new, kind)
        self.order(cpu, prefix + ".fence-startp")
        with self.step(cpu, prefix + ".destroy") as c:
            c.store(g, 0)
            c.clwb(g)
        self.order(cpu, prefix + ".fence-destroy")

    def _store_pointers(self, c: Any, new: Sequence[int], kind: int) -> None:
        """Store and clwb each startP (and endP for recovery's truncation)."""
        for u, p in enumerate(new):
            c.store(self._startp_addr(u), p)
            c.clwb(self._startp_addr(u))
            if kind == CP_RECOVER:
                c.store(self._endp_addr(u), p)
                c.clwb(self._endp_addr(u))

    # -- recovery ----------------------------------------------------------------------------------
    def _parse(self, ld: Callable[[int], int], t: int, s: int, e: int) -> list[LogTx]:
        """The transactions of log ``t`` in ``[s, e)`` that end in a valid marker, in order."""
        if self.check("nvhtm.recover.bounds") and not 0 <= e - s <= self._slots:
            return []
        out: list[LogTx] = []
        first = s
        strict = self.check("nvhtm.recover.marker")
        for p in range(s, e):
            a = self._slot(t, p)
            w = int(ld(a))
            if w & 1 or (not strict and p == e - 1):
                ts = int(ld(a + 8))
                if strict and w != marker_word(p, ts):
                    break
                out.append(LogTx(ts, t, first, p + 1))
                first = p + 1
        return out

    def _log_window(self, ld: Callable[[int], int], t: int) -> tuple[int, int]:
        """The persisted ``[startP, endP)`` of log ``t``."""
        return int(ld(self._startp_addr(t))), int(ld(self._endp_addr(t)))

    def _recover(self, cpu: Any) -> None:
        """Finish a completed CPLog, BFC over every durable transaction, truncate."""
        t = self.layout.threads
        ld = cpu.load
        g = self._gcp_addr()
        kind = int(ld(g))
        if kind:
            with self.step(cpu, "nvhtm.recover.redo-cplog") as c:
                new = [int(ld(self._tmp_addr(u))) for u in range(t)]
                self._store_pointers(c, new, CP_RECOVER if kind == CP_RECOVER else CP_PRUNE)
            self.order(cpu, "nvhtm.recover.fence-redo")
            with self.step(cpu, "nvhtm.recover.drop-cplog") as c:
                c.store(g, 0)
                c.clwb(g)
            self.order(cpu, "nvhtm.recover.fence-drop")
        txs: list[LogTx] = []
        new = []
        for u in range(t):
            s, e = self._log_window(ld, u)
            got = self._parse(ld, u, s, e)
            txs += got
            new.append(got[-1].end if got else s)
        lines, n = self._replay(cpu, txs, "nvhtm.recover.replay")
        self.counts.cp_words += n
        self.flush(cpu, "nvhtm.recover.flush", lines)
        self.order(cpu, "nvhtm.recover.fence")
        self._truncate(cpu, new, CP_RECOVER, "nvhtm.recover")

    def _check_logs(self) -> list[str]:
        """After recovery every log is empty (startP = endP) and no CPLog is left."""
        errs = []
        if self.m.peek(self._gcp_addr()):
            errs.append("the checkpoint log was not destroyed")
        for u in range(self.layout.threads):
            s, e = self.m.peek(self._startp_addr(u)), self.m.peek(self._endp_addr(u))
            if s != e:
                errs.append(f"log {u} not truncated: startP {s} != endP {e}")
        return errs


NVHTM_FINE = variant(NvHtmRuntime, "nvhtm-fine", log_slots=8, prune_threshold=0.25)
"""Logs of two small transactions' worth of slots, pruned after about every transaction: the
same protocol with a checkpoint (and its truncation) every few commits and frequent LOG_FULL
waits, so crash points fall inside checkpoints and every point's states can be enumerated."""
NVHTM_RACE = variant(NvHtmRuntime, "nvhtm-race", log_slots=16, prune_threshold=0.5,
                     commit_gap_ns=300.0, fuzz_variant=True)
"""Small logs holding a few transactions each, and a 300 ns pause right after every commit
point: windows in which other threads commit (and checkpoints include several transactions
per log) are common, so the ordering mutants show within a few transactions. A fuzzing
variant (as are those built on it): comparisons leave it out."""
NVHTM_EMUL = variant(NvHtmRuntime, "nvhtm-emul", flush_ns=500.0)
"""The paper's flush emulation (card §8): every clwb also spins 500 ns."""
NVHTM_NLP = variant(NvHtmRuntime, "nvhtm-nlp", log_slots=1 << 16, prune_threshold=None)
"""No log pruning during the run (the paper's NLP: logs large enough for the whole run)."""
NVHTM_LC = variant(NvHtmRuntime, "nvhtm-lc", clock="logical")
"""NV-HTM^LC: a logical clock incremented inside the hardware transaction (card §7)."""
NVHTM_FFF = variant(NvHtmRuntime, "nvhtm-fff", cp_mode="fff")
NVHTM_FNF = variant(NvHtmRuntime, "nvhtm-fnf", cp_mode="fnf")
NVHTM_SKEW = variant(NVHTM_RACE, "nvhtm-skew", tsc_skew_ns=(0.0, 200.0, 0.0, 200.0))
"""The race variant on a machine whose odd cores' TSCs run 200 ns ahead: Δ = 200 ns spins."""

__all__ = ["CP_PRUNE", "CP_RECOVER", "Counts", "G_CP", "INF", "LOG_FULL", "LogTx",
           "NVHTM_EMUL", "NVHTM_FFF", "NVHTM_FINE", "NVHTM_FNF", "NVHTM_LC", "NVHTM_NLP",
           "NVHTM_RACE", "NVHTM_SKEW",
           "NvHtmRunner", "NvHtmRuntime", "NvHtmTx", "SLOT", "SglLogFull", "lines_of_slots",
           "marker_word"]
