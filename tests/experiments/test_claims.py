"""Claims as data: every Marathe predicate holds on a paper-like synthetic world and differs when
one knob moves; the scoreboard is computed from rows; the core types validate their input."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pmsim.errors import ConfigError, UnknownNameError
from pmsim.experiments.claims import (
    Checks,
    Claim,
    Experiment,
    Finding,
    MissingRows,
    Paper,
    Rows,
    about,
    band,
    fmt_interval,
    get_paper,
    register_paper,
    same,
    scoreboard,
    summary,
    tally,
)

from .synth import World, rows

PAPER = get_paper("marathe")
CHECKED = [c for c in PAPER.claims if c.check is not None]

DIFFER = {
    "M1": World(cow64=2.0),
    "M2": World(barrier=(150.0, 100.0, 0.0)),
    "M3": World(barrier=(500.0, 400.0, 0.0)),
    "M4": World(redo_write=500.0),
    "M5": World(undo64_write=6000.0),
    "M6": World(redo_base=4800.0),
    "M7": World(raw_redo=0.0),
    "M8": World(eager=(1.6, 2.0, 1.02)),
    "M9a": World(kv_undo=0.5),
    "M9b": World(kv_drop=(0.5, 0.86)),
    "M13": World(redo_pbs=5.0),
    "M14": World(cow4=0.5),
}
"""One knob per claim that moves the synthetic world outside the claim's test."""


def verdicts(world: World) -> dict[str, dict]:
    return {r["claim"]: r for r in scoreboard(PAPER, rows(world))}


def _self_check(claim: str) -> bool:
    return next(c for c in PAPER.claims if c.id == claim).status == "self-check"


@pytest.fixture(scope="module")
def holds() -> dict[str, dict]:
    return verdicts(World())


def test_every_checked_claim_has_a_differ_case() -> None:
    assert {c.id for c in CHECKED} == set(DIFFER)


@pytest.mark.parametrize("claim", [c.id for c in CHECKED])
def test_predicate_holds_on_paper_like_rows(claim: str, holds: dict) -> None:
    r = holds[claim]
    ok = "self-check ok" if _self_check(claim) else "holds"
    assert r["verdict"] == ok, (r["measured"], r["explanation"])
    assert r["explanation"] == ""
    assert "✗" not in r["measured"]


@pytest.mark.parametrize("claim", sorted(DIFFER))
def test_predicate_differs_and_says_why(claim: str) -> None:
    r = verdicts(DIFFER[claim])[claim]
    bad = "self-check fails" if _self_check(claim) else "differs"
    assert r["verdict"] == bad, r["measured"]
    assert "✗" in r["measured"]
    why = r["explanation"]
    assert why and why.endswith(".") and why[0].isupper()


def test_out_of_reach_claims_are_not_modelled_with_a_reason(holds: dict) -> None:
    out = [c for c in PAPER.claims if c.status == "out of reach"]
    assert {c.id for c in out} >= {"M10", "M11", "M12"}
    for c in out:
        assert holds[c.id]["verdict"] == "not modelled"
        assert holds[c.id]["explanation"] == c.reason


def test_claims_cover_m1_to_m14() -> None:
    ids = {c.id.rstrip("abc") for c in PAPER.claims}
    assert ids == {f"M{i}" for i in range(1, 15)}


def test_measured_text_comes_from_the_rows() -> None:
    a = verdicts(World())["M13"]["measured"]
    assert "undo 22 PBs" in a and "2-PB append 42" in a
    b = verdicts(World(eager=(1.9, 1.25, 1.02)))["M8"]["measured"]
    assert "pdom0: eager/lazy median 1.90x" in b


def test_explanations_quote_the_rows_stalls() -> None:
    m2 = verdicts(DIFFER["M2"])["M2"]["explanation"]
    assert "undo stalls 3,300 ns at its 22 barriers and redo 600 ns at its 4" in m2
    assert "undo/redo = 2 needs a rest of about 2,100 ns in both" in m2
    m8 = verdicts(DIFFER["M8"])["M8"]["explanation"]
    assert "pdom1 eager/lazy has median 2.00x" in m8
    assert "stalls 3,200 ns a transaction at them (lazy 2,000)" in m8


def test_cow_at_slot_64_is_explained_by_its_measured_misses() -> None:
    why = verdicts(DIFFER["M1"])["M1"]["explanation"]
    assert "misses the LLC 2.0 times a transaction against undo's 1.0 and redo's 1.0" in why


