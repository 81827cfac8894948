"""Machine configuration: frozen dataclasses with units and help text, presets, JSON/YAML I/O.

Every field is declared with ``param(default, unit, help)``; ``describe()`` prints them the way
gem5 prints its parameters. Configs validate themselves on construction and raise
:class:`~pmsim.errors.ConfigError` with a message saying which field is wrong and how to fix it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from .errors import ConfigError, unknown

LINE = 64
"""Cache-line size in bytes (fixed: every model in pmsim works on 64-byte lines)."""
ATOM = 8
"""Persist-atomic unit in bytes: aligned 8-byte stores never tear."""

Domain = Literal["pdom0", "pdom1", "pdom2"]
CoreModel = Literal["inorder", "ooo"]
BarrierMode = Literal["modelled", "fixed"]
RegionKind = Literal["pm", "dram"]

DOMAINS: tuple[str, ...] = get_args(Domain)


def param(default: Any, unit: str, help: str) -> Any:
    """Declare a config field with its unit and one-line help."""
    if isinstance(default, (list, dict, set)):
        raise TypeError("use a tuple or a frozen dataclass for defaults")
    if is_dataclass(default):
        return field(default_factory=lambda: default, metadata={"unit": unit, "help": help})
    return field(default=default, metadata={"unit": unit, "help": help})


MAX_NS = 1e9
"""Largest latency or cost a config accepts, in ns (one second): larger values are typos, and
sums of them would overflow simulated clocks to infinity."""
MAX_CACHE_KIB = 1 << 18
"""Largest cache level, in KiB (256 MiB): the engines keep a tag and LRU state per line."""
MAX_CACHE_TOTAL_KIB = 1 << 20
"""Largest total cache capacity, cores x (L1 + L2) + LLC, in KiB (1 GiB)."""
MAX_WAYS = 1024
"""Most ways of a cache level (every access scans a set)."""
MAX_BANKS = 4096
"""Most PM media banks (the engines keep a timer per bank; real controllers have 8-64)."""
MAX_WPQ = 4096
"""Most WPQ entries (every write-back scans the queue; real WPQs hold 64-256)."""
MAX_REGION = 1 << 32
"""Largest region, in bytes (4 GiB): the engines hold every region's contents in host memory
and copy the PM region for each trace and crash image."""
MAX_MEMORY = 1 << 33
"""Largest total of all regions, in bytes (8 GiB), for the same reason."""
MAX_REGIONS = 64
"""Most regions in an address map (every access outside PM searches them)."""
MIN_PM_REGION = 4096
"""Fewest bytes of a PM region: one 4 KiB page, the least any runtime's header, logs and data
take (crashfuzz shrinks PM to whole pages, never below one)."""
MAX_ADDRESS = 1 << 52
"""Regions end at or below 2**52 (the x86-64 physical address space)."""
MAX_SEED = (1 << 64) - 1
"""Seeds are 64-bit unsigned integers (NumPy's generators reject negative seeds)."""


def _fail(obj: Any, name: str, problem: str, fix: str) -> ConfigError:
    cls = type(obj).__name__
    return ConfigError(f"{cls}.{name}: {problem}. {fix}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_nonneg(obj: Any, *names: str, most: float = MAX_NS) -> None:
    for n in names:
        v = getattr(obj, n)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
            raise _fail(obj, n, f"must be a number >= 0 and finite, got {v!r}",
                        f"Use a non-negative value, at most {most:g}.")
        if v > most:
            raise _fail(obj, n, f"{v!r} is more than {most:g} ns (one second)",
                        f"Use a value in [0, {most:g}]: larger latencies overflow simulated time.")


def _check_posint(obj: Any, *names: str, most: int | None = None, why: str = "") -> None:
    for n in names:
        v = getattr(obj, n)
        if not _is_int(v) or v <= 0:
            valid = f"an integer in 1..{most}" if most else "an integer >= 1"
            raise _fail(obj, n, f"must be a positive integer, got {v!r}", f"Use {valid}.")
        if most is not None and v > most:
            raise _fail(obj, n, f"{v} is more than the {most} pmsim models",
                        f"Use an integer in 1..{most}{why}.")


def _check_type(obj: Any, name: str, tp: type) -> None:
    v = getattr(obj, name)
    if not isinstance(v, tp):
        raise _fail(obj, name, f"expected a {tp.__name__}, got {type(v).__name__} {v!r}",
                    f"Pass {tp.__name__}(...) or a mapping through MachineConfig.from_dict.")


def _size(n: int) -> str:
    """Bytes as a short human figure (4 GiB, 512 KiB, 100 B)."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):g} {unit}"
    return f"{n} B"


@dataclass(frozen=True)
class CacheLevel:
    """One set-associative, write-back, write-allocate, LRU cache level."""

    size_kib: int = param(32, "KiB", "capacity (at most 262144 = 256 MiB)")
    ways: int = param(8, "ways", "associativity (at most 1024)")
    latency_ns: float = param(1.5, "ns", "load-to-use latency of a hit at this level")

    def __post_init__(self) -> None:
        _check_posint(self, "size_kib", most=MAX_CACHE_KIB,
                      why=" (256 MiB; the engines keep state per cache line)")
        _check_posint(self, "ways", most=MAX_WAYS, why=" (every access scans a set)")
        _check_nonneg(self, "latency_ns")
        lines = self.size_kib * 1024 // LINE
        if lines < self.ways or lines % self.ways:
            raise _fail(self, "ways", f"{self.size_kib} KiB is not divisible into {self.ways} ways",
                        "Pick ways so that size_kib*1024/64 is a multiple of ways.")
        sets = lines // self.ways
        if sets & (sets - 1):
            raise _fail(self, "size_kib", f"gives {sets} sets, not a power of two",
                        "Choose size_kib and ways so that size/(64*ways) is a power of two.")

    @property
    def sets(self) -> int:
        """Number of sets."""
        return self.size_kib * 1024 // (LINE * self.ways)


@dataclass(frozen=True)
class CacheConfig:
    """Per-core L1 and L2, and a last-level cache shared by all cores."""

    l1: CacheLevel = param(CacheLevel(32, 8, 1.5), "", "private L1 data cache")
    l2: CacheLevel = param(CacheLevel(256, 8, 5.0), "", "private L2")
    llc: CacheLevel = param(CacheLevel(8192, 16, 15.0), "", "shared last-level cache")

    def __post_init__(self) -> None:
        for n in ("l1", "l2", "llc"):
            _check_type(self, n, CacheLevel)


MAX_DIMMS = 64
"""Most DIMMs of the DIMM model (a server has at most a few dozen)."""
MAX_BUFFER_LINES = 4096
"""Most entries of a DIMM's write-combining buffer (every access scans it; Optane's has 64)."""
XPLINE = 256
"""The media line of the DIMM model, in bytes (Optane's XPLine: four cache lines)."""


@dataclass(frozen=True)
class DIMMConfig:
    """The PM module behind the WPQ (Optane-like): 256 B media lines, an on-DIMM buffer that
    combines writes and holds recently read lines, media contention, interleaving.

    ``dimms = 0`` (the default) keeps the plain bank model (``PMConfig.banks``, ``write_ns``).
    With ``dimms >= 1`` each DIMM has its own WPQ of ``PMConfig.wpq_entries`` and accepts one
    64 B write per ``PMConfig.write_ns``; a read of a line the buffer holds costs
    ``PMConfig.read_ns``, any other read adds a media read. The buffer (random replacement)
    writes a media line back when its four cache lines have all been written, or when a
    partly written line is evicted (a read-modify-write); with many writers queued at a DIMM,
    lines written over the wait are evicted half written by the others' allocations, and with
    more than ``combine_writers`` write streams at a DIMM each extra one may cost a line an
    early half write (``contention``), and with more than ``combine_writers`` read streams each
    extra one may cost a read of a line the buffer holds a media read (``read_contention``;
    both calibrated on the DIMMs' own counters; see the model page). Durability is unchanged: the WPQ (or,
    in PDOM-0, the DIMM's acceptance) is the persistence point; the buffer and media are behind
    it."""

    dimms: int = param(0, "DIMMs", "modules the PM region is interleaved over; 0 = no DIMM "
                       "model (the bank model of PMConfig) (at most 64)")
    interleave_kib: int = param(4, "KiB", "interleaving granularity across DIMMs (a power of "
                                "two)")
    buffer_lines: int = param(64, "lines", "entries of the on-DIMM buffer, in 256 B media lines "
                              "(at most 4096)")
    media_read_ns: float = param(180.0, "ns", "latency a read adds when the buffer misses")
    media_read_occ_ns: float = param(39.0, "ns", "time a media read occupies the DIMM's media")
    media_write_ns: float = param(116.0, "ns", "time a 256 B media write occupies the DIMM's "
                                  "media")
    read_priority: bool = param(False, "", "reads go to the media ahead of queued writes: a "
                                "read waits only for other reads, and its media time delays "
                                "the writes queued after it (the read-first scheduling of "
                                "memory controllers that drain writes at a watermark); False "
                                "(the default): reads and writes share one first-come queue")
    combine_writers: int = param(5, "streams", "write streams one DIMM's buffer combines "
                                 "without interfering: a thread that wrote to the DIMM within "
                                 "the buffer's turnover time (buffer_lines media writes) counts "
                                 "by the share of its writes there; each stream beyond these may "
                                 "cost a completed line an early half write (contention). Read "
                                 "streams are counted the same way, by the reads in flight "
                                 "in that time (read_contention)")
    contention: float = param(0.20, "", "chance, per write stream beyond combine_writers, that "
                              "a media line was written out half done before its last part "
                              "arrived (a read-modify-write); 0 turns the effect off. "
                              "Calibrated on FAST'20's DIMM counters (see the model page)")
    read_contention: float = param(0.009, "", "chance, per read stream beyond "
                                   "combine_writers, that a read of a line the buffer holds "
                                   "finds it evicted by the other streams and reads the media "
                                   "again; 0 turns the effect off. Calibrated on FAST'20's DIMM "
                                   "counters (see the model page)")

    def __post_init__(self) -> None:
        v = self.dimms
        if not _is_int(v) or not 0 <= v <= MAX_DIMMS:
            raise _fail(self, "dimms", f"must be an integer in 0..{MAX_DIMMS}, got {v!r}",
                        "Use 0 for the plain bank model or the number of interleaved DIMMs.")
        _check_posint(self, "interleave_kib", most=1 << 20)
        if self.interleave_kib & (self.interleave_kib - 1):
            raise _fail(self, "interleave_kib", f"{self.interleave_kib} is not a power of two",
                        "Use 1, 2, 4, ... (Optane interleaves in 4 KiB).")
        _check_posint(self, "buffer_lines", most=MAX_BUFFER_LINES,
                      why=" (every access scans the buffer)")
        _check_nonneg(self, "media_read_ns", "media_read_occ_ns", "media_write_ns")
        v = self.combine_writers
        if not _is_int(v) or not 0 <= v <= 64:
            raise _fail(self, "combine_writers", f"must be an integer in 0..64, got {v!r}",
                        "Use the number of write streams a DIMM serves without interference (5).")
        v = self.contention
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
            raise _fail(self, "contention", f"must be a probability in [0, 1], got {v!r}",
                        "Use 0 to turn the write streams' contention off, or e.g. 0.2.")
        v = self.read_contention
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
            raise _fail(self, "read_contention", f"must be a probability in [0, 1], got {v!r}",
                        "Use 0 to turn the read streams' contention off, or e.g. 0.01.")
        if not isinstance(self.read_priority, bool):
            raise _fail(self, "read_priority", f"must be True or False, got "
                        f"{self.read_priority!r}", "Use True (reads first) or False (one queue).")

    @property
    def on(self) -> bool:
        return self.dimms > 0

    @property
    def contention_window_ns(self) -> float:
        """How recently a thread must have written to a DIMM to count as one of its writers:
        the buffer's turnover time, ``buffer_lines`` media writes."""
        return self.buffer_lines * self.media_write_ns


@dataclass(frozen=True)
class CoreConfig:
    """How a core overlaps memory accesses with execution.

    ``inorder``: every load, and every store that misses L1, stalls the thread for its full
    latency (a blocking core such as gem5's TimingSimpleCPU). ``ooo``: stores retire into a
    store buffer that drains to L1 in program order in the background (the thread stalls only
    when it is full, or at an instruction that must wait for it: mfence, sfence, locked
    read-modify-writes, xbegin/xend; flushes write back after the older stores drained); the
    loads of one group (``Cpu.load_words``, a runtime's ``read_words``) are independent and their
    misses overlap up to ``fill_buffers`` at a time, while single loads are dependent (a pointer
    chase) and pay their full latency."""

    model: CoreModel = param("inorder", "", "'inorder' (blocking) or 'ooo' (store buffer and "
                             "overlapped misses)")
    store_buffer: int = param(56, "entries", "store-buffer entries (ooo only; at most 4096)")
    fill_buffers: int = param(10, "entries", "L1D miss slots: independent load misses in "
                              "flight at once (ooo only; at most 4096)")
    load_issue_ns: float = param(0.5, "ns", "issue interval between the independent loads of "
                                 "one group (ooo only)")
    physical_cores: int = param(0, "cores", "physical cores the hardware threads run on "
                                "(Hyper-Threading): thread t runs on core t mod physical_cores, "
                                "so with more threads two share a core's L1 and L2, its HTM "
                                "write capacity (halved) and its issue slots (smt_speed); 0: a "
                                "core per thread")
    smt_speed: float = param(0.65, "", "compute speed of each of two threads sharing a core, "
                             "as a fraction of one thread alone on it (work() and the "
                             "runtimes' fixed costs; memory latencies are not slowed): "
                             "Hyper-Threading adds up to 30% throughput to a core (Marr et al., "
                             "Intel Technology Journal 6(1), 2002), 1.3 / 2 = 0.65")

    def __post_init__(self) -> None:
        if self.model not in get_args(CoreModel):
            raise _fail(self, "model", f"unknown core model {self.model!r}",
                        "Use 'inorder' or 'ooo'.")
        _check_posint(self, "store_buffer", "fill_buffers", most=4096)
        _check_nonneg(self, "load_issue_ns")
        if not _is_int(self.physical_cores) or not 0 <= self.physical_cores <= 64:
            raise _fail(self, "physical_cores", f"must be an integer in 0..64, got "
                        f"{self.physical_cores!r}", "Use 0 (a core per thread) or the "
                        "number of physical cores.")
        v = self.smt_speed
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 < v <= 1:
            raise _fail(self, "smt_speed", f"must be a number in (0, 1], got {v!r}",
                        "Use the fraction of full speed a thread keeps beside its sibling.")

    def placement(self, threads: int) -> tuple[list[int], list[int]]:
        """The physical core each of ``threads`` hardware threads runs on, and its sibling on
        that core (-1: alone). Threads fill the cores in order, then their second threads, as
        Linux numbers them: thread t on core t mod physical_cores."""
        p = self.physical_cores
        if not p or threads <= p:
            return list(range(threads)), [-1] * threads
        core = [t % p for t in range(threads)]
        sib = [t + p if t + p < threads else t - p if t >= p else -1 for t in range(threads)]
        return core, sib


MAX_PF_DISTANCE = 64
"""Farthest a stream prefetcher runs ahead, in lines (one 4 KiB page)."""


@dataclass(frozen=True)
class PrefetchConfig:
    """Hardware prefetchers of each core's L2 (Intel's L2 streamer and adjacent-line
    prefetcher). Prefetched lines fill L2 and the LLC and use memory bandwidth like demand reads;
    a demand access to a line still in flight waits for it (a late prefetch)."""

    stream: bool = param(False, "", "L2 streamer: after two consecutive misses in one 4 KiB page "
                         "(ascending or descending) fetch the next lines of the page ahead")
    adjacent: bool = param(False, "", "adjacent-line prefetcher: an L2 miss also fetches the "
                           "other line of its 128 B pair")
    distance: int = param(16, "lines", "how far ahead of the demand stream the streamer runs "
                          "(at most 64)")
    degree: int = param(2, "lines", "lines the streamer issues per triggering access (at most 64)")
    streams: int = param(32, "streams", "stream-table entries per core, one 4 KiB page each, "
                         "indexed by page number (at most 256)")

    def __post_init__(self) -> None:
        for n in ("stream", "adjacent"):
            if not isinstance(getattr(self, n), bool):
                raise _fail(self, n, f"expected true or false, got {getattr(self, n)!r}",
                            "Use True or False.")
        _check_posint(self, "distance", "degree", most=MAX_PF_DISTANCE,
                      why=" (one 4 KiB page of lines)")
        _check_posint(self, "streams", most=256)

    @property
    def on(self) -> bool:
        return self.stream or self.adjacent


@dataclass(frozen=True)
class PMConfig:
    """Persistent-memory media and the memory controller's write-pending queue (WPQ)."""

    read_ns: float = param(300.0, "ns", "media read latency added to an LLC miss")
    write_ns: float = param(500.0, "ns", "time one line write occupies a media bank")
    banks: int = param(16, "banks", "independent media banks draining the WPQ in parallel "
                       "(at most 4096)")
    wpq_entries: int = param(64, "entries", "write-pending-queue capacity; full => write-backs "
                             "stall (at most 4096)")
    to_wpq_ns: float = param(30.0, "ns", "time for a write-back or flush to reach the WPQ")
    merge_writes: bool = param(False, "", "a write to a line whose queued write has not begun "
                               "its media write merges into it (no entry, no media time), as "
                               "gem5's memory controller merges bursts in its write queue")
    dimm: DIMMConfig = param(DIMMConfig(), "", "the PM module behind the WPQ (dimms=0: none)")

    def __post_init__(self) -> None:
        _check_type(self, "dimm", DIMMConfig)
        _check_nonneg(self, "read_ns", "write_ns", "to_wpq_ns")
        if not isinstance(self.merge_writes, bool):
            raise _fail(self, "merge_writes", f"expected true or false, got "
                        f"{self.merge_writes!r}", "Use True or False.")
        _check_posint(self, "banks", most=MAX_BANKS,
                      why=" (real controllers have 8-64; the engines keep a timer per bank)")
        _check_posint(self, "wpq_entries", most=MAX_WPQ,
                      why=" (real WPQs hold 64-256; every write-back scans the queue)")


@dataclass(frozen=True)
class DRAMConfig:
    """Volatile DRAM."""

    latency_ns: float = param(90.0, "ns", "DRAM latency added to an LLC miss")

    def __post_init__(self) -> None:
        _check_nonneg(self, "latency_ns")


@dataclass(frozen=True)
class Region:
    """A range of the simulated physical address space."""

    name: str = param("pm", "", "a label for the range")
    base: int = param(0, "bytes", "first address (64-byte aligned; the region ends at or "
                      "below 2**52)")
    size: int = param(1 << 24, "bytes", "length (a multiple of 64, at most 4 GiB: the engines "
                      "hold every region in host memory)")
    kind: RegionKind = param("pm", "", "'pm' (persistent) or 'dram' (volatile)")

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise _fail(self, "name", f"must be a non-empty string, got {self.name!r}",
                        "Name the region, e.g. 'pm' or 'dram'.")
        if self.kind not in get_args(RegionKind):
            raise _fail(self, "kind", f"unknown kind {self.kind!r}", "Use 'pm' or 'dram'.")
        if not _is_int(self.base) or self.base < 0 or self.base % LINE:
            raise _fail(self, "base", f"{self.base!r} is not a 64-byte aligned address",
                        "Use a non-negative multiple of 64.")
        if not _is_int(self.size) or self.size <= 0 or self.size % LINE:
            raise _fail(self, "size", f"{self.size!r} is not a positive multiple of 64",
                        "Round the size up to whole cache lines.")
        if self.size > MAX_REGION:
            raise _fail(self, "size", f"{self.size} bytes ({_size(self.size)}) is more than the "
                        f"{_size(MAX_REGION)} a region may have",
                        "Use a smaller region: the engines hold every region in host memory and "
                        "copy the PM region for each trace and crash image.")
        if self.base + self.size > MAX_ADDRESS:
            raise _fail(self, "base", f"the region [{self.base:#x}, {self.base + self.size:#x}) "
                        "ends above 2**52", "Place it below 2**52 (the x86-64 physical address "
                        "space).")

    @property
    def end(self) -> int:
        return self.base + self.size


@dataclass(frozen=True)
class CostConfig:
    """Instruction and computation costs that are not memory accesses."""

    store_ns: float = param(1.0, "ns", "issue cost of a store that hits in L1 (stores are buffered)")
    flush_ns: float = param(2.0, "ns", "issue cost of clwb/clflushopt/clflush")
    fence_ns: float = param(5.0, "ns", "base cost of sfence/mfence beyond waiting for flushes")
    rmw_ns: float = param(20.0, "ns", "base cost of a locked read-modify-write (CAS, xchg)")
    pcommit_ns: float = param(5.0, "ns", "issue cost of pcommit")
    lock_ns: float = param(20.0, "ns", "cost of acquiring or releasing an uncontended lock")
    snoop_ns: float = param(15.0, "ns", "cost of taking a line from another core's private cache")
    tx_work_ns: float = param(0.0, "ns", "application work per transaction outside the "
                              "runtime (a benchmark loop drawing keys, hashing, calling in), "
                              "charged by the workload driver before each transaction; a "
                              "calibration knob for papers whose costs include it (0 = none)")

    def __post_init__(self) -> None:
        _check_nonneg(self, *(f.name for f in fields(self)))


MAX_READ_SET = 1 << 22
"""Largest read-set bound, in lines (256 MiB of tracked reads): the engines keep per-line state."""
MAX_WRITE_SET = 1 << 20
"""Largest write-set bound, in lines (64 MiB of buffered stores)."""
MAX_TSC_GHZ = 1000.0
"""Fastest TSC a config accepts, in GHz (faster ones are typos)."""


@dataclass(frozen=True)
class HTMConfig:
    """Best-effort hardware transactional memory, modelled on Intel TSX/RTM (nv-htm.md §2, §10).

    Read and write sets are tracked per cache line; conflicts are eager and the requester wins;
    a write set overflowing ``write_set_lines`` or the ways of one L1 set aborts (capacity)."""

    read_set_lines: int = param(65536, "lines", "most distinct lines a transaction may read "
                                "before a capacity abort (Intel tracks reads beyond L1, about "
                                "4 MiB; at most 4194304)")
    write_set_lines: int = param(512, "lines", "most distinct lines a transaction may write "
                                 "(Intel: 512, the L1); overflowing the ways of one L1 set also "
                                 "aborts (at most 1048576)")
    abort_on_any_flush: bool = param(False, "", "a flush inside a transaction aborts it even "
                                     "when the line is not in its write set (a flush of a "
                                     "written line always aborts)")
    xbegin_ns: float = param(15.0, "ns", "cost of xbegin (tens of cycles on TSX)")
    xend_ns: float = param(15.0, "ns", "cost of a committing xend")
    abort_ns: float = param(60.0, "ns", "cost of an abort (rollback), paid when the thread "
                            "learns of it at xend; the aborted work's time is spent as well")
    rdtsc_ns: float = param(10.0, "ns", "cost of rdtsc (rdtscp)")
    tsc_ghz: float = param(1.0, "GHz", "TSC frequency: rdtsc returns int((clock + skew) x "
                           "tsc_ghz), so the default counts nanoseconds")
    tsc_skew_ns: tuple[float, ...] = param((), "ns", "per-core TSC offsets: core c's TSC reads "
                                           "tsc_skew_ns[c] ahead of its clock (cores beyond the "
                                           "tuple: 0; empty: synchronized TSCs)")
    quantum_ns: float = param(1.0, "ns", "scheduling quantum inside transactions run by the "
                              "HTM runner: a thread yields at a pause once this far ahead; below "
                              "one L1 hit it yields at every pause, which makes abort rates "
                              "independent of it (the machine's quantum_ns applies elsewhere; "
                              "the smaller of the two is used)")

    def __post_init__(self) -> None:
        _check_posint(self, "read_set_lines", most=MAX_READ_SET,
                      why=" (the engines keep state per tracked line)")
        _check_posint(self, "write_set_lines", most=MAX_WRITE_SET,
                      why=" (the engines buffer every written line)")
        if not isinstance(self.abort_on_any_flush, bool):
            raise _fail(self, "abort_on_any_flush", f"expected true or false, got "
                        f"{self.abort_on_any_flush!r}", "Use True or False.")
        _check_nonneg(self, "xbegin_ns", "xend_ns", "abort_ns", "rdtsc_ns")
        g = self.tsc_ghz
        if not isinstance(g, (int, float)) or isinstance(g, bool) or not math.isfinite(g) \
                or not 0 < g <= MAX_TSC_GHZ:
            raise _fail(self, "tsc_ghz", f"must be a number in (0, {MAX_TSC_GHZ:g}], got {g!r}",
                        "Use the TSC frequency in GHz, e.g. 1.0 (ticks are nanoseconds) or 2.4.")
        skew = self.tsc_skew_ns
        if isinstance(skew, list):
            skew = tuple(skew)
            object.__setattr__(self, "tsc_skew_ns", skew)
        if not isinstance(skew, tuple):
            raise _fail(self, "tsc_skew_ns", f"expected a tuple of numbers, got {skew!r}",
                        "Pass one offset in ns per core, e.g. (0.0, 40.0).")
        if len(skew) > 64:
            raise _fail(self, "tsc_skew_ns", f"has {len(skew)} entries",
                        "Give at most one offset per core (pmsim has at most 64 cores).")
        for i, v in enumerate(skew):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) \
                    or not 0 <= v <= MAX_NS:
                raise _fail(self, f"tsc_skew_ns[{i}]", f"must be a number in [0, {MAX_NS:g}], "
                            f"got {v!r}", "Offsets are how far a core's TSC runs ahead, in ns.")
        q = self.quantum_ns
        if not isinstance(q, (int, float)) or isinstance(q, bool) or not math.isfinite(q) or q <= 0:
            raise _fail(self, "quantum_ns", f"must be > 0, got {q!r}",
                        "Use a positive number of nanoseconds.")

    def skew(self, core: int) -> float:
        """The TSC offset of ``core`` in ns."""
        return float(self.tsc_skew_ns[core]) if core < len(self.tsc_skew_ns) else 0.0


@dataclass(frozen=True)
class MachineConfig:
    """The whole simulated machine."""

    cores: int = param(2, "cores", "number of cores (one simulated thread per core; at most 64)")
    cache: CacheConfig = param(CacheConfig(), "", "cache hierarchy")
    pm: PMConfig = param(PMConfig(), "", "persistent memory and WPQ")
    dram: DRAMConfig = param(DRAMConfig(), "", "volatile memory")
    costs: CostConfig = param(CostConfig(), "", "non-memory instruction costs")
    htm: HTMConfig = param(HTMConfig(), "", "hardware transactional memory")
    core: CoreConfig = param(CoreConfig(), "", "core timing: in-order or out-of-order")
    prefetch: PrefetchConfig = param(PrefetchConfig(), "", "hardware prefetchers")
    regions: tuple[Region, ...] = param(
        (Region("pm", 0, 1 << 24, "pm"), Region("dram", 1 << 30, 1 << 22, "dram")),
        "", "address map: which ranges are PM and which DRAM (at most 64 regions of at "
        "most 4 GiB each, 8 GiB in all, ending below 2**52; PM regions of at least 4 KiB)")
    domain: Domain = param("pdom1", "", "persistence domain: pdom0 (media only), "
                           "pdom1 (ADR: media + WPQ), pdom2 (eADR: everything)")
    barrier: BarrierMode = param("modelled", "", "persist barrier cost: 'modelled' waits on "
                                 "real flush/WPQ state, 'fixed' charges barrier_ns")
    barrier_ns: float = param(100.0, "ns", "cost of one persist barrier in 'fixed' mode "
                              "(latencies and costs: at most 1e9 ns)")
    quantum_ns: float = param(1000.0, "ns", "most a thread runs ahead of the others "
                              "before yielding to the scheduler")
    seed: int = param(0, "", "seed for every random choice (0..2**64-1)")

    def __post_init__(self) -> None:
        if _is_int(self.cores) and self.cores > 64:
            raise _fail(self, "cores", f"{self.cores} cores",
                        "pmsim supports at most 64 cores: use 1..64.")
        _check_posint(self, "cores", most=64)
        for name, tp in (("cache", CacheConfig), ("pm", PMConfig), ("dram", DRAMConfig),
                         ("costs", CostConfig), ("htm", HTMConfig), ("core", CoreConfig),
                         ("prefetch", PrefetchConfig)):
            _check_type(self, name, tp)
        if self.domain not in DOMAINS:
            raise _fail(self, "domain", f"unknown domain {self.domain!r}",
                        f"Use one of {', '.join(DOMAINS)}.")
        if self.barrier not in get_args(BarrierMode):
            raise _fail(self, "barrier", f"unknown mode {self.barrier!r}",
                        "Use 'modelled' or 'fixed'.")
        _check_nonneg(self, "barrier_ns")
        q = self.quantum_ns
        if not isinstance(q, (int, float)) or isinstance(q, bool) or not math.isfinite(q) or q <= 0:
            raise _fail(self, "quantum_ns", f"must be > 0, got {self.quantum_ns!r}",
                        "Use a positive number of nanoseconds.")
        if not _is_int(self.seed) or not 0 <= self.seed <= MAX_SEED:
            raise _fail(self, "seed", f"must be an integer in 0..2**64-1, got {self.seed!r}",
                        "Use a non-negative integer.")
        p = self.core.physical_cores
        if p and self.cores > 2 * p:
            raise _fail(self, "cores", f"{self.cores} hardware threads on core.physical_cores={p}",
                        f"Two threads share a core at most: use at most {2 * p} cores (threads "
                        "and the runtime's helper threads), or more physical cores.")
        self._check_caches()
        self._check_regions()

    def _check_caches(self) -> None:
        c = self.cache
        total = self.cores * (c.l1.size_kib + c.l2.size_kib) + c.llc.size_kib
        if total > MAX_CACHE_TOTAL_KIB:
            raise _fail(self, "cache", f"{self.cores} cores x (L1 {c.l1.size_kib} KiB + L2 "
                        f"{c.l2.size_kib} KiB) + LLC {c.llc.size_kib} KiB = {_size(total * 1024)} "
                        f"of cache, more than the {_size(MAX_CACHE_TOTAL_KIB * 1024)} pmsim models",
                        "Use smaller caches or fewer cores: the engines keep state per cache line.")

    def _check_regions(self) -> None:
        regions = self.regions
        if isinstance(regions, list):
            regions = tuple(regions)
            object.__setattr__(self, "regions", regions)
        if not isinstance(regions, tuple):
            raise _fail(self, "regions", f"expected a tuple of Region, got {regions!r}",
                        "Pass (Region(...), ...).")
        for i, r in enumerate(regions):
            if not isinstance(r, Region):
                raise _fail(self, f"regions[{i}]", f"expected a Region, got {type(r).__name__} "
                            f"{r!r}", "Pass Region(name, base, size, kind).")
        if not regions:
            raise _fail(self, "regions", "is empty", "Declare at least one 'pm' region.")
        if len(regions) > MAX_REGIONS:
            raise _fail(self, "regions", f"has {len(regions)} regions",
                        f"Use at most {MAX_REGIONS}.")
        if not any(r.kind == "pm" for r in regions):
            raise _fail(self, "regions", "has no 'pm' region", "Add a Region(kind='pm').")
        for i, r in enumerate(regions):
            if r.kind == "pm" and r.size < MIN_PM_REGION:
                raise _fail(self, f"regions[{i}]", f"PM region {r.name!r} has {r.size} bytes, "
                            f"fewer than the {_size(MIN_PM_REGION)} a PM region needs (a "
                            "runtime's header, logs and data)",
                            f"Use at least {MIN_PM_REGION} bytes, e.g. --set "
                            f"regions.{i}.size={MIN_PM_REGION}.")
        total = sum(r.size for r in regions)
        if total > MAX_MEMORY:
            raise _fail(self, "regions", f"hold {_size(total)} in all, more than "
                        f"{_size(MAX_MEMORY)}", "Use smaller regions: the engines hold every "
                        "region in host memory.")
        ordered = sorted(regions, key=lambda r: r.base)
        for a, b in zip(ordered, ordered[1:], strict=False):
            if a.end > b.base:
                raise _fail(self, "regions",
                            f"{a.name!r} [{a.base:#x}, {a.end:#x}) overlaps {b.name!r} at {b.base:#x}",
                            "Move one of the ranges so that they do not overlap.")
        names = [r.name for r in regions]
        if len(set(names)) != len(names):
            raise _fail(self, "regions", f"duplicate names {names}", "Give each region a unique name.")

    # -- conveniences -------------------------------------------------------------------------
    @property
    def pm_region(self) -> Region:
        """The first PM region (the one runtimes and the crash model use by default)."""
        return next(r for r in self.regions if r.kind == "pm")

    @property
    def dram_region(self) -> Region | None:
        """The first DRAM region, if any."""
        return next((r for r in self.regions if r.kind == "dram"), None)

    def replace(self, **changes: Any) -> MachineConfig:
        """A copy with fields changed; dotted names reach into nested configs (``pm.read_ns``)."""
        return _replace_nested(self, changes)

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), indent=2, **kw)

    def to_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MachineConfig:
        return from_dict(cls, data)

    @classmethod
    def from_json(cls, text: str) -> MachineConfig:
        return from_dict(cls, _parse(text, "json"))

    @classmethod
    def from_yaml(cls, text: str) -> MachineConfig:
        return from_dict(cls, _parse(text, "yaml"))

    @classmethod
    def load(cls, path: str | Path, over: MachineConfig | None = None) -> MachineConfig:
        """Read a ``.json``, ``.yaml`` or ``.yml`` file. Fields the file omits take their
        defaults, or with ``over`` the values of ``over`` (the file's fields applied over it;
        nested sections field by field, ``regions`` as a whole)."""
        data = load_data(path)
        if over is None:
            return from_dict(cls, data, where=str(path))
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of fields, got "
                              f"{type(data).__name__}. Write the config as key: value pairs.")
        return over.replace(**_flatten(over, data, str(path)))


