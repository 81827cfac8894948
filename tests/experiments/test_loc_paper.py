"""The LOC paper module: it registers with claims L1-L15, its experiments have the paper's shape,
every predicate holds on paper-like synthetic rows and differs (with a reason) when one quantity
moves, and (once the LOC runtimes are registered) a quick experiment measures rows."""

from __future__ import annotations

from typing import Any

import pytest

from pmsim.experiments.claims import Rows, get_paper, measure, scoreboard
from pmsim.experiments.papers import loc as mod
from pmsim.runtimes.registry import RUNTIMES, get_runtime

get_runtime("undo")  # registers the built-in runtimes
HAVE_LOC = all(n in RUNTIMES for n in (mod.LOC, mod.EC, mod.HWAL, mod.SWAL))
needs_loc = pytest.mark.skipif(not HAVE_LOC, reason="the LOC runtimes are not registered yet")


def test_paper_is_registered_with_every_claim() -> None:
    p = get_paper("loc")
    assert p is mod.PAPER
    assert [c.id for c in p.claims] == [f"L{i}" for i in range(1, 16)]
    out = {c.id for c in p.claims if c.status == "out of reach"}
    assert out == {"L4", "L5"}
    assert all("non-volatile LLC" in c.reason for c in p.claims if c.id in out)


def test_experiments_have_the_papers_shape() -> None:
    names = {e.name for e in mod.EXPERIMENTS}
    assert {f"fig6-{k}" for k in mod.KEYS} <= names
    assert {f"fig8-{k}" for k in mod.KEYS} <= names
    assert {f"fig9-{k}-{ns}ns" for k in mod.KEYS for ns in (35, 95, 1000)} <= names
    for e in mod.EXPERIMENTS:
        assert e.presets == ("loc-gem5",) and e.threads == (1,)
    fig9 = mod.PAPER.experiment("fig9-sps-1000ns")
    assert dict(fig9.machine) == {"pm.read_ns": 1000.0, "pm.write_ns": 1000.0,
                                  "dram.latency_ns": 1000.0}
    (pt,) = [p for p in mod.PAPER.experiment("fig6-btree").points(quick=True)
             if p["runtime"] == mod.BASE]
    assert pt["params"]["ops_per_tx"] == 4 and pt["params"]["node_keys"] == 200
    assert pt["params"]["keys"] < mod.PAPER.experiment("fig6-btree").points()[0]["params"]["keys"]
    sps = mod.PAPER.experiment("fig6-sps").points(quick=True)[0]["params"]
    assert sps["swaps"] == 8


@needs_loc
def test_quick_scale_points() -> None:
    pts = mod.PAPER.points(quick=True)
    sds = {p["options"]["sd"] for p in pts if p["experiment"] == "fig8-sps"}
    assert sds == set(mod.QUICK_SDS)
    assert len(pts) < 100


# -- synthetic rows --------------------------------------------------------------------------------

SPREAD = {"btree": 0.33, "hash": 1.25, "rbtree": 1.2, "sps": 1.22}
"""Per-workload multipliers of the normalised throughputs (mean 1): B+Tree is the workload
strict ordering slows ~10x."""
SD_CURVE = {1: 0.353, 2: 0.45, 4: 0.55, 8: 0.62, 16: 0.651, 32: 0.689}
H_LAT = {35: 0.6, 95: 0.45, 168: 0.331, 1000: 0.15}
GAIN_LAT = {35: 1.5, 95: 1.8, 168: 0.651 / 0.331, 1000: 2.5}


def _row(exp: str, key: str, rt: str, tp: float, **kw: Any) -> dict[str, Any]:
    return {"paper": "loc", "experiment": exp, "runtime": rt, "workload": mod.WORKLOADS[key][0],
            "preset": "loc-gem5", "threads": 1, "throughput": tp, "commits": 100.0, **kw}


