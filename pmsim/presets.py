"""Named machine configurations, each citing where its numbers come from.

``preset("optane-adr")`` returns a :class:`~pmsim.config.MachineConfig`; ``PRESETS`` maps each
name to ``(factory, source)``. Numbers a source does not give are marked "[A]" (our default)
or "[D]" (the paper's spec card's proposed default).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .config import (
    CacheConfig,
    CacheLevel,
    CoreConfig,
    CostConfig,
    DIMMConfig,
    DRAMConfig,
    MachineConfig,
    PMConfig,
    PrefetchConfig,
)
from .errors import ConfigError, unknown

# -- cores ---------------------------------------------------------------------------------
SKYLAKE_SP_CORE = CoreConfig("ooo", store_buffer=56, fill_buffers=10, load_issue_ns=1 / 2.2)
"""Cascade Lake (Skylake-SP microarchitecture) at 2.2 GHz: 56 store-buffer entries and 10 L1D
fill buffers (Intel 64 and IA-32 Architectures Optimization Reference Manual, Skylake server
microarchitecture); one independent load issued per cycle."""
BROADWELL_CORE = CoreConfig("ooo", store_buffer=42, fill_buffers=10)
"""Broadwell (Xeon E5 v4): 42 store-buffer entries, 10 L1D fill buffers (Intel's optimization
manual, Haswell/Broadwell microarchitecture); load issue per the preset's clock."""
SANDY_BRIDGE_CORE = CoreConfig("ooo", store_buffer=36, fill_buffers=10)
"""Sandy Bridge-EP (Intel's PMEP emulator ran on Xeon E5 v1): 36 store-buffer entries, 10 L1D
fill buffers (Intel's optimization manual, Sandy Bridge microarchitecture)."""
MARSS_CORE = CoreConfig("ooo", store_buffer=56, fill_buffers=10, load_issue_ns=1 / 3.4)
"""Proteus's MarssX86 core (Table 1): StoreQ 56, 3.4 GHz; fill buffers 10 [A] (Table 1 gives
none; MarssX86's default L1 miss buffer is of that order)."""
INTEL_PREFETCH = PrefetchConfig(stream=True, adjacent=True, distance=20, degree=2, streams=32)
"""Intel's L2 streamer (up to 32 streams, one forward and one backward per 4 KiB page, running
up to 20 lines ahead) and the spatial (adjacent-line) prefetcher, on by default on Xeons
(Intel's optimization manual, 'Data prefetching'); degree 2 per trigger [A]."""

# -- Optane DC PMM (first generation), Cascade Lake Xeon Platinum 8260, App Direct ---------
OPTANE_GHZ = 2.2
OPTANE_SOURCE = (
    "Yang et al., 'An Empirical Guide to the Behavior and Use of Scalable Persistent Memory', "
    "FAST'20 (platform: Xeon Platinum 8260, 2.2 GHz, six 256 GB Optane DIMMs per socket, 4 KiB "
    "interleaving, DDR4-2666). Core: out-of-order Skylake-SP (store buffer 56, 10 fill "
    "buffers; Intel optimization manual), L2 streamer and adjacent-line prefetcher on. Caches: "
    "L1 32 KiB 8-way 4 cycles, L2 1 MiB 16-way 14 cycles (Intel's data sheet); LLC modelled "
    "as 16 MiB 16-way 20 ns [A] (the 8260's 35.75 MiB 11-way is not a power-of-two geometry; "
    "every validation footprint exceeds both). DIMM model: 256 B media lines and a 64-line "
    "(16 KiB) on-DIMM buffer (FAST'20 §3.3, VANS/MICRO'20); media occupancy 39 ns per 256 B "
    "read and 116 ns per 256 B write, from one DIMM's peak read (6.5 GB/s) and ntstore write "
    "(2.2 GB/s) bandwidth at 256 B (FAST'20 Fig. 4/5); a DIMM accepts one 64 B write per "
    "29 ns (64 B / 2.2 GB/s); 4-entry WPQ per DIMM (VANS: iMC wpq_entries 4). Latencies "
    "fitted to FAST'20 Fig. 2's idle latencies only: a buffer hit 100 ns and a media read "
    "185 ns more (random read 20 + 100 + 185 = 305 ns; a sequential read hits the buffer "
    "three times in four), DRAM 81 ns, a flush reaches the WPQ in 60.5 ns, so that a store, "
    "clwb and sfence take Fig. 2's 62.3 ns (the fence's 5 ns overlaps the wait for the WPQ, "
    "so only the store and clwb add to the trip). Reads and writes share one first-come queue at the media "
    "(read_priority off: reads first wins and loses as many FAST'20 points, see the "
    "Validation page). No WPQ merging: the DIMM's buffer combines writes to a media line "
    "instead. Streams' contention in the buffer (combine_writers 5, contention 0.20, "
    "read_contention 0.009): the only constants fitted to FAST'20 beyond Fig. 2 and the peak "
    "rates, the first two to the effective write ratio the DIMM counters reported for random "
    "256 B ntstores at 1-12 threads on one DIMM, the third to the effective read ratio they "
    "reported for sequential 256 B reads at 1-8 threads (the authors' raw sweeps; `pmsim "
    "validate --calibrate`). Bandwidth, write amplification, the other effective write "
    "ratios and size curves are predictions, compared by `pmsim validate`")


