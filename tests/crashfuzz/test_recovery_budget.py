"""Exceptions and hangs in recovery or the data reader are findings with their crash point."""

from __future__ import annotations

from collections.abc import Hashable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from crashfuzz import FuzzConfig, Report, fuzz
from crashfuzz.campaign import Campaign
from pmsim.runtimes import UndoRuntime
from pmsim.workloads.array import Array

CFG = FuzzConfig(txs=3, idempotence=0, depth=1, stop_at_first=True)


class BrokenRecovery(UndoRuntime):
    """Recovery misbehaves (``how``) on an image with an uncommitted transaction's records."""

    name = "undo-broken-recovery"
    how = "raise"

    def _recover(self, cpu: Any) -> None:
        if any(recs and not done for recs, done in map(self.scan, range(self.layout.threads))):
            if self.how == "raise":
                raise RuntimeError("boom")
            if self.how == "loads":
                while True:
                    cpu.load(self.layout.base)
            if self.how == "spin":
                while True:
                    pass
            if self.how == "swallow":
                while True:
                    try:
                        cpu.load(self.layout.base)
                    except Exception:  # noqa: BLE001 - user code that swallows errors
                        pass
            if self.how == "long":
                for _ in range(30_000):
                    cpu.load(self.layout.base)
        super()._recover(cpu)


class TornArrayReader(Array):
    """Its reader raises KeyError (or loops, ``how``) on a slot whose words differ: what a
    torn write (undo:U1 in PDOM-1) leaves, never a correct run."""

    how = "raise"

    def read_data(self, rt: Any) -> Hashable:
        data = super().read_data(rt)
        if any(len(set(words)) > 1 for _, words in data):  # type: ignore[union-attr]
            if self.how == "raise":
                raise KeyError("torn slot")
            while True:
                rt.peek(rt.static("slots", 0), 0)
        return data


def failure(rep: Report) -> str:
    assert not rep.ok and rep.failures[0].kind == "crash", rep.failures[:1]
    assert rep.failures[0].point > 0
    return rep.failures[0].message


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Campaign, "recovery_min_ops", 20_000)
    monkeypatch.setattr(Campaign, "recovery_ops_factor", 1)
    monkeypatch.setattr(Campaign, "recovery_seconds", 0.3)


def rt(how: str) -> type[UndoRuntime]:
    return type(f"Broken_{how}", (BrokenRecovery,), {"how": how})


def test_an_exception_in_recovery_is_a_crash_finding() -> None:
    """The finding names the user's own frame that raised."""
    msg = failure(fuzz(CFG, runtime=rt("raise")))
    assert msg.startswith("recovery raised RuntimeError: boom in BrokenRecovery._recover (")
    assert msg.endswith(f"test_recovery_budget.py, line {_line('boom')}: raise RuntimeError"
                        "(\"boom\"))")


def test_an_exception_in_the_data_reader_is_a_crash_finding() -> None:
    rep = fuzz(CFG, runtime="undo:U1", workload=TornArrayReader)
    assert failure(rep).startswith("reading the recovered data raised KeyError: 'torn slot' in "
                                   "TornArrayReader.read_data (")


def _line(text: str) -> int:
    """The line of this file that raises ``text``."""
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, ln in enumerate(lines, 1) if f'raise RuntimeError("{text}")' in ln)


@pytest.mark.usefixtures("small_budget")
@pytest.mark.parametrize("how", ["loads", "swallow"])
def test_recovery_that_never_ends_is_stopped_by_the_instruction_budget(how: str) -> None:
    assert failure(fuzz(CFG, runtime=rt(how))) == (
        "recovery did not terminate within 20,000 instructions")


@pytest.mark.usefixtures("small_budget")
def test_recovery_that_spins_without_memory_is_stopped_by_cpu_time() -> None:
    assert failure(fuzz(CFG, runtime=rt("spin"))).startswith(
        "recovery did not terminate within 0.3 s of CPU time")


@pytest.mark.usefixtures("small_budget")
def test_a_data_reader_that_loops_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader loops on each of the about 50 torn images of the first failing chunk, so each
    uses up the CPU-time budget: two timer ticks here, not the 0.3 s of the other tests."""
    from pmsim.watchdog import TICK

    monkeypatch.setattr(Campaign, "recovery_seconds", 2 * TICK)
    TornArrayReader.how = "loop"
    try:
        rep = fuzz(CFG, runtime="undo:U1", workload=TornArrayReader)
    finally:
        TornArrayReader.how = "raise"
    assert failure(rep).startswith(
        f"reading the recovered data did not terminate within {2 * TICK:g} s of CPU time")


@pytest.mark.usefixtures("small_budget")
def test_an_overrun_that_ends_is_found_the_same_way_anywhere() -> None:
    """Deterministic: the count decides, not the timer; a worker thread has no timer at all."""
    here = fuzz(CFG, runtime=rt("long"))
    with ThreadPoolExecutor(1) as ex:
        there = ex.submit(fuzz, CFG, runtime=rt("long")).result()
    assert failure(here) == failure(there) == "recovery did not terminate within 20,000 instructions"
    assert here.failures[0].point == there.failures[0].point


def test_a_correct_recovery_stays_far_within_the_default_budget() -> None:
    camp = Campaign(FuzzConfig(runtime="undo", workload="kv", txs=4))
    assert camp.watchdog.max_ops >= 1_000_000 and camp.watchdog.seconds == 5.0
    assert camp.recover(camp.trace.base)[0] is not None