def world(**k: float) -> list[dict[str, Any]]:
    """Paper-like rows; each keyword scales (or, for ``spread``, flattens) one quantity."""
    g = {"swal": 1.0, "hwal": 1.0, "ec": 1.0, "loc": 1.0, "spread": 1.0, "sd1": 1.0,
         "sd32": 1.0, "hlat": 1.0, "gainlat": 1.0, "coal": 1.0, "bytes": 1.0, **k}
    norm = {mod.SWAL: 0.316 * g["swal"], mod.HWAL: 0.331 * g["hwal"],
            mod.EC: 0.331 * 1.064 * g["ec"], mod.LOC: 0.651 * g["loc"]}
    nbytes = {mod.SWAL: 2400.0, mod.HWAL: 2000.0, mod.EC: 1900.0, mod.LOC: 1500.0 * g["bytes"]}
    rows: list[dict[str, Any]] = []
    for key in mod.KEYS:
        m = 1 + g["spread"] * (SPREAD[key] - 1)
        base = 1e6
        rows.append(_row(f"fig6-{key}", key, mod.BASE, base, pm_bytes_per_tx=0.0))
        for rt, n in norm.items():
            rows.append(_row(f"fig6-{key}", key, rt, base * n * m, pm_bytes_per_tx=nbytes[rt],
                             llc_misses_per_tx=8.0 if rt == mod.LOC else 10.0))
        for sd, n in SD_CURVE.items():
            n *= g["sd1"] if sd == 1 else g["sd32"] if sd == 32 else 1.0
            rows.append(_row(f"fig8-{key}", key, mod.LOC, base * n * m, sd=sd,
                             pm_bytes_per_tx=1500.0 - 10 * sd,
                             **{"loc.coalesced": 10.0 * sd * g["coal"],
                                "loc.overflow": 2.0 if sd == 32 else 0.0}))
        for ns in mod.SWEEP_NS:
            exp = f"fig9-{key}-{ns}ns"
            h = H_LAT[ns] if g["hlat"] > 0 else H_LAT[1000 if ns == 35 else 35]
            gain = GAIN_LAT[ns] if g["gainlat"] > 0 else GAIN_LAT[1000 if ns == 35 else 35]
            rows += [_row(exp, key, mod.BASE, base),
                     _row(exp, key, mod.HWAL, base * h * m),
                     _row(exp, key, mod.LOC, base * h * gain * m)]
    return rows


KNOBS: dict[str, dict[str, float]] = {
    "L1": {"swal": 2.0}, "L2": {"hwal": 0.5}, "L3": {"loc": 0.5}, "L6": {"spread": 0.0},
    "L7": {"swal": 0.7}, "L8": {"ec": 1.2}, "L9": {"sd32": 1.3}, "L10": {"sd1": 1.3},
    "L11": {"ec": 1.5}, "L12": {"hlat": -1.0}, "L13": {"gainlat": -1.0}, "L14": {"coal": 0.0},
}
"""One knob per claim that moves the synthetic world outside the claim's test."""

CLEAN = ({"runtime": "loc", "ok": True, "failures": 0, "states": 900, "points": 80,
          "sampled": 0, "first": "", "overflow": 3.0},
         {"runtime": "loc[sd=2]", "ok": True, "failures": 0, "states": 500, "points": 60,
          "sampled": 0, "first": "", "overflow": 0.0})
KILLS = [{"mutant": "loc:M1", "domain": "pdom1", "killed": True, "expected_kill": True,
          "workload": "sps"}]


@pytest.fixture
def fuzzed(monkeypatch: pytest.MonkeyPatch) -> None:
    """L15's campaigns and kill-matrix rows replaced by clean ones (no simulation)."""
    monkeypatch.setattr(mod, "crash_campaigns", lambda: CLEAN)
    monkeypatch.setattr(mod, "loc_kills", lambda: KILLS)


def _board(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["claim"]: r for r in scoreboard(mod.PAPER, Rows(rows))}


def test_predicates_hold_on_paper_like_rows(fuzzed: None) -> None:
    b = _board(world())
    for c in mod.CLAIMS:
        if c.status == "out of reach":
            assert b[c.id]["verdict"] == "not modelled"
            continue
        ok = "self-check ok" if c.status == "self-check" else "holds"
        assert b[c.id]["verdict"] == ok, (c.id, b[c.id]["measured"], b[c.id]["explanation"])
    assert "paper 0.316" in b["L1"]["measured"]
    assert "+95.2%" in b["L9"]["measured"]


@pytest.mark.parametrize("cid", sorted(KNOBS))
def test_each_predicate_can_differ_and_says_why(cid: str, fuzzed: None) -> None:
    b = _board(world(**KNOBS[cid]))[cid]
    self_check = next(c for c in mod.CLAIMS if c.id == cid).status == "self-check"
    assert b["verdict"] == ("self-check fails" if self_check else "differs"), (cid, b["measured"])
    assert b["explanation"].strip()


def test_l14_without_llc_misses_is_not_run(fuzzed: None) -> None:
    """L14's LLC-miss half is part of the claim: rows without the column (saved by an older
    pmsim) leave it "not run", never a silent pass on the other half."""
    rows = world()
    for r in rows:
        r.pop("llc_misses_per_tx", None)
    b = _board(rows)["L14"]
    assert b["verdict"] == "not run" and "llc_misses" in b["explanation"]


