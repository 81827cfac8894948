"""`pmsim reproduce`, `pmsim compare` and `pmsim table`: outputs, re-rendering, exit 2 on bad
input. The tiny end-to-end run uses --scale to shrink the quick experiments further."""

from __future__ import annotations

import csv
import json
import time

import pytest

from pmsim.cli import main


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple:
    out = tmp_path_factory.mktemp("reproduce")
    md = out.parent / f"{out.name}-doc" / "results.md"
    rc = main(["reproduce", "marathe", "--quick", "--scale", "0.1", "--only",
               "array-slot4,alloc-x", "--out", str(out), "--markdown", str(md), "--jobs", "2",
               "--no-progress"])
    return rc, out, md


def test_reproduce_writes_everything(tiny, capsys) -> None:
    rc, out, md = tiny
    assert rc == 0
    doc = json.loads((out / "results.json").read_text())
    rows = doc["papers"]["marathe"]
    assert {r["experiment"] for r in rows} == {"array-slot4", "alloc-x"}
    assert doc["meta"]["scale"] == "quick" and "--quick" in doc["meta"]["command"]
    assert doc["meta"]["only"] == ["array-slot4", "alloc-x"]  # what a merge replaces
    for name in ("scoreboard-marathe.md", "scoreboard-marathe.csv", "scoreboard-marathe.tex",
                 "marathe-array-slot4.md", "marathe-alloc-x.tex", "rows-marathe.csv",
                 "figures/fig5-array-slot4.png", "figures/fig5-array-slot4.pdf",
                 "figures/fig6-alloc-x.png", "results.md"):
        assert (out / name).stat().st_size > 0, name
    board = {r["claim"]: r for r in csv.DictReader((out / "scoreboard-marathe.csv").open())}
    assert board["M13"]["verdict"] == "self-check ok"  # PB counts are exact even in tiny runs
    assert board["M9a"]["verdict"] == "not run" and board["M10"]["verdict"] == "not modelled"
    text = (out / "results.md").read_text()
    assert "](figures/fig5-array-slot4.png)" in text and "| M13 |" in text
    doc_text = md.read_text()
    assert f"]({out.name}/figures/fig5-array-slot4.png)" in doc_text.replace("../", "")


def test_table_rerenders_without_rerunning(tiny, capsys) -> None:
    _, out, _ = tiny
    capsys.readouterr()
    assert main(["table", str(out), "--format", "csv"]) == 0
    first = capsys.readouterr().out
    assert first.splitlines()[0].startswith("claim,status,source,says,test,measured,verdict")
    assert main(["table", str(out), "--what", "rows", "--experiment", "alloc-x", "--format",
                 "md"]) == 0
    assert "| undo-eager |" in capsys.readouterr().out
    assert main(["table", str(out / "results.json"), "--format", "latex"]) == 0
    assert r"\begin{tabular}" in capsys.readouterr().out
    stamp = (out / "results.md").stat().st_mtime_ns
    time.sleep(0.01)
    assert main(["table", str(out), "--write"]) == 0
    assert (out / "results.md").stat().st_mtime_ns > stamp


def _copy(src, dst, **meta) -> None:
    doc = json.loads((src / "results.json").read_text())
    doc["meta"].update(meta)
    dst.mkdir()
    (dst / "results.json").write_text(json.dumps(doc))


def test_table_merge_folds_another_run_in(tiny, tmp_path, capsys) -> None:
    """A paper rerun alone replaces its rows in a page's results; the header names both."""
    _, out, _ = tiny
    base, other = tmp_path / "base", tmp_path / "other"
    _copy(out, base)
    doc = json.loads((out / "results.json").read_text())
    doc["papers"]["marathe"] = [r for r in doc["papers"]["marathe"]
                                if r["experiment"] == "alloc-x"]
    doc["meta"].update(command="pmsim reproduce marathe --quick --out=/elsewhere",
                       out="/elsewhere", seconds=5.0)
    other.mkdir()
    (other / "results.json").write_text(json.dumps(doc))
    before = json.loads((base / "results.json").read_text())["meta"]
    points = before["points"]
    assert main(["table", str(base), "--merge", str(other), "--write"]) == 0
    merged = json.loads((base / "results.json").read_text())
    assert {r["experiment"] for r in merged["papers"]["marathe"]} == {"alloc-x"}
    kept = len(doc["papers"]["marathe"])
    assert merged["meta"]["points"] == points - len(json.loads(
        (out / "results.json").read_text())["papers"]["marathe"]) + kept
    cmd = merged["meta"]["command"]
    assert cmd.endswith(f"; pmsim reproduce marathe --quick --out=OTHER; pmsim table "
                        f"{before['out']} --merge OTHER --write")
    assert "/elsewhere" not in cmd and merged["meta"]["seconds"] == before["seconds"] + 5.0
    assert "| M13 |" in (base / "results.md").read_text()
    assert main(["table", str(base), "--merge", str(other), "--write"]) == 0
    again = json.loads((base / "results.json").read_text())["meta"]["command"]
    assert again == cmd  # the same rerun merged twice is named once


