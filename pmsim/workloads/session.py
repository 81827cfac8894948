"""A machine, a runtime and a workload wired together: run, crash, recover, compare.

This is what tests, the CLI and the crash fuzzer share::

    s = Session.create("undo", "bank", preset("marathe-pdom1"), threads=2, seed=3)
    s.run(50)                                  # 50 transactions per thread
    img = s.machine.pm_image()                 # (or a crash image from the trace)
    rec = s.recover(img)                       # fresh volatile state + recovery
    rec.errors, rec.data == s.workload.expected(order)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import MachineConfig
from ..machine import Machine
from ..runtimes import Mutant, Runtime, RuntimeCosts, fit_pm, get_runtime
from ..runtimes.background import run_threads
from ..usercode import hang_error
from ..watchdog import Hang, bounded, bounding
from .base import Workload, WorkloadArg, build_workload

STALL_SECONDS = 30.0
"""CPU seconds a run may spend without finishing a transaction before it is stopped as a loop
that never ends (the bound restarts at every finished transaction)."""


@dataclass
class Recovered:
    """The outcome of recovery on one image."""

    runtime: Runtime
    data: Hashable
    errors: list[str]



def run_progress(rt: Runtime) -> Callable[[], int]:
    """The progress count a run's stall bound watches: transactions committed or aborted, and
    the work the runtime's background threads have finished (a worker waiting for a
    checkpoint is not stuck while the checkpointer works)."""
    return lambda: len(rt.commit_order) + rt.aborts + rt.background_progress()

class Session:
    """One run of a workload on a runtime."""

    def __init__(self, machine: Machine, runtime: Runtime, workload: Workload) -> None:
        self.machine = machine
        self.runtime = runtime
        self.workload = workload

    @classmethod
    def create(cls, runtime: str | type[Runtime] | Mutant, workload: WorkloadArg,
               config: MachineConfig | None = None, threads: int = 1, seed: int = 0,
               txs: int | None = None, params: Mapping[str, Any] | None = None,
               costs: RuntimeCosts | None = None, backend: str | None = None, fit: bool = True,
               compact: bool = False) -> Session:
        """Build the machine (PM grown to fit the layout when ``fit``; cut down to it when
        ``compact``, which keeps crash images small), format the runtime and set the workload
        up. ``txs`` (per thread) lets the layout size the COW heap.

        ``runtime``: a registered name, an import path ``"file.py:Class"``, a Runtime subclass
        or a Mutant. ``workload``: a name, an import path, a Workload subclass (built with
        ``threads``, ``seed``, ``txs`` and ``params``) or an instance (used as built; ``params``
        must agree with it, see :func:`~.base.build_workload`)."""
        rt_cls = get_runtime(runtime)
        wl = build_workload(workload, threads=threads, seed=seed, txs=txs, params=params)
        cfg = config or MachineConfig()
        cores = threads + rt_cls.extra_cores(threads)
        if cfg.cores < cores:
            cfg = cfg.replace(cores=cores)
        layout = rt_cls.plan(wl.spec(), threads, cfg.pm_region.base)
        if fit or compact:
            cfg = fit_pm(cfg, layout.end - cfg.pm_region.base, shrink=compact)
        cfg = rt_cls.fit_config(cfg, layout)
        m = Machine(cfg, backend=backend)
        rt = rt_cls(m, layout, costs)
        rt.format()
        wl.setup(rt)
        m.reset_trace()
        return cls(m, rt, wl)

    def run(self, txs: int, stall_seconds: float | None = None) -> None:
        """Run ``txs`` transactions on every thread to completion (with the runtime's
        background threads, stopped once the workers are done). A run that finishes no
        transaction and whose background threads finish no work (``background_progress``)
        for ``stall_seconds`` (default :data:`STALL_SECONDS`) of CPU time (a loop in a body
        that never ends) stops with a :class:`~pmsim.usercode.UserCodeError` naming
        the loop's line, unless the caller bounds it itself (:func:`pmsim.watchdog.bounded`)."""
        wl, rt = self.workload, self.runtime
        stall_seconds = STALL_SECONDS if stall_seconds is None else stall_seconds
        threads = [(wl.thread_body, t, (rt, t, txs)) for t in range(wl.threads)]
        if bounding():
            run_threads(rt, threads)
            return
        try:
            with bounded(stall_seconds, run_progress(rt)):
                run_threads(rt, threads)
        except Hang as h:
            raise hang_error(h, f"running {txs} transactions per thread of {wl.name} on "
                             f"{rt.name}", f"no transaction or background work finished within "
                             f"{stall_seconds:g} s "
                             "of CPU time") from h

    def check(self) -> bool:
        """Whether the current data equals the reference after the committed transactions."""
        return self.workload.app_data(self.runtime) == self.workload.expected(self.runtime.commit_order)

    def recover(self, image: np.ndarray, machine: Machine | None = None) -> Recovered:
        """Power-cycle ``machine`` (default: this session's), load ``image``, run recovery."""
        m = machine or self.machine
        m.engine.reset_volatile()
        m.env = type(m.env)()
        m.load_pm_image(image)
        rt = self.runtime.reattach(m)
        rt.recover(m.cpu(0))
        wl = self.workload
        return Recovered(rt, wl.app_data(rt), rt.check_invariants(wl.live_objects(rt)))