def test_l15_differs_on_a_fuzz_failure_or_a_wrong_kill(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = ({**CLEAN[0], "ok": False, "failures": 2, "first": "[data] crash point 7"}, CLEAN[1])
    monkeypatch.setattr(mod, "crash_campaigns", lambda: bad)
    monkeypatch.setattr(mod, "loc_kills", lambda: KILLS)
    b = _board(world())["L15"]
    assert b["verdict"] == "differs" and "crash point 7" in b["explanation"]
    monkeypatch.setattr(mod, "crash_campaigns", lambda: CLEAN)
    monkeypatch.setattr(mod, "loc_kills", lambda: [{**KILLS[0], "killed": False}])
    assert _board(world())["L15"]["verdict"] == "differs"
    monkeypatch.setattr(mod, "crash_campaigns",
                        lambda: tuple({**c, "overflow": 0.0} for c in CLEAN))
    monkeypatch.setattr(mod, "loc_kills", lambda: [])
    b = _board(world())["L15"]
    assert b["verdict"] == "differs" and "no LOC mutants" in b["measured"]


def test_l15_reports_a_campaign_that_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> tuple[dict[str, Any], ...]:
        raise RuntimeError("no such runtime")

    monkeypatch.setattr(mod, "crash_campaigns", boom)
    b = _board(world())["L15"]
    assert b["verdict"] == "differs" and "no such runtime" in b["explanation"]


def test_missing_experiment_is_not_run(fuzzed: None) -> None:
    rows = [r for r in world() if r["experiment"] != "fig9-hash-95ns"]
    b = _board(rows)
    assert b["L12"]["verdict"] == "not run" and b["L13"]["verdict"] == "not run"
    assert b["L1"]["verdict"] == "holds"


def test_counter_accepts_a_family_prefix() -> None:
    assert mod.counter({"loc.coalesced": 3.0}, "coalesced") == 3.0
    assert mod.counter({"coalesced": 2.0}, "coalesced") == 2.0
    assert mod.counter({"x": 1.0}, "coalesced") is None


# -- measured rows ---------------------------------------------------------------------------------

@needs_loc
def test_quick_point_of_each_runtime_measures_rows() -> None:
    """One tiny point per Fig. 6 runtime (SPS), as `pmsim reproduce loc --quick` runs them."""
    pts = mod.PAPER.points(quick=True, scale=0.2, only=["fig6-sps"])
    rows = [measure(p) for p in pts]
    assert {r["runtime"] for r in rows} == set(mod.WAL)
    for r in rows:
        assert r["experiment"] == "fig6-sps" and r["throughput"] > 0 and r["swaps"] == 8
    by = {r["runtime"]: r for r in rows}
    for rt in (mod.LOC, mod.EC, mod.HWAL):
        assert mod.counter(by[rt], "coalesced") is not None
        assert mod.counter(by[rt], "close_stall_ns") is not None
        assert by[rt]["log_groups"] == mod.LOG_GROUPS
    assert mod.counter(by[mod.EC], "coalesced") == 0


@needs_loc
@pytest.mark.slow
def test_crash_campaigns_are_clean() -> None:
    for f in mod.crash_campaigns():
        assert f["ok"], f


def test_fig6_figure_rows_and_the_papers_averages(tmp_path) -> None:
    """Fig. 6's figure: per workload and the mean of the four, each runtime's throughput over
    the baseline's, as L1-L3 and L8 read it; the paper's averages are stars on the mean."""
    from pmsim.experiments.plots import draw

    rows = Rows(world())
    got = mod.fig6_rows(rows)
    for rt in (mod.SWAL, mod.HWAL, mod.EC, mod.LOC):
        mine = {r["workload"]: r["normalised"] for r in got if r["runtime"] == mod.NAMES[rt]}
        mean, per = mod.average(lambda k, rt=rt: mod.normalised(rows, k, rt))
        assert mine[mod.AVERAGE] == pytest.approx(mean)
        assert sorted(mine.values()) == pytest.approx(sorted([*per.values(), mean]))
    fig = mod.FIG6_FIGURE
    assert {(s, y) for s, _, y in fig.published} == {
        (mod.NAMES[r], v) for r, v in mod.PAPER_AVG.items()}
    assert mod.fig6_rows(Rows([])) == []
    assert draw(fig, got, tmp_path, formats=("png",))
