"""Named persist steps: declared, issued under their names, and mutations as data over them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crashfuzz import Campaign, FuzzConfig
from pmsim.errors import ConfigError, UnknownNameError
from pmsim.runtimes import Mutant, all_mutants, drop, get_runtime, patch, skip_check, swap
from pmsim.runtimes.mutation import mutate
from pmsim.runtimes.steps import StepHook, step_at

RUNTIMES = ["undo", "undo-2pb", "undo-eager", "redo", "redo-eager", "cow", "cow-eager"]
WORKLOADS = [("array", ()), ("alloc-x", (("abort_pct", 30.0),)), ("kv", ()), ("bank", ()),
             ("btree", ())]  # btree: first records of growing length (undo.append.order-header)


def _logged(runtime: str, workload: str, params: tuple) -> list[tuple[int, int, str]]:
    camp = Campaign(FuzzConfig(runtime=runtime, workload=workload, params=params, txs=12, depth=1))
    return camp.step_log


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_every_issued_step_is_declared_and_most_declared_steps_are_issued(runtime: str) -> None:
    declared = {s.name for s in get_runtime(runtime).persist_steps()}
    issued: set[str] = set()
    for wl, params in WORKLOADS:
        log = _logged(runtime, wl, params)
        assert [i for i, _, _ in log] == sorted(i for i, _, _ in log)
        issued |= {name for _, _, name in log}
    assert issued <= declared, issued - declared
    never = {s for s in declared - issued if ".recover." not in s and ".abort." not in s
             and s not in ("alloc.recover-apply", "alloc.revert", "alloc.eager.pb-revert")}
    assert not never, f"declared steps no workload issues: {sorted(never)}"


def test_no_mutation_switch_is_left_in_runtime_code() -> None:
    root = Path(__file__).resolve().parents[2] / "pmsim" / "runtimes"
    switch = re.compile(r"""["'][A-Z]\d+["'] (not )?in (self|muts)""")
    for f in root.rglob("*.py"):
        assert not switch.search(f.read_text()), f.name


def test_every_card_mutant_is_data_over_declared_names() -> None:
    for name, m in all_mutants().items():
        assert m.mutations, name
        m.build()  # validates every step, check and attribute name


def test_unknown_names_are_rejected_with_suggestions() -> None:
    with pytest.raises(UnknownNameError, match="redo.commit.pb2"):
        mutate(get_runtime("redo"), [drop("redo.commit.pb22")], "x")
    with pytest.raises(UnknownNameError, match="recovery check"):
        mutate(get_runtime("undo"), [skip_check("undo.recover.nope")], "x")
    with pytest.raises(ConfigError, match="no attribute"):
        mutate(get_runtime("undo"), [patch("nope", lambda f: f)], "x")
    with pytest.raises(ConfigError, match="unknown domains"):
        Mutant("x", "undo", [drop("undo.append.pb")], domains=("pdom9",))


def test_drop_removes_exactly_the_steps_instructions() -> None:
    base = _logged("redo", "array", ())
    cls = mutate(get_runtime("redo"), [drop("redo.commit.pb2")], "redo~nopb2")
    camp = Campaign(FuzzConfig(runtime="redo", workload="array", txs=6, depth=1), runtime=cls)
    full = Campaign(FuzzConfig(runtime="redo", workload="array", txs=6, depth=1))
    pb = full.full_trace.events["kind"]
    ev = camp.full_trace.events["kind"]
    # each committed transaction loses exactly one persist barrier (an sfence in pdom1)
    assert (pb == 7).sum() - (ev == 7).sum() == 6
    assert {n for _, _, n in camp.step_log} == {n for _, _, n in base}


def test_swap_issues_the_first_step_after_the_second() -> None:
    cls = mutate(get_runtime("redo"), [swap("redo.commit.write-back", "redo.commit.pb3")], "r~s")
    camp = Campaign(FuzzConfig(runtime="redo", workload="array", txs=2, depth=1), runtime=cls)
    tr = camp.full_trace
    kinds = tr.events["kind"].tolist()
    # after the swap, the write-back's stores follow PB#3's fence directly
    fences = [i for i, k in enumerate(kinds) if k == 7]
    assert any(kinds[f + 1] == 1 for f in fences)


def test_step_at_names_the_step_an_event_belongs_to() -> None:
    log = [(0, 0, "a"), (3, 1, "b"), (5, 0, "c")]
    assert step_at(log, 4, 0) == "a" and step_at(log, 4, 1) == "b" and step_at(log, 6) == "c"
    assert StepHook([drop("x")]).drop == {"x"}