def _optane(domain: str, dimms: int = 6) -> MachineConfig:
    ghz = OPTANE_GHZ
    return MachineConfig(
        cores=2,
        cache=CacheConfig(CacheLevel(32, 8, 4 / ghz), CacheLevel(1024, 16, 14 / ghz),
                          CacheLevel(16384, 16, 20.0)),
        pm=PMConfig(read_ns=100.0, write_ns=29.0, banks=16, wpq_entries=4, to_wpq_ns=60.5,
                    dimm=DIMMConfig(dimms, interleave_kib=4, buffer_lines=64,
                                    media_read_ns=185.0, media_read_occ_ns=39.0,
                                    media_write_ns=116.0, combine_writers=5,
                                    contention=0.20, read_contention=0.009)),
        dram=DRAMConfig(81.0),
        costs=CostConfig(store_ns=1 / ghz, flush_ns=1 / ghz, fence_ns=5.0),
        core=SKYLAKE_SP_CORE,
        prefetch=INTEL_PREFETCH,
        domain=domain,  # type: ignore[arg-type]
        barrier="modelled",
    )


def _marathe(domain: str, barrier_ns: float) -> MachineConfig:
    return MachineConfig(
        cores=2,
        cache=CacheConfig(CacheLevel(32, 8, 1.6), CacheLevel(256, 8, 4.8),
                          CacheLevel(20480, 20, 16.0)),
        pm=PMConfig(read_ns=300.0, write_ns=90.0, banks=16, wpq_entries=64, to_wpq_ns=0.0),
        dram=DRAMConfig(90.0),
        core=SANDY_BRIDGE_CORE,
        prefetch=INTEL_PREFETCH,
        domain=domain,  # type: ignore[arg-type]
        barrier="fixed",
        barrier_ns=barrier_ns,
    )


PROTEUS_GHZ = 3.4
"""Proteus Table 1: the cores' clock; cycle counts below are converted to ns at this rate."""
DDR3_TCK_NS = 1.25
"""DDR3-1600 runs its command clock at 800 MHz (Proteus Table 1)."""
DDR3_CAS, DDR3_RCD = 11, 11
"""tCAS and tRCD of Table 1's timing row 11-11-11-28-39-12-6-6-5-24 (the card reads it as
CAS, RCD, RP, RAS, RC, WR, WTR, RTP, RRD, FAW)."""


def _ddr3_ns(rcd: int) -> float:
    """A closed-row access with ``rcd`` activate cycles: (tRCD + tCAS) x tCK. The paper's own
    rule: its NVM's tRCD of 29 (read) and 109 (write) give the 50 ns and 150 ns it states."""
    return (rcd + DDR3_CAS) * DDR3_TCK_NS


