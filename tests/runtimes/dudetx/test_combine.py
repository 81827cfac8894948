"""DUDETx log combination and compression: groups are contiguous, all-or-nothing and
acknowledged only after their fence; crash fuzzing passes in every domain with two threads; the
M13 and M17 mutants are killed; combination never changes the final data; the D9 trend holds."""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from pmsim import preset
from pmsim.runtimes import get_mutant, get_runtime
from pmsim.runtimes.dudetx.combine import (
    DEFLATE,
    RAW,
    DudeTxCombineRuntime,
    d9_rows,
    decode,
    encode,
    inflate,
    log_write_bytes,
)
from pmsim.runtimes.registry import MUTANTS
from pmsim.trace import Ev
from pmsim.workloads import Session

SMALL = {
    "bank": {"accounts": 6, "initial": 50, "max_amount": 40},
    "kv": {"buckets": 4, "keys": 24},
    "array": {"slots": 64, "per_tx": 4, "write_pct": 50},
    "ycsb": {"records": 32, "value_words": 2, "ops_per_tx": 2},
}


def session(workload: str, threads: int, runtime: Any, seed: int = 1, txs: int = 30) -> Session:
    return Session.create(runtime, workload, preset("marathe-pdom1"), threads=threads, seed=seed,
                          txs=txs, params=SMALL[workload])


def groups_of(size: int, compress: bool) -> type[DudeTxCombineRuntime]:
    """An unregistered combination runtime with groups of ``size``."""
    return type(f"Groups{size}", (DudeTxCombineRuntime,),
                {"name": f"test-groups-{size}{'-lz' if compress else ''}", "group_txs": size,
                 "compress": compress})


@pytest.mark.parametrize("runtime", ["dudetx-combine", "dudetx-lz", "dudetx-combine-fine",
                                     "dudetx-lz-fine"])
@pytest.mark.parametrize("workload", sorted(SMALL))
def test_matches_reference_and_recovers(workload: str, runtime: str) -> None:
    s = session(workload, 2, runtime)
    s.run(30)
    rt, wl = s.runtime, s.workload
    assert isinstance(rt, DudeTxCombineRuntime)
    assert wl.app_data(rt) == wl.expected(rt.commit_order)
    assert rt.R == rt.D == s.machine.peek(rt._ctr)
    c = rt.counters()
    assert c["combine.groups"] > 0 and c["combine.entries_out"] <= c["combine.entries_in"]
    assert (c["combine.ratio"] < 1) == ("lz" in runtime)
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == [] and rec.data == wl.expected(rt.commit_order)


def test_groups_are_contiguous_whole_and_acknowledged_after_their_fence() -> None:
    s = session("bank", 3, "dudetx-combine", txs=25)
    rt = s.runtime
    seen: list[tuple[int, int, int, int]] = []
    acks: list[int] = []
    persist, advance = rt._persist_group, rt._advance

    def persist_group(cpu: Any, g: Any) -> None:
        seen.append((g.a, g.b, rt.D, len(g.members)))
        persist(cpu, g)
        assert rt.D == g.b

    def adv(cpu: Any, b: int) -> None:
        acks.append(s.machine.engine.trace_len())
        advance(cpu, b)

    rt._persist_group = persist_group  # type: ignore[method-assign]
    rt._advance = adv  # type: ignore[method-assign]
    s.run(25)
    assert seen and seen[0][0] == 1
    for (a, b, d, n), nxt in zip(seen, seen[1:] + [None], strict=True):
        assert d == a - 1 and n == b - a + 1 and n <= rt.group_txs  # contiguous, D: a-1 -> b
        if nxt is not None:
            assert nxt[0] == b + 1
    assert any(n == rt.group_txs for *_, n in seen)
    # D advances (and TX_DURABLE is emitted) right after the group's ordering point: the persist
    # thread's last event before each advance is its fence
    ev = s.machine.trace().events
    mine = np.nonzero(ev["tid"] == rt.layout.threads)[0]
    assert len(acks) == len(seen)
    for at in acks:
        last = mine[mine < at][-1]
        assert ev["kind"][last] == Ev.SFENCE


