"""Address labels from a runtime's layout, with per-family hooks for logs and objects."""

from __future__ import annotations

from typing import Any

import pytest

from pmsim.runtimes import PMSpec, StaticArray, get_runtime
from pmsim.runtimes.labels import Label, Labeller, register_labels
from pmsim.runtimes.layout import plan
from pmsim.workloads import Session

SPEC = PMSpec(statics=(StaticArray("slots", 4, 2),), heap=((3, 3, 4),), max_tx_writes=4,
              max_tx_words=8, max_tx_allocs=2, max_tx_objects=2)


def labeller(runtime: str, memory: Any = None) -> Labeller:
    cls = get_runtime(runtime)
    return Labeller(cls.plan(SPEC, 2, 0), cls, memory)


@pytest.mark.parametrize("runtime", ["undo", "redo", "cow"])
def test_every_structure_of_the_layout_is_named(runtime: str) -> None:
    lab = labeller(runtime)
    lay = lab.layout
    assert lab.word(lay.base + 16) == "global header epoch"
    assert lab.word(lay.desc[1] + 32) == "descriptor T1 state"
    assert lab.word(lay.desc[0] + 8) == "descriptor T0 tail"
    assert lab.word(lay.alloc_log[0] + 8) == "alloc log T0 entry 1"
    c = lay.heap[0]
    assert lab.word(c.bitmap) == f"bitmap class {c.block}B word 0"
    assert lab.word(c.base + c.block + 8).startswith(f"heap block {c.base + c.block:#x}")
    assert lab.word(lay.end + 64) == f"{lay.end + 64:#x}"
    log = lab.word(lay.log[1] + 8)
    assert log == {"undo": "undo log T1 word 1", "redo": "redo log T1 word 1",
                   "cow": "write set T1 entry 1"}[runtime]


def test_static_fields_and_object_internals_per_family() -> None:
    s = labeller("undo").layout.statics[0]
    assert labeller("undo").word(s.obj(2) + 8) == "static slots[2] field 1"
    r = labeller("redo")
    s = r.layout.statics[0]
    assert r.word(s.obj(2)) == "static slots[2] writers"
    assert r.word(s.obj(2) + 16) == "static slots[2] field 1"
    c = labeller("cow")
    s = c.layout.statics[0]
    assert c.word(s.obj(1) + 8) == "static slots[1] wrapper new"
    assert c.word(s.obj(1) + 40) == "static slots[1] home payload field 1"


def test_log_records_are_found_in_memory() -> None:
    s = Session.create("undo", "array", threads=1, txs=3,
                       params={"slots": 8, "slot_words": 2, "per_tx": 1, "write_pct": 100})
    s.run(1)
    m = s.machine
    lab = Labeller.of(s.runtime, m.peek)
    head = s.runtime.layout.log[0]
    # record 0: [sentinel][V][addr][DATA|2][old 0][old 1][checksum]; record 1 is COMMIT
    assert lab.word(head) == "undo log T0 record 0 word 0 (sentinel)"
    assert lab.word(head + 8 * 4) == "undo log T0 record 0 word 4 (old value 0)"
    assert lab.word(head + 8 * 6) == "undo log T0 record 0 word 6 (checksum)"
    assert lab.word(head + 8 * 7) == "undo log T0 record 1 (COMMIT) word 0 (sentinel)"
    assert lab.word(head + 8 * 20) == "undo log T0 word 20"  # past the last record
    assert lab.words(range(head, head + 8 * 9, 8)) == (
        "undo log T0 record 0 words 0-6; undo log T0 record 1 (COMMIT) words 0-1")
    r = Session.create("redo", "array", threads=1, txs=3,
                       params={"slots": 8, "slot_words": 2, "per_tx": 1, "write_pct": 100})
    r.run(1)
    lab = Labeller.of(r.runtime, r.machine.peek)
    head = r.runtime.layout.log[0]
    assert lab.word(head + 8) == "redo log T0 record 0 word 1 (length)"
    assert lab.word(head + 8 * 4) == "redo log T0 record 0 word 4 (new value 1)"


def test_words_groups_and_annotate_labels_messages() -> None:
    lab = labeller("undo")
    d = lab.layout.desc[0]
    assert lab.words([d + 8, d + 32, d + 16]) == "descriptor T0 tail, state, alloc count"
    assert lab.words([lab.layout.alloc_log[1] + 8 * i for i in (0, 1, 2, 5)]) == (
        "alloc log T1 entries 0-2, 5")
    c = lab.layout.heap[0]
    text = f"block {c.base:#x} is marked free; word {d + 32:#x} at {c.bitmap:#x}; tx {0x5:#x}"
    assert lab.annotate(text) == (f"block {c.base:#x} is marked free; word {d + 32:#x} "
                                  f"(descriptor T0 state) at {c.bitmap:#x} (bitmap class "
                                  f"{c.block}B word 0); tx 0x5")
    event = f"T0 CLWB line {d:#x}; next: T0 STORE [{d + 32:#x}] := 0x1"
    assert lab.annotate(event) == (f"T0 CLWB line {d:#x} (descriptor T0); next: T0 STORE "
                                   f"[{d + 32:#x}] (descriptor T0 state) := 0x1")


def test_a_family_of_ones_own_gets_generic_labels_and_hooks() -> None:
    lay = plan("mine", SPEC, 1, 0, obj_bytes=lambda w: 8 * w, stride_of=lambda w: 8 * w,
               log_bytes=256, alloc_cap=2, extra_heap={})
    assert Labeller(lay).word(lay.log[0] + 8 * 17) == "log T0 word 17"
    register_labels("mine", log=lambda lab, t, w: Label(f"my log T{t}", "slot", w // 2))
    assert Labeller(lay).word(lay.log[0] + 8 * 17) == "my log T0 slot 8"
