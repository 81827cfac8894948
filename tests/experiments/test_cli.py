"""`pmsim run` and `pmsim demo`: output, files, and exit status 2 on bad input."""

from __future__ import annotations

import csv
import json

import pytest

from pmsim.cli import main


def test_run_threads_above_the_presets_cores_need_cores(tmp_path, capsys) -> None:
    """The machine timed is the machine `pmsim config` prints for the same options: more
    threads than the preset's cores is an error, --cores gives the bigger machine."""
    js = tmp_path / "r.json"
    assert main(["run", "--workload", "bank", "--threads", "4", "--txs", "5"]) == 2
    assert "--cores 4" in capsys.readouterr().err
    assert main(["run", "--workload", "bank", "--threads", "4", "--cores", "4", "--txs", "5",
                 "--json", str(js)]) == 0
    data = json.loads(js.read_text())
    assert data["threads"] == 4 and data["config"]["cores"] == 4


def test_run_prints_table_and_writes_files(tmp_path, capsys) -> None:
    js, cs = tmp_path / "r.json", tmp_path / "r.csv"
    rc = main(["run", "--runtime", "redo", "--workload", "bank", "--threads", "2", "--txs", "30",
               "--preset", "marathe-pdom1", "-p", "accounts=8", "--json", str(js), "--csv", str(cs)])
    assert rc == 0
    out = capsys.readouterr().out
    for metric in ("throughput", "lat_p50", "lat_p99", "pb_per_tx", "pm_bytes_per_tx", "aborts"):
        assert metric in out
    data = json.loads(js.read_text())
    assert data["runtime"] == "redo" and data["threads"] == 2
    assert data["commits"] + data["aborts"] == 60
    assert data["config"]["domain"] == "pdom1"
    row = next(csv.DictReader(cs.open()))
    assert float(row["pb_per_tx"]) == pytest.approx(data["pb_per_tx"])


def test_run_prints_the_runtimes_counters(tmp_path, capsys) -> None:
    """NV-HTM's acceptance run: aborts by cause and PM traffic in both counting modes, totals
    and per committed transaction; redo has no counters and prints no counter table."""
    js = tmp_path / "r.json"
    assert main(["run", "--runtime", "nvhtm", "--workload", "bank", "--threads", "8", "--cores",
                 "8", "--txs", "20", "--json", str(js)]) == 0
    out = capsys.readouterr().out
    data = json.loads(js.read_text())
    for k in ("htm.conflict", "htm.capacity", "htm.lock", "htm.fallbacks",
              "nvhtm.literal_words", "nvhtm.literal_flushes", "nvhtm.paper_writes",
              "nvhtm.paper_flushes"):
        assert k in out and k in data
    line = next(ln for ln in out.splitlines() if ln.split()[:1] == ["nvhtm.updates"])
    assert float(line.split()[2]) == pytest.approx(data["nvhtm.updates"] / data["commits"], 0.01)
    assert main(["run", "--runtime", "redo", "--txs", "5"]) == 0
    assert "counters" not in capsys.readouterr().out


def test_run_domain_override(capsys) -> None:
    for dom in ("pdom0", "pdom2"):
        assert main(["run", "--runtime", "undo", "--txs", "5", "--preset", "marathe-pdom1",
                     "--domain", dom, "-p", "slots=1000", "-p", "write_pct=50"]) == 0
    out = capsys.readouterr().out
    assert out.count("pdom0") and out.count("pdom2")


@pytest.mark.parametrize("argv,msg", [
    (["run", "--runtime", "undoo"], "unknown runtime 'undoo'"),
    (["run", "--workload", "arry"], "unknown workload 'arry'"),
    (["run", "-p", "write_pct=200"], "write_pct"),
    (["run", "-p", "slots"], "KEY=VALUE"),
    (["run", "-p", "nosuch=1"], "unknown array parameter"),
    (["run", "--threads", "0"], "--threads"),
])
def test_bad_input_exits_2(argv, msg, capsys) -> None:
    try:
        rc = main(argv)
    except SystemExit as e:  # rejected by argparse
        rc = e.code
    assert rc == 2
    assert msg in capsys.readouterr().err


def test_demo(capsys) -> None:
    assert main(["demo", "--txs", "20"]) == 0
    out = capsys.readouterr().out
    for rt in ("undo", "redo", "cow"):
        assert rt in out
    for dom in ("pdom0", "pdom1", "pdom2"):
        assert dom in out
