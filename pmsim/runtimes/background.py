"""Background threads of a runtime: persist threads, checkpointers, log reproducers.

A runtime starts them in :meth:`BackgroundThreads.start_threads` with
:meth:`~BackgroundThreads.spawn_background`. Each is a SimPy process on a simulated core, so it
competes for the caches, the WPQ and media bandwidth like any worker, and the trace (hence the
crash-state model) holds its stores like any other. A background thread either has a core of
its own (a ``tid`` beyond the workers'; the runtime asks for it with ``extra_cores``) or shares
a worker's core (the worker's ``tid``): the two then advance one clock and share its L1 and L2,
a time-sliced core with no context-switch cost.

A background body loops until :attr:`~BackgroundThreads.stopping` and waits with
:meth:`~BackgroundThreads.idle`, which wakes early when a stop is requested::

    def start_threads(self):
        self.spawn_background("persist", self.layout.threads, self._persist_loop)

    def _persist_loop(self, cpu):
        while not self.stopping:
            ...                                   # flush a batch
            yield from self.idle(cpu, 1000.0)     # 1 us, or until the run ends
        ...                                       # drain what is left, then return

:func:`run_threads` runs workers with the runtime's background threads: it starts them,
requests the stop once every worker has ended and runs the machine until all have returned.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError


@dataclass
class BackgroundThread:
    """One started background thread."""

    name: str
    tid: int
    process: Any


class BackgroundThreads:
    """The runtime side: start, wait, stop. Mixed into :class:`~.base.Runtime`."""

    m: Any
    _bg: list[BackgroundThread] | None = None
    _stop_event: Any = None

    @classmethod
    def extra_cores(cls, threads: int) -> int:
        """Cores this runtime's background threads need beyond ``threads`` workers."""
        return 0

    def start_threads(self) -> None:
        """Start the runtime's background threads (default: none)."""

    def background_progress(self) -> int:
        """A count of the work the background threads have finished (default: 0). The stall
        watchdog of a run counts it with the commits: while workers wait for a background
        thread (NV-HTM's workers for log space) the run still progresses."""
        return 0

    @property
    def background(self) -> list[BackgroundThread]:
        """The background threads started and not yet stopped."""
        return list(self._bg or ())

    @property
    def stopping(self) -> bool:
        """True once the run has asked the background threads to finish."""
        ev = self._stop_event
        return ev is not None and ev.triggered

    def spawn_background(self, name: str, tid: int, fn: Callable[..., Generator[Any, Any, Any]],
                         *args: Any) -> BackgroundThread:
        """Start ``fn(cpu, *args)`` on core ``tid`` as background thread ``name``."""
        cores = self.m.config.cores
        if not 0 <= tid < cores:
            raise ConfigError(f"background thread {name!r} wants core {tid} but the machine has "
                              f"{cores} cores (0..{cores - 1}); give the runtime more cores "
                              "(extra_cores) or share a worker's core")
        if self._bg is None or self._stop_event is None or self._stop_event.triggered:
            self._bg = []
            self._stop_event = self.m.env.event()
        th = BackgroundThread(name, tid, self.m.spawn(fn, tid, *args))
        self._bg.append(th)
        return th

    def idle(self, cpu: Any, ns: float) -> Generator[Any, Any, None]:
        """Wait ``ns`` of simulated time, or less if a stop is requested meanwhile."""
        yield from cpu.sync()
        env = self.m.env
        if self._stop_event is None or self._stop_event.triggered:
            yield env.timeout(ns)
        else:
            yield env.any_of([env.timeout(ns), self._stop_event])
        if env.now > cpu.clock:
            self.m.engine.set_clock(cpu.tid, env.now)

    def stop_threads(self) -> Generator[Any, Any, None]:
        """Request the stop and wait until every background thread has returned."""
        if not self._bg:
            return
        if not self._stop_event.triggered:
            self._stop_event.succeed()
        yield self.m.env.all_of([th.process for th in self._bg])
        self._bg = []

    def stop_after(self, workers: Sequence[Any]) -> None:
        """Stop the background threads once every process in ``workers`` has ended."""
        if not self._bg:
            return
        env = self.m.env

        def closer() -> Generator[Any, Any, None]:
            yield env.all_of(list(workers))
            yield from self.stop_threads()

        env.process(closer())


Spawn = tuple[Callable[..., Generator[Any, Any, Any]], int, tuple[Any, ...]]
"""A worker to run: ``(fn, tid, args)``, started as ``machine.spawn(fn, tid, *args)``."""


def run_threads(rt: Any, workers: Iterable[Spawn]) -> list[Any]:
    """Run ``workers`` on ``rt``'s machine with the runtime's background threads; returns the
    worker processes (all ended)."""
    m = rt.m
    rt.start_threads()
    procs = [m.spawn(fn, tid, *args) for fn, tid, args in workers]
    rt.stop_after(procs)
    m.run()
    return procs


__all__ = ["BackgroundThread", "BackgroundThreads", "Spawn", "run_threads"]
