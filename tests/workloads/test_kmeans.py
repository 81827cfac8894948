"""STAMP's Kmeans: the reference model on every kind of runtime, the transactions' shape (one
count and the features per point, a work-index claim every chunk), its sizing against Table 2
of NV-HTM, contention that falls with more clusters, and crash consistency."""

from __future__ import annotations

from typing import Any

import pytest

import crashfuzz
from pmsim.errors import ConfigError
from pmsim.workloads import Kmeans, Session
from pmsim.workloads.kmeans import CLAIM, FIXED_ONE, POINT

from . import stamp

SMALL = {"clusters": 3, "features": 4, "chunk": 2}


def session(runtime: str, threads: int, txs: int = 24, **params: Any) -> Session:
    return stamp.session("kmeans", SMALL, runtime, threads, txs, **params)


@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("runtime", stamp.RUNTIMES)
def test_matches_reference_and_recovers(runtime: str, threads: int) -> None:
    s = session(runtime, threads)
    lens, sums, index = stamp.run_checked(s, runtime, 24, threads)
    points = sum(1 for op in s.workload.executed.values() if op[0] == POINT)
    claims = sum(1 for op in s.workload.executed.values() if op[0] == CLAIM)
    assert sum(lens) == points and index == claims * SMALL["chunk"]
    assert points == 2 * claims  # chunk 2: two points, then a claim, eight times a thread


def test_ops_follow_stamp_chunks() -> None:
    wl = Kmeans(threads=2, seed=3, clusters=15, features=32, chunk=3)
    rng = wl.rng(1)
    ops = [wl.next_op(1, rng) for _ in range(12)]
    assert [op[0] for op in ops] == [POINT, POINT, POINT, CLAIM] * 3
    for op in ops:
        if op[0] == POINT:
            assert 0 <= op[1] < 15 and len(op) == 2 + 32
            assert all(0 <= f < FIXED_ONE for f in op[2:])
        else:
            assert op == (CLAIM, 3)


def test_log_writes_per_transaction_follow_stamps_shape() -> None:
    """NV-HTM NLP logs each point's count and 32 sums plus a marker (34 slots) and each claim's
    word plus a marker (2): (3 x 34 + 2) / 4 = 26 writes a transaction on STAMP's input, where
    NV-HTM's Table 2 gives 27.00 for Kmeans (within 4%)."""
    s = session("nvhtm-nlp", 1, txs=40, clusters=15, features=32, chunk=3)
    s.run(40)
    c = s.runtime.counters()
    assert c["nvhtm.paper_writes"] / (c["nvhtm.updates"] + c["nvhtm.read_only"]) == 26.0
    assert abs(26.0 / 27.00 - 1) < 0.04


def test_compute_outside_the_transaction_is_charged() -> None:
    """The nearest-centre search costs clusters x features x term_ns of simulated time."""
    times = []
    for term in (0.0, 2.0):
        s = session("nvhtm-nlp", 1, txs=12, clusters=15, features=32, chunk=3, term_ns=term)
        s.run(12)
        times.append(s.machine.now)
    points = 9  # 12 transactions: three chunks of three points and a claim
    assert times[1] - times[0] == pytest.approx(points * 15 * 32 * 2.0, rel=0.02)


def test_fewer_clusters_conflict_more() -> None:
    """Kmeans-High (15 clusters) has more HTM conflicts a transaction than Kmeans-Low (40)."""
    rates = []
    for clusters in (15, 40):
        s = session("nvhtm-nlp", 4, txs=60, clusters=clusters, features=32, chunk=3)
        s.run(60)
        c = s.runtime.counters()
        rates.append(c["htm.conflict"] / c["htm.attempts"])
    assert rates[0] > rates[1]


@pytest.mark.parametrize("params, match", [
    ({"clusters": 0}, "clusters"),
    ({"features": 0}, "features"),
    ({"chunk": 0}, "chunk"),
    ({"term_ns": -1.0}, "term_ns"),
])
def test_bad_parameters(params: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        Kmeans(threads=1, **params)


@pytest.mark.parametrize("runtime", ["nvhtm", "undo"])
def test_crash_fuzzing(runtime: str) -> None:
    rep = stamp.fuzz(runtime, "kmeans")
    assert rep.ok, crashfuzz.format_report(rep)


@pytest.mark.parametrize("mutant", ["nvhtm:M1", "nvhtm:M2", "nvhtm:M7"])
def test_crash_fuzzing_catches_nvhtm_mutants(mutant: str) -> None:
    """The same campaign fails on NV-HTM with a persist step dropped (it can fail)."""
    assert not stamp.fuzz(mutant, "kmeans").ok