def _parse(text: str, fmt: str, where: str = "config") -> Any:
    """The data of JSON or YAML text, or a ConfigError saying what is wrong."""
    try:
        if fmt == "json":
            return json.loads(text)
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ConfigError(f"{where} is not valid YAML: {' '.join(str(e).split())}. Fix the "
                              "file and retry.") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"{where} is not valid JSON: {e}. Fix the file and retry.") from None
    except RecursionError:
        raise ConfigError(f"{where} is nested too deeply to be a machine config. "
                          "Fix the file and retry.") from None


def load_data(path: str | Path) -> Any:
    """The parsed contents of a ``.json``, ``.yaml`` or ``.yml`` config file."""
    p = Path(path)
    fmt = {".json": "json", ".yaml": "yaml", ".yml": "yaml"}.get(p.suffix.lower())
    if not p.exists():
        raise ConfigError(f"config file {str(p)!r} does not exist. Give the path of a .json or "
                          ".yaml file.")
    if p.is_dir():
        raise ConfigError(f"config file {str(p)!r} is a directory. Give the path of a .json or "
                          ".yaml file.")
    if not p.is_file():
        raise ConfigError(f"config file {str(p)!r} is not a regular file (a device, pipe or "
                          "socket). Give the path of a .json or .yaml file.")
    if fmt is None:
        raise ConfigError(f"config file {str(p)!r}: unknown extension {p.suffix!r}. "
                          "Use .json, .yaml or .yml.")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"config file {str(p)!r} is not UTF-8 text ({e.reason} at byte "
                          f"{e.start}). Save it as UTF-8 JSON or YAML.") from None
    except OSError as e:
        raise ConfigError(f"cannot read config file {str(p)!r}: {e.strerror or e}. Check the "
                          "path and its permissions.") from None
    if not text.strip():
        raise ConfigError(f"config file {str(p)!r} is empty. Write the fields to change, e.g. "
                          "`cores: 4`, or print a full config with `pmsim config --format "
                          f"{fmt}`.")
    return _parse(text, fmt, f"config file {str(p)!r}")


