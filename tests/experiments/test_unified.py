"""The unified comparison: every protocol, the kill matrix read from docs, fuzz verdicts."""

from __future__ import annotations

import pytest

from pmsim.errors import ConfigError, UnknownNameError
from pmsim.experiments.unified import (
    Unified,
    fuzz_point,
    fuzz_verdict,
    kill_counts,
    kills_text,
    read_kill_matrix,
    run_unified,
)
from pmsim.runtimes.registry import MUTANTS, RUNTIMES, is_fuzz_variant


def test_every_protocol_and_no_mutant() -> None:
    u = Unified().resolved()
    assert {"undo", "redo", "cow", "undo-2pb", "undo-eager", "redo-eadr"} <= set(u.runtimes)
    assert not set(u.runtimes) & set(MUTANTS)
    assert set(u.runtimes) == {r for r in RUNTIMES if r not in MUTANTS and not is_fuzz_variant(r)}
    assert "dudetx" in u.runtimes and "dudetx-fine" not in u.runtimes
    assert Unified(runtimes=("dudetx-fine",)).resolved().runtimes == ("dudetx-fine",)
    pts = u.points()
    from pmsim.runtimes.registry import get_runtime

    pairs = sum(len(get_runtime(r).supported_domains) for r in u.runtimes)
    assert len(pts) == pairs * 3  # Proteus and ATOM skip PDOM-0 (the LPQ must be persistent)
    assert {p["preset"] for p in pts} == {"pdom0", "optane-adr", "eadr"}
    m = Unified(machine="marathe").resolved()
    assert {p["preset"] for p in m.points()} == {"marathe-pdom0", "marathe-pdom1", "marathe-pdom2"}
    other = Unified(machine="loc-gem5", runtimes=("undo",), workloads=("bank",)).resolved()
    assert {p["machine"]["domain"] for p in other.points()} == {"pdom0", "pdom1", "pdom2"}


@pytest.mark.parametrize("kw,msg", [
    ({"runtimes": ("undo:U1",)}, "unknown runtime 'undo:U1'"),
    ({"workloads": ("arr",)}, "unknown workload 'arr'"),
    ({"machine": "nosuch"}, "unknown machine 'nosuch'"),
])
def test_unknown_names(kw, msg) -> None:
    with pytest.raises(UnknownNameError, match=msg):
        Unified(**kw).resolved()
    with pytest.raises(UnknownNameError, match="Known domains: pdom0, pdom1, pdom2"):
        Unified(domains=("pdom3",))
    with pytest.raises(ConfigError, match="kills"):
        Unified(kills="maybe")  # type: ignore[arg-type]


def test_kill_matrix_file_counts() -> None:
    rows = read_kill_matrix()
    assert len(rows) >= 75 and {r["domain"] for r in rows} == {"pdom0", "pdom1", "pdom2"}
    c = kill_counts(rows)
    assert c["undo", "pdom0"]["bugs"] == c["undo", "pdom0"]["killed"] >= 8
    assert c["undo-2pb", "pdom0"]["bugs"] == 1  # U3 mutates undo-2pb
    assert c["undo", "pdom2"]["bugs"] < c["undo", "pdom0"]["bugs"]
    assert kills_text(c["redo", "pdom1"]) == f"{c['redo', 'pdom1']['killed']}/" \
        f"{c['redo', 'pdom1']['bugs']}"
    assert kills_text(None) == "no mutants"
    assert kills_text({"bugs": 3, "killed": 2, "unexpected": 1}) == "2/3 (1 unexpected)"


def test_bad_kill_matrix_file(tmp_path) -> None:
    p = tmp_path / "k.txt"
    p.write_text("nothing here\n")
    with pytest.raises(ConfigError, match="header"):
        read_kill_matrix(p)
    with pytest.raises(ConfigError, match="compute"):
        read_kill_matrix(tmp_path / "missing.txt")


def test_fuzz_point_and_verdict() -> None:
    row = fuzz_point({"runtime": "undo", "workload": "bank", "domain": "pdom1", "txs": 2,
                      "idempotence": 1, "depth_runs": 1})
    assert row["fuzz_ok"] and row["fuzz_states"] > 0
    assert fuzz_verdict(row).startswith("clean (")
    assert fuzz_verdict({"fuzz_ok": False, "fuzz_failures": 3}) == "FAILS (3)"
    assert fuzz_verdict({}) == "-"
    assert fuzz_verdict({"runtime": "stm"}) == "volatile"


def test_run_unified_small() -> None:
    u = Unified.quick(runtimes=("undo", "redo"), workloads=("bank",), domains=("pdom1",),
                      txs=10, warmup=2)
    rows, source = run_unified(u, executor="serial")
    assert [r["runtime"] for r in rows] == ["undo", "redo"]
    assert all(r["crash_fuzz"].startswith("clean") for r in rows)
    assert "docs/kill-matrix.txt" in source
    assert rows[0]["mutants_killed"] == kills_text(kill_counts(read_kill_matrix())["undo", "pdom1"])
    assert rows[1]["pb_per_tx"] == pytest.approx(4.0, abs=0.6)
