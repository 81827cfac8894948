"""A bug that shows without any crash (the crash-free run disagrees with the model, or a clean
restart does) is a finding of kind ``crash-free``: exit 1, saved and replayable like any other."""

from __future__ import annotations

import json
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import pytest

from crashfuzz import FuzzConfig, fuzz, replay
from crashfuzz.campaign import Report
from crashfuzz.cli import main
from pmsim.runtimes import Mutant, drop
from pmsim.workloads.array import Array, ArrayModel
from pmsim.workloads.kv import KV

CFG = FuzzConfig(txs=4, idempotence=0, depth=1)
TAIL = "this is a bug in the workload or its model, not a crash-consistency bug"


class OffByOneModel(ArrayModel):
    def snapshot(self) -> Hashable:
        return tuple((s + 1, w) for s, w in super().snapshot())  # type: ignore[misc]


class WrongModel(Array):
    def model(self) -> ArrayModel:
        return OffByOneModel(self.p.slot_words)


class VolatileReader(Array):
    """Reads what it remembers instead of PM: right until the machine restarts."""

    def transaction(self, cpu: Any, rt: Any, op: Any) -> Any:
        yield from super().transaction(cpu, rt, op)
        self.seen = super().read_data(rt)

    def read_data(self, rt: Any) -> Hashable:
        return getattr(self, "seen", ())


class RaisingReader(Array):
    def read_data(self, rt: Any) -> Hashable:
        raise ValueError("bad slot")


class Leaky(KV):
    def live_objects(self, rt: Any) -> list[int]:
        return []


def crash_free(rep: Report) -> str:
    """The message of the campaign's one finding, which must be of kind crash-free."""
    assert not rep.ok and rep.failure_count == 1 and rep.points == 0, rep.summary()
    f = rep.failures[0]
    assert f.kind == "crash-free" and f.summary().startswith("[crash-free] before any crash: ")
    return f.message


@pytest.mark.parametrize("runtime", ["undo", "redo:R2", "cow-eadr"])
def test_a_wrong_model_is_a_crash_free_finding(runtime: str) -> None:
    msg = crash_free(fuzz(CFG, runtime=runtime, workload=WrongModel))
    assert msg.startswith("the workload's data after a crash-free run disagrees with its model: "
                          "got ((") and ", expected ((" in msg and msg.endswith(TAIL)


@pytest.mark.parametrize("workload,match", [
    (VolatileReader, "after a crash-free run and a clean restart disagrees with its model: got ()"),
    (RaisingReader, "reading the workload's data after a crash-free run raised ValueError: bad"),
    (Leaky, "invariants fail: block 0x.* unreachable.*live_objects"),
])
def test_reader_and_live_object_bugs_are_crash_free_findings(workload: type, match: str) -> None:
    import re

    assert re.search(match, crash_free(fuzz(CFG, runtime="redo", workload=workload)))


def test_a_runtime_wrong_without_a_crash_is_still_a_finding() -> None:
    """The data disagree on the broken runtime but agree on undo: the runtime is at fault."""
    broken = Mutant("redo:no-write-back", "redo", [drop("redo.commit.write-back")])
    rep = fuzz(CFG, runtime=broken, workload="array")
    assert not rep.ok and rep.failures[0].kind in ("data", "new-tx")


def test_the_cli_exits_1_saves_and_replays_it(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = f"{__file__}:WrongModel"
    found = tmp_path / "found"
    argv = ["run", "--workload", path, "--txs", "3", "--findings", str(found), "--json",
            str(tmp_path / "r.json")]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert not err and "1 FAILURES" in out and "FAILURE [crash-free] the workload's data" in out
    assert "found before any crash" in out and TAIL in out
    saved = sorted(found.glob("*.json"))
    assert len(saved) == 1 and json.loads(saved[0].read_text())["kind"] == "crash-free"
    assert json.loads((tmp_path / "r.json").read_text())["failure_count"] == 1
    again = replay(saved[0], verbose=False)
    assert again is not None and again.kind == "crash-free" and TAIL in again.message
    assert main(["replay", str(saved[0])]) == 1
    assert "still fails: [crash-free] before any crash" in capsys.readouterr().out
    assert main(["run", *argv[1:-2], "--jobs", "2"]) == 1  # replayed first, found again
    assert "replayed 1 saved findings: 1 still fail" in capsys.readouterr().out
