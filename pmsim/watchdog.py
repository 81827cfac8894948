"""Budgets for user code that may loop forever: a crash image must not hang a fuzz campaign,
nor a workload body a run.

Recovery (and the workload's data reader) run user code on arbitrary crash images, where a
corrupt pointer can make a loop run forever. :class:`Watchdog` bounds it two ways:

* **machine operations** (loads, stores, RMWs, flushes, fences the code issues on the
  recovery machine), a deterministic budget: the engine counts them anyway, and power-cycling
  the machine before each recovery zeroes the counters. The count is read when the code ends
  if it ran longer than :data:`NS_PER_OP` ns per budgeted operation — no code can issue them
  faster — so the verdict depends only on the count;
* **CPU time**, a coarse safety net for code that spins without touching simulated memory
  (a loop over ``Machine.peek``): :attr:`Watchdog.seconds` of process CPU time, counted in
  timer ticks (to within one tick).

Code that is not a recovery but may loop forever too (every run of transactions,
:meth:`pmsim.workloads.Session.run`, whose length the user chooses; the check of its data)
runs under :func:`bounded`: a CPU-time bound that a ``progress`` count (transactions
finished) resets, so a long run that progresses never overruns it, and one stuck in a loop
does within the bound.

While guarded code runs in the main thread, a CPU-time interval timer (``SIGVTALRM``, every
:data:`TICK` CPU seconds) checks both and raises :class:`Hang` into it. The timer is armed on
first use, only counts ticks outside guarded code, and is stopped when the last watchdog is
garbage collected. Guarding a run costs two clock reads and no system call; nothing runs per
instruction. Elsewhere (other threads, platforms without ``setitimer``, a foreign
``SIGVTALRM`` handler) only the end-of-run check applies: a budget overrun that terminates is
still found, a loop that never ends is not.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

OPS = ("loads", "stores", "ntstores", "rmws", "clflush", "clflushopt", "clwb", "sfence", "mfence",
       "pcommit")
"""The counters that make up a machine operation count."""

MIN_OPS = 1_000_000
"""The smallest operation budget (budgets are 100x the crash-free run, at least this)."""
OPS_FACTOR = 100
SECONDS = 5.0
"""Default CPU-time safety net per guarded run."""
TICK = 0.05
"""CPU seconds between the timer's checks."""
NS_PER_OP = 5.0
"""A lower bound on the time of one machine operation (a Python call into the engine takes
far longer): guarded code that ends within ``max_ops`` times this cannot have overrun, so its
count is not read (5 ms for the default budget)."""

_SIG = getattr(signal, "SIGVTALRM", None)
_current: tuple[Watchdog, Any, int] | None = None
_ticks = 0  # timer ticks so far: CPU time in TICKs
_live = 0  # watchdogs not yet collected
_armed = False  # whether this process's timer runs (a forked child inherits none)
_bound: _Bound | None = None


