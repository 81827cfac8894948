"""docs/workloads.md: its worked example runs, fuzzes, and its bugs are found and reproduced."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from crashfuzz.cli import main as crashfuzz_main
from crashfuzz.report import replay
from pmsim.cli import main as pmsim_main

DOC = Path(__file__).resolve().parents[2] / "docs" / "workloads.md"


def example() -> str:
    """stack.py as the page builds it: the example, then the blocks it appends."""
    blocks = re.findall(r"<!-- example: stack\.py(?: \(append\))? -->\n```python\n(.*?)```",
                        DOC.read_text(), re.S)
    assert len(blocks) == 3, "the page has the example and two appended variants"
    return "\n\n".join(blocks)


def commands(after: str) -> list[list[str]]:
    """The command lines of the first code block after the text ``after``."""
    text = DOC.read_text()
    block = re.search(re.escape(after) + r".*?\n```\n(.*?)```", text, re.S)
    assert block, after
    return [shlex.split(line) for line in block.group(1).splitlines() if line.strip()]


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "stack.py").write_text(example())
    return tmp_path


@pytest.mark.usefixtures("stack")
def test_the_example_runs_and_fuzzes_clean_from_both_clis(capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    lines = commands("Time it and fuzz it on every runtime, by path:")
    assert [c[:2] for c in lines] == [["pmsim", "run"]] + [["crashfuzz", "run"]] * 3
    for argv in lines:
        entry = pmsim_main if argv[0] == "pmsim" else crashfuzz_main
        assert entry(argv[1:]) == 0, argv
    out = capsys.readouterr().out
    assert "# undo on stack.py:Stack" in out
    assert [line.split(":")[1] for line in out.splitlines() if line.startswith("crashfuzz ")] == [
        " OK"] * 3


def test_the_unsafe_variant_is_found_and_reproduced(stack: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "--workload", "stack.py:UnsafeStack", "--stop-at-first"]
    assert crashfuzz_main(argv + ["--findings", "findings"]) == 1
    out = capsys.readouterr().out
    shown = re.search(r"exits with\nstatus 1 and prints the failure:\n\n```\n(.*?)```", DOC.read_text(),
                      re.S)
    assert shown, "the page shows the failure"
    for line in shown.group(1).splitlines()[:-2]:  # all but the finding's file name
        assert line in out, line
    saved = sorted((stack / "findings").glob("*.json"))
    assert len(saved) == 1
    assert crashfuzz_main(["replay", str(saved[0])]) == 1
    capsys.readouterr()
    again = replay(saved[0], verbose=False)
    assert again is not None and again.kind == "data" and "heap block" in "".join(again.persisted)
    # without --findings: the printed line of Python reproduces the same failure
    assert crashfuzz_main(argv + ["--findings", ""]) == 1
    first = capsys.readouterr().out
    failure = first[first.index("FAILURE ["):]
    line = failure.splitlines()[-1].strip()
    assert line.startswith("import crashfuzz;") and "workload='stack.py:UnsafeStack'" in line
    with pytest.raises(AssertionError) as e:
        exec(line, {})  # noqa: S102 - the reproducer is code to run
    shown = str(e.value)
    assert shown[shown.index("FAILURE ["):].splitlines()[:-1] == failure.splitlines()[:-1]


@pytest.mark.usefixtures("stack")
def test_the_wrong_model_is_reported_before_any_crash(capsys: pytest.CaptureFixture[str]) -> None:
    assert crashfuzz_main(["run", "--workload", "stack.py:StackWithWrongModel", "--param",
                           "pop_pct=10", "--findings", ""]) == 1
    out = capsys.readouterr().out
    assert ("FAILURE [crash-free] the workload's data after a crash-free run disagrees with its "
            "model: got (") in out
    assert "this is a bug in the workload or its model, not a crash-consistency bug" in out