def test_reproduce_takes_whole_groups_and_r_lands_on_their_boundaries() -> None:
    s = session("array", 2, "dudetx-combine-fine", txs=20)
    rt = s.runtime
    ends: set[int] = set()
    marks: list[int] = []
    persist, store = rt._persist_group, rt._store_watermark

    def persist_group(cpu: Any, g: Any) -> None:
        ends.add(g.b)
        persist(cpu, g)

    def watermark(c: Any, last: int, recs: Any) -> None:
        assert [g.a for g in recs[1:]] == [g.b + 1 for g in recs[:-1]]
        assert recs[0].a == rt.R + 1 and last == recs[-1].b
        marks.append(last)
        store(c, last, recs)

    rt._persist_group = persist_group  # type: ignore[method-assign]
    rt._store_watermark = watermark  # type: ignore[method-assign]
    s.run(20)
    assert marks and marks == sorted(marks) and set(marks) <= ends
    assert marks[-1] == max(ends) == rt.R


def test_steps_and_checks_are_declared() -> None:
    cls = get_runtime("dudetx-combine")
    names = {st.name for st in cls.persist_steps()}
    assert {"dudetx.combine.append", "dudetx.combine.commit", "dudetx.combine.flush",
            "dudetx.combine.fence", "dudetx.combine.ack"} <= names
    assert not any(n.startswith("dudetx.persist.") for n in names)
    assert "dudetx.combine.recover.length" in {c.name for c in cls.recovery_checks()}


def test_a_group_is_cut_short_when_a_vlog_fills() -> None:
    big = type("Big", (DudeTxCombineRuntime,), {"name": "test-big-groups", "group_txs": 10_000,
                                               "max_group_entries": 1 << 12, "vlog_entries": 20})
    s = session("array", 2, big, txs=40)
    s.run(40)
    rt, wl = s.runtime, s.workload
    assert wl.app_data(rt) == wl.expected(rt.commit_order)
    assert rt.vlog_stalls > 0  # a worker waited for its vlog ...
    assert rt.counters()["combine.groups"] > 1  # ... so the combiner cut the group short


# -- compression ---------------------------------------------------------------------------------

entries_st = st.lists(st.tuples(st.integers(0, (1 << 61) - 1).map(lambda a: a * 8),
                                st.integers(0, (1 << 64) - 1)), min_size=1, max_size=80,
                      unique_by=lambda e: e[0]).map(sorted)


@settings(max_examples=200, deadline=None)
@given(entries_st, st.booleans())
def test_compression_round_trips(entries: list[tuple[int, int]], compress: bool) -> None:
    kind, blob = encode(entries, compress)
    assert kind == (DEFLATE if compress else RAW)
    assert decode(kind, blob) == entries
    out, complete = inflate(kind, blob)
    assert complete and len(out) == 16 * len(entries)


@settings(max_examples=100, deadline=None)
@given(entries_st, st.data())
def test_a_torn_blob_never_decodes(entries: list[tuple[int, int]], data: Any) -> None:
    """A strict prefix of a blob, or one with a byte changed past the length, is not a complete
    group: the length check (stream ends exactly at the length) rejects it."""
    kind, blob = encode(entries, True)
    cut = data.draw(st.integers(0, len(blob) - 1))
    assert decode(kind, blob[:cut]) is None
    assert decode(kind, blob + b"\0") is None


def test_compression_needs_no_zlib_wrapper() -> None:
    """The blob is a raw DEFLATE stream: no zlib header or Adler-32 (the group's own length and
    checksum guard it, as they would an lz4 block)."""
    kind, blob = encode([(8, 1), (16, 2)], True)
    with pytest.raises(zlib.error):
        zlib.decompress(blob)


# -- combination never changes the final state -----------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(SMALL)), st.integers(0, 1 << 16), st.integers(1, 12),
       st.booleans(), st.sampled_from([1, 2]))
def test_combination_never_changes_the_final_state(workload: str, seed: int, size: int,
                                                   compress: bool, threads: int) -> None:
    """Same seed and workload: the same data in PM as plain DUDETx (whenever the interleaving,
    hence the commit order, is the same; always with one thread), and a consistent allocator."""
    plain = session(workload, threads, "dudetx", seed=seed, txs=15)
    plain.run(15)
    comb = session(workload, threads, groups_of(size, compress), seed=seed, txs=15)
    comb.run(15)
    wl, rt = comb.workload, comb.runtime
    assert rt.R == rt.D == comb.machine.peek(rt._ctr)  # everything reproduced into PM
    assert wl.app_data(rt) == wl.expected(rt.commit_order)
    assert rt.check_invariants(wl.live_objects(rt)) == []
    if threads == 1:
        assert rt.commit_order == plain.runtime.commit_order
    if rt.commit_order == plain.runtime.commit_order:
        assert wl.app_data(rt) == plain.workload.app_data(plain.runtime)


