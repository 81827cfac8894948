"""The lock-coupling list: it matches its model on the lock-based and STM runtimes, locks in
the body (real locks, held to the end without lock coupling; none on the STM), and crash
fuzzing on undo passes with two threads."""

from __future__ import annotations

import pytest

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from pmsim import preset
from pmsim.errors import ConfigError
from pmsim.workloads import Session
from pmsim.workloads.list import DELETE, INSERT, LOOKUP, ListModel


def session(runtime: str, threads: int, **params: object) -> Session:
    return Session.create(runtime, "list", preset("marathe-pdom1"), threads=threads, seed=2,
                          txs=25, params={"keys": 12, **params})


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("runtime", ["undo", "redo", "cow", "stm"])
@pytest.mark.parametrize("variant", [{}, {"coupling": True, "ops": 2}])
def test_matches_reference(runtime: str, threads: int, variant: dict[str, object]) -> None:
    s = session(runtime, threads, **variant)
    s.run(25)
    rt, wl = s.runtime, s.workload
    assert rt.commits == 25 * threads
    got = wl.app_data(rt)
    assert got == wl.expected(rt.commit_order)
    assert got != wl.expected([])


def test_model() -> None:
    m = ListModel(6)
    assert m.snapshot() == (1, 3, 5)
    m.apply(((INSERT, 2), (DELETE, 3), (LOOKUP, 5), (DELETE, 4)))
    assert m.snapshot() == (1, 2, 5)


def test_keys_are_owned_by_threads() -> None:
    s = session("undo", 3)
    wl = s.workload
    assert [wl.owned(t) for t in range(3)] == [[1, 4, 7, 10], [2, 5, 8, 11], [3, 6, 9, 12]]
    rng = wl.rng(1)
    for _ in range(20):
        assert all(k in wl.owned(1) for _, k in wl.next_op(1, rng))


def test_body_locks_are_real_on_lock_based_runtimes() -> None:
    """undo holds the coarse fallback (lock 0) and the body's locks to the end; `locks` (lock
    coupling) takes no fallback and releases each body lock at once; the STM takes none."""
    seen: dict[str, list[int]] = {}
    for runtime in ("undo", "locks", "stm"):
        s = session(runtime, 2, coupling=True)
        rt = s.runtime
        peaks: list[int] = []
        orig = type(rt).lock_in_body

        def spy(self, tx, i, _orig=orig, _peaks=peaks):  # type: ignore[no-untyped-def]
            yield from _orig(self, tx, i)
            _peaks.append(len(tx.locks))

        type(rt).lock_in_body = spy  # type: ignore[method-assign]
        try:
            s.run(10)
        finally:
            type(rt).lock_in_body = orig  # type: ignore[method-assign]
        seen[runtime] = peaks
    assert max(seen["undo"]) > 3  # strict 2PL: every node passed is still held
    assert max(seen["locks"]) <= 3  # hand over hand: at most pred, new node, curr
    assert seen["stm"] and max(seen["stm"]) == 0


def test_a_lock_index_out_of_range_is_an_error() -> None:
    s = session("undo", 2)

    def body(tx):  # type: ignore[no-untyped-def]
        yield from tx.lock(99)

    s.workload.body = lambda tx, op: body(tx)  # type: ignore[method-assign]
    with pytest.raises(ConfigError, match="tx.lock"):
        s.run(1)


def test_crash_fuzz_on_undo_two_threads() -> None:
    rep = fuzz(FuzzConfig(runtime="undo", workload="list", domain="pdom1", threads=2, txs=8,
                          idempotence=2))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive and rep.states_checked > 0