def test_table_merge_of_an_only_run_replaces_its_experiments_alone(tiny, tmp_path,
                                                                    capsys) -> None:
    """A run made with --only (one figure refreshed) replaces that experiment's rows and
    counterfactuals and keeps the rest of the paper, in the order a run saves them."""
    _, out, _ = tiny
    base, other = tmp_path / "base", tmp_path / "other"
    doc = json.loads((out / "results.json").read_text())
    rows = doc["papers"]["marathe"]
    toggle = "prefetchers toggled"
    doc["explain"] = {"marathe": {"experiments": ["alloc-x", "array-slot4"], "rows": [
        {**r, "counterfactual": toggle, "origin": "o"} for r in rows]}}
    base.mkdir()
    (base / "results.json").write_text(json.dumps(doc))
    fresh = [{**r, "throughput": 1.0} for r in rows if r["experiment"] == "alloc-x"]
    new = {"meta": {**doc["meta"], "only": ["alloc-x"],
                    "command": "pmsim reproduce marathe --quick --only=alloc-x --out=/x"},
           "papers": {"marathe": fresh}, "explain": {"marathe": {"experiments": [], "rows": []}}}
    other.mkdir()
    (other / "results.json").write_text(json.dumps(new))
    assert main(["table", str(base), "--merge", str(other), "--write"]) == 0
    assert "marathe (alloc-x)" in capsys.readouterr().err
    merged = json.loads((base / "results.json").read_text())
    got = merged["papers"]["marathe"]
    assert [r["experiment"] for r in got] == [r["experiment"] for r in rows]  # order kept
    assert all((r["throughput"] == 1.0) == (r["experiment"] == "alloc-x") for r in got)
    assert merged["meta"]["points"] == doc["meta"]["points"]
    ex = merged["explain"]["marathe"]  # alloc-x now holds: its old counterfactuals go
    assert ex["experiments"] == ["array-slot4"]
    assert {r["experiment"] for r in ex["rows"]} == {"array-slot4"}


@pytest.mark.parametrize("meta, msg", [({"scale": "full"}, "its scale is 'full'"),
                                       ({"version": "0.0.1"}, "its version")])
def test_table_merge_refuses_another_scale_or_version(tiny, tmp_path, capsys, meta,
                                                      msg) -> None:
    _, out, _ = tiny
    _copy(out, tmp_path / "base")
    _copy(out, tmp_path / "other", **meta)
    assert main(["table", str(tmp_path / "base"), "--merge", str(tmp_path / "other"),
                 "--write"]) == 2
    assert msg in capsys.readouterr().err


def test_reproduce_unified_alone_and_merged(tiny, tmp_path, capsys, monkeypatch) -> None:
    """`pmsim reproduce unified` runs the comparison alone; --merge puts it on a page. (The
    comparison is cut to two runtimes on Array here: the plumbing is under test.)"""
    from pmsim.experiments import reproduce
    from pmsim.experiments.unified import Unified

    monkeypatch.setattr(reproduce.Unified, "quick", classmethod(
        lambda cls: Unified(runtimes=("undo", "redo"), workloads=("array",), txs=20, warmup=2,
                            kills="file")))
    _, out, _ = tiny
    uni = tmp_path / "uni"
    assert main(["reproduce", "unified", "--quick", "--scale", "0.05", "--out", str(uni),
                 "--jobs", "1", "--no-progress", "--no-figures"]) == 0
    doc = json.loads((uni / "results.json").read_text())
    assert doc["papers"] == {} and len(doc["unified"]["rows"]) == 6  # 2 runtimes, 3 domains
    assert "## Unified comparison" in (uni / "results.md").read_text()
    base = tmp_path / "base"
    _copy(out, base, scale="quick", txs_scale=0.05)
    before = json.loads((base / "results.json").read_text())["meta"]
    assert main(["table", str(base), "--merge", str(uni), "--write"]) == 0
    merged = json.loads((base / "results.json").read_text())
    assert merged["unified"]["rows"] == doc["unified"]["rows"]
    assert merged["papers"]["marathe"] and merged["meta"]["points"] == (
        before["points"] + len(doc["unified"]["rows"]))
    assert "## Unified comparison" in (base / "results.md").read_text()


