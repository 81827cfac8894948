"""Named machine configurations, each citing where its numbers come from.

``preset("optane-adr")`` returns a :class:`~pmsim.config.MachineConfig`; ``PRESETS`` maps each
name to ``(factory, source)``. Numbers a source does not give are marked "[A]" (our default)
or "[D]" (the paper's spec card's proposed default).
"""

from __future__ import annotations

from collections.abc import Callable

from .config import CacheConfig, CacheLevel, CostConfig, DRAMConfig, MachineConfig, PMConfig
from .errors import ConfigError, unknown


def _optane(domain: str) -> MachineConfig:
    return MachineConfig(
        cores=2,
        cache=CacheConfig(CacheLevel(32, 8, 1.5), CacheLevel(1024, 16, 5.0),
                          CacheLevel(16384, 16, 18.0)),
        pm=PMConfig(read_ns=150.0, write_ns=500.0, banks=16, wpq_entries=128, to_wpq_ns=30.0),
        dram=DRAMConfig(90.0),
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
        domain="pdom1",
        barrier="modelled",
    )


_PROTEUS = ("Proteus (Shin et al., MICRO'17) Table 1, MarssX86 + DRAMsim2: 4 cores at 3.4 GHz; "
            "L1D 32 KB 8-way 4 cycles; L2 256 KB 8-way 12 cycles private; L3 8 MB 16-way "
            "42 cycles shared; 64 B lines; ADR (PDOM-1); volatile DRAM DDR3-1600 at (tRCD 11 + "
            "tCAS 11) x 1.25 ns = 27.5 ns. [D] (card §11): WPQ 64 entries; 16 banks (Table 1: "
            "1 channel, 16 banks per rank); a flush reaches the WPQ after L3 latency + 4-cycle "
            "L3-MC transfer + 10-cycle MC accept = 56 cycles (16.5 ns). [A]: store and flush "
            "issue 1 cycle, fence 2 cycles")


def _loc() -> MachineConfig:
    return MachineConfig(
        cores=4,
        cache=CacheConfig(CacheLevel(32, 2, 1.0), CacheLevel(256, 8, 8.0),
                          CacheLevel(1024, 16, 21.0)),
        pm=PMConfig(read_ns=168.0, write_ns=168.0, banks=8, wpq_entries=64, to_wpq_ns=0.0),
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
        domain="pdom1",
        barrier="modelled",
    )


PRESETS: dict[str, tuple[Callable[[], MachineConfig], str]] = {
    "default": (MachineConfig, "pmsim defaults: an ADR (PDOM-1) machine with 2 cores [A]"),
    "optane-adr": (lambda: _optane("pdom1"),
                   "PM media from gem5 NVMInterface NVM_2400_1x64 (tREAD 150 ns, tWRITE 500 ns, "
                   "128-entry write buffer, 16 banks); ADR (PDOM-1); caches of a 2nd-gen Xeon "
                   "[A]; flushes reach the WPQ in 30 ns [A]"),
    "eadr": (lambda: _optane("pdom2"), "as optane-adr with eADR: caches persistent (PDOM-2)"),
    "pdom0": (lambda: _optane("pdom0"),
              "as optane-adr with a volatile WPQ: persistence needs pcommit (PDOM-0)"),
    "marathe-pdom2": (lambda: _marathe("pdom2", 0.0),
                      "Marathe et al. (PM transactions) on Intel's PMEP emulator: fixed persist "
                      "barrier 0 ns, PM load latency 300 ns, stores at DRAM speed; caches per "
                      "the spec card's assumption (L1 32 KB, L2 256 KB, LLC 20 MB) [A]"),
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
                    "application work per transaction, fitted to Volatile-STM (card §10.6)"),
    "nvhtm-xeon": (_nvhtm,
                   "NV-HTM (JPDC'19) §6: Xeon E5-2648L v4 at 1.8 GHz, 14 cores (L1 32 KB, L2 "
                   "256 KB, L3 35 MB per Intel's data sheet, modelled as 32 MB 16-way since "
                   "sets are a power of two; 4/12/40-cycle hits [A]); PM emulated in DRAM with "
                   "no read-latency model, so PM at DRAM speed (90 ns [A]); the 500 ns flush "
                   "spin is the runtimes' flush_ns option (card §8); no hyper-threading"),
    "loc-gem5": (_loc,
                 "LOC (ICCD'14) Table I, gem5 at 1 GHz: L1 32 KB 2-way 1 cycle; L2 256 KB 8-way "
                 "8 cycles; LLC 1 MB 16-way 21 cycles; memory 8 banks 168 ns; 4 cores [A]; a "
                 "write durable at device completion, not at WPQ acceptance (PDOM-0, card §10)"),
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
