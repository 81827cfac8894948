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
    rc = main(["mutants", "--mutant", "redo:R2", "--domain", "pdom1", "--domain", "pdom2", "--txs", "4"])
    out = capsys.readouterr().out
    assert rc == 0 and "redo:R2" in out and "0 unexpected" in out


def test_module_entry_point() -> None:
    r = subprocess.run([sys.executable, "-m", "crashfuzz", "--help"], capture_output=True,
                       text=True, check=False)
    assert r.returncode == 0 and "mutants" in r.stdout


def test_run_fuzzes_the_machine_given_and_findings_record_it(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from crashfuzz.campaign import FuzzConfig
    from pmsim import preset

    d = tmp_path / "findings"
    rc = main(["run", "--runtime", "undo:U1", "--workload", "kv", "-p", "keys=8", "--txs", "4",
               "--stop-at-first", "--findings", str(d), "--preset", "optane-adr", "--set",
               "pm.wpq_entries=8", "--cores", "3", "--no-progress"])
    assert rc == 1
    assert capsys.readouterr().out.startswith(
        "machine: preset optane-adr, --cores 3, --set pm.wpq_entries=8; pdom1, 3 cores")
    (saved,) = sorted(d.glob("*.json"))
    cfg = FuzzConfig.from_dict(json.loads(saved.read_text())["config"])
    want = preset("optane-adr").replace(cores=3, **{"pm.wpq_entries": 8})
    assert cfg.machine == want and cfg.domain == "pdom1" and dict(cfg.params) == {"keys": 8}
    assert main(["replay", str(saved)]) == 1


def test_run_takes_the_domain_and_seed_of_the_preset_unless_given(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert main(["run", "--txs", "2", "--findings", "", "--preset", "eadr", "--json", str(out),
                 "--no-progress"]) == 0
    cfg = json.loads(out.read_text())["config"]
    assert cfg["domain"] == "pdom2" and cfg["machine"]["domain"] == "pdom2"
    assert main(["run", "--txs", "2", "--findings", "", "--json", str(out), "--seed", "3"]) == 0
    cfg = json.loads(out.read_text())["config"]
    assert cfg["domain"] == "pdom1" and cfg["seed"] == 3 and cfg["machine"] is None


def test_report_names_a_user_workload_by_its_class(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mykv.py").write_text("from pmsim.workloads.kv import KV\n\n\n"
                                      "class MyKV(KV):\n    \"\"\"Inherits name = 'kv'.\"\"\"\n")
    assert main(["run", "--workload", "mykv.py:MyKV", "--txs", "2", "--findings", ""]) == 0
    assert capsys.readouterr().out.startswith("crashfuzz undo / mykv.py:MyKV / pdom1")


def test_long_commands_show_progress_lines_off_a_terminal(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pmsim.progress.LINE_INTERVAL_S", 0.0)
    monkeypatch.setattr("pmsim.progress.Progress.__init__.__defaults__",
                        ("unit", None, None, 0.0, False))
    assert main(["run", "--txs", "2", "--findings", ""]) == 0
    err = capsys.readouterr().err
    assert "fuzz: " in err and "ETA" in err
    assert main(["run", "--txs", "2", "--findings", "", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def test_ablation_progress_total_is_the_number_of_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ablate command's progress display has a fixed total: the cells ablate makes."""
    import crashfuzz.ablation as ab
    from crashfuzz.campaign import FuzzConfig

    monkeypatch.setattr(ab, "_fuzz_until_killed", lambda *a: ("redundant", "array", None, "", 0))
    base = FuzzConfig(txs=3, idempotence=1, reduce=False, budget=1024, new_tx=1)
    for steps, swaps in ((None, True), (None, False), (["redo.commit.pb1"], True)):
        cells = ab.ablate("redo", ("pdom1", "pdom2"), steps, swaps, base)
        assert len(cells) == ab.ablation_size("redo", steps, swaps, base, ("pdom1", "pdom2"))


def test_mutants_show_progress_with_a_fixed_total(capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pmsim.progress.Progress.__init__.__defaults__",
                        ("unit", None, None, 0.0, False))
    # two domains where U1 is killed on its first workload: PDOM-2, where it survives, would run
    # every trial workload to its end (test_mutants_subset shows a survival)
    assert main(["mutants", "--mutant", "undo:U1", "--domain", "pdom1", "--domain", "pdom0",
                 "--txs", "3"]) in (0, 1)
    err = capsys.readouterr().err
    assert "mutants: 1/2 campaigns (50%)" in err and "undo:U1 pdom1: killed" in err
