"""PM programs from the outside: the ``crashfuzz program`` command, findings and replay,
ablation over a program's own flushes and fences, scripts and Hypothesis."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from hypothesis import Phase, given, settings
from hypothesis.stateful import run_state_machine_as_test

import crashfuzz
from crashfuzz.ablation import ablate
from crashfuzz.cli import main
from crashfuzz.pm import ProgramCrashMachine, scripts
from pmsim.programs.gallery import PLog, SlotHash

TWIN_FILE = textwrap.dedent('''
    from pmsim.programs import PMProgram, operation

    class Model:
        def __init__(self):
            self.v = (0, 0)
        def put(self, v):
            self.v = (v, v)
        def state(self):
            return self.v

    class Twin(PMProgram):
        """x and y, equal after every put: x persisted, then y."""
        size = 128
        model = Model

        @operation(args=lambda rng: (int(rng.integers(1, 9)),))
        def put(self, pm, v):
            pm.store(0, v)
            pm.clwb(0)
            pm.sfence(step="put.order")
            pm.store(64, v)
            pm.persist(64, step="put.y")

        def recover(self, pm):
            if pm.load(0) != pm.load(64):  # a put that stopped between x and y: finish it
                pm.store(64, pm.load(0))
                pm.persist(64, step="recover.finish")

        def state(self, pm):
            return (pm.load(0), pm.load(64))

    class TornTwin(Twin):
        """BROKEN: x and y flushed together, and no recovery: y may persist before x."""

        def recover(self, pm):
            pass

        @operation(args=lambda rng: (int(rng.integers(1, 9)),))
        def put(self, pm, v):
            pm.store(0, v)
            pm.store(64, v)
            pm.clwb(0)
            pm.clwb(64)
            pm.sfence(step="put.fence")
''')



@pytest.fixture
def twin(tmp_path: Path) -> str:
    f = tmp_path / "twin.py"
    f.write_text(TWIN_FILE)
    return f"{f}:Twin"


@pytest.fixture
def torn(twin: str) -> str:
    return twin.replace(":Twin", ":TornTwin")


def test_the_program_command_fuzzes_a_file(torn: str, tmp_path: Path, capsys) -> None:
    rc = main(["program", torn, "--txs", "6", "--findings", str(tmp_path / "f"),
               "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert rc == 1 and "TornTwin / TornTwin / pdom1 / px86" in out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["config"]["order"] == "px86" and doc["config"]["runtime"] == torn
    saved = sorted((tmp_path / "f").glob("*.json"))
    assert saved
    assert crashfuzz.replay(saved[0], verbose=False) is not None  # a fresh campaign, same bug


def test_the_program_command_refuses_what_is_not_a_program(capsys) -> None:
    assert main(["program", "undo"]) == 2
    assert "is not a PM program" in capsys.readouterr().err


def test_repair_from_the_command_line(torn: str, capsys) -> None:
    rc = main(["program", torn, "--txs", "6", "--repair"])
    out = capsys.readouterr().out
    assert rc == 1 and "fix 1: before the store at TornTwin.put line" in out
    assert out.rstrip().endswith("the fixes make it robust")


def test_a_clean_program_exits_zero(capsys) -> None:
    assert main(["program", "pmsim.programs.gallery.plog:PLog", "--txs", "8",
                 "--findings", ""]) == 0
    assert main(["program", "pmsim.programs.gallery.plog:PLog", "--txs", "8", "--repair"]) == 0
    assert "robust as written" in capsys.readouterr().out


def test_ablation_names_the_programs_own_steps(twin: str) -> None:
    """Twin's recovery finishes a put whose x persisted, so only x's flush is needed: without
    it x may never persist and a returned put is lost; the fence, y's persist and recovery's
    own persist are redundant (recovery redoes y from x)."""
    cells = ablate(twin, domains=("pdom1",), swaps=False)
    verdicts = {c.step: c.verdict for c in cells}
    flush = [s for s in verdicts if s.startswith("put.clwb@")]
    assert len(flush) == 1 and verdicts[flush[0]] == "needed"
    assert verdicts["put.order"] == verdicts["put.y"] == verdicts["recover.finish"] == "redundant"
    assert not main(["program", twin, "--txs", "6", "--findings", ""])


def test_a_finding_of_an_explored_schedule_replays_it(tmp_path: Path) -> None:
    rep = crashfuzz.fuzz_program("pmsim.programs.gallery.lflog:LFLogNoHelp", txs=6, threads=2,
                                 schedules=4, stop_at_first=True)
    assert not rep.ok
    paths = crashfuzz.save_findings(rep, tmp_path)
    doc = json.loads(Path(paths[0]).read_text())
    assert doc["config"]["schedule_index"] > 0
    assert crashfuzz.replay(paths[0], verbose=False) is not None


def test_a_script_runs_as_written() -> None:
    rep = crashfuzz.fuzz_program(PLog, script=[("append", 5), ("append", 6), ("get", 1)])
    assert rep.ok and rep.transactions == 3


@settings(max_examples=15, deadline=None)
@given(script=scripts(SlotHash, max_ops=8))
def test_any_script_of_the_slot_hash_is_crash_consistent(script) -> None:
    rep = crashfuzz.fuzz_program(SlotHash, script=script, depth=1, idempotence=1)
    assert rep.ok, crashfuzz.format_report(rep)


class SlotHashMachine(ProgramCrashMachine):
    program = SlotHash
    max_ops = 5


SlotHashMachine.TestCase.settings = settings(max_examples=3, stateful_step_count=5,
                                             deadline=None)
TestSlotHashMachine = SlotHashMachine.TestCase


def test_the_state_machine_catches_a_broken_program() -> None:
    from pmsim.programs.gallery import SlotHashOneFlush

    class Broken(ProgramCrashMachine):
        program = SlotHashOneFlush

    with pytest.raises(AssertionError, match="script: \\[\\('put'"):  # not shrunk: quick
        run_state_machine_as_test(Broken, settings=settings(
            max_examples=30, deadline=None, stateful_step_count=6, phases=[Phase.generate]))