def _flatten(obj: Any, data: dict[str, Any], where: str) -> dict[str, Any]:
    """Dotted field names -> values for ``replace``: a mapping under a section field of ``obj``
    is descended into, anything else replaces the field."""
    out: dict[str, Any] = {}
    names = {f.name for f in fields(obj)}
    for key, value in data.items():
        if key not in names:
            raise unknown(f"{type(obj).__name__} field", str(key), names)
        cur = getattr(obj, key)
        if is_dataclass(cur) and isinstance(value, dict):
            out.update({f"{key}.{k}": v for k, v in _flatten(cur, value, where).items()})
        else:
            out[key] = value
    return out


def check_types(obj: Any, label: str) -> None:
    """Raise a ConfigError unless every field of the dataclass ``obj`` holds a value of its
    declared type: ``int`` (not a bool), ``float`` (an int or float, finite), ``bool`` or
    ``str``. ``label`` starts the message, e.g. ``"workload 'array': parameter "``."""
    hints = get_type_hints(type(obj))
    for f in fields(obj):
        v, tp = getattr(obj, f.name), hints[f.name]
        if tp is int and not _is_int(v):
            problem = "must be an integer"
        elif tp is float and (not isinstance(v, (int, float)) or isinstance(v, bool)
                              or not math.isfinite(v)):
            problem = "must be a finite number"
        elif tp is bool and not isinstance(v, bool):
            problem = "must be true or false"
        elif tp is str and not isinstance(v, str):
            problem = "must be a string"
        else:
            continue
        raise ConfigError(f"{label}{f.name}={v!r} {problem} ({f.metadata.get('help', '')})")