def test_throughput_drops_keep_their_sign() -> None:
    m = verdicts(DIFFER["M9b"])["M9b"]["measured"]
    assert "undo pdom2→pdom1: -50%/-50% ✗" in m and "pdom1→pdom0: -14%/-14%" in m


def test_write_percentages_print_as_runs() -> None:
    from pmsim.experiments.papers.marathe import _ranges

    grid = [0.0, 5.0, 20.0, 25.0, 30.0, 50.0, 100.0]
    assert _ranges([100.0, 20.0, 25.0, 30.0], grid) == "20-30%, 100%"
    assert _ranges([5.0], grid) == "5%"


def test_missing_experiment_is_not_run() -> None:
    only_kv = [r for r in rows() if r["experiment"] == "kv"]
    board = {r["claim"]: r for r in scoreboard(PAPER, only_kv)}
    assert board["M9a"]["verdict"] == "holds"
    assert board["M1"]["verdict"] == "not run"
    assert "array-slot4" in board["M1"]["explanation"]
    t = tally(board.values())
    assert t["not run"] >= 8 and t["holds"] == 2


def test_rows_of_other_papers_are_ignored() -> None:
    other = [{**r, "paper": "someone-else"} for r in rows()]
    assert {r["verdict"] for r in scoreboard(PAPER, other)} <= {"not run", "not modelled"}


# -- the core types ------------------------------------------------------------------------------

def test_tolerances() -> None:
    assert about(2.0) == pytest.approx((1 + 1 / 1.5, 2.5))
    assert about(50.0)[0] == pytest.approx(1 + 49 / 1.5)
    assert band(1.2, 1.3) == pytest.approx((1 + 0.2 / 1.5, 1.45))
    assert same(1.0, 1.09) and not same(1.0, 1.12)


def test_finding_requires_an_explanation_for_differs() -> None:
    with pytest.raises(ConfigError, match="explanation"):
        Finding("differs", "x=1")
    with pytest.raises(ConfigError):
        Finding("not modelled", "x")  # type: ignore[arg-type]
    c = Checks()
    c.expect(True, "a=1", "never")
    c.expect(False, "b=2", "b is two")
    f = c.finding()
    assert f.verdict == "differs" and f.measured == "a=1; b=2 ✗" and f.why == "B is two."


def test_an_unreached_regime_makes_the_finding_scale_limited() -> None:
    with pytest.raises(ConfigError, match="explanation"):
        Finding("scale-limited", "x=1")
    c = Checks()
    c.regime(True, "16 threads", "never")
    c.expect(False, "b=2", "b is two")
    assert c.finding().verdict == "differs"  # the regime was reached: the failure counts
    c = Checks()
    c.regime(False, "4 threads", "the run stops at 4 threads, below the paper's 14")
    c.expect(False, "b=2", "b is two")
    f = c.finding()
    assert f.verdict == "scale-limited" and f.why == "The run stops at 4 threads, below the paper's 14."
    assert f.measured == "4 threads (regime not reached); b=2 ✗"


def test_another_reading_is_shown_but_does_not_decide() -> None:
    c = Checks()
    c.expect(True, "ratio 0.71", "never")
    c.other_reading("compressed/original ≈ 0.69", True, "0.71")
    f = c.finding()
    assert f.verdict == "holds"
    assert f.measured == "ratio 0.71; other reading (compressed/original ≈ 0.69): 0.71, would hold"
    c = Checks()
    c.expect(False, "ratio 0.71", "the log is not 69% smaller")
    c.other_reading("compressed/original ≈ 0.69", True, "0.71")
    assert c.finding().verdict == "differs" and "✗" not in c.finding().measured.split(";")[1]


def test_self_check_claims_and_summary() -> None:
    def ok(rows: Rows) -> Finding:
        return Finding("holds", "x=1")

    def bad(rows: Rows) -> Finding:
        return Finding("differs", "x=2", "X is two.")

    exp = Experiment("e", "e", "array", ("undo",), ("default",))
    claims = [Claim(f"S{i}", "§1", "pmsim's own invariant", "x=1", ("e",), fn, "self-check")
              for i, fn in enumerate((ok, bad))]
    p = Paper("test-self-check", "t", "c", "card.md", (exp,), tuple(claims))
    board = scoreboard(p, [{"paper": "test-self-check", "experiment": "e"}])
    assert [r["verdict"] for r in board] == ["self-check ok", "self-check fails"]
    t = tally(board)
    assert t["holds"] == 0 and t["self-check ok"] == 1
    assert summary(t) == "0 hold, 0 differ, 1 self-check ok, 1 self-check fails"


