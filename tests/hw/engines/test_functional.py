"""The functional (untimed) engines: C and Python agree bit for bit, and both agree with the
timed engines on everything functional (values, memory, counters, the trace without WB events).

Scenarios come from the timed differential tests' strategies (every domain, both barrier
modes, one to three cores, bad addresses, resets and clock changes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from pmsim.cache import native
from pmsim.config import DOMAINS, MachineConfig
from pmsim.errors import ConfigError
from pmsim.hw.engines.reference import FUNCTIONAL_COUNTERS, FunctionalEngine, PyEngine
from pmsim.machine import Machine
from pmsim.trace import Ev

from .test_differential import (
    DRAM_BASE,
    DRAM_LINES,
    EXAMPLES,
    PM_BASE,
    PM_LINES,
    SET_CLOCK,
    assert_same,
    call,
    random_stream,
    run_batches,
    scenarios,
    snapshot,
    tiny,
    to_batch,
)

pytestmark = [pytest.mark.ccore,
              pytest.mark.skipif(not native.available(), reason="the C core is not built")]


def c_functional(cfg: MachineConfig) -> Any:
    from pmsim.hw.engines.native_engine import CEngine

    return CEngine(cfg, timed=False)


def poked(e: Any, pokes: list[tuple[int, int]]) -> Any:
    for addr, value in pokes:
        r, w = e.mem.locate(addr)
        e.mem.arrays[r][w] = value
    return e


def functional_view(trace: np.ndarray) -> np.ndarray:
    """A trace without WB events and times: what the functional engines record."""
    out = trace[trace["kind"] != Ev.WB].copy()
    out["time"] = 0.0
    return out


def check_functional(cfg: MachineConfig, pokes: list, seq: list[tuple]) -> None:
    py, c = poked(FunctionalEngine(cfg), pokes), poked(c_functional(cfg), pokes)
    expect = [call(py, o) for o in seq]
    assert [call(c, o) for o in seq] == expect
    want = snapshot(py)
    assert_same(snapshot(c), want)
    cb = poked(c_functional(cfg), pokes)
    for g, x in zip(run_batches(cb, seq), expect, strict=True):
        if g != "lost":
            assert g == x
    assert_same(snapshot(cb), want)

    timed = poked(PyEngine(cfg), pokes)
    assert [call(timed, o) for o in seq] == expect
    for x, y in zip(timed.mem.arrays, py.mem.arrays, strict=True):
        assert np.array_equal(x, y)
    ts, fs = timed.get_stats(), py.get_stats()
    for name in FUNCTIONAL_COUNTERS:
        assert ts[name].tolist() == fs[name].tolist(), name
    tt, ft = functional_view(timed.trace()), py.trace()
    if not any(o[0] == SET_CLOCK for o in seq):
        assert not ft["time"].any()
    ft = ft.copy()
    ft["time"] = 0.0
    assert tt.tobytes() == ft.tobytes()


@settings(max_examples=EXAMPLES)
@given(scenarios())
def test_functional_engines_agree(scenario: tuple) -> None:
    check_functional(*scenario)


@settings(max_examples=max(EXAMPLES // 3, 10))
@given(scenarios(errors=True, pseudo=True))
def test_functional_engines_agree_on_errors_resets_and_clocks(scenario: tuple) -> None:
    check_functional(*scenario)


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("barrier", ["modelled", "fixed"])
def test_functional_long_random_stream(domain: str, barrier: str) -> None:
    cfg = tiny(3, domain, barrier)
    seq = random_stream(np.random.default_rng(11), 4000, 3, (PM_BASE, PM_LINES),
                        (DRAM_BASE, DRAM_LINES), 12)
    check_functional(cfg, [], seq)
    e = c_functional(cfg)
    e.run_batch(to_batch(seq))
    assert snapshot(e)["clocks"] == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("make", [FunctionalEngine, c_functional])
@pytest.mark.parametrize("tid", [3, 64, -1])
def test_bad_thread_raises_config_error_and_changes_nothing(make: Any, tid: int) -> None:
    e = make(tiny())
    e.store(0, PM_BASE, 5)
    before = snapshot(e)
    calls = [("load", (PM_BASE,)), ("store", (PM_BASE, 1)), ("ntstore", (PM_BASE, 1)),
             ("clwb", (PM_BASE,)), ("sfence", ()), ("pcommit", ()), ("cas", (PM_BASE, 5, 6)),
             ("xchg", (PM_BASE, 1)), ("work", (3.0,)), ("mark", (1, 2)), ("persist_barrier", ()),
             ("get_clock", ()), ("set_clock", (5.0,))]
    for name, args in calls:
        with pytest.raises(ConfigError, match=f"thread {tid} does not exist: the machine has 3 cores"):
            getattr(e, name)(tid, *args)
        assert_same(snapshot(e), before)


@pytest.mark.parametrize("make", [FunctionalEngine, c_functional])
def test_bad_addresses_raise_the_reference_error(make: Any) -> None:
    py, e = PyEngine(tiny()), make(tiny())
    for name, args in [("load", (0, PM_BASE + 3)), ("store", (1, 0x0, 1)), ("clwb", (0, 0x200010)),
                       ("cas", (0, 0x200000, 0, 1))]:
        with pytest.raises(ConfigError) as want:
            getattr(py, name)(*args)
        with pytest.raises(ConfigError) as got:
            getattr(e, name)(*args)
        assert str(got.value) == str(want.value)
    assert e.trace_len() == 0 and e.count("loads") == 0


@pytest.mark.parametrize("backend", ["c", "python"])
@pytest.mark.parametrize("timed", [True, False])
def test_count_sums_a_counter_over_threads(backend: str, timed: bool) -> None:
    m = Machine(tiny(), backend=backend, timed=timed)
    for t in range(3):
        for i in range(t + 1):
            m.cpu(t).store(PM_BASE + 8 * i, i)
    m.cpu(1).load(PM_BASE)
    assert m.count("stores") == 6 and m.count("loads") == 1
    assert m.count("stores") == int(m.stats()["stores"].sum())
    with pytest.raises(ConfigError, match="not a counter"):
        m.count("time_ns")


def test_same_public_surface_as_the_timed_engines() -> None:
    public = {n for n in dir(PyEngine) if not n.startswith("_")}
    assert public <= set(dir(FunctionalEngine)) and public <= set(dir(c_functional(tiny())))
    assert not FunctionalEngine.timed and not c_functional(tiny()).timed and PyEngine.timed