# -- D9 -----------------------------------------------------------------------------------------------

def test_bytes_saved_grow_with_the_group_size() -> None:
    """D9's trend on a small YCSB run (Zipf 0.99): Persist and Reproduce write less as groups
    grow; compression shrinks the group log further and leaves Reproduce alone."""
    rows = d9_rows([10, 100, 400], txs=200, threads=2, params={"records": 500})
    base, *comb = rows
    raw = [r for r in comb if not r["compress"]]
    lz = [r for r in comb if r["compress"]]
    assert base["group"] == 1 and base["persist"] > 0
    saved = [r["persist_saved"] for r in raw]
    assert 0 < saved[0] < saved[1] < saved[2]
    assert [r["reproduce_saved"] for r in raw] == sorted(r["reproduce_saved"] for r in raw)
    assert raw[-1]["reproduce_saved"] > 0
    for r, z in zip(raw, lz, strict=True):
        assert z["persist"] < r["persist"] and 0 < z["ratio"] < 1


def test_log_write_bytes_counts_what_persist_and_reproduce_store() -> None:
    s = session("ycsb", 1, "dudetx-combine", txs=20)
    s.run(20)
    got = log_write_bytes(s.runtime)
    c = s.runtime.counters()
    assert got["persist"] == c["combine.written_bytes"]
    assert got["reproduce"] >= 8 * c["combine.entries_out"]


# -- crash fuzzing -----------------------------------------------------------------------------------

@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize("workload", ["bank", "kv"])
@pytest.mark.parametrize("runtime", ["dudetx-combine-fine", "dudetx-lz-fine"])
def test_crash_fuzzing_two_threads_is_exhaustive_and_passes(runtime: str, workload: str,
                                                            domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime=runtime, workload=workload, domain=domain, threads=2, txs=10,
                          idempotence=2))
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.exhaustive and rep.states_checked > 0 and rep.deep_runs > 0


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize("workload", ["array", "alloc-x", "ycsb"])
@pytest.mark.parametrize("runtime", ["dudetx-combine-fine", "dudetx-lz-fine"])
def test_long_campaign(runtime: str, workload: str, domain: str) -> None:
    rep = fuzz(FuzzConfig(runtime=runtime, workload=workload, domain=domain, threads=2, txs=20,
                          idempotence=4))
    assert rep.ok, crashfuzz.format_report(rep)


# -- mutants -------------------------------------------------------------------------------------------

KILLS = {"dudetx-combine:M13a": "array", "dudetx-combine:M13b": "bank",
         "dudetx-combine:M13c": "array", "dudetx-lz:M17": "kv"}
"""Each mutant and a workload that kills it in PDOM-1."""


def test_every_mutant_is_registered() -> None:
    assert set(KILLS) <= set(MUTANTS)


@pytest.mark.parametrize("mutant", sorted(KILLS))
def test_mutant_killed(mutant: str) -> None:
    m = get_mutant(mutant)
    rep = fuzz(FuzzConfig(runtime=m.name, domain="pdom1", threads=max(2, m.threads), txs=8,
                          idempotence=2, reduce=False, budget=4096, new_tx=3, stop_at_first=True,
                          workload=KILLS[mutant]))
    assert not rep.ok, f"{m.name} survived"


def test_early_ack_is_caught_by_the_acknowledged_id_check() -> None:
    """M13c recovers a prefix (a shorter one): only the acknowledged-ID check sees it."""
    rep = fuzz(FuzzConfig(runtime="dudetx-combine:M13c", domain="pdom1", threads=2, txs=8,
                          idempotence=0, reduce=False, budget=4096, stop_at_first=True,
                          workload="array"))
    assert not rep.ok
    f = rep.failures[0]
    # the first group acknowledged before its fence, then lost: recovery yields the empty prefix,
    # a state that would be correct had nothing been acknowledged
    assert f.kind == "data" and f.step == "dudetx.combine.ack" and f.recovered == "()", f.summary()


@pytest.mark.parametrize("mutant", ["dudetx-combine:M13c", "dudetx-lz:M17"])
def test_ordering_mutants_survive_in_pdom2(mutant: str) -> None:
    rep = fuzz(FuzzConfig(runtime=mutant, workload=KILLS[mutant], domain="pdom2", threads=2,
                          txs=8, idempotence=1, reduce=False, budget=4096))
    assert rep.ok, crashfuzz.format_report(rep)