def test_table_merge_needs_write(tiny, capsys) -> None:
    _, out, _ = tiny
    assert main(["table", str(out), "--merge", str(out)]) == 2
    assert "give --write too" in capsys.readouterr().err


def test_compare_prints_every_column(capsys, tmp_path) -> None:
    dest = tmp_path / "u.csv"
    assert main(["compare", "--runtimes", "undo,redo", "--workloads", "bank", "--domains",
                 "pdom1", "--quick", "--txs", "10", "--format", "csv", "--out", str(dest),
                 "--jobs", "1", "--no-progress"]) == 0
    rows = list(csv.DictReader(dest.open()))
    assert [r["runtime"] for r in rows] == ["undo", "redo"]
    for col in ("throughput", "lat_p50", "lat_p90", "lat_p99", "pb_per_tx", "flush_per_tx",
                "fence_per_tx", "pm_bytes_per_tx", "crash_fuzz", "mutants_killed"):
        assert rows[0][col] != "", col
    assert rows[0]["crash_fuzz"].startswith("clean")


@pytest.mark.parametrize("argv,msg", [
    (["reproduce", "marath"], "unknown paper 'marath'. Did you mean 'marathe'?"),
    (["reproduce", "marathe", "--only", "fig9"], "unknown experiment 'fig9'"),
    (["reproduce", "marathe,dudtx"], "unknown paper 'dudtx'. Did you mean 'dudetx'?"),
    (["reproduce", ","], "no paper named"),
    (["reproduce", "marathe", "--scale", "0"], "--scale"),
    (["compare", "--runtimes", "undo,bogus"], "Known runtimes: atom, cow"),
    (["compare", "--workloads", "tpcx"], "Known workloads:"),
    (["compare", "--domains", "pdom3"], "Known domains: pdom0, pdom1, pdom2"),
    (["compare", "--machine", "x86"], "unknown machine 'x86'"),
    (["compare", "--dask", "tcp://"], "Dask"),
    (["table", "/nonexistent-pmsim-results"], "no saved results"),
    (["reproduce", "unified", "--explain"], "runs the unified comparison alone"),
    (["reproduce", "unified", "--only", "alloc-x"], "runs the unified comparison alone"),
])
def test_bad_input_exits_2(argv, msg, capsys) -> None:
    assert main(argv) == 2
    assert msg in capsys.readouterr().err


def test_out_must_be_a_directory(tmp_path, capsys) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["reproduce", "marathe", "--quick", "--out", str(f)]) == 2
    assert "is a file" in capsys.readouterr().err
    assert main(["table", str(f)]) == 2
    assert "cannot read saved results" in capsys.readouterr().err


def test_table_unknown_paper(tiny, capsys) -> None:
    _, out, _ = tiny
    assert main(["table", str(out), "--paper", "nv-htm"]) == 2
    assert "unknown paper 'nv-htm'. Known papers: marathe." in capsys.readouterr().err


@pytest.mark.slow
def test_reproduce_marathe_quick_in_two_minutes(tmp_path, capsys) -> None:
    t0 = time.perf_counter()
    assert main(["reproduce", "marathe", "--quick", "--out", str(tmp_path), "--jobs", "2",
                 "--no-progress"]) == 0
    assert time.perf_counter() - t0 < 150
    board = {r["claim"]: r["verdict"] for r in
             csv.DictReader((tmp_path / "scoreboard-marathe.csv").open())}
    assert "not run" not in board.values()
    assert board["M13"] == "self-check ok" and board["M10"] == "not modelled"
