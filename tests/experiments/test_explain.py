"""Counterfactual explanations: toggled points, verdicts per toggle, the summary line and the
report section (the sweep is replaced by a synthetic world so no simulation runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pmsim.experiments import explain as ex
from pmsim.experiments.claims import Checks, Claim, Experiment, Finding, Paper, Rows
from pmsim.experiments.reproduce import write_outputs
from pmsim.presets import preset

EXP = Experiment("e", "toy", "array", ("undo", "redo"), ("optane-adr",), txs=10, warmup=0,
                 quick_txs=5, quick_warmup=0)


def fast_enough(rows: Rows) -> Finding:
    c = Checks()
    tp = rows.get("throughput", runtime="undo")
    c.expect(tp >= 1.5, f"undo {tp:.1f}", "undo is too slow")
    return c.finding()


def never(rows: Rows) -> Finding:
    return Finding("differs", "x", "It never holds.")


PAPER = Paper("toy-explain", "Toy", "cite", "card.md", (EXP,),
              (Claim("T1", "§1", "undo is fast", "undo ≥ 1.5", ("e",), fast_enough),
               Claim("T2", "§2", "impossible", "never", ("e",), never)))


def row(point: dict[str, Any], tp: float) -> dict[str, Any]:
    """What measure() returns for ``point`` (its labels, parameters and options as columns)."""
    r = {"paper": point["paper"], "experiment": point["experiment"],
         "runtime": point["runtime"], "preset": point["preset"], "threads": point["threads"],
         "throughput": tp, "sim_ns": 1000.0, "commits": 5.0, "work_ns_per_tx": 50.0,
         "barrier_stall_ns_per_tx": 20.0, **(point.get("params") or {}),
         **(point.get("options") or {})}
    if "counterfactual" in point:
        r.update(counterfactual=point["counterfactual"], origin=point["origin"])
    return r


def _entries(paper: Paper, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Counterfactuals table of a quick run: rerun (saved form), then evaluated."""
    return ex.entries(paper, rows, ex.explain(paper, rows, quick=True), quick=True)


def world(points: list[dict[str, Any]], fn: Any = None, **kw: Any) -> list[dict[str, Any]]:
    """Undo is fast only on an in-order core; nothing else matters."""
    out = []
    for p in points:
        cfg = preset(p["preset"]).replace(**dict(p.get("machine") or {}))
        out.append(row(p, 2.0 if cfg.core.model == "inorder" else 1.0))
    return out


