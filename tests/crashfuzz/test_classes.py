"""Read-set classes: they partition a product space exactly, a class's members read the same
values, and a campaign that checks points by class finds the failures full enumeration finds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import crashfuzz
from crashfuzz.classes import ReadClasses
from crashfuzz.states import StateSpace
from pmsim import Machine
from pmsim.trace import Ev
from tests.crashfuzz.test_model import backends
from tests.crashfuzz.test_states import RICH, _spaces


def _reader(space: StateSpace, picks: list[int]) -> object:
    """A deterministic 'recovery': reads the words ``picks``, then one more word chosen by the
    values it saw (so the read set depends on the image, as real recovery's does)."""
    nwords = space.model.index.nwords

    def run(state: tuple[int, ...]) -> tuple[list[int], tuple[int, ...]]:
        words = space.image(state).view(np.uint64)
        reads = [w % nwords for w in picks]
        seen = [int(words[w]) for w in reads]
        extra = (sum(seen) * 7 + 3) % nwords
        reads.append(extra)
        seen.append(int(words[extra]))
        return reads, tuple(seen)
    return run


@settings(max_examples=120, deadline=None)
@given(RICH, st.sampled_from(["line", "px86"]), st.sampled_from(["pdom0", "pdom1", "pdom2"]),
       st.sampled_from(backends()), st.booleans(), st.lists(st.integers(0, 23), min_size=1, max_size=6))
def test_classes_partition_the_space_and_members_read_alike(rows: list[tuple], order: str,
                                                            domain: str, backend: str, edges: bool,
                                                            picks: list[int]) -> None:
    """Products and spaces with ordering edges: the walk's class boxes hold every state once,
    and each state observes what its class's representative observed."""
    for space in _spaces(rows, order, domain, backend, "reduced", edges):
        if space.kind == "prefix":
            with pytest.raises(ValueError):
                ReadClasses(space, lambda s: (), limit=1)
            continue
        run = _reader(space, picks)
        rc = ReadClasses(space, lambda s, run=run: run(s)[0], limit=10**6)
        verdict = {s: run(s)[1] for s in space.exhaustive()}
        owner: dict[tuple[int, ...], int] = {}
        total = 0
        for n, (rep, other, size) in enumerate(rc):
            box = [set(a.tolist()) for a in rc.members]
            members = [s for s in verdict if all(x in b for x, b in zip(s, box, strict=True))]
            assert rep in members and (size == len(members) or space.kind == "ordered")
            total += len(members)
            for s in members:
                assert s not in owner, "classes overlap"
                owner[s] = n
                assert verdict[s] == verdict[rep]
            assert (other is None) == (len(members) == 1)
            assert other is None or other in members
        assert rc.complete and rc.covered == total == space.count


@pytest.mark.parametrize("nread", [0, 1, 3, 6])
def test_independent_words_split_into_one_class_per_read_pattern(nread: int) -> None:
    """Six unfenced stores to six words (six free px86 chains, 64 states): a run that reads
    ``nread`` of them sees 2**nread patterns, each a class of 2**(6 - nread) states."""
    rows = [(Ev.STORE, 0, 8 * i, i + 1) for i in range(6)]
    space = max(_spaces(rows, "px86", "pdom1", "python", "reduced"), key=lambda s: s.count)
    assert space.count == 64
    rc = ReadClasses(space, lambda s: range(nread), limit=10**6)
    sizes = [size for _, _, size in rc]
    assert rc.complete and sizes == [2 ** (6 - nread)] * 2 ** nread


def test_a_limit_stops_the_walk_incomplete() -> None:
    rows = [(Ev.STORE, 0, 8 * i, i + 1) for i in range(6)]
    space = next(s for s in _spaces(rows, "px86", "pdom1", "python", "reduced") if s.count > 8)
    rc = ReadClasses(space, lambda s: range(6), limit=3)
    assert len(list(rc)) == 3 and not rc.complete and rc.covered < space.count


@pytest.mark.parametrize("backend", backends())
def test_the_machine_logs_every_read_path(backend: str) -> None:
    m = Machine("optane-adr", backend=backend, timed=False)
    base, cpu = m.pm.base, m.cpu(0)
    cpu.store(base + 64, 1)
    reads = m.start_read_log().reads
    cpu.load(base)
    cpu.cas(base + 8, 0, 1)
    cpu.xchg(base + 16, 3)
    m.peek(base + 24)
    m.pm_words(base + 32, 2)
    m.peek_bytes(base + 49, 2)
    cpu.load_words(base + 128, 2)
    m.note_reads(range(100, 102))
    cpu.store(base + 512, 5)  # written first: reading it back is not an input of the run
    cpu.load(base + 512)
    m.poke(base + 520, 6)
    assert m.peek(base + 520) == 6
    cpu.load(base + 8)  # CAS wrote it, but it had read it first
    assert reads == {0, 1, 2, 3, 4, 5, 6, 16, 17, 100, 101}
    m.stop_read_log()
    cpu.load(base + 1024)
    assert 128 not in reads and m.peek(base + 64) == 1


@pytest.mark.parametrize("runtime,workload,order", [
    ("pmem", "swap", "px86"),
    ("pmem:S1", "swap", "px86"),
    ("pmem:S2", "queue", "px86"),
    ("undo:U1", "kv", "line"),
    ("proteus-tiny", "queue", "px86"),
    ("proteus:X2", "hashmap", "line"),
    ("loc", "hashtable", "px86"),
    ("loc:M1", "hashtable", "line"),
    ("redo", "bank", "px86"),
    ("cow", "kv", "line"),
])
def test_classes_find_what_enumeration_finds(runtime: str, workload: str, order: str) -> None:
    """Budget 1 sends every point with two or more states through the classes; the crash
    points that fail (and the verdict) equal those of enumerating every distinct image."""
    common = dict(runtime=runtime, workload=workload, order=order, domain="pdom1", txs=2,
                  max_failures=10**6, depth=1, idempotence=0)
    full = crashfuzz.fuzz(budget=10**7, class_limit=0, **common)
    byclass = crashfuzz.fuzz(budget=1, samples=1, class_from=1, **common)
    assert full.points_sampled == 0 and byclass.points_sampled == 0
    assert byclass.read_log_misses == 0 and byclass.points_classed > 0
    assert byclass.states_checked == full.states_checked
    assert byclass.ok == full.ok
    assert {f.point for f in byclass.failures} == {f.point for f in full.failures}
    assert byclass.recoveries <= full.recoveries * 2
