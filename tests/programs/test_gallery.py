"""The gallery: every correct structure fuzzes clean under its model and under robustness;
every broken variant is killed by both, without a model too, and the robustness oracle's
suggested fix, applied, makes it clean."""

from __future__ import annotations

import pytest

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from pmsim.programs.gallery import GALLERY, LFLogNoHelp, SlotHashOneFlush

CORRECT = [(ex.correct, ex.config) for ex in GALLERY.values()]
BROKEN = [(bad, ex.config) for ex in GALLERY.values() for bad in ex.broken]


def _id(case: tuple) -> str:
    return case[0].__name__


def test_the_gallery_has_its_structures_each_with_a_broken_variant() -> None:
    assert len(GALLERY) >= 4
    assert all(ex.broken for ex in GALLERY.values())
    assert all(b.__doc__ and b.__doc__.startswith("BROKEN") for b, _ in BROKEN)


@pytest.mark.parametrize("oracle", ["model", "robust"])
@pytest.mark.parametrize("domain", ["pdom1", "pdom2"])
@pytest.mark.parametrize("case", CORRECT, ids=_id)
def test_correct_structures_fuzz_clean(case, domain, oracle) -> None:
    prog, config = case
    rep = fuzz(FuzzConfig(domain=domain, oracle=oracle, **config), runtime=prog)
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive and rep.deep_runs and rep.new_tx_checks


@pytest.mark.parametrize("oracle", ["model", "robust"])
@pytest.mark.parametrize("case", BROKEN, ids=_id)
def test_broken_variants_are_killed(case, oracle) -> None:
    prog, config = case
    rep = fuzz(FuzzConfig(oracle=oracle, stop_at_first=True, **config), runtime=prog)
    assert not rep.ok
    f = rep.failures[0]
    assert f.kind == "data"
    if oracle == "robust":
        assert f.message.startswith("not robust") and f.fix is not None


@pytest.mark.parametrize("case", BROKEN, ids=_id)
def test_the_suggested_fix_repairs_each_broken_variant(case) -> None:
    prog, config = case
    res = crashfuzz.repair_program(prog, **config)
    assert res.ok and 1 <= len(res.fixes) <= 2, res.summary()
    assert res.reports[-1].exhaustive


def test_a_flag_in_its_payloads_line_passes_in_line_mode_and_fails_in_px86() -> None:
    """What a user met: key and value in one line, flushed together, survive the line-atomic
    assumption and fail under x86's 8-byte atomicity."""
    line = fuzz(FuzzConfig(txs=20, order="line"), runtime=SlotHashOneFlush)
    assert line.ok and any("order line" in n for n in line.notes)
    assert not fuzz(FuzzConfig(txs=20, order="px86"), runtime=SlotHashOneFlush).ok


def test_eadr_makes_the_ordering_bugs_harmless() -> None:
    """Under PDOM-2 every visible store is persistent in order: the missing fences do not
    matter (what ablation reports as 'harmless in PDOM-2')."""
    for prog, config in BROKEN:
        assert fuzz(FuzzConfig(domain="pdom2", **config), runtime=prog).ok, prog.__name__


def test_the_interleaving_bug_needs_schedule_exploration() -> None:
    """The simulator's own schedule runs each append as one step and misses the helping bug;
    exploring schedules opens the window between another thread's store and its flush."""
    one = fuzz(FuzzConfig(txs=6, threads=2), runtime=LFLogNoHelp)
    assert one.ok and one.schedules == 1
    for kind in ("pct", "random"):
        rep = fuzz(FuzzConfig(txs=6, threads=2, schedules=8, schedule_kind=kind),
                   runtime=LFLogNoHelp)
        assert not rep.ok and rep.schedules == 8 and rep.distinct_traces > 1
        f = rep.failures[0]
        assert f.config.schedule_index > 0  # replay reruns that schedule (test_pm.py)


def test_exploration_merges_the_paths_of_every_schedule() -> None:
    from pmsim.programs.gallery import LFLog

    rep = fuzz(FuzzConfig(txs=6, threads=2, schedules=8), runtime=LFLog)
    assert rep.ok and rep.paths["help"] > 0
    assert "paths the crash-free runs took: help" in rep.summary()