def test_rows_helpers() -> None:
    r = Rows([{"a": 1, "x": 0, "y": 2.0}, {"a": 1, "x": 1, "y": 4.0}, {"a": 2, "x": 0, "y": 8.0},
              {"a": 2, "x": 0, "y": 10.0}])
    assert r.get("y", a=2) == 9.0
    assert r.series("x", "y", a=1) == [(0, 2.0), (1, 4.0)]
    assert len(r.where(a=(1, 2), x=0)) == 3
    with pytest.raises(MissingRows, match="a=3"):
        r.get("y", a=3)


def test_claim_validation() -> None:
    with pytest.raises(ConfigError, match="out of reach"):
        Claim("X1", "Fig. 1", "says", status="out of reach")
    with pytest.raises(ConfigError, match="needs a check"):
        Claim("X2", "Fig. 1", "says", "test", ("e",))
    with pytest.raises(ConfigError, match="status"):
        Claim("X3", "Fig. 1", "says", status="maybe")  # type: ignore[arg-type]


def _exp(**kw) -> Experiment:
    return Experiment(**{"name": "e", "title": "t", "workload": "array",
                         "runtimes": ("undo", "redo"), "presets": ("marathe-pdom0",),
                         "axes": {"write_pct": (0, 50, 100)}, "quick_axes": {"write_pct": (0, 100)},
                         "params": {"slots": 1000}, "txs": 500, "quick_txs": 50, **kw})


def test_experiment_points_quick_keeps_the_shape() -> None:
    e = _exp()
    full, quick = e.points(), e.points(quick=True, paper="p")
    assert len(full) == 6 and len(quick) == 4
    assert {p["runtime"] for p in quick} == {p["runtime"] for p in full}
    assert {p["params"]["write_pct"] for p in quick} == {0, 100}
    assert {p["txs"] for p in quick} == {50} and quick[0]["paper"] == "p"
    assert {p["txs"] for p in e.points(quick=True, scale=0.1)} == {5}
    assert all(p["params"]["slots"] == 1000 for p in full)


def test_experiment_axis_of_mappings_sets_several_parameters() -> None:
    e = _exp(workload="kv", axes={"mix": ({"get_pct": 90.0, "put_pct": 10.0},
                                          {"get_pct": 50.0, "put_pct": 50.0})}, quick_axes={},
             params={})
    assert [p["params"] for p in e.points()][:2] == [{"get_pct": 90.0, "put_pct": 10.0},
                                                      {"get_pct": 50.0, "put_pct": 50.0}]


def test_experiment_validation() -> None:
    with pytest.raises(ConfigError, match="row column names"):
        _exp(params={"throughput": 1})
    with pytest.raises(ConfigError, match="not axes"):
        _exp(quick_axes={"slot_words": (4,)})
    with pytest.raises(ConfigError, match="scale"):
        _exp().points(scale=0)


def test_paper_validation_and_registry() -> None:
    e = _exp()
    c = Claim("T1", "Fig. 1", "says", "test", ("e",), lambda r: Finding("holds", "ok"))
    with pytest.raises(ConfigError, match="unknown experiments"):
        Paper("t", "T", "cite", "card.md", (e,), (replace(c, experiments=("nope",)),))
    with pytest.raises(ConfigError, match="repeat"):
        Paper("t", "T", "cite", "card.md", (e,), (c, c))
    p = Paper("test-paper", "T", "cite", "card.md", (e,), (c,))
    try:
        assert register_paper(p) is p and get_paper("test-paper") is p
        assert scoreboard(p, [{"paper": "test-paper", "experiment": "e"}])[0]["verdict"] == "holds"
    finally:
        from pmsim.experiments.claims import PAPERS

        PAPERS.pop("test-paper", None)
    with pytest.raises(UnknownNameError, match="Known papers: dudetx, loc, marathe, nvhtm"):
        get_paper("marathee")
    with pytest.raises(ConfigError, match="PAPER"):
        register_paper("pmsim.experiments.tables")


def test_intervals_print_without_an_exponent() -> None:
    assert fmt_interval((0.9, 1500.0)) == "[0.9, 1,500]"
    assert fmt_interval((1.0, 2.25)) == "[1, 2.25]"
    assert "e" not in fmt_interval((0.0123, 1e6))
