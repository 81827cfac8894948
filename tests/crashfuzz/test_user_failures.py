"""User code that raises, exits or loops: a clear error naming the user's method, file and line
(and the thread and transaction) with exit 2 where no crash is involved, a finding where one is."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from crashfuzz.campaign import Campaign
from crashfuzz.cli import main
from pmsim.cli import main as pmsim_main
from pmsim.workloads import session

USER = '''
import sys

import numpy as np

from pmsim.runtimes import UndoRuntime
from pmsim.workloads.array import Array, ArrayModel


class InInit(Array):
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        raise ValueError("bad init")


class InSpec(Array):
    def spec(self):
        raise ValueError("bad spec")


class InNextOp(Array):
    def next_op(self, tid, rng):
        if len(self.executed) == 2:
            raise ValueError("bad op")
        return super().next_op(tid, rng)


class InBody(Array):
    def body(self, tx, op):
        if len(self.executed) == 3:
            raise ValueError("bad body")
        return (yield from super().body(tx, op))


class RaisingModel(ArrayModel):
    def apply(self, op):
        raise ValueError("bad model")


class InModel(Array):
    def model(self):
        return RaisingModel(self.p.slot_words)


class Exits(Array):
    def body(self, tx, op):
        sys.exit(0)


class Interrupts(Array):
    def next_op(self, tid, rng):
        raise KeyboardInterrupt


class LoopsInBody(Array):
    def body(self, tx, op):
        while True:
            pass


class LoopsInReader(Array):
    def read_data(self, rt):
        while True:
            pass


class LoopingModel(ArrayModel):
    def apply(self, op):
        while True:
            pass


class LoopsInModel(Array):
    def model(self):
        return LoopingModel(self.p.slot_words)


class AsyncBody(Array):
    async def body(self, tx, op):
        return True


class PlainBody(Array):
    """A body without yield: a plain function (documented; it works)."""

    def body(self, tx, op):
        steps = Array.body(self, tx, op)
        try:
            while True:
                next(steps)
        except StopIteration as stop:
            return stop.value


class NumpyAbort(PlainBody):
    def body(self, tx, op):
        super().body(tx, op)
        return np.False_


class ExitingRecovery(UndoRuntime):
    name = "undo-exiting-recovery"

    def _recover(self, cpu):
        if any(recs and not done for recs, done in map(self.scan, range(self.layout.threads))):
            sys.exit(3)
        super()._recover(cpu)


class LoopingRecovery(UndoRuntime):
    name = "undo-looping-recovery"

    def _recover(self, cpu):
        while True:
            pass
'''


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "user.py").write_text(textwrap.dedent(USER))
    return tmp_path


def line_of(user: Path, text: str) -> int:
    lines = (user / "user.py").read_text().splitlines()
    return next(i for i, ln in enumerate(lines, 1) if text in ln)


def fuzz_cli(*argv: str) -> list[str]:
    return ["run", "--txs", "6", "--findings", "", *argv]


@pytest.mark.parametrize("cls,method,source,when", [
    ("InInit", "InInit.__init__", 'raise ValueError("bad init")', ""),
    ("InSpec", "InSpec.spec", 'raise ValueError("bad spec")', ""),
    ("InNextOp", "InNextOp.next_op", 'raise ValueError("bad op")',
     "drawing thread 0's transaction 3 of "),
    ("InBody", "InBody.body", 'raise ValueError("bad body")', "in thread 0's transaction 3 of "),
])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_raising_workload_names_its_frame(user: Path, capsys: pytest.CaptureFixture[str],
                                            cls: str, method: str, source: str, when: str,
                                            jobs: str) -> None:
    assert main(fuzz_cli("--workload", f"user.py:{cls}", "--jobs", jobs)) == 2
    err = capsys.readouterr().err
    what = source.split("(")[1].strip('")')
    assert err.startswith(f"crashfuzz: error: user code raised ValueError: {what} in {method} "
                          f"(user.py, line {line_of(user, source)}: {source})"), err
    assert when in err and "Traceback" not in err and err.count("\n") == 1
    if jobs == "1":  # pmsim run says the same
        assert pmsim_main(["run", "--workload", f"user.py:{cls}", "--txs", "6"]) == 2
        assert f"in {method} (user.py, line" in capsys.readouterr().err


def test_a_raising_model_is_named(user: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The model runs in the check of the crash-free run: a finding of kind crash-free."""
    assert main(fuzz_cli("--workload", "user.py:InModel")) == 1
    out = capsys.readouterr().out
    assert ("FAILURE [crash-free] the workload's model raised ValueError: bad model in "
            f"RaisingModel.apply (user.py, line {line_of(user, 'bad model')}: ") in out


