"""Hyper-Threading (``core.physical_cores``): two hardware threads on one core share its L1
and L2, its HTM write capacity and its issue slots, on both engines."""

from __future__ import annotations

import pytest

from pmsim.config import MachineConfig
from pmsim.errors import ConfigError
from pmsim.machine import Machine

from .test_timing_models import BACKENDS, cfg

XABORT_CAPACITY = 1 << 3


def smt(cores: int = 4, physical: int = 2, **kw: object) -> MachineConfig:
    return cfg().replace(cores=cores, **{"core.physical_cores": physical, **kw})


def test_threads_fill_the_cores_then_their_second_threads() -> None:
    core, sib = smt(28, 14).core.placement(28)
    assert core[:14] == list(range(14)) and core[14:] == list(range(14))
    assert sib[0] == 14 and sib[14] == 0 and sib[13] == 27
    core, sib = smt(20, 14).core.placement(20)
    assert sib[5] == 19 and sib[6] == -1 and sib[13] == -1  # cores 6..13 run one thread
    assert smt(4, 0).core.placement(4) == ([0, 1, 2, 3], [-1] * 4)
    assert smt(3, 4).core.placement(3) == ([0, 1, 2], [-1] * 3)


@pytest.mark.parametrize("bad,match", [
    ({"cores": 5}, "at most 4 cores"),
    ({"core.physical_cores": -1}, "physical_cores"),
    ({"core.smt_speed": 0.0}, "smt_speed"),
    ({"core.smt_speed": 1.5}, "smt_speed"),
])
def test_bad_smt_settings_say_what_to_fix(bad: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        smt().replace(**bad)


@pytest.mark.parametrize("backend", BACKENDS)
def test_siblings_share_the_l1(backend: str) -> None:
    """Thread 2 runs on thread 0's core: a line thread 0 loaded hits in L1 for it, while
    thread 1, on the other core, misses (and so do all of them without SMT)."""
    for physical, hits in ((2, [1, 0, 1]), (0, [1, 0, 0])):
        m = Machine(smt(4, physical), backend=backend)
        m.cpu(0).load(0)
        m.cpu(0).load(0)
        m.cpu(1).load(0)
        m.cpu(2).load(0)
        got = [int(m.engine.get_stats()[t]["l1_hits"]) for t in range(3)]
        assert got == hits, physical


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_thread_beside_its_sibling_computes_at_smt_speed(backend: str) -> None:
    m = Machine(smt(3, 2, **{"core.smt_speed": 0.5}), backend=backend)
    for t in range(3):
        m.cpu(t).work(100.0)
    # threads 0 and 2 share core 0; thread 1 is alone on core 1
    assert [m.cpu(t).clock for t in range(3)] == [200.0, 100.0, 200.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_siblings_halve_the_htm_write_capacity_and_share_the_ways(backend: str) -> None:
    def written_before_abort(physical: int, sibling_lines: int, write_set: int = 8) -> int:
        c = smt(4, physical, **{"htm.write_set_lines": write_set})  # 8-way L1
        m = Machine(c, backend=backend)
        sets = c.cache.l1.sets
        if sibling_lines:
            m.engine.xbegin(2)
            for i in range(sibling_lines):
                m.engine.store(2, (1000 + i * sets) * 64, 1)  # L1 set 1000 % sets
        m.engine.xbegin(0)
        n = 0
        for i in range(10):
            m.engine.store(0, (1000 + (20 + i) * sets) * 64, 1)  # the same L1 set
            if m.engine.xstatus(0):
                break
            n += 1
        status = m.engine.xend(0)
        assert status & XABORT_CAPACITY
        return n

    assert written_before_abort(0, 0) == 8  # the write set (8 lines)
    assert written_before_abort(2, 0) == 4  # half of it beside a sibling
    assert written_before_abort(2, 0, 16) == 8  # half of 16; then the set's 8 ways
    assert written_before_abort(2, 6, 16) == 2  # the sibling's 6 lines take 6 of the ways
    assert written_before_abort(0, 6, 16) == 8  # on another core they take none


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_spin_takes_its_time_beside_a_sibling_where_work_slows(backend: str) -> None:
    """``Cpu.spin`` is a busy wait timed by the TSC (the papers' emulated flush latency): the
    same ns with or without a sibling thread on the core, where ``work`` is computation and
    takes 1 / smt_speed as long beside one."""
    c = smt(3, 2, **{"core.smt_speed": 0.6})  # threads 0 and 2 share core 0; 1 is alone
    m = Machine(c, backend=backend)
    for tid in range(3):
        cpu = m.cpu(tid)
        t0 = cpu.clock
        cpu.spin(500.0)
        assert cpu.clock - t0 == pytest.approx(500.0, abs=1e-9)
        t0 = cpu.clock
        cpu.work(500.0)
        assert cpu.clock - t0 == pytest.approx(500.0 if tid == 1 else 500.0 / 0.6, abs=1e-9)
