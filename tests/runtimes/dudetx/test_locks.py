"""Lock-based DUDETx: runs match the reference model, acknowledgement follows the dependency
graph, two-round detection handles the cycles one-round refuses, crash fuzzing passes with two
threads in every domain, and the card's lock mutants (M14, M14b, M15) are killed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import crashfuzz
from crashfuzz import Campaign, FuzzConfig, fuzz
from pmsim import preset
from pmsim.errors import PmsimError
from pmsim.runtimes import get_mutant, get_runtime
from pmsim.runtimes.dudetx.locks import DudeTxLocksRuntime, Node, tarjan
from pmsim.trace import Ev, Mark
from pmsim.workloads import Session

SMALL: dict[str, dict[str, Any]] = {
    "bank": {"accounts": 6, "initial": 50, "max_amount": 40},
    "list": {"keys": 8},
    "list-cyclic": {"keys": 7, "ops": 2, "coupling": True},
    "btree": {"trees": 2},
}


def session(workload: str, threads: int, runtime: Any = "dudetx-locks-1r", seed: int = 2,
            txs: int = 30) -> Session:
    name = workload.split("-")[0]
    return Session.create(runtime, name, preset("marathe-pdom1"), threads=threads, seed=seed,
                          txs=txs, params=SMALL[workload])


def _marks(s: Session, code: Mark) -> list[tuple[int, int]]:
    ev = s.machine.trace().events
    idx = np.nonzero((ev["kind"] == Ev.MARK) & (ev["aux"] == int(code)))[0]
    return [(int(i), int(ev["value"][i])) for i in idx]


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize(("runtime", "workload"), [
    ("dudetx-locks-1r", "bank"), ("dudetx-locks-1r", "list"), ("dudetx-locks-1r", "btree"),
    ("dudetx-locks-2r", "bank"), ("dudetx-locks-2r", "list-cyclic"), ("locks", "list-cyclic")])
def test_matches_reference(runtime: str, workload: str, threads: int) -> None:
    s = session(workload, threads, runtime)
    s.run(30)
    rt, wl = s.runtime, s.workload
    assert rt.commits + rt.aborts == 30 * threads
    assert wl.app_data(rt) == wl.expected(rt.commit_order)
    assert wl.app_data(rt) != wl.expected([])
    if not rt.durable:
        return
    assert not rt._graph and not rt._units  # everything detected and reproduced
    assert rt.Rt == rt._nseq == rt._watermarks()
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == []
    assert rec.data == wl.expected(rt.commit_order)


@pytest.mark.parametrize("runtime", ["dudetx-locks-1r", "dudetx-locks-2r"])
def test_every_commit_is_acknowledged_once_in_program_order(runtime: str) -> None:
    s = session("bank", 3, runtime, txs=25)
    s.run(25)
    rt = s.runtime
    commits = _marks(s, Mark.TX_COMMIT)
    durable = _marks(s, Mark.TX_DURABLE)
    assert sorted(t for _, t in durable) == sorted(rt.commit_order) == sorted(t for _, t in commits)
    at = {t: i for i, t in commits}
    assert all(i > at[t] for i, t in durable)
    for tid in range(3):
        mine = [t for _, t in durable if t >> 32 == tid]
        assert mine == sorted(mine)
    assert [t for _, t in commits] == rt.commit_order
    ev = s.machine.trace().events
    dur = (ev["kind"] == Ev.MARK) & (ev["aux"] == int(Mark.TX_DURABLE))
    assert set(ev["tid"][dur].tolist()) == {5}  # the detector's core (3 workers, then 3 threads)


def test_no_pm_store_on_the_critical_path() -> None:
    """Perform writes only DRAM: worker cores issue no PM store, flush or fence."""
    s = session("list-cyclic", 2, "dudetx-locks-2r")
    s.run(20)
    ev = s.machine.trace().events
    pm = np.isin(ev["kind"], [int(Ev.STORE), int(Ev.CLWB), int(Ev.SFENCE)])
    assert set(ev["tid"][pm].tolist()) <= {2, 3}  # persist and reproduce threads


def test_two_round_handles_a_cycle_that_one_round_refuses() -> None:
    with pytest.raises(PmsimError, match="cycle"):
        session("list-cyclic", 2, "dudetx-locks-1r").run(30)
    s = session("list-cyclic", 2, "dudetx-locks-2r")
    s.run(30)
    rt, wl = s.runtime, s.workload
    assert rt.cycles > 0 and rt.scc_merged > 0
    assert wl.app_data(rt) == wl.expected(rt.commit_order)
    # an SCC is one unit: its members are acknowledged by one detection step
    durable = dict((t, i) for i, t in _marks(s, Mark.TX_DURABLE))
    assert len(durable) == rt.commits


def test_one_round_on_the_paper_list_is_acyclic() -> None:
    """The paper's list (one operation, optimistic search, validate) is 2PL for what it writes:
    a release after which nothing was written keeps the lock's stamp, so no cycle forms."""
    s = session("list", 4, "dudetx-locks-1r")
    s.run(40)
    assert s.runtime.cycles == 0
    assert s.workload.app_data(s.runtime) == s.workload.expected(s.runtime.commit_order)