@pytest.mark.parametrize("cls,what", [
    ("Exits", "user code called sys.exit(0) in Exits.body (user.py, line"),
    ("Interrupts", "user code raised KeyboardInterrupt itself (no Ctrl-C was pressed) in "
                   "Interrupts.next_op"),
])
@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.usefixtures("default_signal_handlers")  # a real Ctrl-C must be tellable apart
def test_exit_and_keyboard_interrupt_from_user_code_are_errors(
        user: Path, capsys: pytest.CaptureFixture[str], cls: str, what: str, jobs: str) -> None:
    """Never exit 0 in silence, nor 130 as if Ctrl-C had been pressed."""
    assert main(fuzz_cli("--workload", f"user.py:{cls}", "--jobs", jobs)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"crashfuzz: error: {what}"), err
    if jobs == "1":  # pmsim run says the same
        assert pmsim_main(["run", "--workload", f"user.py:{cls}", "--txs", "3"]) == 2
        assert capsys.readouterr().err.startswith(f"pmsim: error: {what}")


def test_exit_in_recovery_of_a_crash_image_is_a_finding(
        user: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(fuzz_cli("--runtime", "user.py:ExitingRecovery", "--stop-at-first")) == 1
    out = capsys.readouterr().out
    assert ("FAILURE [crash] recovery raised SystemExit(3) (sys.exit) in "
            "ExitingRecovery._recover (user.py, line") in out


@pytest.mark.parametrize("cls,jobs", [("LoopsInBody", "1"), ("LoopsInBody", "2")])
def test_a_loop_in_the_crash_free_run_is_an_error(
        user: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        cls: str, jobs: str) -> None:
    monkeypatch.setattr(Campaign, "stall_seconds", 0.5)
    assert main(fuzz_cli("--workload", f"user.py:{cls}", "--jobs", jobs)) == 2
    err = capsys.readouterr().err
    assert err.startswith("crashfuzz: error: user code did not terminate in LoopsInBody.body "
                          "(user.py, line"), err
    assert err.rstrip().endswith("the crash-free run finished no transaction within 0.5 s of "
                                 "CPU time; fix the loop")
    if jobs == "1":  # pmsim run (every Session.run) stops the loop the same way
        monkeypatch.setattr(session, "STALL_SECONDS", 0.5)
        assert pmsim_main(["run", "--workload", f"user.py:{cls}", "--txs", "5"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("pmsim: error: user code did not terminate in LoopsInBody.body "
                              "(user.py, line"), err
        assert ("no transaction or background work finished within 0.5 s of CPU time; fix the "
                "loop") in err, err


@pytest.mark.parametrize("cls", ["LoopsInReader", "LoopsInModel"])
def test_a_loop_checking_the_crash_free_run_is_a_finding(
        user: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        cls: str) -> None:
    monkeypatch.setattr(Campaign, "stall_seconds", 0.5)
    assert main(fuzz_cli("--workload", f"user.py:{cls}", "--findings", "found")) == 1
    out = capsys.readouterr().out
    assert ("FAILURE [crash-free] checking the workload's data after a crash-free run did not "
            "terminate within 0.5 s of CPU time") in out
    doc = json.loads(next((user / "found").glob("*.json")).read_text())
    assert doc["kind"] == "crash-free"


def test_a_recovery_that_never_ends_is_a_finding_not_a_hang(
        user: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Even on the clean restart of the crash-free check."""
    monkeypatch.setattr(Campaign, "recovery_seconds", 0.3)
    assert main(fuzz_cli("--runtime", "user.py:LoopingRecovery", "--stop-at-first")) == 1
    assert ("FAILURE [crash] recovery did not terminate within 0.3 s of CPU time"
            in capsys.readouterr().out)


def test_an_async_body_is_refused(user: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert pmsim_main(["run", "--workload", "user.py:AsyncBody", "--txs", "3"]) == 2
    err = capsys.readouterr().err
    assert "AsyncBody.body returned a coroutine (it is defined with `async def`)" in err
    assert "never awaited" not in err
    assert main(fuzz_cli("--workload", "user.py:AsyncBody")) == 2
    assert "AsyncBody.body returned a coroutine" in capsys.readouterr().err


@pytest.mark.usefixtures("user")
def test_a_plain_function_body_runs_and_numpy_false_aborts() -> None:
    from crashfuzz import fuzz
    from pmsim.workloads.session import Session

    assert fuzz(runtime="undo", workload="user.py:PlainBody", txs=4, depth=1).ok
    s = Session.create("undo", "user.py:NumpyAbort", txs=5)
    s.run(5)
    assert s.runtime.aborts == 5 and not s.runtime.commit_order
