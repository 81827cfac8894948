"""The recovery watchdog: an operation budget read from the engine, and a CPU-time timer."""

from __future__ import annotations

import gc
import signal
import threading

import pytest

from crashfuzz.campaign import fuzz_machine
from pmsim import watchdog
from pmsim.machine import Machine
from pmsim.watchdog import Hang, Watchdog, ops


def machine_after(loads: int) -> Machine:
    m = Machine(fuzz_machine("pdom1", 1, 0), timed=False)
    for _ in range(loads):
        m.cpu(0).load(m.pm.base)
    return m


def test_the_budget_is_read_from_the_engine_when_the_code_ends() -> None:
    m = machine_after(300)
    assert ops(m) == 300
    wd = Watchdog(max_ops=100, seconds=60)
    wd.start(m)
    wd.stop()
    with pytest.raises(Hang, match="within 100 instructions"):
        wd.check(m)
    Watchdog(max_ops=300, seconds=60).check(m)  # within budget: no error


def test_the_timer_raises_into_guarded_code_only() -> None:
    m = machine_after(0)
    wd = Watchdog(max_ops=10, seconds=0.2)
    watchdog._on_tick(signal.SIGVTALRM, None)  # nothing guarded: a tick does nothing
    wd.start(m)
    try:
        with pytest.raises(Hang, match=r"within 0\.2 s of CPU time"):
            while True:
                pass
    finally:
        wd.stop()
    assert not isinstance(Hang("x"), Exception)  # user code's `except Exception` cannot eat it


def test_other_threads_get_no_timer_and_the_timer_stops_with_the_last_watchdog() -> None:
    gc.collect()
    before = watchdog._live
    wd = Watchdog(max_ops=10, seconds=0.1)
    seen = []

    def start(wd: Watchdog) -> None:
        wd.start(machine_after(0))
        seen.append(watchdog._current)

    t = threading.Thread(target=start, args=(wd,))
    t.start()
    t.join()
    assert seen == [None]
    wd.start(machine_after(0))
    wd.stop()
    assert signal.getitimer(signal.ITIMER_VIRTUAL) != (0.0, 0.0)
    del wd
    gc.collect()
    assert watchdog._live == before
    if before == 0:
        assert signal.getitimer(signal.ITIMER_VIRTUAL) == (0.0, 0.0)


def test_bounded_raises_only_when_progress_stops() -> None:
    """A CPU-time bound that a progress count resets: a long run that progresses is never
    stopped, one stuck in a loop is (counted in timer ticks, not wall-clock time)."""
    count = [0]
    with watchdog.bounded(0.3, lambda: count[0]):
        t0 = watchdog._ticks
        while watchdog._ticks - t0 < 20:  # 1 s of CPU, far over the bound, progressing
            count[0] += 1
    with pytest.raises(Hang, match="stuck"), watchdog.bounded(0.3, lambda: count[0], "stuck"):
        while True:
            pass
    with pytest.raises(Hang, match=r"within 0\.2 s of CPU time"), watchdog.bounded(0.2):
        while True:
            pass
    assert watchdog._bound is None
