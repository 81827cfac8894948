"""Background threads: started with the run, competing for the machine, stopped cleanly, and
their stores in the trace the crash-state model reads."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, ClassVar

import pytest

import crashfuzz
from pmsim.errors import ConfigError
from pmsim.runtimes.marathe.undo import UndoRuntime
from pmsim.trace import Ev
from pmsim.workloads import Session

SPARE = 7  # a word of the global header line no runtime uses


class Ticker(UndoRuntime):
    """Undo with a background thread that counts its rounds into a PM word (flushed)."""

    name = "undo-ticker"
    shared: ClassVar[bool] = False
    period: ClassVar[float] = 200.0

    @classmethod
    def extra_cores(cls, threads: int) -> int:
        return 0 if cls.shared else 1

    def start_threads(self) -> None:
        tid = 0 if self.shared else self.layout.threads
        self.spawn_background("ticker", tid, self._tick)

    def _tick(self, cpu: Any) -> Generator[Any, Any, None]:
        addr = self.layout.base + 8 * SPARE
        n = 0
        while not self.stopping:
            n += 1
            cpu.store(addr, n)
            cpu.clwb(addr)
            cpu.sfence()
            yield from self.idle(cpu, self.period)
        cpu.store(addr, 1 << 40 | n)  # the drain after the stop: marks a clean exit
        cpu.clwb(addr)
        cpu.sfence()


class SharedTicker(Ticker):
    shared = True


def run(rt: type, threads: int = 2, txs: int = 30) -> Session:
    s = Session.create(rt, "bank", threads=threads, seed=4, txs=txs)
    s.run(txs)
    return s


def test_background_thread_runs_stops_and_is_traced() -> None:
    s = run(Ticker)
    assert s.check()
    rt, m = s.runtime, s.machine
    assert m.config.cores == 3 and rt.background == []
    final = m.peek(rt.layout.base + 8 * SPARE)
    assert final >> 40 == 1 and final & 0xFFFF > 1  # ticked several times, then drained
    tr = m.trace().events
    stores = tr[(tr["kind"] == Ev.STORE) & (tr["tid"] == 2)]
    assert len(stores) == (final & 0xFFFF) + 1
    assert m.stats()[2]["clwb"] == len(stores)


def test_no_background_thread_changes_nothing() -> None:
    """A runtime without background threads runs exactly as plain spawned workers."""
    a = run(UndoRuntime)
    b = Session.create(UndoRuntime, "bank", threads=2, seed=4, txs=30)
    for t in range(2):
        b.machine.spawn(b.workload.thread_body, t, b.runtime, t, 30)
    b.machine.run()
    assert a.machine.now == b.machine.now and a.runtime.background == []
    assert (a.machine.trace().events == b.machine.trace().events).all()


def test_shared_core_slows_its_worker() -> None:
    own, shared = run(Ticker), run(SharedTicker)
    assert own.check() and shared.check()
    assert shared.machine.config.cores == 2
    st_own, st_shared = own.machine.stats(), shared.machine.stats()
    assert st_shared[0]["clwb"] > st_own[0]["clwb"]  # the ticker's flushes count on core 0
    assert shared.runtime.latencies != own.runtime.latencies


def test_background_on_a_missing_core_is_a_config_error() -> None:
    s = Session.create(UndoRuntime, "bank", threads=1, seed=1, txs=2)
    with pytest.raises(ConfigError, match=r"wants core 5 but the machine has \d+ cores"):
        s.runtime.spawn_background("x", 5, lambda cpu: iter(()))


def test_crash_fuzz_covers_background_stores() -> None:
    """The ticker's stores are in the campaign's trace, so its word's values multiply the
    crash states; recovery ignores the word, so every state passes."""
    plain = crashfuzz.fuzz(runtime=UndoRuntime, workload="bank", domain="pdom1", threads=2,
                           txs=2, seed=2)
    ticking = crashfuzz.fuzz(runtime=Ticker, workload="bank", domain="pdom1", threads=2,
                             txs=2, seed=2)
    assert plain.ok and ticking.ok
    assert ticking.states_total > plain.states_total


class Scribbler(Ticker):
    """A buggy background thread: it scribbles on account 0 and puts the value back."""

    def _tick(self, cpu: Any) -> Generator[Any, Any, None]:
        addr = self.field_addr(self.static("accounts", 0), 0)
        while not self.stopping:
            old = cpu.load(addr)
            for v in (12345, old):
                cpu.store(addr, v)
                cpu.clwb(addr)
                cpu.sfence()
            yield from self.idle(cpu, self.period)


def test_crash_fuzz_finds_a_background_threads_bug() -> None:
    rep = crashfuzz.fuzz(runtime=Scribbler, workload="bank", domain="pdom1", threads=2, txs=2,
                         seed=2, stop_at_first=True)
    assert not rep.ok
    assert rep.failures[0].kind == "data" and "T2 CLWB" in rep.failures[0].event
