"""STAMP's SSCA2 kernel 1: the reference model and recovery on every kind of runtime, the
transaction's shape (an in-degree and an implied-edge slot), full vertices, crash consistency."""

from __future__ import annotations

from typing import Any

import pytest

import crashfuzz
from pmsim.errors import ConfigError
from pmsim.workloads import Session, Ssca2

from . import stamp

SMALL = {"vertices": 512, "max_cluster": 3}


def session(runtime: str, threads: int, txs: int = 30, **params: Any) -> Session:
    return stamp.session("ssca2", SMALL, runtime, threads, txs, **params)


@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("runtime", stamp.RUNTIMES)
def test_matches_reference_and_recovers(runtime: str, threads: int) -> None:
    data = stamp.run_checked(session(runtime, threads), runtime, 30, threads)
    assert sum(d for d, _ in data) == 30 * threads  # 512 vertices, 3 slots: none fills here


def test_a_full_vertex_takes_no_more_edges() -> None:
    s = session("nvhtm-nlp", 1, txs=40, vertices=2, max_cluster=2)
    s.run(40)
    data = s.workload.app_data(s.runtime)
    assert [d for d, _ in data] == [2, 2]
    assert data == s.workload.expected(s.runtime.commit_order)


def test_two_words_and_a_marker_a_transaction() -> None:
    """NV-HTM NLP logs the in-degree, the slot and a commit marker: 3 slots a transaction
    (NV-HTM's Table 2 counts 4.000 for SSCA2)."""
    s = session("nvhtm-nlp", 1, txs=40, vertices=1 << 12, max_cluster=4)
    s.run(40)
    c = s.runtime.counters()
    assert c["nvhtm.paper_writes"] / c["nvhtm.updates"] == 3.0


def test_the_scan_is_charged_outside_the_transaction() -> None:
    times = []
    for scan in (0.0, 100.0):
        s = session("nvhtm-nlp", 1, txs=10, scan_ns=scan)
        s.run(10)
        times.append(s.machine.now)
    assert times[1] - times[0] == pytest.approx(10 * 100.0, rel=0.02)


@pytest.mark.parametrize("params, match", [
    ({"vertices": 1}, "vertices"),
    ({"max_cluster": 0}, "max_cluster"),
    ({"scan_ns": -1.0}, "scan_ns"),
])
def test_bad_parameters(params: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        Ssca2(threads=1, **params)


@pytest.mark.parametrize("runtime, ok", [("nvhtm", True), ("undo", True), ("nvhtm:M1", False)])
def test_crash_fuzzing(runtime: str, ok: bool) -> None:
    rep = stamp.fuzz(runtime, "ssca2")
    assert rep.ok is ok, crashfuzz.format_report(rep)