def check_most(label: str, name: str, value: int, most: int, why: str) -> None:
    """Raise a ConfigError if ``value`` exceeds the bound ``most`` (``why``: the reason)."""
    if value > most:
        raise ConfigError(f"{label}{name}={value!r} is too large: {why}")


T = TypeVar("T")


def to_dict(obj: Any) -> Any:
    """Plain JSON-able data from a (nested) config dataclass."""
    if is_dataclass(obj):
        return {f.name: to_dict(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, tuple):
        return [to_dict(x) for x in obj]
    return obj


def from_dict(cls: type[T], data: Any, path: str = "", where: str = "") -> T:
    """Build a config dataclass from plain data, rejecting unknown keys with a suggestion.
    ``where`` (e.g. a file name) prefixes the error when the data is not a mapping."""
    at = path or cls.__name__
    if not isinstance(data, dict):
        raise ConfigError(f"{where + ': ' if where else ''}{at}: expected a mapping, got "
                          f"{type(data).__name__} {_short(data)}. Write the section as "
                          "key: value pairs.")
    hints = get_type_hints(cls)
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in names:
            raise unknown(f"{at} field", str(key), names)
        kwargs[key] = _convert(hints[key], value, f"{at}.{key}")
    return cls(**kwargs)


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _convert(tp: Any, value: Any, path: str) -> Any:
    if is_dataclass(tp) and isinstance(value, tp):  # type: ignore[arg-type]
        return value
    if is_dataclass(tp):
        return from_dict(tp, value, path)
    if get_origin(tp) is tuple:
        (inner, _ellipsis) = get_args(tp)
        if not isinstance(value, (list, tuple)):
            example = ("list of mappings, e.g. [{name: pm, base: 0, size: 16777216, kind: pm}]"
                       if is_dataclass(inner) else "list of numbers, e.g. [0, 40]")
            raise ConfigError(f"{path}: expected a list, got {_short(value)}. Write it as a "
                              f"{example}.")
        return tuple(_convert(inner, v, f"{path}[{i}]") for i, v in enumerate(value))
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp is int and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _replace_nested(obj: Any, changes: dict[str, Any], at: str = "") -> Any:
    direct: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    names = {f.name for f in fields(obj)}
    where = type(obj).__name__
    for key, value in changes.items():
        head, _, rest = key.partition(".")
        if head not in names:
            raise unknown(f"{where} field", head, names)
        if rest:
            nested.setdefault(head, {})[rest] = value
        else:
            direct[head] = value
    hints = get_type_hints(type(obj))
    for head, value in list(direct.items()):
        direct[head] = _convert(hints[head], value, f"{where}.{head}")
    for head, sub in nested.items():
        cur = direct.get(head, getattr(obj, head))
        name = f"{at}{head}"
        if is_dataclass(cur):
            direct[head] = _replace_nested(cur, sub, name + ".")
        elif isinstance(cur, tuple) and cur and all(is_dataclass(x) for x in cur):
            direct[head] = _replace_items(cur, sub, name)
        else:
            first = next(iter(sub))
            raise ConfigError(f"{name}.{first}: {name} is a value ({cur!r}), not a section with "
                              f"fields. Set it as a whole: {name}=VALUE.")
    return dataclasses.replace(obj, **direct)


def _replace_items(items: tuple[Any, ...], changes: dict[str, Any], name: str) -> tuple[Any, ...]:
    """``items`` (a tuple of config dataclasses) with ``changes`` keyed ``"i.field"`` applied."""
    out = list(items)
    per: dict[int, dict[str, Any]] = {}
    for key, value in changes.items():
        idx, _, rest = key.partition(".")
        if not idx.isdigit() or int(idx) >= len(items):
            raise ConfigError(f"{name}.{key}: {name} has {len(items)} entries; index them "
                              f"{name}.0 .. {name}.{len(items) - 1}, e.g. {name}.0.size=VALUE.")
        i = int(idx)
        if not rest:
            out[i] = _convert(type(items[i]), value, f"{name}[{i}]")
        else:
            per.setdefault(i, {})[rest] = value
    for i, sub in per.items():
        out[i] = _replace_nested(out[i], sub, f"{name}.{i}.")
    return tuple(out)


def describe(obj: Any, prefix: str = "") -> list[tuple[str, Any, str, str]]:
    """Rows of (dotted name, value, unit, help) for every leaf field."""
    rows: list[tuple[str, Any, str, str]] = []
    for f in fields(obj):
        v = getattr(obj, f.name)
        name = prefix + f.name
        if is_dataclass(v):
            rows.extend(describe(v, name + "."))
        else:
            rows.append((name, v, f.metadata.get("unit", ""), f.metadata.get("help", "")))
    return rows
