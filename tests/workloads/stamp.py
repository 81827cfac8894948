"""What the STAMP workloads' tests share: a session on the NV-HTM machine, a run checked
against the reference model and recovered, and the small crash-fuzz campaign."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import crashfuzz
from pmsim import preset
from pmsim.workloads import Session

RUNTIMES = ("undo", "redo", "cow", "nvhtm", "nvhtm-nlp", "phtm", "pstm", "htm")
"""One runtime of each kind: lock-based, NV-HTM's variants and baselines, volatile HTM."""


def session(workload: str, small: Mapping[str, Any], runtime: str, threads: int, txs: int,
            seed: int = 1, **params: Any) -> Session:
    cfg = preset("nvhtm-xeon").replace(cores=max(threads, 2))
    return Session.create(runtime, workload, cfg, threads=threads, seed=seed, txs=txs,
                          params={**small, **params})


def run_checked(s: Session, runtime: str, txs: int, threads: int) -> Hashable:
    """Run ``txs`` transactions a thread; every one commits, the data is the reference's, and
    (on a durable runtime) a recovery of the final image gives it too. Returns the data."""
    s.run(txs)
    rt, wl = s.runtime, s.workload
    assert rt.commits == txs * threads
    data = wl.app_data(rt)
    assert data == wl.expected(rt.commit_order)
    if runtime != "htm":
        rec = s.recover(s.machine.pm_image())
        assert rec.errors == [] and rec.data == wl.expected(rt.commit_order)
    return data


def calls(monkeypatch: Any, name: str) -> list[Any]:
    """The arguments of every ``Tx.<name>`` call from now on (allocations, frees), which still
    run: what a paper's log would leave out can be taken off a runtime's counts."""
    from pmsim.runtimes.base import Tx

    seen: list[Any] = []
    method = getattr(Tx, name)

    def spy(tx: Any, arg: Any) -> Any:
        seen.append(arg)
        return method(tx, arg)

    monkeypatch.setattr(Tx, name, spy)
    return seen


def fuzz(runtime: str, workload: str, txs: int = 3, **more: Any) -> crashfuzz.Report:
    """The small exhaustive campaign: 2 threads, 3 transactions each (by default)."""
    return crashfuzz.fuzz(runtime=runtime, workload=workload, threads=2, txs=txs, budget=4096,
                          samples=16, idempotence=1, depth_runs=1, **more)