def _proteus(read_ns: float, write_ns: float) -> MachineConfig:
    ghz = PROTEUS_GHZ
    return MachineConfig(
        cores=4,
        cache=CacheConfig(CacheLevel(32, 8, 4 / ghz), CacheLevel(256, 8, 12 / ghz),
                          CacheLevel(8192, 16, 42 / ghz)),
        # a flush walks to the MC as a log-flush does (card §11): L3 latency, 64 B over the
        # 16 B/cycle L3-MC link (4 cycles) and the MC's acceptance (10 cycles [D])
        pm=PMConfig(read_ns=read_ns, write_ns=write_ns, banks=16, wpq_entries=64,
                    to_wpq_ns=(42 + 4 + 10) / ghz),
        dram=DRAMConfig(_ddr3_ns(DDR3_RCD)),
        costs=CostConfig(store_ns=1 / ghz, flush_ns=1 / ghz, fence_ns=2 / ghz),
        core=MARSS_CORE,
        domain="pdom1",
        barrier="modelled",
    )


_PROTEUS = ("Proteus (Shin et al., MICRO'17) Table 1, MarssX86 + DRAMsim2: 4 cores at 3.4 GHz; "
            "L1D 32 KB 8-way 4 cycles; L2 256 KB 8-way 12 cycles private; L3 8 MB 16-way "
            "42 cycles shared; 64 B lines; ADR (PDOM-1); volatile DRAM DDR3-1600 at (tRCD 11 + "
            "tCAS 11) x 1.25 ns = 27.5 ns. [D] (card §11): WPQ 64 entries; 16 banks (Table 1: "
            "1 channel, 16 banks per rank); a flush reaches the WPQ after L3 latency + 4-cycle "
            "L3-MC transfer + 10-cycle MC accept = 56 cycles (16.5 ns). [A]: store and flush "
            "issue 1 cycle, fence 2 cycles. Core: out of order with Table 1's 56-entry StoreQ, "
            "10 fill buffers [A]; no hardware prefetcher (Table 1 lists none); no WPQ merging (the "
            "paper and the card describe none); no DIMM model: NVM as DRAMsim2's banks of 64 B "
            "lines (Table 1)")


def _loc() -> MachineConfig:
    return MachineConfig(
        cores=4,
        cache=CacheConfig(CacheLevel(32, 2, 1.0), CacheLevel(256, 8, 8.0),
                          CacheLevel(1024, 16, 21.0)),
        pm=PMConfig(read_ns=168.0, write_ns=168.0, banks=8, wpq_entries=64, to_wpq_ns=0.0,
                    merge_writes=True),
        dram=DRAMConfig(168.0),
        costs=CostConfig(store_ns=1.0, flush_ns=1.0, fence_ns=1.0),
        domain="pdom0",  # gem5's NVM: a write is durable when the device completes it (card §10)
        barrier="modelled",
    )


DUDETX_TX_WORK_NS = 374.0
"""The DUDETx benchmarks' work per transaction outside the TM (key generation, hashing, the
loop), fitted with the STM's per-access cost (``stm_config.access_ns`` = 5.6 ns, set by the
DUDETx paper module) to Volatile-STM's cycles per transaction and thread on HashTable (2.0k)
and B+-tree (5.8k) (card §10.6); TATP (2.0k) is then predicted within 6%."""


def _dudetx() -> MachineConfig:
    ghz = 3.4
    return MachineConfig(
        cores=4,
        cache=CacheConfig(CacheLevel(32, 8, 4 / ghz), CacheLevel(256, 8, 12 / ghz),
                          CacheLevel(20480, 20, 42 / ghz)),
        pm=PMConfig(read_ns=80.0, write_ns=80.0, banks=16, wpq_entries=64, to_wpq_ns=0.0),
        dram=DRAMConfig(80.0),
        costs=CostConfig(store_ns=1 / ghz, flush_ns=1 / ghz, fence_ns=2 / ghz,
                         tx_work_ns=DUDETX_TX_WORK_NS),
        core=replace(BROADWELL_CORE, load_issue_ns=1 / ghz),
        prefetch=INTEL_PREFETCH,
        domain="pdom1",
        barrier="fixed",
        barrier_ns=1000 / ghz,
    )