def test_each_applicable_toggle_reruns_the_claims_that_differ(monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    monkeypatch.setattr(ex, "run_points", world)
    base = world(PAPER.points(quick=True))
    got = _entries(PAPER, base)
    by = {(r["claim"], r["toggle"]): r["verdict"] for r in got}
    names = {t.name for t in ex.TOGGLES if t.params is None and t.reshape is None}
    assert {t for _, t in by} == names  # optane-adr has DIMMs: every machine toggle applies
    assert by[("T1", "core model toggled")] == "holds"
    assert all(v == "differs" for (c, t), v in by.items() if (c, t) != ("T1", "core model toggled"))
    assert ex.summary_line("T1", got) == "holds with core model toggled"
    assert ex.summary_line("T2", got) == "differs under every modelled mechanism"
    assert ex.summary_line("T3", got) == ""
    t1 = next(r for r in got if r["claim"] == "T1")
    assert t1["as run"].startswith("200 ns/tx of thread time: compute 50, barrier stalls 20")


def test_a_workload_toggle_keeps_the_claims_other_experiments_as_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    kv = Experiment("f", "toy kv", "kv", ("undo",), ("marathe-pdom1",),
                    params={"keys": 16, "get_ns": 1000.0}, txs=10, warmup=0, quick_txs=5,
                    quick_warmup=0)

    def both(rows: Rows) -> Finding:
        c = Checks()
        e, f = (rows.get("throughput", experiment=x, runtime="undo") for x in ("e", "f"))
        c.expect(f >= 1.5, f"array {e:.1f}, kv {f:.1f}", "the K-V store is too slow")
        return c.finding()

    def kv_world(points: list[dict[str, Any]], fn: Any = None, **kw: Any) -> list[dict[str, Any]]:
        """The K-V store is fast only without its request time."""
        return [row(p, 2.0 if (p.get("params") or {}).get("get_ns") == 0.0 else 1.0)
                for p in points]

    paper = Paper("toy-explain-kv", "Toy", "cite", "card.md", (EXP, kv),
                  (Claim("K1", "§1", "both fast", "kv ≥ 1.5", ("e", "f"), both),))
    monkeypatch.setattr(ex, "run_points", kv_world)
    got = _entries(paper, kv_world(paper.points(quick=True)))
    by = {r["toggle"]: r for r in got}
    assert by["request time off"]["verdict"] == "holds"  # e's rows kept, not "not run"
    assert "array 1.0, kv 2.0" in by["request time off"]["measured"]


def test_a_point_the_toggle_skips_keeps_its_row_as_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 14 threads NV-HTM's checkpointer shares a core, PSTM's threads do not: turning
    Hyper-Threading off reruns the NV-HTM point only, and the claim still sees PSTM's row."""
    exp = Experiment("g", "toy bank", "bank", ("nvhtm", "pstm"), ("nvhtm-xeon",),
                     threads=(14,), quick_threads=(14,), txs=10, warmup=0, quick_txs=5,
                     quick_warmup=0)

    def ahead(rows: Rows) -> Finding:
        c = Checks()
        nv, ps = (rows.get("throughput", runtime=r) for r in ("nvhtm", "pstm"))
        c.expect(nv > ps, f"nvhtm {nv:.1f}, pstm {ps:.1f}", "NV-HTM is behind")
        return c.finding()

    def ht_world(points: list[dict[str, Any]], fn: Any = None, **kw: Any) -> list[dict[str, Any]]:
        """NV-HTM is fast only with a core per thread."""
        out = []
        for p in points:
            cfg = preset(p["preset"]).replace(**dict(p.get("machine") or {}))
            fast = p["runtime"] == "pstm" or cfg.core.physical_cores == 0
            out.append(row(p, 1.5 if p["runtime"] == "pstm" else 2.0 if fast else 1.0))
        return out

    paper = Paper("toy-explain-ht", "Toy", "cite", "card.md", (exp,),
                  (Claim("H1", "§1", "ahead", "nvhtm > pstm", ("g",), ahead),))
    monkeypatch.setattr(ex, "run_points", ht_world)
    got = {r["toggle"]: r for r in _entries(paper, ht_world(paper.points(quick=True)))}
    assert got["Hyper-Threading off"]["verdict"] == "holds"
    assert got["Hyper-Threading off"]["measured"] == "nvhtm 2.0, pstm 1.5"


def test_toggles_switch_only_what_a_machine_has() -> None:
    dimm = next(t for t in ex.TOGGLES if t.name == "DIMM buffer off")
    assert dimm.applies(preset("optane-adr")) and not dimm.applies(preset("loc-gem5"))
    core = next(t for t in ex.TOGGLES if t.name == "core model toggled")
    assert core.overrides(preset("loc-gem5")) == {"core.model": "ooo"}
    pts = ex._toggled([{"preset": "loc-gem5", "machine": {"pm.write_ns": 300.0}}], dimm)
    assert pts == []
    pts = ex._toggled([{"preset": "loc-gem5", "machine": {"pm.write_ns": 300.0}}], core)
    assert pts[0]["machine"] == {"pm.write_ns": 300.0, "core.model": "ooo"}


def test_the_request_time_toggle_applies_to_a_kv_store_that_has_one() -> None:
    t = next(t for t in ex.TOGGLES if t.name == "request time off")
    kv = {"preset": "marathe-pdom2", "workload": "kv", "machine": {},
          "params": {"keys": 64, "get_ns": 13_000.0, "put_ns": 22_000.0}}
    (pt,) = ex._toggled([kv], t)
    assert pt["params"] == {"keys": 64, "get_ns": 0.0, "put_ns": 0.0}
    assert pt["machine"] == {} and kv["params"]["get_ns"] == 13_000.0  # the original kept
    assert ex._toggled([{**kv, "params": {"keys": 64}}], t) == []  # no request time to remove
    assert ex._toggled([{**kv, "workload": "array"}], t) == []


def test_the_sizing_toggle_turns_a_paper_sized_tpcc_back_into_tpcc() -> None:
    t = next(t for t in ex.TOGGLES if t.name == "paper sizing off")
    port = {"preset": "nvhtm-xeon", "workload": "tpcc", "machine": {},
            "params": {"mix": "a", "port": "htm"}}
    (pt,) = ex._toggled([port], t)
    assert pt["params"] == {"mix": "a", "port": "full", "new_order_ns": 0.0}
    work = {**port, "params": {"mix": "new-order", "new_order_ns": 27_700.0}}
    assert ex._toggled([work], t)[0]["params"]["new_order_ns"] == 0.0
    assert ex._toggled([{**port, "params": {"mix": "a"}}], t) == []  # TPC-C as specified
    assert ex._toggled([{**port, "workload": "bank"}], t) == []


def test_the_longer_runs_toggle_lengthens_runs_and_logs_where_an_experiment_allows() -> None:
    from pmsim.experiments.claims import get_paper

    t = next(t for t in ex.TOGGLES if t.reshape is not None)
    paper = get_paper("nvhtm")
    pts = paper.points(True, 1.0, ["fig4-high", "fig6"])
    got = ex._toggled(pts, t)
    assert got and {p["experiment"] for p in got} == {"fig4-high"}  # Fig. 6 is not lengthened
    assert all("log_slots" in p["options"] for p in got)  # PHTM and PSTM keep no log
    base = {ex.ident(p): p for p in pts}
    for p in got:
        b = base[p["origin"]]
        assert (p["txs"], p["warmup"]) == (ex.LONGER * b["txs"], ex.LONGER * b["warmup"])
        assert p["options"]["log_slots"] == ex.LONGER * b["options"]["log_slots"]
        assert p["params"] == b["params"] and p["machine"] == b["machine"]


def test_the_hyper_threading_toggle_applies_where_threads_share_cores() -> None:
    t = next(t for t in ex.TOGGLES if t.name == "Hyper-Threading off")
    pt = {"preset": "nvhtm-xeon", "workload": "bank", "runtime": "nvhtm", "machine": {},
          "params": {}, "threads": 14}
    (got,) = ex._toggled([pt], t)  # 14 workers and the checkpointer: 15 threads on 14 cores
    assert got["machine"] == {"core.physical_cores": 0}
    assert ex._toggled([{**pt, "runtime": "pstm"}], t) == []  # 14 threads, 14 cores
    assert ex._toggled([{**pt, "threads": 4}], t) == []
    assert ex._toggled([{**pt, "preset": "dudetx-xeon", "threads": 8}], t) == []


def test_report_shows_the_counterfactual_column_and_section(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    from pmsim.experiments import claims

    monkeypatch.setattr(ex, "run_points", world)
    monkeypatch.setitem(claims.PAPERS, PAPER.name, PAPER)
    base = world(PAPER.points(quick=True))
    doc = {"papers": {PAPER.name: base}, "explain": {PAPER.name: ex.explain(PAPER, base, True)},
           "meta": {"command": "pmsim reproduce toy-explain --explain", "version": "0",
                    "backend": "c", "scale": "quick", "points": 2, "seconds": 1.0,
                    "workers": "1", "out": str(tmp_path)}}
    text = write_outputs(doc, tmp_path, figures=False).read_text()
    assert "| counterfactual |" in text and "holds with core model toggled" in text
    assert "### Counterfactuals" in text and "differs under every modelled mechanism" in text


def test_a_counterfactual_names_its_point_not_its_place() -> None:
    """A toggled point's origin (and so its cache key) does not move when other experiments'
    points come before it."""
    pts = PAPER.points(quick=True)
    toggle = ex.TOGGLES[0]
    alone = ex._toggled(pts[1:], toggle)
    after = ex._toggled(pts, toggle)[1:]
    assert [p["origin"] for p in alone] == [p["origin"] for p in after]
    assert after and len({p["origin"] for p in after}) == len(after)


def test_the_table_follows_the_predicates_of_the_day(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    """The toggled rows are saved, not their verdicts: a predicate changed after the reruns
    re-evaluates them when the page is rendered, and a claim that differs only since then (its
    experiment was not rerun) says so instead of a bare '-'."""
    from pmsim.experiments import claims

    other = Experiment("e2", "toy 2", "array", ("undo",), ("optane-adr",), txs=10, warmup=0,
                       quick_txs=5, quick_warmup=0)

    def holds(rows: Rows) -> Finding:
        c = Checks()
        c.expect(True, "fine", "")
        return c.finding()

    def build(t1: Any, t4: Any) -> Paper:
        return Paper("toy-explain-late", "Toy", "cite", "card.md", (EXP, other),
                     (Claim("T1", "§1", "undo is fast", "undo ≥ 1.5", ("e",), t1),
                      Claim("T4", "§4", "fine", "-", ("e2",), t4)))

    monkeypatch.setattr(ex, "run_points", world)
    first = build(fast_enough, holds)
    base = world(first.points(quick=True))
    saved = ex.explain(first, base, True)
    assert saved["experiments"] == ["e"] and all("counterfactual" in r for r in saved["rows"])
    assert {r["verdict"] for r in ex.entries(first, base, saved, True)} == {"holds", "differs"}
    later = build(never, never)
    got = ex.entries(later, base, saved, quick=True)
    assert got and {r["claim"] for r in got} == {"T1"}
    assert all(r["verdict"] == "differs" for r in got)
    monkeypatch.setitem(claims.PAPERS, later.name, later)
    doc = {"papers": {later.name: base}, "explain": {later.name: saved},
           "meta": {"command": "pmsim reproduce toy-explain-late --explain", "version": "0",
                    "backend": "c", "scale": "quick", "points": 2, "seconds": 1.0,
                    "workers": "1", "out": str(tmp_path)}}
    text = write_outputs(doc, tmp_path, figures=False).read_text()
    assert "holds with core model toggled" not in text
    assert f"| T4 | reproducible | §4 | fine | x | differs | It never holds. | {ex.NOT_RERUN} |" in text
