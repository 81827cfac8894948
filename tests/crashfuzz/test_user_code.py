"""The CLIs load a user's runtime, workload or mutant from a file path or a module path."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from crashfuzz.cli import main
from pmsim.cli import main as pmsim_main

USER = '''
from pmsim.runtimes import Mutant, UndoRuntime, drop
from pmsim.workloads.kv import KV


class FileKV(KV):
    name = "file-kv"
    fuzz_params = {"buckets": 2, "keys": 4}


class FileUndo(UndoRuntime):
    name = "file-undo"


no_pb = Mutant("undo:file-no-pb", "undo", [drop("undo.append.pb")], domains=("pdom0", "pdom1"))
'''


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "user.py").write_text(textwrap.dedent(USER))
    return tmp_path


@pytest.mark.usefixtures("user")
def test_pmsim_run_by_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert pmsim_main(["run", "--runtime", "user.py:FileUndo", "--workload", "user.py:FileKV",
                       "--txs", "20", "-p", "keys=4"]) == 0
    assert "# user.py:FileUndo on user.py:FileKV (" in capsys.readouterr().out


def test_crashfuzz_run_and_replay_by_path(user: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = user / "r.json"
    assert main(["run", "--runtime", "user.py:FileUndo", "--workload", "user.py:FileKV",
                 "--txs", "4", "--findings", "", "--json", str(out), "--jobs", "2"]) == 0
    assert "crashfuzz file-undo / file-kv" in capsys.readouterr().out
    assert json.loads(out.read_text())["states_checked"] > 0
    assert main(["run", "--runtime", "user.py:no_pb", "--workload", "user.py:FileKV", "--txs",
                 "4", "--stop-at-first", "--findings", "found"]) == 1
    text = capsys.readouterr().out
    assert "FAILURE" in text and "replay('found/undo_file-no-pb-" in text
    saved = sorted((user / "found").glob("*.json"))
    doc = json.loads(saved[0].read_text())
    assert (doc["config"]["runtime"], doc["config"]["workload"]) == ("user.py:no_pb",
                                                                     "user.py:FileKV")
    assert main(["replay", str(saved[0])]) == 1
    capsys.readouterr()
    assert main(["run", "--runtime", "user.py:no_pb", "--workload", "user.py:FileKV", "--txs",
                 "4", "--stop-at-first", "--findings", "found"]) == 1
    assert f"replayed {len(saved)} saved findings: {len(saved)} still fail" in \
        capsys.readouterr().out


@pytest.mark.usefixtures("user")
def test_crashfuzz_mutants_by_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mutants", "--mutant", "user.py:no_pb", "--domain", "pdom1", "--txs", "4"]) == 0
    out = capsys.readouterr().out
    assert "undo:file-no-pb" in out and "1 of 1 (mutant, domain) pairs killed; 0 unexpected" in out


@pytest.mark.usefixtures("user")
@pytest.mark.parametrize("argv,msg", [
    (["run", "--workload", "nofile.py:Stack"], "nofile.py: no such file"),
    (["run", "--workload", "user.py:Stack"],
     "user.py:Stack: user.py has no attribute 'Stack'; it defines FileKV, FileUndo"),
    (["run", "--runtime", "user.py:FileKV"], "not a runtime"),
    (["run", "--workload", "user.py"], "name the workload after a colon, e.g. 'user.py:FileKV'"),
    (["mutants", "--mutant", "user.py:FileUndo"], "not a mutant"),
])
def test_bad_paths_exit_2(argv: list[str], msg: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv + (["--findings", ""] if argv[0] == "run" else [])) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err
    if argv[0] == "run":  # pmsim run takes the same names
        assert pmsim_main(["run", "--txs", "1"] + argv[1:]) == 2
        assert msg in capsys.readouterr().err


def test_a_syntax_error_exits_2(user: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (user / "bad.py").write_text("class Broken(\n")
    assert main(["run", "--workload", "bad.py:Broken", "--findings", ""]) == 2
    assert "bad.py: syntax error at line 1" in capsys.readouterr().err


@pytest.mark.usefixtures("user")
def test_pmsim_compare_by_path(capsys: pytest.CaptureFixture[str]) -> None:
    """compare takes user runtimes and workloads by path like every other command."""
    assert pmsim_main(["compare", "--runtimes", "undo", "user.py:FileUndo", "--workloads",
                       "user.py:FileKV", "--domains", "pdom1", "--txs", "20", "--kills", "off",
                       "--jobs", "1"]) == 0
    rows = [ln.split() for ln in capsys.readouterr().out.splitlines()]
    got = {(r[0], r[1], r[2]) for r in rows if len(r) > 3}
    assert {("undo", "user.py:FileKV", "pdom1"), ("user.py:FileUndo", "user.py:FileKV",
                                                  "pdom1")} <= got
    assert all("clean" in " ".join(r) for r in rows if r and r[1] == "user.py:FileKV")
    assert pmsim_main(["compare", "--workloads", "user.py:Nope", "--no-fuzz"]) == 2
    assert "user.py has no attribute 'Nope'" in capsys.readouterr().err
