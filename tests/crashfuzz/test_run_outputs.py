"""``crashfuzz run`` checks its output paths before the work and writes each output even when
another cannot be written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import crashfuzz.campaign
import crashfuzz.cli
from crashfuzz.cli import main

SMALL = ["run", "--runtime", "undo:U1", "--txs", "3", "--stop-at-first", "--no-replay"]


@pytest.fixture
def no_fuzzing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bad paths must be refused before any fuzzing starts."""

    def refuse(*args: Any, **kw: Any) -> None:
        raise AssertionError("fuzz() ran although an output path is unusable")

    monkeypatch.setattr(crashfuzz.campaign, "fuzz", refuse)


@pytest.mark.parametrize(("option", "value", "says"), [
    ("--json", "missing/r.json", "does not exist"),
    ("--json", "adir", "is a directory"),
    ("--json", "afile/r.json", "is not a directory"),
    ("--findings", "afile", "is a file, not a directory"),
    ("--findings", "afile/sub", "is a file"),
])
def test_unusable_output_path_exits_2_before_the_work(
        no_fuzzing: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], option: str, value: str, says: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    argv = [*SMALL, "--findings", "", "--json", "r.json"]
    argv[argv.index(option) + 1] = value
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("crashfuzz: error:") and option in err and says in err, err
    assert "Traceback" not in err and err.count("\n") == 1
    assert not (tmp_path / "r.json").exists()


def test_findings_directory_is_created_and_json_written_atomically(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d, out = tmp_path / "new" / "findings", tmp_path / "r.json"
    assert main([*SMALL, "--findings", str(d), "--json", str(out)]) == 1
    assert sorted(d.glob("*.json")) and json.loads(out.read_text())["partial"] is False
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert "FAILURE" in capsys.readouterr().out


def test_a_failed_write_loses_no_other_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    def broken(path: str, doc: dict[str, Any]) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(crashfuzz.cli, "_write_json", broken)
    d = tmp_path / "findings"
    assert main([*SMALL, "--findings", str(d), "--json", str(tmp_path / "r.json")]) == 2
    captured = capsys.readouterr()
    assert "FAILURE" in captured.out and sorted(d.glob("*.json"))
    assert "could not write --json" in captured.err and "No space left" in captured.err


def test_a_damaged_saved_finding_does_not_cost_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Saved findings are replayed first; one that cannot be read is reported, the run goes on."""
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--runtime", "undo:U1", "--txs", "3", "--stop-at-first", "--findings", "f"]
    assert main(argv) == 1
    saved = sorted((tmp_path / "f").glob("*.json"))
    assert saved
    (tmp_path / "f" / json.loads(saved[0].read_text())["image"]).unlink()
    capsys.readouterr()
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert f"replayed {len(saved)} saved findings" in out and "1 unreadable" in out
    assert "FAILURE" in out
