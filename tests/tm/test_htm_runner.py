"""The HTM runner (pmsim.tm.htm): retries, the SGL fallback and lock subscription, abort
causes, user aborts, exceptions, and how abort rates depend on the scheduling quantum."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from pmsim import preset
from pmsim.config import MachineConfig, Region
from pmsim.errors import ConfigError
from pmsim.hw import htm as H
from pmsim.machine import Machine
from pmsim.tm.htm import USER_ABORT, HtmAbort, HtmRunner, check
from pmsim.workloads import Session

PM, DRAM = 0, 1 << 30
CFG = MachineConfig(cores=4, regions=(Region("pm", PM, 1 << 16, "pm"),
                                      Region("dram", DRAM, 1 << 16, "dram")))
X = PM + 4096  # a shared counter


def machine(backend: str, **changes: Any) -> tuple[Machine, HtmRunner]:
    m = Machine(CFG.replace(**changes) if changes else CFG, backend=backend)
    return m, HtmRunner(m)


def nothing() -> None:
    return None


def increment(runner: HtmRunner, cpu: Any, addr: int, times: int) -> Generator[Any, Any, None]:
    """A thread adding 1 to ``addr`` ``times`` times, with a pause between load and store."""
    def attempt(hw: bool) -> Generator[Any, Any, None]:
        v = cpu.load(addr)
        if hw:
            check(cpu)
        yield from cpu.maybe_yield(runner.quantum)
        cpu.work(30.0)
        cpu.store(addr, v + 1)

    for _ in range(times):
        yield from runner.run(cpu, attempt, nothing, nothing)


def test_concurrent_increments_are_atomic(backend: str) -> None:
    m, runner = machine(backend)
    for t in range(4):
        m.spawn(lambda cpu: increment(runner, cpu, X, 25), t)
    m.run()
    assert m.peek(X) == 100
    tot = runner.total()
    assert tot.commits + tot.fallbacks == 100
    assert tot.conflict > 0 and tot.attempts == tot.commits + tot.aborts
    st = m.stats()
    assert int(st["htm_begins"].sum()) == tot.attempts
    assert int(st["htm_commits"].sum()) == tot.commits
    assert m.peek(DRAM) == 2 * runner.total().fallbacks  # the SGL is free again


@pytest.mark.parametrize("budget", [5, 2])
def test_conflicts_retry_up_to_the_budget_then_take_the_lock(backend: str, budget: int) -> None:
    m, _ = machine(backend)
    cpu, other = m.cpu(0), m.cpu(1)
    runner = HtmRunner(m, budget=budget)
    calls: list[bool] = []
    retries: list[int] = []

    def attempt(hw: bool) -> None:
        calls.append(hw)
        cpu.load(X)
        other.store(X + 8, 1)  # another thread writes the line: the attempt aborts
        if hw:
            check(cpu)
        cpu.store(X, 7)

    m.spawn(lambda c: runner.run(c, attempt, nothing, nothing, retries.append), 0)
    m.run()
    assert calls == [True] * budget + [False]
    assert retries == [H.XABORT_CONFLICT | H.XABORT_RETRY] * budget
    st = runner.stats[0]
    assert (st.attempts, st.conflict, st.fallbacks, st.commits) == (budget, budget, 1, 0)
    assert m.peek(X) == 7
    assert int(m.stats()["htm_false_sharing"][0]) == budget


def test_capacity_goes_to_the_lock_at_once(backend: str) -> None:
    m, runner = machine(backend, **{"htm.write_set_lines": 2})

    def attempt(hw: bool) -> None:
        for i in range(3):
            m.cpu(0).store(X + 64 * i, i + 1)
        if hw:
            check(m.cpu(0))

    m.spawn(lambda c: runner.run(c, attempt, nothing, nothing), 0)
    m.run()
    st = runner.stats[0]
    assert (st.attempts, st.capacity, st.fallbacks) == (1, 1, 1)
    assert [m.peek(X + 64 * i) for i in range(3)] == [1, 2, 3]


def test_flush_aborts_go_to_the_lock_at_once(backend: str) -> None:
    m, runner = machine(backend)

    def attempt(hw: bool) -> None:
        cpu = m.cpu(0)
        cpu.store(X, 1)
        cpu.clwb(X)
        if hw:
            check(cpu)

    m.spawn(lambda c: runner.run(c, attempt, nothing, nothing), 0)
    m.run()
    st = runner.stats[0]
    assert (st.attempts, st.flush, st.fallbacks) == (1, 1, 1) and m.peek(X) == 1


def test_taking_the_lock_aborts_subscribed_transactions(backend: str) -> None:
    """Thread 1 overflows its write set and takes the SGL while thread 0's transaction waits
    at a pause: thread 0 aborts through its subscription, and counts the cause as the lock."""
    m, runner = machine(backend, **{"htm.write_set_lines": 4})
    order: list[str] = []

    def slow(cpu: Any) -> Generator[Any, Any, None]:
        def attempt(hw: bool) -> Generator[Any, Any, None]:
            v = cpu.load(X)
            cpu.work(500.0)
            yield from cpu.maybe_yield(runner.quantum)
            if hw:
                check(cpu)
            cpu.store(X, v + 1)
        yield from runner.run(cpu, attempt, lambda: order.append("slow"), nothing)

    def big(cpu: Any) -> Generator[Any, Any, None]:
        cpu.work(100.0)

        def attempt(hw: bool) -> None:
            for i in range(8):
                cpu.store(X + 64 * (i + 1), 1)
            if hw:
                check(cpu)
        yield from runner.run(cpu, attempt, lambda: order.append("big"), nothing)

    m.spawn(slow, 0)
    m.spawn(big, 1)
    m.run()
    assert order == ["big", "slow"]
    assert runner.stats[0].lock == 1 and runner.stats[0].commits == 1
    assert runner.stats[1].fallbacks == 1
    assert m.stats()["htm_aborts_conflict"].tolist()[0] == 1
    assert m.peek(X) == 1


def test_attempts_wait_for_the_lock_or_abort_with_lock_busy(backend: str) -> None:
    m, runner = machine(backend)
    m.poke(runner.lock, 1)  # held (odd) until thread 1 releases it at 1000 ns
    runs: list[bool] = []

    def holder(c: Any) -> Generator[Any, Any, None]:
        yield m.env.timeout(1000)
        c.store(runner.lock, 2)

    m.spawn(holder, 1)
    m.spawn(lambda c: runner.run(c, lambda hw: runs.append(hw), nothing, nothing), 0)
    m.run()
    assert runs == [True] and m.cpu(0).clock >= 1000  # waited, then committed in hardware
    assert runner.stats[0].lock == 0

    m, runner = machine(backend)
    m.poke(runner.lock, 1)
    runner.wait_free = lambda cpu: iter(())  # type: ignore[method-assign]  # subscribe at once
    runs.clear()
    m.spawn(holder, 1)
    m.spawn(lambda c: runner.run(c, lambda hw: runs.append(hw), nothing, nothing), 0)
    m.run()
    st = runner.stats[0]
    assert (st.attempts, st.lock, st.fallbacks) == (5, 5, 1) and runs == [False]
    assert int(m.stats()["htm_aborts_lock"][0]) == 5


def test_user_abort_discards_the_attempt_and_is_not_retried(backend: str) -> None:
    m, runner = machine(backend)
    aborted: list[int] = []

    def attempt(hw: bool) -> bool:
        m.cpu(0).store(X, 99)
        return False

    m.spawn(lambda c: runner.run(c, attempt, nothing, lambda: aborted.append(1)), 0)
    m.run()
    st = runner.stats[0]
    assert (st.attempts, st.user_aborts, st.aborts, st.fallbacks) == (1, 1, 0, 0)
    assert aborted == [1] and m.peek(X) == 0
    assert int(m.stats()["htm_aborts_explicit"][0]) == 1
    assert m.trace().events["kind"].tolist() == []


def test_user_abort_under_the_lock_calls_on_abort_and_releases(backend: str) -> None:
    m, runner = machine(backend, **{"htm.read_set_lines": 1})
    cpu = m.cpu(0)
    undo: list[tuple[int, int]] = []

    def attempt(hw: bool) -> bool | None:
        cpu.load(X)
        cpu.load(X + 64)  # a second line overflows the read set
        if hw:
            check(cpu)
        undo.append((X, m.peek(X)))
        cpu.store(X, 5)
        return False

    def on_abort() -> None:
        for addr, old in undo:
            cpu.store(addr, old)

    res: list[bool] = []

    def thread(c: Any) -> Generator[Any, Any, None]:
        res.append((yield from runner.run(c, attempt, nothing, on_abort)))

    m.spawn(thread, 0)
    m.run()
    assert res == [False] and m.peek(X) == 0 and m.peek(runner.lock) == 2
    assert runner.stats[0].fallbacks == 1 and runner.stats[0].user_aborts == 1


def test_htm_abort_unwinds_a_generator_body(backend: str) -> None:
    m, runner = machine(backend, **{"htm.read_set_lines": 2})
    cpu = m.cpu(0)
    after: list[bool] = []

    def attempt(hw: bool) -> Generator[Any, Any, None]:
        for i in range(3):
            cpu.load(X + 64 * i)
            if hw:
                check(cpu)
            yield from cpu.maybe_yield(runner.quantum)
        after.append(hw)

    m.spawn(lambda c: runner.run(c, attempt, nothing, nothing), 0)
    m.run()
    assert after == [False]  # the hardware attempt never got past the overflowing load
    with pytest.raises(HtmAbort, match="capacity"):
        cpu.xbegin()
        cpu.load(X)
        cpu.load(X + 64)
        cpu.load(X + 128)
        check(cpu)
    assert cpu.xend() == H.XABORT_CAPACITY


def test_an_exception_ends_the_transaction_and_propagates(backend: str) -> None:
    m, runner = machine(backend)
    cpu = m.cpu(0)

    def attempt(hw: bool) -> None:
        cpu.store(X, 1)
        raise KeyError("body bug")

    m.spawn(lambda c: runner.run(c, attempt, nothing, nothing), 0)
    with pytest.raises(KeyError, match="body bug"):
        m.run()
    assert m.peek(X) == 0
    cpu.xbegin()  # no transaction was left open
    assert cpu.xend() == 0
    assert int(m.stats()["htm_aborts_explicit"][0]) == 1


def test_bad_arguments() -> None:
    m = Machine(CFG.replace(regions=(Region("pm", PM, 1 << 16, "pm"),)), backend="python")
    with pytest.raises(ConfigError, match="no DRAM region, so pass lock_addr"):
        HtmRunner(m)
    assert HtmRunner(m, lock_addr=PM + 64).lock == PM + 64
    with pytest.raises(ConfigError, match="budget must be an integer >= 1"):
        HtmRunner(m, PM, budget=0)
    with pytest.raises(ConfigError, match="spin_ns"):
        HtmRunner(m, PM, spin_ns=0.0)
    with pytest.raises(ConfigError, match="outside every region"):
        HtmRunner(m, lock_addr=1 << 40)


def test_user_abort_code_is_reserved() -> None:
    assert USER_ABORT != H.XABORT_LOCK_BUSY and 0 <= USER_ABORT <= 0xFF


# -- the quantum ---------------------------------------------------------------------------------
QUANTUM_RUNS = {
    "bank": {"accounts": 16, "initial": 1000, "max_amount": 40},
    "kv": {"buckets": 8, "keys": 64},
}


def abort_rate(workload: str, quantum: float, threads: int = 4, txs: int = 60,
               seed: int = 1) -> float:
    cfg = preset("optane-adr").replace(cores=threads, **{"htm.quantum_ns": quantum})
    s = Session.create("htm", workload, cfg, threads=threads, seed=seed, txs=txs,
                       params=QUANTUM_RUNS[workload])
    s.run(txs)
    assert s.check()
    return s.runtime.runner.total().abort_rate


@pytest.mark.parametrize("workload", sorted(QUANTUM_RUNS))
def test_abort_rates_do_not_depend_on_the_quantum_at_the_default_and_below(workload: str) -> None:
    default = MachineConfig().htm.quantum_ns
    rates = [abort_rate(workload, default * f) for f in (1.0, 0.5, 0.25)]
    assert rates[0] > 0.2
    assert max(rates) - min(rates) <= 0.02, rates
    # the machine's default quantum lets transactions run past each other: conflicts are missed
    assert abort_rate(workload, MachineConfig().quantum_ns) < rates[0] - 0.2


def test_a_single_thread_does_not_depend_on_the_quantum() -> None:
    runs = []
    for q in (0.25, 1.0, 1000.0):
        cfg = preset("optane-adr").replace(cores=1, **{"htm.quantum_ns": q})
        s = Session.create("htm", "kv", cfg, threads=1, seed=2, txs=40,
                           params=QUANTUM_RUNS["kv"])
        s.run(40)
        runs.append((s.machine.stats().tobytes(), s.runtime.commit_order))
    assert runs[0] == runs[1] == runs[2]
