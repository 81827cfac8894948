"""The TinySTM-like STM: serializable histories, conflicts, snapshots, clock, DRAM metadata."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmsim.config import MachineConfig, Region
from pmsim.errors import ConfigError, PmsimError
from pmsim.machine import Machine
from pmsim.tm.stm import AbortCause, Stm, StmAbort, StmConfig, StmTx

MASK = (1 << 64) - 1
DESIGNS = ("write-back", "write-through")


def mix(acc: int, v: int) -> int:
    """A value that depends on everything the transaction read so far."""
    return (acc * 0x9E3779B97F4A7C15 + v + 1) & MASK


def machine(cores: int, quantum: float = 1000.0) -> Machine:
    return Machine(MachineConfig(cores=cores, quantum_ns=quantum))


# -- random histories are serializable --------------------------------------------------------

op = st.tuples(st.sampled_from(["r", "r", "r", "w", "w", "p", "p", "work"]), st.integers(0, 11))
"""(kind, x): read or write word x, pause (yield if a quantum ahead), or work 5/40/300 ns."""
txn = st.tuples(st.lists(op, min_size=1, max_size=8), st.integers(0, 9))  # (ops, user abort if 0)
history = st.lists(st.lists(txn, min_size=1, max_size=5), min_size=2, max_size=4)


@settings(max_examples=120, deadline=None)
@given(threads=history, design=st.sampled_from(DESIGNS), words=st.integers(2, 12),
       spread=st.sampled_from([8, 24, 64]), stripe=st.sampled_from([8, 16, 32]),
       locks=st.sampled_from([2, 8, 64]), quantum=st.sampled_from([20.0, 100.0, 400.0, 2000.0]))
def test_histories_are_serializable(threads: list[list[tuple[list[tuple[str, int]], int]]],
                                    design: str, words: int, spread: int, stripe: int, locks: int,
                                    quantum: float) -> None:
    """Committed transactions, replayed serially in timestamp order, read exactly what they read
    and leave exactly the final memory; aborted attempts leave nothing."""
    m = machine(len(threads), quantum)
    stm = Stm(m, StmConfig(design=design, stripe=stripe, locks=locks))  # type: ignore[arg-type]
    addrs = [m.pm.base + spread * i for i in range(words)]
    init = {a: 1000 + i for i, a in enumerate(addrs)}
    for a, v in init.items():
        m.poke(a, v)
    done: list[tuple[tuple[int, int], list[tuple[str, int, int]]]] = []
    user_aborts = [0] * len(threads)

    def thread(cpu: Any, txs: list[tuple[list[tuple[str, int]], int]]) -> Generator[Any, Any, None]:
        for k, (ops, abort) in enumerate(txs):
            log: list[tuple[str, int, int]] = []

            def body(stx: StmTx, ops: list[tuple[str, int]] = ops, k: int = k,
                     abort: int = abort, log: list[tuple[str, int, int]] = log
                     ) -> Generator[Any, Any, bool]:
                log.clear()
                acc = cpu.tid << 8 | k
                for kind, x in ops:
                    if kind == "r":
                        v = stx.read(addrs[x % words])
                        log.append(("r", addrs[x % words], v))
                        acc = mix(acc, v)
                    elif kind == "w":
                        v = mix(acc, x)
                        stx.write(addrs[x % words], v)
                        log.append(("w", addrs[x % words], v))
                    elif kind == "p":
                        yield from cpu.maybe_yield()
                    else:
                        cpu.work((5, 40, 300)[x % 3])
                return abort != 0

            stx = yield from stm.atomic(cpu, body)
            if stx.committed:
                done.append((stx.serial, list(log)))
            else:
                assert abort == 0 and stx.cause is AbortCause.USER
                user_aborts[cpu.tid] += 1
            yield from cpu.maybe_yield()

    for t, txs in enumerate(threads):
        m.spawn(thread, t, txs)
    m.run()

    mem = dict(init)
    for _, log in sorted(done, key=lambda d: d[0]):
        mine: dict[int, int] = {}
        for kind, a, v in log:
            if kind == "r":
                assert v == mine.get(a, mem[a]), "a committed read disagrees with the serial order"
            else:
                mine[a] = v
        mem.update(mine)
    assert {a: m.peek(a) for a in addrs} == mem
    updates = [s for s, _ in done if s[1] == 0]
    assert len(set(updates)) == len(updates)  # unique commit timestamps
    tot = stm.totals()
    assert tot.commits == len(done)
    assert tot.attempts == tot.commits + sum(tot.aborts.values())
    assert tot.aborts[AbortCause.USER] == sum(user_aborts)
    assert all(not stm.lock_word(i)[0] for i in range(locks))
    assert all(stm.lock_word(i)[1] <= stm.clock() for i in range(locks))
    assert all(stm.active(t) is None for t in range(len(threads)))
    if design == "write-back":  # one tick per update commit and per failed commit validation
        assert stm.clock() == len(updates) + tot.aborts[AbortCause.COMMIT_VALIDATION]


# -- conflicts ------------------------------------------------------------------------------------

@pytest.mark.parametrize("design", DESIGNS)
def test_conflicting_writers_one_aborts_and_retries(design: str) -> None:
    m = machine(2)
    stm = Stm(m, StmConfig(design=design))  # type: ignore[arg-type]
    x = m.pm.base
    out: dict[int, StmTx] = {}

    def holder(cpu: Any) -> Generator[Any, Any, None]:
        def body(stx: StmTx) -> Generator[Any, Any, None]:
            stx.write(x, stx.read(x) + 1)
            cpu.work(3000)  # hold the lock across a yield
            yield from cpu.sync()
        out[0] = yield from stm.atomic(cpu, body)

    def other(cpu: Any) -> Generator[Any, Any, None]:
        def body(stx: StmTx) -> None:
            stx.write(x, stx.read(x) + 10)
        out[1] = yield from stm.atomic(cpu, body)

    m.spawn(holder, 0)
    m.spawn(other, 1)
    m.run()
    assert m.peek(x) == 11
    assert out[0].committed and out[1].committed and out[0].ts < out[1].ts
    assert stm.stats[1].aborts[AbortCause.LOCKED] >= 1
    assert stm.stats[0].aborts[AbortCause.LOCKED] == 0
    assert stm.stats[1].attempts == 1 + sum(stm.stats[1].aborts.values())


def _reader_vs_writer(design: str, second: str) -> tuple[Machine, Stm, list[list[int]]]:
    """Thread 0 reads x, pauses while thread 1 commits x and y, then reads y (``second ==
    "read"``) or writes z and commits (``"write"``)."""
    m = machine(2)
    stm = Stm(m, StmConfig(design=design))  # type: ignore[arg-type]
    x, y, z = m.pm.base, m.pm.base + 64, m.pm.base + 128
    seen: list[list[int]] = []

    def reader(cpu: Any) -> Generator[Any, Any, None]:
        def body(stx: StmTx) -> Generator[Any, Any, None]:
            got = [stx.read(x)]
            if len(seen) == 0:  # the first attempt waits for the writer
                seen.append([])
                yield cpu.machine.env.timeout(5000)
            if second == "read":
                got.append(stx.read(y))
            else:
                stx.write(z, got[0])
            seen.append(got)
        yield from stm.atomic(cpu, body)

    def writer(cpu: Any) -> Generator[Any, Any, None]:
        def body(stx: StmTx) -> None:
            stx.write(x, 5)
            stx.write(y, 6)
        yield from stm.atomic(cpu, body)

    m.spawn(reader, 0)
    m.spawn(writer, 1)
    m.run()
    return m, stm, seen


@pytest.mark.parametrize("design", DESIGNS)
def test_stale_read_fails_snapshot_extension(design: str) -> None:
    m, stm, seen = _reader_vs_writer(design, "read")
    assert stm.stats[0].aborts[AbortCause.READ_VALIDATION] == 1
    assert seen[-1] == [5, 6]  # the retry sees both writes, never x=0 with y=6


@pytest.mark.parametrize("design", DESIGNS)
def test_stale_read_fails_commit_validation(design: str) -> None:
    m, stm, seen = _reader_vs_writer(design, "write")
    assert stm.stats[0].aborts[AbortCause.COMMIT_VALIDATION] == 1
    assert m.peek(m.pm.base + 128) == 5
    assert stm.clock() == 3  # the writer's commit, the failed validation, the retry's commit


def test_snapshot_extends_when_reads_are_still_valid() -> None:
    m = machine(2)
    stm = Stm(m)
    x, y = m.pm.base, m.pm.base + 64
    res: dict[str, Any] = {}

    def reader(cpu: Any) -> Generator[Any, Any, None]:
        stx = stm.begin(cpu)
        a = stx.read(x)
        yield cpu.machine.env.timeout(5000)
        res["vals"] = (a, stx.read(y))
        res["ts"] = stx.commit()
        res["serial"] = stx.serial

    def writer(cpu: Any) -> Generator[Any, Any, None]:
        stx = stm.begin(cpu)
        stx.write(y, 9)
        res["wts"] = stx.commit()
        yield from cpu.sync()

    m.spawn(reader, 0)
    m.spawn(writer, 1)
    m.run()
    assert res["vals"] == (0, 9)
    assert stm.stats[0].extensions == 1
    assert res["ts"] == res["wts"] == 1 and res["serial"] == (1, 1)  # right after the writer


# -- read-only transactions, the clock ----------------------------------------------------------

def test_read_only_transactions_take_no_timestamp() -> None:
    m = machine(1)
    stm = Stm(m)
    cpu = m.cpu(0)
    m.poke(m.pm.base, 42)
    for _ in range(3):
        stx = stm.begin(cpu)
        assert stx.read(m.pm.base) == 42 and stx.read_only
        assert stx.commit() == 0 and stx.serial == (0, 1)
    assert stm.clock() == 0
    assert stm.stats[0].read_only == stm.stats[0].commits == 3
    assert not any(stm.lock_word(i)[0] for i in range(stm.config.locks))


def test_clock_is_monotonic_and_versions_follow_it() -> None:
    m = machine(1)
    stm = Stm(m, StmConfig(locks=16))
    cpu = m.cpu(0)
    tss = []
    for i in range(20):
        stx = stm.begin(cpu)
        a = m.pm.base + 8 * (i % 5)
        stx.write(a, stx.read(a) + 1)
        tss.append(stx.commit())
        assert stm.lock_word(stm.lock_of(a)) == (False, tss[-1])
    assert tss == list(range(1, 21))
    assert stm.clock() == 20
    assert [m.peek(m.pm.base + 8 * i) for i in range(5)] == [4] * 5


# -- metadata is timed DRAM traffic --------------------------------------------------------------

def test_metadata_accesses_are_dram_instructions() -> None:
    m = machine(1)
    stm = Stm(m)
    cpu = m.cpu(0)
    assert m.dram is not None and m.dram.base <= stm.clock_addr
    assert stm.lock_addr(stm.config.locks - 1) + 8 <= m.dram.base + Stm.footprint(stm.config)
    x, y = m.pm.base, m.pm.base + 64
    stx = stm.begin(cpu)  # clock load
    stx.read(x)  # lock, value, lock
    stx.write(y, 1)  # lock load, CAS
    stx.commit()  # clock load + CAS; no validation (nothing committed since begin); store; release
    assert (m.count("loads"), m.count("rmws"), m.count("stores")) == (6, 2, 2)
    assert m.count("dram_read_bytes") >= 2 * 64  # the clock line and the lock line missed
    before = m.count("dram_read_bytes")
    stx = stm.begin(cpu)
    stx.read(x)
    stx.commit()
    assert m.count("dram_read_bytes") == before  # now cached
    assert m.peek(stm.lock_addr(stm.lock_of(y))) == 1 << 4  # version 1, unlocked


def test_no_dram_region_is_a_config_error() -> None:
    m = Machine(MachineConfig(regions=(Region("pm", 0, 1 << 20, "pm"),)))
    with pytest.raises(ConfigError, match="no 'dram' region"):
        Stm(m)
    m = Machine(MachineConfig(regions=(Region("pm", 0, 1 << 20, "pm"),
                                       Region("dram", 1 << 30, 4096, "dram"))))
    with pytest.raises(ConfigError, match="fewer StmConfig.locks"):
        Stm(m)
    Stm(m, StmConfig(locks=256))  # 64 + 2048 bytes fit
    with pytest.raises(ConfigError, match="aligned"):
        Stm(m, StmConfig(locks=8), base=(1 << 30) + 8)


@pytest.mark.parametrize("kw,msg", [
    ({"design": "write-around"}, "design"), ({"locks": 1000}, "power of two"),
    ({"stripe": 4}, "less than a word"), ({"abort_ns": -1.0}, "abort_ns"),
    ({"max_attempts": 0}, "max_attempts"),
])
def test_bad_config(kw: dict[str, Any], msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        StmConfig(**kw)


# -- aborts, hooks, misuse -----------------------------------------------------------------------

@pytest.mark.parametrize("design", DESIGNS)
def test_hooks_see_the_write_set_before_it_is_published(design: str) -> None:
    m = machine(1)
    calls: list[tuple[Any, ...]] = []
    x = m.pm.base
    m.poke(x, 7)

    def on_commit(stx: StmTx, ts: int) -> None:
        locked = stm.lock_word(stm.lock_of(x))[0]
        calls.append(("commit", ts, dict(stx.write_set), m.peek(x), locked))

    stm = Stm(m, StmConfig(design=design),  # type: ignore[arg-type]
              on_write=lambda stx, a, v, old: calls.append(("write", a, v, old)),
              on_commit=on_commit,
              on_abort=lambda stx, cause: calls.append(("abort", cause, m.peek(x))))
    cpu = m.cpu(0)
    stx = stm.begin(cpu)
    stx.write(x, 8)
    stx.write(x, 9)
    stx.abort()
    assert m.peek(x) == 7 and not stm.lock_word(stm.lock_of(x))[0]
    stx = stm.begin(cpu)
    stx.write(x, 10)
    assert stx.commit() == 1 and m.peek(x) == 10
    wt = design == "write-through"
    assert calls == [
        ("write", x, 8, 7 if wt else None), ("write", x, 9, None),
        ("abort", AbortCause.USER, 7),
        ("write", x, 10, 7 if wt else None),
        ("commit", 1, {x: 10}, 10 if wt else 7, True),
    ]


def test_write_through_abort_restores_and_bumps_the_incarnation() -> None:
    m = machine(1)
    stm = Stm(m, StmConfig(design="write-through", locks=4))
    cpu = m.cpu(0)
    x = m.pm.base
    li = stm.lock_of(x)
    for i in range(9):  # 7 incarnations, then a fresh version from the clock
        stx = stm.begin(cpu)
        stx.write(x, 100 + i)
        assert m.peek(x) == 100 + i  # in place
        stx.abort()
        assert m.peek(x) == 0
    assert stm.lock_word(li) == (False, 1) and stm.clock() == 1
    assert stm.stats[0].aborts[AbortCause.USER] == 9


def test_abort_unwinds_past_except_exception() -> None:
    m = machine(2)
    stm = Stm(m)
    x = m.pm.base
    holder = stm.begin(m.cpu(0))
    holder.write(x, 1)
    stx = stm.begin(m.cpu(1))
    with pytest.raises(StmAbort) as e:
        try:
            stx.read(x)
        except Exception:  # a body's broad handler must not swallow the abort
            pytest.fail("StmAbort was caught as an Exception")
    assert e.value.cause is AbortCause.LOCKED and e.value.tx is stx
    with pytest.raises(PmsimError, match="already aborted"):
        stx.read(x)
    with pytest.raises(PmsimError, match="already runs"):
        stm.begin(m.cpu(0))
    holder.commit()
    assert stm.stats[1].aborts[AbortCause.LOCKED] == 1


def test_closing_an_abandoned_transaction_simulates_nothing() -> None:
    """A thread's generator closed mid-transaction (the run abandoned, or the collector
    finalising it, possibly after its machine) must not touch the machine: no rollback's work
    or stores, so no trace event and no time."""
    m = machine(1)
    stm = Stm(m, StmConfig(design="write-through"))
    cpu = m.cpu(0)
    x = m.pm.base

    def body(stx: StmTx) -> Generator[Any, Any, None]:
        stx.write(x, 7)
        yield m.env.timeout(1)

    gen = stm.atomic(cpu, body)
    next(gen)  # inside the body, the write in place
    events, clock = len(m.trace().events), cpu.clock
    gen.close()
    assert (len(m.trace().events), cpu.clock) == (events, clock)
    assert m.peek(x) == 7


def test_atomic_gives_up_on_a_livelock() -> None:
    m = machine(2)
    stm = Stm(m, StmConfig(max_attempts=5))
    x = m.pm.base
    stm.begin(m.cpu(0)).write(x, 1)  # never released

    def body(stx: StmTx) -> None:
        stx.read(x)

    def thread(cpu: Any) -> Generator[Any, Any, None]:
        yield from stm.atomic(cpu, body)

    m.spawn(thread, 1)
    with pytest.raises(PmsimError, match="aborted 5 times in a row"):
        m.run()
    assert stm.active(1) is None


def test_an_exception_in_the_body_rolls_back() -> None:
    m = machine(1)
    stm = Stm(m, StmConfig(design="write-through"))
    x = m.pm.base

    def body(stx: StmTx) -> None:
        stx.write(x, 3)
        raise KeyError("bug in the body")

    def thread(cpu: Any) -> Generator[Any, Any, None]:
        yield from stm.atomic(cpu, body)

    m.spawn(thread, 0)
    with pytest.raises(KeyError):
        m.run()
    assert m.peek(x) == 0 and stm.active(0) is None
    assert not stm.lock_word(stm.lock_of(x))[0]
