"""Automatic ablation: every step a spec card marks necessary is found necessary."""

from __future__ import annotations

import pytest

from crashfuzz.ablation import (
    AblationCell,
    ablate,
    explain,
    flushing_groups,
    format_ablation,
    steps_seen,
)
from crashfuzz.campaign import FuzzConfig
from pmsim.errors import UnknownNameError

CARD_NECESSARY = {
    "undo": ["undo.append.pb", "undo.commit.pb1", "undo.commit.pb2", "undo.commit.pb3"],
    "redo": ["redo.commit.pb1", "redo.commit.pb2", "redo.commit.pb3", "redo.commit.pb4"],
    "cow": ["cow.commit.pb1", "cow.commit.pb2", "cow.commit.pb3"],
}
"""The persist barriers whose removal the Marathe card's mutation table (U1, U5-U7, R1-R4,
C1-C3) shows to be a bug under PDOM-0/1."""


@pytest.mark.parametrize("runtime", sorted(CARD_NECESSARY))
def test_every_step_the_card_marks_necessary_is_found_necessary(runtime: str) -> None:
    cells = ablate(runtime, ("pdom1",), CARD_NECESSARY[runtime])
    assert [c.verdict for c in cells] == ["needed"] * len(cells), [
        (c.step, c.verdict) for c in cells]
    assert all(c.first_point is not None and c.failure for c in cells)


def test_a_barrier_is_redundant_in_pdom2_and_says_why() -> None:
    cells = ablate("redo", ("pdom2",), ["redo.commit.pb3"],
                   base=FuzzConfig(txs=4, idempotence=1, reduce=False, budget=4096, new_tx=1))
    assert cells[0].verdict == "redundant"
    assert "PDOM-2" in explain(cells[0])
    md = format_ablation(cells)
    assert "`drop(redo.commit.pb3)`" in md and "harmless in PDOM-2" in md


def test_steps_seen_and_adjacent_pairs() -> None:
    seen, pairs = steps_seen("redo", FuzzConfig(txs=3, depth=1))
    assert {"redo.commit.pb1", "redo.append.record"} <= seen
    assert ("redo.commit.pb1", "redo.commit.store-committed") in pairs


def test_a_group_that_stores_and_flushes_gets_a_drop_flush_row() -> None:
    """The undo header's stores without their clwb: needed where flushes make stores durable
    (the new version may not be persistent when the first in-place write is); a barrier step
    gets no such row, and the row's PDOM-2 survival is explained like a dropped flush."""
    groups = flushing_groups("undo", FuzzConfig(txs=3, depth=1))
    assert {"undo.begin.header", "undo.append.tail", "undo.commit.tail"} <= groups
    assert "undo.append.record" not in groups and "undo.append.flush" not in groups
    cells = ablate("undo", ("pdom1",), ["undo.begin.header", "undo.append.pb"],
                   base=FuzzConfig(txs=4, idempotence=1, reduce=False, budget=4096, new_tx=1))
    assert [(c.mutation, c.verdict) for c in cells] == [
        ("drop(undo.begin.header)", "needed"), ("drop_flush(undo.begin.header)", "needed"),
        ("drop(undo.append.pb)", "needed")]
    cell = AblationCell("undo", "drop_flush(undo.begin.header)", "undo.begin.header", "group",
                        "pdom2", "redundant", "bank", None, "", 1, 0.0)
    assert "harmless in PDOM-2" in explain(cell)


def test_unknown_step_and_unexplained_cells_are_said() -> None:
    with pytest.raises(UnknownNameError, match="redo.commit.pb2"):
        ablate("redo", ("pdom1",), ["redo.commit.pb22"])
    cell = AblationCell("redo", "drop(x)", "x", "store", "pdom1", "redundant", "bank", None, "", 1, 0.0)
    assert "UNEXPLAINED" in format_ablation([cell])


def test_a_liveness_step_stalls_and_is_a_cell_not_an_error(capsys) -> None:
    """Dropping NV-HTM's `commit.idle` leaves a waiter spinning on a timestamp that never
    advances: the runtime's stall bound (shortened through an option) ends that run, and the
    matrix reports the step as a liveness step instead of stopping; --threads reaches it."""
    from crashfuzz.cli import main

    assert main(["ablate", "--runtime", "nvhtm-race[stall_ns=20000]", "--threads", "2",
                 "--txs", "3", "--step", "nvhtm.commit.idle", "--domain", "pdom1",
                 "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "| `drop(nvhtm.commit.idle)` | stalls |" in out
    assert "a liveness step" in out and "waited 20,000 ns" in out
    cell = ablate("nvhtm-race[stall_ns=20000]", ("pdom1",), ["nvhtm.commit.idle"],
                  base=FuzzConfig(threads=1, txs=3))
    assert cell[0].verdict != "stalls"  # one thread waits for nobody
