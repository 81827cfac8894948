"""A workload or model bug shows without any crash: WorkloadModelMismatch, not a finding."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pytest

from crashfuzz import FuzzConfig, fuzz
from crashfuzz.cli import main
from pmsim.errors import PmsimError, WorkloadModelMismatch
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


@pytest.mark.parametrize("runtime", ["undo", "redo:R2", "cow-eadr"])
def test_a_wrong_model_is_a_workload_model_mismatch(runtime: str) -> None:
    with pytest.raises(WorkloadModelMismatch) as e:
        fuzz(CFG, runtime=runtime, workload=WrongModel)
    msg = str(e.value)
    assert msg.startswith("the workload's data after a crash-free run disagrees with its model: "
                          "got ((") and ", expected ((" in msg and msg.endswith(TAIL)


@pytest.mark.parametrize("workload,match", [
    (VolatileReader, "after a crash-free run and a clean restart disagrees with its model: got ()"),
    (RaisingReader, "reading the workload's data after a crash-free run raised ValueError: bad"),
    (Leaky, "invariants fail: block 0x.* unreachable.*live_objects"),
])
def test_reader_and_live_object_bugs_are_mismatches(workload: type, match: str) -> None:
    with pytest.raises(WorkloadModelMismatch, match=match):
        fuzz(CFG, runtime="redo", workload=workload)


def test_a_runtime_wrong_without_a_crash_is_still_a_finding() -> None:
    """The data disagree on the broken runtime but agree on undo: the runtime is at fault."""
    broken = Mutant("redo:no-write-back", "redo", [drop("redo.commit.write-back")])
    rep = fuzz(CFG, runtime=broken, workload="array")
    assert not rep.ok and rep.failures[0].kind in ("data", "new-tx")


def test_the_cli_exits_2_on_a_mismatch(capsys: pytest.CaptureFixture[str]) -> None:
    assert issubclass(WorkloadModelMismatch, PmsimError)
    path = f"{__file__}:WrongModel"
    assert main(["run", "--workload", path, "--txs", "3", "--findings", ""]) == 2
    err = capsys.readouterr().err
    assert err.startswith("crashfuzz: error: the workload's data after a crash-free run") and TAIL in err
