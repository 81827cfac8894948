"""The gallery: every correct structure fuzzes clean under its model and under robustness;
every broken variant is killed by both, without a model too, and the robustness oracle's
suggested fix, applied, makes it clean."""

from __future__ import annotations

import pytest

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from pmsim.programs.gallery import GALLERY, SlotHashOneFlush

CORRECT = [good for good, _ in GALLERY.values()]
BROKEN = [bad for _, bads in GALLERY.values() for bad in bads]


def test_the_gallery_has_four_structures_each_with_a_broken_variant() -> None:
    assert len(GALLERY) >= 4
    assert all(bads for _, bads in GALLERY.values())
    assert all(b.__doc__ and b.__doc__.startswith("BROKEN") for b in BROKEN)


@pytest.mark.parametrize("oracle", ["model", "robust"])
@pytest.mark.parametrize("domain", ["pdom1", "pdom2"])
@pytest.mark.parametrize("prog", CORRECT, ids=lambda p: p.__name__)
def test_correct_structures_fuzz_clean(prog, domain, oracle) -> None:
    rep = fuzz(FuzzConfig(txs=20, domain=domain, oracle=oracle), runtime=prog)
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive and rep.deep_runs and rep.new_tx_checks


@pytest.mark.parametrize("oracle", ["model", "robust"])
@pytest.mark.parametrize("prog", BROKEN, ids=lambda p: p.__name__)
def test_broken_variants_are_killed(prog, oracle) -> None:
    rep = fuzz(FuzzConfig(txs=20, oracle=oracle, stop_at_first=True), runtime=prog)
    assert not rep.ok
    f = rep.failures[0]
    assert f.kind == "data"
    if oracle == "robust":
        assert f.message.startswith("not robust") and f.fix is not None


@pytest.mark.parametrize("prog", BROKEN, ids=lambda p: p.__name__)
def test_the_suggested_fix_repairs_each_broken_variant(prog) -> None:
    res = crashfuzz.repair_program(prog, txs=20)
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
    for prog in BROKEN:
        assert fuzz(FuzzConfig(txs=20, domain="pdom2"), runtime=prog).ok, prog.__name__
