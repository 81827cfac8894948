"""Flush elision under eADR: ``*-eadr`` runtimes skip every cache-line flush in PDOM-2 only.

In PDOM-2 the caches are persistent, so code tuned for eADR issues no clwb/clflushopt/clflush.
The elided runtime must store the same values in the same order (same final image), stay
crash-consistent under exhaustive fuzzing in PDOM-2, and be the papers' code, flush for flush,
in every other domain.
"""

from __future__ import annotations

import pytest

from crashfuzz import FuzzConfig, fuzz
from pmsim.experiments.run import run_experiment
from pmsim.presets import preset
from pmsim.runtimes import get_runtime
from pmsim.stats import total
from pmsim.workloads.session import Session

BASES = ("undo", "redo", "cow")


def _run(runtime: str, domain: str, workload: str = "bank") -> tuple[dict[str, float], bytes]:
    s = Session.create(runtime, workload, preset("optane-adr").replace(domain=domain), seed=4,
                       txs=12)
    s.run(12)
    return total(s.machine.stats()), s.machine.pm_image().tobytes()


@pytest.mark.parametrize("base", BASES)
def test_eadr_variant_is_registered_and_elides(base: str) -> None:
    assert get_runtime(f"{base}-eadr").elide_flushes
    assert not get_runtime(base).elide_flushes


@pytest.mark.parametrize("base", BASES)
def test_no_flushes_in_pdom2_same_stores_and_image(base: str) -> None:
    plain, plain_img = _run(base, "pdom2")
    elided, elided_img = _run(f"{base}-eadr", "pdom2")
    assert plain["clwb"] + plain["clflushopt"] + plain["clflush"] > 0
    assert elided["clwb"] == elided["clflushopt"] == elided["clflush"] == 0
    assert elided["stores"] == plain["stores"]
    assert elided_img == plain_img


@pytest.mark.parametrize("domain", ["pdom0", "pdom1"])
@pytest.mark.parametrize("base", BASES)
def test_identical_to_the_papers_code_outside_pdom2(base: str, domain: str) -> None:
    assert _run(f"{base}-eadr", domain) == _run(base, domain)


def test_elision_raises_throughput_in_pdom2_only() -> None:
    eadr = preset("eadr")
    adr = preset("optane-adr")
    kw = {"workload": "array", "txs": 200}
    assert run_experiment("undo-eadr", config=adr, **kw).throughput == \
        run_experiment("undo", config=adr, **kw).throughput
    assert run_experiment("undo-eadr", config=eadr, **kw).throughput > \
        run_experiment("undo", config=eadr, **kw).throughput


@pytest.mark.parametrize(("base", "workload"), [("undo", "array"), ("redo", "kv"),
                                                ("cow", "bank"), ("undo", "alloc-x")])
def test_elided_runtimes_are_crash_consistent_in_pdom2(base: str, workload: str) -> None:
    rep = fuzz(FuzzConfig(runtime=f"{base}-eadr", workload=workload, domain="pdom2", txs=6,
                          idempotence=2, depth=2))
    assert rep.ok, rep.summary()
    assert rep.exhaustive and rep.recoveries > 0
