"""A built-in synthetic instruction stream: exercise the machine without any runtime.

Each thread appends to a log of 8-byte records (store + clwb, a persist barrier every
``batch`` records), reads and updates random words of a shared PM array, and touches DRAM.
Used by ``pmsim machine`` and as a smoke workload for the engine benchmarks.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .config import param
from .machine import Cpu, Machine


@dataclass(frozen=True)
class OpStream:
    """Parameters of the synthetic stream."""

    ops: int = param(20000, "ops", "instructions per thread (approximate)")
    array_kib: int = param(4096, "KiB", "size of the shared PM array read and updated")
    batch: int = param(8, "records", "log records per persist barrier")
    write_ratio: float = param(0.3, "", "fraction of array accesses that are updates")


def _thread(cpu: Cpu, spec: OpStream, seed: int) -> Generator[Any, Any, None]:
    m = cpu.machine
    rng = np.random.default_rng(seed)
    words = spec.array_kib * 1024 // 8
    array_base = m.pm.base
    log_base = m.pm.base + spec.array_kib * 1024 + cpu.tid * (1 << 20)
    dram = m.dram.base if m.dram else None
    idx = rng.integers(0, words, size=spec.ops).tolist()
    upd = (rng.random(spec.ops) < spec.write_ratio).tolist()
    log_off = 0
    done = 0
    i = 0
    while done < spec.ops:
        a = array_base + 8 * idx[i]
        v = cpu.load(a)
        done += 1
        if upd[i]:
            cpu.store(a, v + 1)
            rec = log_base + (log_off % (1 << 20))
            cpu.store(rec, a)
            cpu.clwb(rec)
            cpu.clwb(a)
            log_off += 8
            done += 4
            if (log_off // 8) % spec.batch == 0:
                cpu.persist_barrier()
                done += 1
        if dram is not None:
            cpu.store(dram + 8 * (i % 4096), i)
            done += 1
        i = (i + 1) % spec.ops
        yield from cpu.maybe_yield()


def run_opstream(machine: Machine, spec: OpStream | None = None) -> Machine:
    """Run the stream on every core of ``machine`` and return it (read ``machine.stats()``)."""
    spec = spec or OpStream()
    need = spec.array_kib * 1024 + machine.config.cores * (1 << 20)
    if need > machine.pm.size:
        from .errors import ConfigError

        raise ConfigError(f"the op stream needs {need} bytes of PM, the region has "
                          f"{machine.pm.size}; lower array_kib or enlarge the PM region")
    for t in range(machine.config.cores):
        machine.spawn(_thread, t, spec, machine.config.seed * 1000 + t)
    machine.run()
    return machine
