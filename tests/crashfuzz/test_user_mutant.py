"""A user defines a mutant in a few lines with the public mutation API; crashfuzz kills it. A
mutant in a file names its workload by a path relative to that file."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import pytest

from crashfuzz import FuzzConfig, fuzz
from crashfuzz.cli import main as cli
from crashfuzz.mutants import kill_one
from pmsim.errors import ConfigError
from pmsim.runtimes import Mutant, delay, get_mutant


def test_a_user_mutant_in_under_ten_lines() -> None:
    m = Mutant("redo:idle-first", "redo", [delay("redo.commit.write-back", after="redo.commit.store-idle")],
               domains=("pdom1",), why="IDLE is stored before the write-backs")
    report = fuzz(runtime=m.build(), workload="array", domain="pdom1", txs=6, reduce=False,
                  stop_at_first=True)
    assert not report.ok


BROKEN_BASE = """
from pmsim.runtimes import Mutant, drop
from pmsim.runtimes.mutation import mutate
from pmsim.runtimes.marathe.undo import UndoRuntime

BrokenUndo = mutate(UndoRuntime, [drop("undo.append.pb")], "broken-undo")
on_broken = Mutant("broken-undo:no-pb4", BrokenUndo, [drop("undo.commit.pb4")], domains=("pdom1",))
"""


def test_a_user_mutant_whose_base_fails_is_not_killed(tmp_path, monkeypatch, capsys) -> None:
    """``crashfuzz mutants`` on a user's mutant whose base runtime fails the same campaign:
    ``base-fails``, unexpected, exit 1."""
    from crashfuzz.cli import main

    (tmp_path / "user_mutants.py").write_text(BROKEN_BASE)
    monkeypatch.chdir(tmp_path)
    rc = main(["mutants", "--mutant", "user_mutants.py:on_broken", "--domain", "pdom1",
               "--txs", "4"])
    out = capsys.readouterr().out
    rows = {ln.split()[0]: ln.split() for ln in out.splitlines() if ":no-pb" in ln}
    assert rc == 1, out
    assert rows["broken-undo:no-pb4"][2:6] == ["base-fails", "kill", "UNEXPECTED", "fails"]
    assert "0 of 1 (mutant, domain) pairs killed; 1 unexpected" in out

MUTANTS = '''
from pmsim.runtimes import Mutant, drop

no_pb = Mutant("undo:file-no-pb", "undo", [drop("undo.append.pb")], domains=("pdom1",),
               workload="wl.py:SmallKV", txs=4)
'''
WORKLOAD = '''
from pmsim.workloads.kv import KV


class SmallKV(KV):
    name = "small-kv"
    fuzz_params = {"buckets": 2, "keys": 4}
'''


def _files(root: Path, mutant_dir: str, workload_dir: str | None) -> str:
    """A mutant file in ``root/mutant_dir`` whose workload file (``wl.py``) is in
    ``root/workload_dir`` (nowhere when None); the path of the mutant, from ``root``."""
    (root / mutant_dir).mkdir(parents=True, exist_ok=True)
    (root / mutant_dir / "my_mutants.py").write_text(MUTANTS)
    if workload_dir is not None:
        (root / workload_dir).mkdir(parents=True, exist_ok=True)
        (root / workload_dir / "wl.py").write_text(textwrap.dedent(WORKLOAD))
    return f"{mutant_dir}/my_mutants.py:no_pb"


def test_a_mutants_workload_path_is_taken_from_the_mutants_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    path = _files(tmp_path, "muts", "muts")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = get_mutant(path)
    wl = tmp_path.resolve() / "muts" / "wl.py"
    assert m.workload == f"{wl}:SmallKV"
    row = kill_one(m, "pdom1", FuzzConfig(txs=4, reduce=False))
    assert row.killed and row.as_expected and row.workload == f"{wl}:SmallKV"
    assert cli(["mutants", "--mutant", path, "--domain", "pdom1", "--txs", "4"]) == 0
    assert "wl.py:SmallKV" in capsys.readouterr().out


def test_a_workload_next_to_the_mutant_and_in_the_current_directory_keeps_its_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wl.py").write_text(textwrap.dedent(WORKLOAD))
    (tmp_path / "my_mutants.py").write_text(MUTANTS)
    assert get_mutant("my_mutants.py:no_pb").workload == "wl.py:SmallKV"


def test_a_workload_only_in_the_current_directory_is_used_with_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = _files(tmp_path, "elsewhere", ".")
    with pytest.warns(UserWarning, match=r"wl.py is not next to .*elsewhere.*current directory"):
        m = get_mutant(path)
    assert m.workload == f"{tmp_path.resolve() / 'wl.py'}:SmallKV"


def test_a_missing_workload_file_says_where_it_looked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    path = _files(tmp_path, "gone", None)
    with pytest.raises(ConfigError) as e:
        get_mutant(path)
    msg = str(e.value)
    assert "undo:file-no-pb" in msg and "wl.py not found" in msg
    assert str(tmp_path / "gone" / "wl.py") in msg and "current directory" in msg
    assert "relative to the file that defines the mutant" in msg
    assert cli(["mutants", "--mutant", path, "--domain", "pdom1"]) == 2
    assert "wl.py not found" in capsys.readouterr().err


def test_a_mutant_built_outside_a_file_takes_the_path_from_the_current_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="tried .* \\(from the current directory\\)"):
        Mutant("undo:x", "undo", [delay("undo.append.pb", after="undo.append.tail")],
               workload="wl.py:SmallKV", origin="")
    (tmp_path / "wl.py").write_text(textwrap.dedent(WORKLOAD))
    m = Mutant("undo:x", "undo", [delay("undo.append.pb", after="undo.append.tail")],
               workload="wl.py:SmallKV", origin="")
    assert m.workload == "wl.py:SmallKV"
