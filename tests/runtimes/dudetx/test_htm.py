"""DUDETx with HTM Perform: runs match the reference model, the ID is taken by a conflict-exempt
fetch-and-add as the last action before XEND (dense, in commit order), capacity aborts grow with
the vlog entries in the write set, crash fuzzing passes in every domain and the mutants die."""

from __future__ import annotations

from typing import Any

import pytest

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from pmsim import preset
from pmsim.runtimes import get_mutant
from pmsim.runtimes.dudetx.mutants import Claim
from pmsim.runtimes.registry import MUTANTS
from pmsim.trace import Ev, Mark
from pmsim.workloads import Session

SMALL = {
    "bank": {"accounts": 6, "initial": 50, "max_amount": 40},
    "kv": {"buckets": 4, "keys": 24},
    "array": {"slots": 64, "per_tx": 4, "write_pct": 50},
}


def session(workload: str, threads: int, runtime: Any = "dudetx-htm", seed: int = 1,
            txs: int = 30, params: dict[str, Any] | None = None, cfg: Any = None) -> Session:
    return Session.create(runtime, workload, cfg or preset("marathe-pdom1"), threads=threads,
                          seed=seed, txs=txs, params=params or SMALL[workload])


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("workload", sorted(SMALL))
def test_matches_reference(workload: str, threads: int) -> None:
    s = session(workload, threads)
    s.run(30)
    rt, wl = s.runtime, s.workload
    assert rt.commits + rt.aborts == 30 * threads
    assert wl.app_data(rt) == wl.expected(rt.commit_order)
    assert rt.R == rt.D == s.machine.peek(rt._ctr)  # dense IDs, all persisted and reproduced
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == []
    assert rec.data == wl.expected(rt.commit_order)
    if threads > 1:
        assert rt.runner.total().conflict > 0  # hardware transactions do conflict


def test_ids_follow_commit_order_and_both_paths_are_used() -> None:
    """TX_COMMIT markers are in ID order (a record per update transaction, IDs 1..n); with four
    threads on bank some transactions fall back to the SGL."""
    s = session("bank", 4)
    seen: list[int] = []
    orig = s.runtime._queue

    def queue(tx: Any) -> None:
        if s.runtime._cur[tx.tid]:
            seen.append(tx.ident)
        orig(tx)

    s.runtime._queue = queue  # type: ignore[method-assign]
    s.run(30)
    rt = s.runtime
    assert seen == list(range(1, len(seen) + 1))
    ev = s.machine.trace().events
    commits = ev["value"][(ev["kind"] == Ev.MARK) & (ev["aux"] == int(Mark.TX_COMMIT))].tolist()
    assert commits == rt.commit_order
    st = rt.runner.total()
    assert st.fallbacks > 0 and st.commits > 0


def test_counter_line_is_exempt() -> None:
    """The runtime marks the ID counter's line exempt: a fetch-and-add on it inside a live
    transaction is applied at once, and neither another transaction's nor a plain access to it
    aborts anybody."""
    s = session("bank", 2)
    rt, m = s.runtime, s.machine
    c0, c1 = m.cpu(0), m.cpu(1)
    before = m.peek(rt._ctr)
    c0.xbegin()
    c1.xbegin()
    a = rt._take_id(c0)
    b = rt._take_id(c1)
    assert (a, b) == (before + 1, before + 2) and m.peek(rt._ctr) == before + 2
    m.cpu(2).load(rt._ctr)
    assert c0.xend() == 0 and c1.xend() == 0


def test_capacity_aborts_grow_with_vlog_entries() -> None:
    """Log entries double the write footprint (card §5): with a small write set, DUDETx-HTM
    overflows where the volatile HTM fits."""
    cfg = preset("marathe-pdom1").replace(**{"htm.write_set_lines": 6})
    params = {"slots": 4096, "per_tx": 5, "write_pct": 100}
    cap = {}
    for rt in ("htm", "dudetx-htm"):
        s = session("array", 1, runtime=rt, params=params, cfg=cfg)
        s.run(30)
        cap[rt] = s.runtime.runner.total().capacity
    assert cap["htm"] == 0 and cap["dudetx-htm"] > 10, cap


# -- crash fuzzing -------------------------------------------------------------------------------

@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize("workload", ["bank", "kv"])
def test_crash_fuzzing_two_threads_is_exhaustive_and_passes(workload: str, domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime="dudetx-htm-fine", workload=workload, domain=domain, threads=2,
                          txs=10, idempotence=2))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive and rep.states_checked > 0 and rep.deep_runs > 0


def test_claim_workload_passes_on_the_correct_runtime() -> None:
    rep = fuzz(FuzzConfig(runtime="dudetx-htm-fine", domain="pdom1", threads=2, txs=8,
                          idempotence=1), workload=Claim)
    assert rep.ok, crashfuzz.format_report(rep)


# -- mutants -------------------------------------------------------------------------------------

CARD = ("M11", "M12")


def test_card_mutants_are_registered() -> None:
    assert {f"dudetx-htm:{m}" for m in CARD} <= set(MUTANTS)


@pytest.mark.parametrize("mutation", CARD)
def test_mutant_killed(mutation: str) -> None:
    m = get_mutant(f"dudetx-htm:{mutation}")
    rep = fuzz(FuzzConfig(runtime=m.name, domain="pdom1", threads=max(2, m.threads), txs=8,
                          idempotence=2, reduce=False, budget=4096, new_tx=3, stop_at_first=True,
                          workload=m.workload or "bank"))
    assert not rep.ok, f"{m.name} survived"


@pytest.mark.parametrize("mutation", CARD)
def test_mutant_visible_without_a_crash(mutation: str) -> None:
    """M11 and M12 need no crash (card §6): after a crash-free run, Reproduce has left NVM
    different from the serial oracle (the model replayed in commit order)."""
    s = Session.create(f"dudetx-htm:{mutation}", Claim, preset("marathe-pdom1"), threads=2,
                       seed=1, txs=8)
    s.run(8)
    rt, wl = s.runtime, s.workload
    assert rt.R == rt.D == s.machine.peek(rt._ctr)
    assert s.recover(s.machine.pm_image()).data != wl.expected(rt.commit_order)
