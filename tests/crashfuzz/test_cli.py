"""The crashfuzz command line: exit codes 0 / 1 / 2, reports, findings, litmus, mutants."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from crashfuzz.cli import main


def test_run_ok_exits_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    rc = main(["run", "--runtime", "redo", "--workload", "bank", "--txs", "4", "--findings", "",
               "--json", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "OK" in text and "crash points" in text
    doc = json.loads(out.read_text())
    assert doc["failure_count"] == 0 and doc["states_checked"] > 0


def test_failure_exits_1_and_saves_findings(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    d = tmp_path / "findings"
    rc = main(["run", "--runtime", "undo:U1", "--txs", "4", "--stop-at-first", "--findings", str(d)])
    assert rc == 1
    assert "FAILURE" in capsys.readouterr().out
    saved = sorted(d.glob("*.json"))
    assert saved
    rc = main(["run", "--runtime", "undo:U1", "--txs", "4", "--stop-at-first", "--findings", str(d)])
    assert "replayed 1 saved findings: 1 still fail" in capsys.readouterr().out
    assert main(["replay", str(saved[0])]) == 1


@pytest.mark.parametrize("argv", [
    ["run", "--runtime", "nope"],
    ["run", "--workload", "nope"],
    ["run", "--param", "bogus"],
    ["run", "--txs", "0"],
    ["run", "--param", "slots=-1"],
    ["replay", "does-not-exist.json"],
])
def test_bad_input_exits_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    try:
        rc = main(argv + ["--findings", ""] if argv[0] == "run" else argv)
    except SystemExit as e:  # rejected by argparse (after its usage lines)
        rc = e.code
    assert rc == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("crashfuzz") and ": error: " in err
    assert "Traceback" not in err


def test_litmus_suite_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["litmus"]) == 0
    assert " 0 failed" in capsys.readouterr().out


def test_mutants_subset(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["mutants", "--mutant", "redo:R2", "--domain", "pdom1", "--domain", "pdom2"])
    out = capsys.readouterr().out
    assert rc == 0 and "redo:R2" in out and "0 unexpected" in out


def test_module_entry_point() -> None:
    r = subprocess.run([sys.executable, "-m", "crashfuzz", "--help"], capture_output=True,
                       text=True, check=False)
    assert r.returncode == 0 and "mutants" in r.stdout
