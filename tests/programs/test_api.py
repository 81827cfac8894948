"""The PM program API: the handle's instructions and errors, named steps, allocation, scripts,
results checked against the model, and the adapters' registration by class and import path."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from pmsim.errors import ConfigError
from pmsim.programs import PM, PMProgram, ProgramError, WrongResult, operation, program_runtime
from pmsim.programs.adapt import declared_steps
from pmsim.runtimes.registry import get_runtime
from pmsim.workloads.base import get_workload


class Cell(PMProgram):
    """One persistent word, set and read."""

    size = 64
    script = (("set", 5), ("get",))

    @operation(args=lambda rng: (int(rng.integers(1, 9)),))
    def set(self, pm: PM, v: int) -> None:
        pm.store(0, v, step="set.store")
        pm.persist(0, step="set.persist")

    @operation()
    def get(self, pm: PM) -> int:
        return pm.load(0)

    def state(self, pm: PM) -> int:
        return pm.load(0)


class CellModel:
    def __init__(self) -> None:
        self.v = 0

    def set(self, v: int) -> None:
        self.v = v

    def get(self) -> int:
        return self.v

    def state(self) -> int:
        return self.v


class ModelledCell(Cell):
    model = CellModel


class LyingCell(ModelledCell):
    """get() answers one more than it holds: a bug without any crash."""

    @operation()
    def get(self, pm: PM) -> int:
        return pm.load(0) + 1


def test_declared_steps_come_from_the_source() -> None:
    steps = declared_steps(Cell)
    assert steps["set.store"][0] == "store"
    assert steps["set.persist"][0] == "flush"
    names = {s.name for s in get_runtime(Cell).persist_steps()}
    assert {"set.store", "set.persist"} <= names


def test_unnamed_flushes_and_fences_get_stable_names() -> None:
    class Bare(PMProgram):
        size = 64

        @operation()
        def put(self, pm: PM) -> None:
            pm.store(0, 1)
            pm.clwb(0)
            pm.sfence()

    names = [s.name for s in get_runtime(Bare).persist_steps()]
    assert len(names) == 2 and names[0].startswith("put.clwb@") and names[1].startswith(
        "put.sfence@")
    camp = crashfuzz.Campaign(FuzzConfig(txs=2), runtime=Bare)
    assert {n for _, _, n in camp.step_log} == set(names)  # the names at run time are the same


def test_a_program_runs_its_script_then_random_operations() -> None:
    camp = crashfuzz.Campaign(FuzzConfig(txs=4), runtime=ModelledCell)
    ops = [camp.session.workload.executed[t] for t in camp.history.commit_order]
    assert ops[:2] == [("set", (5,)), ("get", ())]
    assert len(ops) == 4
    assert camp.session.workload.results[camp.history.commit_order[1]] == 5


def test_the_default_order_of_a_program_is_px86() -> None:
    rep = fuzz(FuzzConfig(txs=3), runtime=Cell)
    assert rep.config.order == "px86" and rep.ok
    rep = fuzz(FuzzConfig(txs=3, order="line"), runtime=Cell)
    assert any("order line" in n for n in rep.notes)


def test_results_are_checked_against_the_model() -> None:
    rep = fuzz(FuzzConfig(txs=2), runtime=LyingCell)
    f = rep.failures[0]
    assert f.kind == "crash-free"
    assert "get() returned 6; the model CellModel returns 5" in f.message


def test_the_model_oracle_needs_a_model() -> None:
    with pytest.raises(ConfigError, match="has no model"):
        fuzz(FuzzConfig(txs=2, oracle="model"), runtime=Cell)


@pytest.mark.parametrize("call, match", [
    (lambda pm: pm.load(3), "multiples of 8"),
    (lambda pm: pm.load(1 << 20), "outside the program's PM"),
    (lambda pm: pm.store(0, -1), "64-bit unsigned"),
    (lambda pm: pm.load("x"), "must be an int"),
    (lambda pm: pm.flush(0, 0), "positive int"),
    (lambda pm: pm.alloc(8), "heap .* is full|heap_per_op"),
])
def test_bad_handle_calls_say_what_to_change(call, match) -> None:
    class Bad(PMProgram):
        size = 64

        @operation()
        def op(self, pm: PM) -> None:
            call(pm)

    with pytest.raises(Exception, match=match):
        fuzz(FuzzConfig(txs=1), runtime=Bad)


def test_state_may_not_write() -> None:
    class Writes(Cell):
        def state(self, pm: PM) -> int:
            pm.store(0, 1)
            return 0

    rep = fuzz(FuzzConfig(txs=1), runtime=Writes)
    assert rep.failures[0].kind == "crash-free"
    assert "read the structure only" in rep.failures[0].message
    assert issubclass(ProgramError, Exception) and issubclass(WrongResult, Exception)


def test_a_program_without_operations_or_with_a_bad_script_is_refused() -> None:
    class Empty(PMProgram):
        pass

    with pytest.raises(ConfigError, match="no operations"):
        fuzz(FuzzConfig(txs=1), runtime=Empty)

    class BadScript(Cell):
        script = (("nope", 1),)

    with pytest.raises(ConfigError, match="unknown operation 'nope'"):
        fuzz(FuzzConfig(txs=1), runtime=BadScript)


def test_the_heap_is_sized_for_every_operation_the_campaign_runs() -> None:
    class Grow(PMProgram):
        size = 64
        heap_per_op = 64

        @operation()
        def add(self, pm: PM) -> None:
            node = pm.alloc(64, align=64)
            pm.store(node, 7)
            pm.persist(node)
            pm.store(0, node)
            pm.persist(0)

        def state(self, pm: PM) -> int:
            p = pm.load(0)
            return pm.load(p) if p else 0

    cfg = FuzzConfig(txs=30, depth=3, depth_txs=3, new_tx=4)
    rep = fuzz(cfg, runtime=Grow)
    assert rep.ok, crashfuzz.format_report(rep)
    camp = crashfuzz.Campaign(cfg, runtime=Grow)
    words = camp.session.workload.spec().statics[0].words
    planned = cfg.txs + max(cfg.new_tx, (cfg.depth - 1) * cfg.depth_txs)
    assert 8 * words >= Grow.region_bytes() + 64 * planned  # every planned operation fits
    assert camp.session.runtime.brk == 64 + 64 * cfg.txs


def test_programs_load_by_import_path(tmp_path: Path) -> None:
    f = tmp_path / "cell.py"
    f.write_text(textwrap.dedent('''
        from pmsim.programs import PMProgram, operation

        class Flag(PMProgram):
            size = 64

            @operation()
            def flip(self, pm):
                pm.store(0, 1 - pm.load(0))
                pm.persist(0)

            def state(self, pm):
                return pm.load(0)
    '''))
    path = f"{f}:Flag"
    rt, wl = get_runtime(path), get_workload(path)
    assert rt.program is wl.program and rt.program.__name__ == "Flag"
    rep = crashfuzz.fuzz_program(path, txs=3)
    assert rep.ok and rep.config.runtime == path and rep.config.workload == path
    assert program_runtime(rt.program) is rt


def test_a_program_runtime_runs_only_its_own_program() -> None:
    with pytest.raises(ConfigError, match="runs its own operations"):
        fuzz(FuzzConfig(txs=1, workload="x"), runtime=Cell, workload=ModelledCell)


def publish(pm: PM, off: int) -> None:
    pm.persist(off)  # a helper outside the class: the source scan cannot see it


class Helped(PMProgram):
    size = 64

    @operation()
    def op(self, pm: PM) -> None:
        pm.store(0, 1)
        publish(pm, 0)


def test_steps_issued_from_helpers_are_found_by_a_short_run() -> None:
    names = {s.name for s in get_runtime(Helped).persist_steps()}
    assert any(n.startswith("publish.persist@") for n in names)


@pytest.mark.parametrize("attrs, match", [
    ({"heap_per_op": -64}, "heap_per_op must be"),
    ({"tearable": {"s": 3}}, "tearable must map"),
    ({"script": (("set",),)}, "takes \\(v\\) after pm, but script\\[0\\] gives 0"),
])
def test_bad_program_attributes_are_clear_errors(attrs, match) -> None:
    with pytest.raises(ConfigError, match=match):
        fuzz(FuzzConfig(txs=1), runtime=type("Bad", (Cell,), attrs))


def test_bad_argument_generators_are_clear_errors() -> None:
    class NotATuple(Cell):
        script = ()

        @operation(args=lambda rng: 5)
        def set(self, pm: PM, v: int) -> None:
            pm.store(0, v)

    with pytest.raises(ConfigError, match="must return the arguments as a tuple"):
        fuzz(FuzzConfig(txs=1), runtime=NotATuple)
