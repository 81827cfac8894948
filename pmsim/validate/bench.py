"""The FAST'20 microbenchmarks, written as pmsim thread bodies.

Each function runs one figure's experiment on a fresh machine built from a preset and returns
simulated values at the published x points. They issue one pmsim instruction per 64 B line: the
benchmarks of the paper use 64 B AVX-512 loads and stores (one instruction per line), and a
pmsim store or ntstore moves a whole line through the caches and the WPQ, so timing is the same.
What each benchmark assumes where the paper is silent is said in its docstring and on the docs'
Validation page.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

import numpy as np

from ..config import LINE, MachineConfig, Region
from ..machine import Cpu, Machine
from ..presets import preset

PM_BYTES = 64 << 20
"""PM per benchmark machine: four times the modelled LLC, so random accesses miss it."""
DRAM_BASE, DRAM_BYTES = 1 << 32, 64 << 20
GB = 1e9


def machine(name: str, threads: int, seed: int, prefetch: bool = False,
            changes: Mapping[str, Any] | None = None) -> Machine:
    """A machine of preset ``name`` with ``threads`` cores and 64 MiB of PM (and of DRAM),
    with ``changes`` (dotted config fields, e.g. ``{"pm.dimm.contention": 0.2}``) applied.

    The prefetchers are off by default: the published latencies are only possible without
    them (a sequential DRAM read of 81 ns), so FAST'20's benchmarks ran with prefetching
    disabled, and their random accesses give a streamer nothing to follow."""
    cfg: MachineConfig = preset(name).replace(
        cores=threads, quantum_ns=100.0, seed=seed,
        regions=(Region("pm", 0, PM_BYTES, "pm"), Region("dram", DRAM_BASE, DRAM_BYTES, "dram")))
    if not prefetch:
        cfg = cfg.replace(**{"prefetch.stream": False, "prefetch.adjacent": False})
    if changes:
        cfg = cfg.replace(**changes)
    return Machine(cfg)


def _slice(threads: int, tid: int) -> tuple[int, int]:
    """Thread ``tid``'s private part of PM: (base, size), 4 KiB aligned."""
    size = (PM_BYTES // threads) & ~4095
    return tid * size, size


# -- Fig. 2: idle latency --------------------------------------------------------------------
def idle_latency(name: str, n: int, seed: int) -> dict[tuple[str, str], float]:
    """Mean latency of one access with nothing else in flight, in ns.

    Reads are dependent (each a pointer chase: the next address waits for the load). A
    write is one 64 B line, ``ntstore`` or ``store`` + ``clwb`` (to a line already cached),
    followed by ``sfence``; 2 us of idle time separate two writes.
    """
    m = machine(name, 1, seed)
    cpu = m.cpu(0)
    rng = np.random.default_rng(seed)
    out: dict[tuple[str, str], float] = {}
    for mem, base, size in (("Optane", 0, PM_BYTES), ("DRAM", DRAM_BASE, DRAM_BYTES)):
        lines = rng.integers(0, size // LINE, n).tolist()
        t = cpu.clock
        for ln in lines:
            cpu.load(base + LINE * ln)
        out[(mem, "Read\\Random")] = (cpu.clock - t) / n
        start = size // 2
        t = cpu.clock
        for i in range(n):
            cpu.load(base + start + LINE * i)
        out[(mem, "Read\\Sequential")] = (cpu.clock - t) / n
    nt = clwb = 0.0
    for ln in rng.integers(0, PM_BYTES // LINE, n).tolist():
        a = LINE * ln
        cpu.work(2000.0)
        t = cpu.clock
        cpu.ntstore(a, 1)
        cpu.sfence()
        nt += cpu.clock - t
        cpu.load(a + LINE)
        cpu.work(2000.0)
        t = cpu.clock
        cpu.store(a + LINE, 1)
        cpu.clwb(a + LINE)
        cpu.sfence()
        clwb += cpu.clock - t
    out[("Optane", "Write\\(ntstore)")] = nt / n
    out[("Optane", "Write\\(clwb)")] = clwb / n
    return out


# -- bandwidth: many threads -------------------------------------------------------------------
Body = Callable[[Cpu, int, int, np.ndarray, int], Generator[Any, Any, None]]


def _read_body(cpu: Cpu, base: int, access: int, offs: np.ndarray, group: int) -> Generator:
    """Independent 64 B loads over random ``access``-byte chunks, ``group`` lines in flight."""
    lines: list[int] = []
    for off in offs.tolist():
        lines.extend(range(base + off, base + off + access, LINE))
        if len(lines) >= group:
            cpu.load_many(lines)
            lines = []
            yield from cpu.maybe_yield()
    if lines:
        cpu.load_many(lines)
    yield from cpu.sync()


def _ntstore_body(cpu: Cpu, base: int, access: int, offs: np.ndarray, group: int) -> Generator:
    """Each chunk: one 64 B non-temporal store per line, then sfence."""
    for off in offs.tolist():
        for a in range(base + off, base + off + access, LINE):
            cpu.ntstore(a, 1)
        cpu.sfence()
        yield from cpu.maybe_yield()
    yield from cpu.sync()


def _write_lines(cpu: Cpu, kind: str, lines: range) -> None:
    """One write of ``lines`` without its fence: 'ntstore' (non-temporal stores), 'clwb(every
    64B)' (each line stored and written back at once), or else every line stored, then every
    line written back."""
    if kind == "ntstore":
        for a in lines:
            cpu.ntstore(a, 1)
    elif kind == "clwb(every 64B)":
        for a in lines:
            cpu.store(a, 1)
            cpu.clwb(a)
    else:
        for a in lines:
            cpu.store(a, 1)
        for a in lines:
            cpu.clwb(a)


def _clwb_body(cpu: Cpu, base: int, access: int, offs: np.ndarray, group: int) -> Generator:
    """Each chunk: one 64 B store per line, clwb of every line, then sfence."""
    for off in offs.tolist():
        _write_lines(cpu, "store+clwb", range(base + off, base + off + access, LINE))
        cpu.sfence()
        yield from cpu.maybe_yield()
    yield from cpu.sync()


BODIES: dict[str, Body] = {"Read": _read_body, "Write(ntstore)": _ntstore_body,
                           "Write(clwb)": _clwb_body}
"""The published series' names and the thread bodies that reproduce them."""


def _run_threads(name: str, kind: str, threads: int, access: int, bytes_per_thread: int,
                 seed: int, group: int, sequential: bool,
                 changes: Mapping[str, Any] | None = None) -> tuple[Machine, float]:
    """Run ``threads`` threads of body ``kind`` over their own parts of PM; the machine and
    the bytes moved per ns (GB/s)."""
    m = machine(name, threads, seed, changes=changes)
    rng = np.random.default_rng(seed)
    n = max(1, bytes_per_thread // access)
    for tid in range(threads):
        base, size = _slice(threads, tid)
        if sequential:
            offs = (np.arange(n, dtype=np.int64) * access) % (size - size % access)
        else:
            offs = rng.integers(0, size // access, n) * access
        m.spawn(BODIES[kind], tid, base, access, offs, group)
    m.run()
    t = max(m.cpu(tid).clock for tid in range(threads))
    return m, threads * n * access / t


def bandwidth(name: str, kind: str, threads: int, access: int, bytes_per_thread: int,
              seed: int, group: int = 64) -> float:
    """GB/s of ``threads`` threads each accessing random ``access``-byte chunks of its own part
    of PM (``kind``: a key of BODIES) until it moved ``bytes_per_thread``. Reads are issued
    ``group`` lines per ``load_many``: an out-of-order core's window keeps its fill buffers
    busy across chunks."""
    return _run_threads(name, kind, threads, access, bytes_per_thread, seed, group, False)[1]


def write_ratio(name: str, kind: str, threads: int, access: int, bytes_per_thread: int,
                seed: int, sequential: bool = False,
                changes: Mapping[str, Any] | None = None) -> float:
    """The effective write ratio of the bandwidth benchmark (random chunks, or each thread
    writing its part in order): bytes written to PM over bytes written to the media, as a
    DIMM's counters report it (1: every media line written once, whole)."""
    m, _ = _run_threads(name, kind, threads, access, bytes_per_thread, seed, 64, sequential,
                        changes)
    return _counter_ratio(m, "write")


def read_ratio(name: str, threads: int, access: int, bytes_per_thread: int, seed: int,
               sequential: bool = False, changes: Mapping[str, Any] | None = None) -> float:
    """The effective read ratio of the read bandwidth benchmark: bytes read from PM over bytes
    read from the media, as a DIMM's counters report it (1: every media line read once)."""
    m, _ = _run_threads(name, "Read", threads, access, bytes_per_thread, seed, 64, sequential,
                        changes)
    return _counter_ratio(m, "read")


def _counter_ratio(m: Machine, kind: str) -> float:
    s = m.stats()
    media = int(s[f"media_{kind}_bytes"].sum())
    return int(s[f"pm_{kind}_bytes"].sum()) / media if media else 1.0


# -- Fig. 9: the on-DIMM buffer ----------------------------------------------------------------
def write_amplification(name: str, region: int, passes: int, seed: int) -> float:
    """Media bytes over written bytes when one thread rewrites ``region`` bytes over and over:
    the first half (128 B, two ntstored lines) of every 256 B media line in turn, then the
    second halves (FAST'20 §3.3's experiment); the first pass is not counted."""
    m = machine(name, 1, seed)
    cpu = m.cpu(0)
    xplines = max(1, region // 256)

    def one_pass() -> None:
        for half in (0, 128):
            for x in range(xplines):
                a = 256 * x + half
                cpu.ntstore(a, 1)
                cpu.ntstore(a + LINE, 1)
                cpu.sfence()

    one_pass()
    s0 = m.stats()
    for _ in range(passes):
        one_pass()
    s1 = m.stats()
    media = int(s1["media_write_bytes"].sum()) - int(s0["media_write_bytes"].sum())
    written = int(s1["pm_write_bytes"].sum()) - int(s0["pm_write_bytes"].sum())
    return media / written


# -- Fig. 12: persisting one write -------------------------------------------------------------
def persist_latency(name: str, kind: str, size: int, reps: int, seed: int) -> float:
    """Mean ns to persist one ``size``-byte write at a random 4 KiB-aligned address: one
    ntstore per line, or (lines already cached) one store per line and clwb of each; then
    sfence. 20 us of idle time separate two writes."""
    m = machine(name, 1, seed)
    cpu = m.cpu(0)
    rng = np.random.default_rng(seed)
    total = 0.0
    for page in rng.integers(0, PM_BYTES // 4096 - size // 4096 - 1, reps).tolist():
        a0 = 4096 * page
        lines = range(a0, a0 + size, LINE)
        if kind == "store+clwb":
            cpu.load_many(list(lines))
        cpu.work(20000.0)
        t = cpu.clock
        _write_lines(cpu, kind, lines)
        cpu.sfence()
        total += cpu.clock - t
    return total / reps


# -- Fig. 13: fence interval -------------------------------------------------------------------
def fence_interval(name: str, kind: str, interval: int, total: int, seed: int) -> float:
    """GB/s of one thread writing ``total`` bytes sequentially with an sfence every
    ``interval`` bytes: 'clwb(every 64B)' stores a line and writes it back at once,
    'clwb(write size)' writes back the interval's lines after storing them all, 'ntstore'
    uses non-temporal stores."""
    m = machine(name, 1, seed)
    cpu = m.cpu(0)
    total = max(total, interval)
    t = cpu.clock
    for start in range(0, total, interval):
        _write_lines(cpu, kind, range(start % PM_BYTES, start % PM_BYTES + interval, LINE))
        cpu.sfence()
    return total / (cpu.clock - t)


def points(xs: Sequence[float], quick: bool, keep: Sequence[float]) -> list[float]:
    """The x points to run: all of ``xs``, or in quick mode only those in ``keep``."""
    return [x for x in xs if not quick or x in keep]