def _nvhtm() -> MachineConfig:
    ghz = 1.8
    return MachineConfig(
        cores=14,
        cache=CacheConfig(CacheLevel(32, 8, 4 / ghz), CacheLevel(256, 8, 12 / ghz),
                          CacheLevel(32768, 16, 40 / ghz)),
        pm=PMConfig(read_ns=90.0, write_ns=90.0, banks=16, wpq_entries=64, to_wpq_ns=0.0),
        dram=DRAMConfig(90.0),
        costs=CostConfig(store_ns=1 / ghz, flush_ns=1 / ghz, fence_ns=2 / ghz),
        core=replace(BROADWELL_CORE, load_issue_ns=1 / ghz, physical_cores=14),
        prefetch=INTEL_PREFETCH,
        domain="pdom1",
        barrier="modelled",
    )


PRESETS: dict[str, tuple[Callable[[], MachineConfig], str]] = {
    "default": (MachineConfig, "pmsim defaults: an ADR (PDOM-1) machine with 2 cores [A]"),
    "optane-adr": (lambda: _optane("pdom1"), f"{OPTANE_SOURCE}. ADR (PDOM-1), six DIMMs"),
    "optane-1dimm": (lambda: _optane("pdom1", 1),
                     "as optane-adr with one DIMM (FAST'20's non-interleaved figures)"),
    "eadr": (lambda: _optane("pdom2"), "as optane-adr with eADR: caches persistent (PDOM-2)"),
    "pdom0": (lambda: _optane("pdom0"),
              "as optane-adr with a volatile WPQ: persistence needs pcommit (PDOM-0), which "
              "waits until the DIMMs accepted every queued write"),
    "marathe-pdom2": (lambda: _marathe("pdom2", 0.0),
                      "Marathe et al. (PM transactions) on Intel's PMEP emulator: fixed persist "
                      "barrier 0 ns, PM load latency 300 ns, stores at DRAM speed; caches per "
                      "the spec card's assumption (L1 32 KB, L2 256 KB, LLC 20 MB) [A]. Core: "
                      "out-of-order Sandy Bridge-EP, PMEP's Xeon E5 (store buffer 36, 10 fill "
                      "buffers; Intel's optimization manual); L2 streamer and adjacent-line "
                      "prefetcher on (the card's 'prefetch for contiguous slots', §9.2); no WPQ "
                      "merging and no DIMM model: PM as banks of 64 B lines (PMEP emulates PM "
                      "in DRAM)"),
    "marathe-pdom1": (lambda: _marathe("pdom1", 100.0), "as marathe-pdom2 with 100 ns barriers"),
    "marathe-pdom0": (lambda: _marathe("pdom0", 500.0), "as marathe-pdom2 with 500 ns barriers"),
    "proteus-marss": (lambda: _proteus(_ddr3_ns(29), _ddr3_ns(109)),
                      f"{_PROTEUS}. NVM: tRCD 29 read / 109 write, i.e. 50 ns read / 150 ns "
                      "write (Table 1 and §5.1)"),
    "proteus-marss-slownvm": (lambda: _proteus(_ddr3_ns(29), 300.0),
                              "as proteus-marss (Proteus Table 1; the same [D] defaults: WPQ "
                              "64, 16 banks, 56-cycle flush path) with slow NVM (§7.1): 300 ns "
                              "write (tRCD ~229 [D]), 50 ns read"),
    "proteus-marss-dram": (lambda: _proteus(_ddr3_ns(DDR3_RCD), _ddr3_ns(DDR3_RCD)),
                           "as proteus-marss (Proteus Table 1; the same [D] defaults: WPQ 64, "
                           "16 banks, 56-cycle flush path) on plain DDR3-1600 standing in for a "
                           "battery-backed NVDIMM (§7.2): reads and writes take Table 1's "
                           "(tRCD 11 + tCAS 11) x 1.25 ns = 27.5 ns, the rule that gives the "
                           "paper's NVM 50/150 ns from tRCD 29/109; row-buffer hits and the "
                           "other DDR3 timings are not modelled"),
    "dudetx-xeon": (_dudetx,
                    "DUDETx (ACM TOS'18) §6.1: Xeon E5-2643 v4 at 3.4 GHz (L1 32 KB, L2 256 KB, "
                    "L3 20 MB per Intel's data sheet; 4/12/42-cycle hits [A]); NVM emulated in "
                    "DRAM, so PM reads and writes at DRAM speed (80 ns [A]) and each immediate "
                    "persist a fixed 1,000 cycles (294 ns); batched persists are charged by the "
                    "runtime as max(latency, bytes/BW); 4 threads as in Tables 1-4; 374 ns of "
                    "application work per transaction, fitted to Volatile-STM (card §10.6). Core: "
                    "out-of-order Broadwell (store buffer 42, 10 fill buffers; Intel's "
                    "optimization manual); L2 streamer and adjacent-line prefetcher on (the "
                    "Xeon default); no WPQ merging and no DIMM model: PM as banks of 64 B lines "
                    "(PM is emulated in DRAM)"),
    "nvhtm-xeon": (_nvhtm,
                   "NV-HTM (JPDC'19) §6: Xeon E5-2648L v4 at 1.8 GHz, 14 cores (L1 32 KB, L2 "
                   "256 KB, L3 35 MB per Intel's data sheet, modelled as 32 MB 16-way since "
                   "sets are a power of two; 4/12/40-cycle hits [A]); PM emulated in DRAM with "
                   "no read-latency model, so PM at DRAM speed (90 ns [A]); the 500 ns flush "
                   "spin is the runtimes' flush_ns option (card §8). Hyper-Threading: 14 physical "
                   "cores, so threads 15-28 (and the checkpointer beyond 14 workers) share a "
                   "core's L1, L2, HTM write capacity (halved, card §10.1) and issue slots "
                   "(compute at 0.65 of full speed: Intel's up to 30% more throughput a core). "
                   "Core: "
                   "out-of-order Broadwell (store buffer 42, 10 fill buffers; Intel's "
                   "optimization manual); L2 streamer and adjacent-line prefetcher on; no WPQ "
                   "merging and no DIMM model: PM as banks of 64 B lines (PM is emulated in "
                   "DRAM)"),
    "loc-gem5": (_loc,
                 "LOC (ICCD'14) Table I, gem5 at 1 GHz: L1 32 KB 2-way 1 cycle; L2 256 KB 8-way "
                 "8 cycles; LLC 1 MB 16-way 21 cycles; memory 8 banks 168 ns; 4 cores [A]; a "
                 "write durable at device completion, not at WPQ acceptance (PDOM-0, card §10). "
                 "Core: in-order and blocking, no prefetcher (gem5's TimingSimpleCPU, as the "
                 "paper ran); the memory controller merges a write into a queued write of the "
                 "same line (gem5's DRAM/NVM controller merges bursts in its write queue); no DIMM "
                 "model: PM as the table's 8 banks of 64 B lines"),
}


def preset(name: str) -> MachineConfig:
    """The named machine configuration (see ``PRESETS`` for names and sources)."""
    if not isinstance(name, str):
        raise ConfigError(f"a preset is named by a string, got {type(name).__name__} {name!r}. "
                          f"Known presets: {', '.join(sorted(PRESETS))}.")
    try:
        factory, _ = PRESETS[name]
    except KeyError:
        raise unknown("preset", name, PRESETS) from None
    return factory()