def test_full_graph_buffer_blocks_workers() -> None:
    class Tiny(DudeTxLocksRuntime):
        name = "dudetx-locks-tiny-graph"
        detection = "two-round"
        graph_nodes = 4

    s = session("list-cyclic", 2, Tiny)
    s.run(20)
    rt, wl = s.runtime, s.workload
    assert rt.graph_stalls > 0 and rt.graph_stall_ns > 0
    assert rt.counters()["graph_stalls"] == rt.graph_stalls
    assert wl.app_data(rt) == wl.expected(rt.commit_order)


def test_tarjan_orders_sccs_topologically() -> None:
    a, b, c, d = (Node(0, i, i, 0.0) for i in range(1, 5))
    a.succs, b.succs, c.succs = {b}, {c}, {b, d}  # a -> {b <-> c} -> d
    sccs, edges = tarjan([d, c, b, a], {a, b, c, d})
    order = [sorted(n.seq for n in comp) for comp in reversed(sccs)]
    assert order == [[1], [2, 3], [4]] and edges == 4


def test_steps_are_declared() -> None:
    names = [st.name for st in get_runtime("dudetx-locks-2r").persist_steps()]
    assert names and all(n.startswith("dudetx-locks.") for n in names)


# -- crash fuzzing -------------------------------------------------------------------------------

FUZZ = [("dudetx-locks-1r-fine", "bank", ()), ("dudetx-locks-2r-fine", "bank", ()),
        ("dudetx-locks-1r-fine", "list", (("ops", 1), ("coupling", False))),
        ("dudetx-locks-2r-fine", "list", ())]


@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize(("runtime", "workload", "params"), FUZZ)
def test_crash_fuzzing(runtime: str, workload: str, params: tuple[tuple[str, Any], ...],
                       domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime=runtime, workload=workload, domain=domain, threads=2, txs=10,
                          idempotence=2, params=params))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive and rep.states_checked > 0 and rep.deep_runs > 0


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
def test_long_campaign(domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime="dudetx-locks-2r-fine", workload="list", domain=domain,
                          threads=3, txs=20, idempotence=4))
    assert rep.ok, crashfuzz.format_report(rep)


# -- mutants -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["M14", "M14-cycle", "M14b", "M15"])
def test_mutant_killed(name: str) -> None:
    m = get_mutant(f"dudetx-locks:{name}")
    rep = fuzz(FuzzConfig(runtime=m.name, domain="pdom1", threads=max(2, m.threads), txs=8,
                          idempotence=2, reduce=False, budget=4096, new_tx=3, stop_at_first=True,
                          workload=m.workload or "bank"))
    assert not rep.ok, f"{m.name} survived"


def test_m14b_is_visible_without_a_crash() -> None:
    """An SCC replayed whole transaction by whole transaction leaves NVM, after Reproduce of the
    crash-free run, different from the serial oracle; the correct runtime's equals it."""
    for runtime, same in (("dudetx-locks:M14b", False), ("dudetx-locks-2r", True)):
        c = Campaign(FuzzConfig(runtime=runtime, domain="pdom1", threads=2, txs=8,
                                workload="list"))
        s = c.session
        assert s.runtime.scc_merged > 0
        assert (s.workload.app_data(s.runtime) == s.workload.expected(s.runtime.commit_order)) \
            is same
