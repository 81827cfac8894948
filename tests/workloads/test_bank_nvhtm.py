"""Bank's NV-HTM extension: read-only transactions summing r accounts, update fraction u and w
transfers per update; the defaults draw exactly the transfers Bank drew before it."""

from __future__ import annotations

from typing import Any

import pytest

import crashfuzz
from pmsim import preset
from pmsim.errors import ConfigError
from pmsim.runtimes import PMSpec, StaticArray
from pmsim.workloads import Bank, Session
from pmsim.workloads.bank import READ

FROZEN: dict[tuple[tuple[tuple[str, int], ...], int, int], list[tuple[int, int, int]]] = {
    ((), 0, 0): [(12, 10, 17), (0, 4, 1), (2, 13, 55), (7, 9, 44), (9, 8, 57), (4, 13, 1),
                 (5, 13, 3), (11, 15, 11), (13, 1, 33), (4, 1, 26), (0, 6, 8), (0, 10, 39)],
    ((), 1, 1): [(5, 7, 37), (9, 8, 10), (12, 13, 2), (11, 1, 27), (6, 15, 49), (11, 4, 36),
                 (3, 2, 18), (14, 0, 1), (3, 12, 52), (13, 15, 27), (4, 6, 2), (15, 12, 8)],
    ((("accounts", 4),), 5, 0): [(3, 2, 49), (1, 2, 18), (0, 2, 24), (3, 1, 3), (3, 0, 60),
                                 (0, 2, 15), (1, 0, 59), (0, 3, 51), (0, 1, 30), (1, 2, 4),
                                 (2, 3, 17), (3, 1, 4)],
    ((("accounts", 6), ("max_amount", 40)), 1, 1): [
        (1, 2, 25), (3, 5, 7), (5, 4, 1), (3, 0, 18), (2, 5, 33), (3, 1, 24), (1, 0, 12),
        (4, 0, 1), (1, 4, 35), (4, 5, 18), (1, 2, 1), (5, 4, 5)],
}
"""Ops drawn by Bank before the extension (generated from that code), by (params, seed, tid)."""


@pytest.mark.parametrize("extra", [{}, {"u": 1.0}, {"u": 1.0, "w": 1, "r": 2}])
@pytest.mark.parametrize("key", sorted(FROZEN))
def test_defaults_draw_the_same_transfers_as_before(key: Any, extra: dict[str, Any]) -> None:
    params, seed, tid = key
    wl = Bank(threads=2, seed=seed, **dict(params), **extra)
    rng = wl.rng(tid)
    assert [wl.next_op(tid, rng) for _ in range(12)] == FROZEN[key]


def test_default_spec_and_locks_are_unchanged() -> None:
    wl = Bank(threads=2)
    assert wl.spec() == PMSpec(statics=(StaticArray("accounts", 16, 1),), max_tx_writes=2,
                               max_tx_words=2, max_tx_allocs=0, max_tx_objects=2)
    assert wl.nlocks() == 16
    assert tuple(wl.locks_of((3, 7, 5))) == (3, 7)


class Summing(Bank):
    """Records each read-only transaction's sum by txid."""

    def summed(self, tx: Any, op: tuple[int, ...], total: int) -> None:
        self.sums = getattr(self, "sums", {})
        self.sums[tx.txid] = total


def run(runtime: str, threads: int, txs: int = 25, **params: Any) -> Session:
    cfg = preset("marathe-pdom1").replace(cores=threads)
    return Session.create(runtime, Summing, cfg, threads=threads, seed=2, txs=txs,
                          params={"accounts": 8, "initial": 50, "max_amount": 40, **params})


@pytest.mark.parametrize("runtime", ["undo", "redo", "cow"])
def test_read_only_transactions_leave_data_unchanged(runtime: str) -> None:
    s = run(runtime, 2, u=0.0, r=3)
    before = s.workload.app_data(s.runtime)
    s.run(25)
    assert s.runtime.commits == 50 and s.runtime.aborts == 0
    assert s.workload.app_data(s.runtime) == before == (50,) * 8
    assert set(s.workload.sums.values()) == {150}  # type: ignore[attr-defined]
    assert all(op[0] == READ and len(op) == 4 for op in s.workload.executed.values())


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("runtime", ["undo", "redo", "cow"])
def test_mixed_runs_match_the_model_and_sums_are_serializable(runtime: str, threads: int) -> None:
    s = run(runtime, threads, u=0.6, r=0, w=2)
    s.run(25)
    rt, wl = s.runtime, s.workload
    assert wl.app_data(rt) == wl.expected(rt.commit_order)
    assert sum(wl.app_data(rt)) == 8 * 50
    kinds = {op[0] == READ for op in wl.executed.values()}
    assert kinds == {True, False} and rt.aborts > 0
    model = wl.model()
    checked = 0
    for t in rt.commit_order:
        op = wl.executed[t]
        if op[0] == READ:
            bal = model.snapshot()
            assert wl.sums[t] == sum(bal[a] for a in op[1:]) == 400  # type: ignore[attr-defined]
            checked += 1
        model.apply(op)
    assert checked == len(wl.sums)  # type: ignore[attr-defined]
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == [] and rec.data == wl.expected(rt.commit_order)


def test_an_overdraft_in_any_transfer_aborts_the_whole_transaction() -> None:
    m = Bank(accounts=3, initial=10, w=2).model()
    m.apply((0, 1, 5, 2, 0, 20))  # the second transfer overdraws: nothing happens
    assert m.snapshot() == (10, 10, 10)
    m.apply((0, 1, 5, 1, 2, 15))
    assert m.snapshot() == (5, 0, 25)
    m.apply((READ, 0, 1, 2))
    assert m.snapshot() == (5, 0, 25)


def test_u_below_one_draws_read_only_transactions_of_r_distinct_accounts() -> None:
    wl = Bank(seed=1, u=0.25, r=5)
    ops = [wl.next_op(0, wl.rng(0)) for _ in range(400)]
    reads = [op for op in ops if op[0] == READ]
    assert 0.65 < len(reads) / len(ops) < 0.85
    assert all(len(set(op[1:])) == 5 for op in reads)
    assert all(len(op) == 3 for op in ops if op[0] != READ)
    assert Bank(threads=2, w=3).spec().max_tx_writes == 6


@pytest.mark.parametrize("params,match", [
    ({"u": 1.5}, "u=1.5"),
    ({"u": -0.1}, "u=-0.1"),
    ({"r": 17}, "r=17"),
    ({"accounts": 4, "r": 5}, "r=5"),
    ({"w": 0}, "w=0"),
])
def test_bad_parameters(params: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        Bank(**params)


@pytest.mark.parametrize("runtime,domain", [("undo", "pdom1"), ("redo", "pdom1"),
                                            ("cow", "pdom1"), ("undo", "pdom0")])
def test_crash_fuzzing_with_read_only_transactions(runtime: str, domain: str) -> None:
    cow = runtime == "cow"
    rep = crashfuzz.fuzz(runtime=runtime, workload="bank", domain=domain, threads=2, txs=3,
                         params={"accounts": 4, "u": 0.5, "r": 3, "w": 2},
                         budget=512 if cow else 65536, samples=32, idempotence=1, depth_runs=1)
    assert rep.ok, crashfuzz.format_report(rep)
