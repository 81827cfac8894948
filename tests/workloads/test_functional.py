"""Every workload gives its reference model's data on every runtime, 1 and 2 threads."""

from __future__ import annotations

import pytest

from pmsim import preset
from pmsim.errors import ConfigError, UnknownNameError
from pmsim.workloads import Session, get_workload

RUNTIMES = ("undo", "undo-2pb", "redo", "cow")
SMALL = {
    "array": {"slots": 128, "per_tx": 6, "write_pct": 50},
    "array-raw": {"slots": 128, "per_tx": 4, "slot_words": 3, "write_pct": 75},
    "bank": {"accounts": 6, "initial": 50, "max_amount": 40},
    "kv": {"buckets": 4, "keys": 24},
    "alloc-x": {"x": 3, "groups": 2, "abort_pct": 25},
}


def session(runtime: str, workload: str, threads: int, seed: int = 1, txs: int = 25) -> Session:
    cfg = preset("marathe-pdom1").replace(cores=threads)
    return Session.create(runtime, workload, cfg, threads=threads, seed=seed, txs=txs,
                          params=SMALL[workload])


@pytest.mark.parametrize("workload", sorted(SMALL))
@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("threads", [1, 2])
def test_matches_reference(runtime: str, workload: str, threads: int) -> None:
    s = session(runtime, workload, threads)
    s.run(25)
    rt, wl = s.runtime, s.workload
    assert rt.commits + rt.aborts == 25 * threads
    assert wl.app_data(rt) == wl.expected(rt.commit_order)
    assert wl.app_data(rt) != wl.expected([])  # the run changed something
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == []
    assert rec.data == wl.expected(rt.commit_order)


@pytest.mark.parametrize("workload", sorted(SMALL))
def test_same_data_on_every_runtime(workload: str) -> None:
    snaps = set()
    for runtime in RUNTIMES:
        s = session(runtime, workload, 1, seed=7)
        s.run(30)
        snaps.add(s.workload.app_data(s.runtime))
    assert len(snaps) == 1


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_deterministic(runtime: str) -> None:
    runs = []
    for _ in range(2):
        s = session(runtime, "kv", 2, seed=3)
        s.run(20)
        runs.append((s.workload.app_data(s.runtime), s.runtime.commit_order,
                     s.machine.stats().tobytes()))
    assert runs[0] == runs[1]


def test_bank_conserves_money_and_aborts() -> None:
    s = session("undo", "bank", 2, seed=5)
    s.run(40)
    data = s.workload.app_data(s.runtime)
    assert sum(data) == 6 * 50
    assert s.runtime.aborts > 0


def test_alloc_x_reuses_blocks() -> None:
    s = session("redo", "alloc-x", 1)
    s.run(40)
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == []
    assert len(rec.data) == 3 * 2  # every root slot holds a live block


def test_expected_rejects_unknown_txid() -> None:
    s = session("undo", "bank", 1)
    with pytest.raises(Exception, match="not executed"):
        s.workload.expected([12345])


def test_bad_workload_input() -> None:
    with pytest.raises(UnknownNameError, match="array"):
        get_workload("arrray")
    with pytest.raises(UnknownNameError, match="slot_words"):
        get_workload("array")(slot_word=4)
    with pytest.raises(ConfigError, match="write_pct"):
        get_workload("array")(write_pct=101)
    with pytest.raises(ConfigError, match="not a valid int"):
        get_workload("bank")(accounts="many")
    with pytest.raises(ConfigError, match="threads"):
        get_workload("kv")(threads=0)


def test_large_array_needs_no_python_list() -> None:
    """10 M slots: a PM address range, formatted and read back without per-slot Python work."""
    s = Session.create("undo", "array", preset("marathe-pdom2").replace(cores=1), txs=5,
                       params={"slots": 10_000_000, "slot_words": 4})
    s.run(5)
    assert s.workload.app_data(s.runtime) == s.workload.expected(s.runtime.commit_order)
