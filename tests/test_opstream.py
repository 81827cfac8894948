"""The built-in op stream: determinism, quantum independence, and its instruction mix."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest

from pmsim import Machine, MachineConfig
from pmsim.config import Region, describe
from pmsim.errors import ConfigError
from pmsim.opstream import OpStream, run_opstream
from pmsim.trace import Ev

SPEC = OpStream(ops=1500, array_kib=256, batch=4)
CFG = MachineConfig(regions=(Region("pm", 0, 4 << 20, "pm"), Region("dram", 1 << 30, 1 << 16, "dram")))


def run(backend: str, cfg: MachineConfig = CFG, spec: OpStream = SPEC, **changes: Any) -> Machine:
    if backend == "c" and importlib.util.find_spec("pmsim.hw.engines.native_engine") is None:
        pytest.skip("the C engine module pmsim.hw.engines.native_engine does not exist yet")
    m = Machine(cfg.replace(**changes) if changes else cfg, backend=backend)
    assert run_opstream(m, spec) is m
    return m


def same(a: Machine, b: Machine) -> bool:
    return (np.array_equal(a.stats(), b.stats()) and np.array_equal(a.trace().events, b.trace().events)
            and np.array_equal(a.pm_image(), b.pm_image()))


@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
def test_same_config_and_seed_give_identical_results(backend: str, domain: str) -> None:
    a = run(backend, domain=domain, seed=3)
    b = run(backend, domain=domain, seed=3)
    assert same(a, b)
    assert len(a.trace()) > 1000


def test_different_seeds_give_different_runs(backend: str) -> None:
    a = run(backend, seed=1)
    b = run(backend, seed=2)
    assert not np.array_equal(a.trace().events, b.trace().events)


@pytest.mark.parametrize("barrier", ["modelled", "fixed"])
def test_single_thread_results_do_not_depend_on_the_quantum(backend: str, barrier: str) -> None:
    runs = [run(backend, cores=1, barrier=barrier, quantum_ns=q) for q in (7.0, 1000.0, 1e12)]
    assert same(runs[0], runs[1]) and same(runs[1], runs[2])


def test_instruction_mix_matches_the_stream(backend: str) -> None:
    m = run(backend, cores=1)
    s = m.stats()[0]
    updates = int(s["clwb"]) // 2
    assert updates > 0
    # per iteration: one load and one DRAM store; per update: two PM stores and two clwb
    assert s["stores"] == s["loads"] + 2 * updates
    assert s["persist_barriers"] == updates // SPEC.batch
    assert s["sfence"] == s["persist_barriers"]  # PDOM-1: one sfence per barrier
    ops = s["loads"] + s["stores"] + s["clwb"] + s["persist_barriers"]
    assert SPEC.ops <= ops < SPEC.ops + 6
    ev = m.trace().events
    assert (ev["kind"] == Ev.STORE).sum() == 2 * updates
    assert (ev["kind"] == Ev.CLWB).sum() == s["clwb"]
    assert s["dram_read_bytes"] > 0


def test_update_ratio_follows_write_ratio(backend: str) -> None:
    lo = run(backend, cores=1, spec=OpStream(ops=1500, array_kib=256, write_ratio=0.05))
    hi = run(backend, cores=1, spec=OpStream(ops=1500, array_kib=256, write_ratio=0.9))
    assert lo.stats()[0]["clwb"] < hi.stats()[0]["clwb"]


def test_each_thread_logs_to_its_own_range(backend: str) -> None:
    m = run(backend, cores=2)
    ev = m.trace().events
    log_base = SPEC.array_kib * 1024
    for tid in (0, 1):
        logs = ev[(ev["kind"] == Ev.STORE) & (ev["tid"] == tid) & (ev["addr"] >= log_base)]["addr"]
        assert len(logs) > 0
        assert (logs >= log_base + tid * (1 << 20)).all() and (logs < log_base + (tid + 1) * (1 << 20)).all()


def test_runs_without_a_dram_region(backend: str) -> None:
    m = run(backend, regions=(Region("pm", 0, 4 << 20, "pm"),), cores=1)
    s = m.stats()[0]
    assert s["dram_read_bytes"] == 0 and s["dram_write_bytes"] == 0 and s["loads"] > 0


def test_pm_too_small_is_a_clear_error(backend: str) -> None:
    with pytest.raises(ConfigError, match="the op stream needs .* bytes of PM"):
        run(backend, regions=(Region("pm", 0, 1 << 20, "pm"),))


def test_opstream_fields_are_documented() -> None:
    rows = describe(OpStream())
    assert [r[0] for r in rows] == ["ops", "array_kib", "batch", "write_ratio"]
    assert all(r[3] for r in rows)
