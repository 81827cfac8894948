"""Recovery on the functional machine finds exactly what recovery on the timed machine finds.

Campaigns recover crash images on an untimed scratch machine (``Machine(timed=False)``). The
same campaign with every recovery on the timed machine must report the same points, states,
distinct images, recoveries, new-transaction and idempotence checks, and the same failures
(kind, point, image, message, expected and recovered data), for correct runtimes and mutants.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import numpy as np
import pytest

from crashfuzz import Campaign, FuzzConfig, Report, fuzz
from pmsim.errors import ConfigError
from pmsim.machine import Machine
from pmsim.runtimes import alloc


def run(cfg: FuzzConfig, timed: bool) -> Report:
    """``fuzz(cfg)`` with every recovery on the functional or on the timed scratch machine."""
    return fuzz(cfg, recovery="timed" if timed else "functional")


def counts(rep: Report) -> dict[str, Any]:
    """Every field of a report but its config, time and failures."""
    return {f.name: getattr(rep, f.name) for f in dataclasses.fields(rep)
            if f.name not in ("config", "seconds", "failures")}


def findings(rep: Report) -> list[dict[str, Any]]:
    """Every field of every failure but the config that reproduces it (which names the
    recovery machine), the image as bytes."""
    return [{**{f.name: getattr(x, f.name) for f in dataclasses.fields(x)
                if f.name not in ("image", "config")},
             "image": x.image.tobytes()} for x in rep.failures]


CASES = [  # runtime, workload, domain, crash depth
    ("undo", "array", "pdom1", 2), ("redo", "array", "pdom1", 2), ("cow", "array", "pdom1", 2),
    ("undo", "kv", "pdom0", 2), ("redo", "alloc-x", "pdom1", 2), ("cow", "bank", "pdom1", 2),
    ("undo:U1", "array", "pdom1", 2), ("redo:R2", "array", "pdom1", 2),
    ("cow:C1", "kv", "pdom1", 2), ("undo:A1", "alloc-x", "pdom1", 1),
]


@pytest.mark.parametrize(("runtime", "workload", "domain", "depth"), CASES)
def test_functional_and_timed_recovery_report_the_same(runtime: str, workload: str, domain: str,
                                                       depth: int) -> None:
    cfg = FuzzConfig(runtime=runtime, workload=workload, domain=domain, txs=6, idempotence=2,
                     budget=512, samples=32, depth=depth)
    fast = run(cfg, False)
    slow = run(cfg, True)
    assert counts(fast) == counts(slow)
    assert findings(fast) == findings(slow)
    if ":" in runtime:
        assert not fast.ok, "the mutant must be found, or the comparison proves little"
    else:
        assert fast.ok
    assert fast.recoveries > 0 and (fast.new_tx_checks > 0 or not fast.ok)


def test_campaigns_recover_on_the_functional_machine() -> None:
    camp = Campaign(FuzzConfig(runtime="redo", workload="bank", txs=2))
    assert not camp.scratch.timed and camp.scratch_timed.timed
    assert isinstance(camp.scratch, Machine) and camp.scratch.config == camp.scratch_timed.config
    timed = Campaign(FuzzConfig(runtime="redo", workload="bank", txs=2, recovery="timed"))
    assert timed.scratch is timed.scratch_timed


def test_unknown_recovery_machine_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="functional or timed"):
        FuzzConfig(recovery="fast")


def test_recovery_trace_for_idempotence_is_timed() -> None:
    """record=True recovers on the timed machine: its trace has the timed engine's events."""
    cfg = FuzzConfig(runtime="undo", workload="array", txs=4)
    camp = Campaign(cfg)
    img = camp.session.runtime.m.pm_image()
    rt, _, errors, trace = camp.recover(img, record=True)
    assert rt is not None and rt.m is camp.scratch_timed and not errors
    assert trace is not None and len(trace) and trace.events["time"].max() > 0
    rt2, data, _, none = camp.recover(img)
    assert rt2 is not None and rt2.m is camp.scratch and none is None
    assert data == camp.session.workload.app_data(camp.session.runtime)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_allocator_small_and_large_scans_agree(threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Allocator.rebuild/allocated scan small classes as a Python int and large ones with
    NumPy; both give the same lists, bump indices and allocated sets on random bitmaps."""
    cfg = FuzzConfig(runtime="undo", workload="alloc-x", threads=threads, txs=2, idempotence=0,
                     new_tx=0)
    rt = Campaign(cfg).session.runtime
    heap, m = rt.heap, rt.m
    rnd = random.Random(threads)

    def state() -> tuple:
        heap.rebuild()
        return heap.allocated(), [[list(x) for x in f] for f in heap.free], heap.bump, \
            heap.volatile_free()

    for _ in range(60):
        for c in heap.classes:
            for i in range((c.nblocks + 63) // 64):
                word = rnd.getrandbits(64) & rnd.choice([0, 0xFF, 0xF0F0, (1 << 64) - 1,
                                                         rnd.getrandbits(64)])
                m.poke(c.bitmap + 8 * i, word)
        monkeypatch.setattr(alloc, "SMALL_CLASS", 1 << 30)
        small = state()
        monkeypatch.setattr(alloc, "SMALL_CLASS", 0)
        assert state() == small
        for c in heap.classes:
            bits = heap.bitmap_bits(c)
            assert heap.bitmap_int(c) == sum(1 << i for i in np.flatnonzero(bits).tolist())