class Hang(BaseException):
    """Raised into guarded code that overran its budget. A BaseException, so that user code's
    ``except Exception`` does not swallow it."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def ops(machine: Any) -> int:
    """Machine operations issued since the machine was last power-cycled."""
    return sum(machine.count(n) for n in OPS)


class Watchdog:
    """The budget of one campaign's recoveries: ``max_ops`` machine operations and ``seconds``
    of CPU time per guarded run."""

    def __init__(self, max_ops: int = MIN_OPS, seconds: float = SECONDS) -> None:
        self.max_ops = max_ops
        self.seconds = seconds
        self._after = max_ops * NS_PER_OP * 1e-9
        self._wall = 0.0
        self._main = threading.main_thread().ident
        global _live
        _live += 1
        weakref.finalize(self, _release)

    def over_ops(self) -> str:
        return f"within {self.max_ops:,} instructions"

    def over_time(self) -> str:
        return (f"within {self.seconds:g} s of CPU time (and {self.max_ops:,} instructions: "
                "a loop that issues few machine operations, e.g. over Machine.peek)")

    def start(self, machine: Any) -> None:
        """Guard the code that follows on ``machine`` (freshly power-cycled)."""
        global _current
        self._wall = time.perf_counter()
        if threading.get_ident() == self._main and (_armed or _arm()):
            _current = (self, machine, _ticks)

    def check(self, machine: Any) -> None:
        """Raise :class:`Hang` if the code since :meth:`start` overran the operation budget."""
        if time.perf_counter() - self._wall > self._after and ops(machine) > self.max_ops:
            raise Hang(self.over_ops())

    def stop(self) -> None:
        global _current
        _current = None


class _Bound:
    """One :func:`bounded` block: ``seconds`` of CPU since ``progress()`` last changed."""

    def __init__(self, seconds: float, progress: Callable[[], int] | None, detail: str) -> None:
        self.seconds = seconds
        self.progress = progress
        self.detail = detail
        self.start = _ticks
        self.seen = progress() if progress else 0

    def check(self) -> None:
        now = self.progress() if self.progress else 0
        if now != self.seen:
            self.seen, self.start = now, _ticks
        elif (_ticks - self.start) * TICK > self.seconds:
            raise Hang(self.detail)


def bounding() -> bool:
    """Whether a :func:`bounded` block is active in this thread (an outer caller's bound)."""
    return _bound is not None and threading.current_thread() is threading.main_thread()


@contextmanager
def bounded(seconds: float, progress: Callable[[], int] | None = None,
            detail: str = "") -> Iterator[None]:
    """Raise :class:`Hang` into the block (main thread only, where the timer works) once it
    has run ``seconds`` of CPU time without ``progress()`` changing (without ``progress``: in
    all). ``detail`` is the Hang's text (default: "within N s of CPU time"). Recoveries
    guarded by a :class:`Watchdog` inside the block answer to their own budget."""
    global _bound
    if threading.current_thread() is not threading.main_thread() or not (_armed or _arm()):
        yield
        return
    outer = _bound
    _bound = _Bound(seconds, progress, detail or f"within {seconds:g} s of CPU time")
    try:
        yield
    finally:
        _bound = outer
        if not _live and outer is None:
            _disarm()


def _on_tick(signum: int, frame: Any) -> None:
    global _ticks
    _ticks += 1
    cur = _current
    if cur is None:
        if _bound is not None:
            _bound.check()
        return
    wd, machine, t0 = cur
    if ops(machine) > wd.max_ops:
        raise Hang(wd.over_ops())
    if (_ticks - t0) * TICK > wd.seconds:
        raise Hang(wd.over_time())


def _arm() -> bool:
    """Install the handler and start the CPU-time timer; False where that is not possible."""
    global _armed
    if _SIG is None or not hasattr(signal, "setitimer"):
        return False
    try:
        if signal.getsignal(_SIG) not in (signal.SIG_DFL, None, _on_tick):
            return False  # someone else's timer: leave it alone
        signal.signal(_SIG, _on_tick)
        signal.siginterrupt(_SIG, False)
        signal.setitimer(signal.ITIMER_VIRTUAL, TICK, TICK)
    except (ValueError, OSError):
        return False
    _armed = True
    return True


def _release() -> None:
    """A watchdog was collected: stop the timer once none is left."""
    global _live
    _live -= 1
    if not _live and _bound is None:
        _disarm()


def _disarm() -> None:
    global _armed
    if not _armed:
        return
    try:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
    except (ValueError, OSError):
        return
    _armed = False


def _forked() -> None:
    global _armed, _current, _bound
    _armed, _current, _bound = False, None, None


os.register_at_fork(after_in_child=_forked)


__all__ = ["Hang", "MIN_OPS", "NS_PER_OP", "OPS", "OPS_FACTOR", "SECONDS", "TICK", "Watchdog",
           "bounded", "bounding", "ops"]
