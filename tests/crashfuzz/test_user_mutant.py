"""A user defines a mutant of redo in a few lines with the public mutation API; crashfuzz kills it."""

from __future__ import annotations

from crashfuzz import fuzz
from pmsim.runtimes import Mutant, delay


def test_a_user_mutant_in_under_ten_lines() -> None:
    m = Mutant("redo:idle-first", "redo", [delay("redo.commit.write-back", after="redo.commit.store-idle")],
               domains=("pdom1",), why="IDLE is stored before the write-backs")
    report = fuzz(runtime=m.build(), workload="array", domain="pdom1", txs=6, reduce=False)
    assert not report.ok


BROKEN_BASE = """
from pmsim.runtimes import Mutant, drop
from pmsim.runtimes.mutation import mutate
from pmsim.runtimes.undo import UndoRuntime

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
