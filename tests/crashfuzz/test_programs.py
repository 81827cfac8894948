"""Programs as data, the Hypothesis strategies, the stateful machine and the pytest fixture."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crashfuzz.programs import ProgramWorkload, format_program, fuzz_program, programs, validate
from crashfuzz.stateful import CrashMachine
from pmsim.errors import ConfigError

PROGRAM = ((((("w", 0, 0, 5), ("alloc", 0, 3, 7), ("w", 1, 1, 9)), "commit"),
            ((("free", 0), ("w", 0, 0, 6)), "abort"),
            ((("w", 2, 0, 1), ("r", 2, 0)), "open")),)


@pytest.mark.parametrize("runtime", ["undo", "redo", "cow"])
@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
def test_fixed_program_survives(runtime: str, domain: str) -> None:
    rep = fuzz_program(PROGRAM, runtime, domain=domain)
    assert rep.ok
    assert rep.exhaustive or runtime == "cow", "undo and redo spaces stay under the budget"


@pytest.mark.parametrize("mutant", ["undo:U1", "cow:C1"])
def test_fixed_program_kills_mutants(mutant: str) -> None:
    assert not fuzz_program(PROGRAM, mutant, domain="pdom1", stop_at_first=True).ok


@settings(max_examples=12)
@given(programs(threads=st.integers(1, 2), max_txs=3, max_ops=3))
@pytest.mark.parametrize("runtime", ["undo", "redo", "cow"])
def test_generated_programs_survive(runtime: str, program) -> None:
    rep = fuzz_program(program, runtime, domain="pdom1", idempotence=1, budget=1 << 14)
    assert rep.ok, format_program(program)


def test_a_failing_property_shrinks_to_a_small_program() -> None:
    """Against a mutant, Hypothesis finds and shrinks a program that exposes it."""
    from hypothesis import find

    small = find(programs(max_txs=3, max_ops=3, aborts=False, open_last=False),
                 lambda p: not fuzz_program(p, "undo:U1", idempotence=0, new_tx=0,
                                            stop_at_first=True).ok,
                 settings=settings(max_examples=200, database=None))
    ops = [o for th in small for ops, _ in th for o in ops]
    assert 1 <= len(ops) <= 2


def test_bad_programs_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="malformed op"):
        validate(((((("w", 9, 0, 1),), "commit"),),), 4, 2, 2, 4)
    with pytest.raises(ConfigError, match="end in"):
        validate((((), "maybe"),), 4, 2, 2, 4)
    with pytest.raises(ConfigError, match="last"):
        ProgramWorkload((((((), "open"), ((), "commit"))),))


class UndoMachine(CrashMachine):
    runtime = "undo"


class CowPdom0Machine(CrashMachine):
    runtime = "cow"
    domain = "pdom0"


TestUndoMachine = UndoMachine.TestCase
TestUndoMachine.settings = settings(max_examples=8, stateful_step_count=8, deadline=None)
TestCowPdom0Machine = CowPdom0Machine.TestCase
TestCowPdom0Machine.settings = settings(max_examples=5, stateful_step_count=6, deadline=None)


def test_stateful_machine_catches_a_mutant() -> None:
    class Broken(CrashMachine):
        runtime = "undo:U1"

    from hypothesis import Phase
    from hypothesis.stateful import run_state_machine_as_test

    with pytest.raises(AssertionError, match="program"):
        run_state_machine_as_test(Broken, settings=settings(
            max_examples=60, deadline=None, database=None, phases=[Phase.generate]))


def test_pytest_fixture(crashfuzz) -> None:
    rep = crashfuzz.fuzz(crashfuzz.FuzzConfig(runtime="redo", workload="kv", txs=3))
    crashfuzz.check_failures(rep)
