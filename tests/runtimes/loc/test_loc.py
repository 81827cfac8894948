"""LOC-WAL, EC-WAL and H-WAL (pmsim.hw.loc + pmsim.runtimes.loc.loc): runs, counters, recovery
rules, both engines, and exhaustive crash fuzzing on the card's workloads."""

from __future__ import annotations

from collections.abc import Generator, Hashable
from typing import Any

import numpy as np
import pytest

import crashfuzz
from crashfuzz.model import TraceIndex
from pmsim.cache import native
from pmsim.errors import ConfigError
from pmsim.hw.loc import LogLayout, checksum, decode, line_bursts, make_tag, pack_head, read_tag
from pmsim.runtimes import PMSpec, Runtime, StaticArray
from pmsim.runtimes.loc.loc import WIDE
from pmsim.runtimes.registry import MUTANTS, get_mutant, get_runtime
from pmsim.trace import Ev, Mark
from pmsim.workloads import Model, Session, Workload

RUNTIMES = ("loc", "loc-ec", "hwal", "loc-fine", "loc-spill", "loc-wrap")
WORKLOADS = ("btree", "hashtable", "rbtree", "sps")


def session(rt: str, wl: str, txs: int = 40, backend: str | None = None, **params: object) -> Session:
    s = Session.create(rt, wl, txs=txs, seed=3, backend=backend, params=params or None)
    s.run(txs)
    return s


@pytest.mark.parametrize("wl", WORKLOADS)
@pytest.mark.parametrize("rt", RUNTIMES)
def test_runs_match_the_reference_and_recover_the_final_image(rt: str, wl: str) -> None:
    s = session(rt, wl)
    assert s.check()
    r = s.recover(s.machine.pm_image())
    assert r.errors == []
    assert r.data == s.workload.expected(s.runtime.commit_order)


def marks(s: Session, code: Mark) -> list[int]:
    ev = s.machine.trace().events
    sel = (ev["kind"] == Ev.MARK) & (ev["aux"] == code)
    return np.nonzero(sel)[0].tolist()


def test_acknowledgement_waits_for_the_window_close() -> None:
    """LOC acknowledges a window's transactions together, after its one wait; H-WAL waits
    twice per writing transaction."""
    s = session("loc[sd=4]", "sps", txs=8)
    ev = s.machine.trace().events
    durable = marks(s, Mark.TX_DURABLE)
    assert len(durable) == 8
    fences = np.nonzero(ev["kind"] == Ev.SFENCE)[0]
    for group in (durable[:4], durable[4:]):
        assert max(group) - min(group) == len(group) - 1  # acknowledged together
        assert any(f < group[0] for f in fences)
    c = s.runtime.counters()
    assert c["windows"] == 2 and c["window_txs"] == 8
    h = session("hwal", "sps", txs=8)
    ev = h.machine.trace().events
    assert int((ev["kind"] == Ev.SFENCE).sum()) >= 2 * 8


def test_coalescing_drops_older_versions_and_counts_pairs() -> None:
    s = session("loc", "script", txs=4)  # T1: lines 0, 2; an abort; T3: line 1; T4: line 0
    c = s.runtime.counters()
    assert c["coalesced"] == 1  # T1's line 0 never reaches the log
    assert c["log_lines"] == 3 and c["stubs"] == 0
    s1 = session("loc-ec", "script", txs=4)
    assert s1.runtime.counters()["coalesced"] == 0
    assert s1.runtime.counters()["log_lines"] == 4


def test_version_overflow_spills_the_oldest_version() -> None:
    s = session("loc-spill", "sps", txs=12)
    c = s.runtime.counters()
    assert c["overflow"] > 0
    assert s.check()


def test_logged_block_carries_its_count_and_home_line() -> None:
    t = make_tag(5, 3, 0x1234, 22)
    assert read_tag(t) == (True, False, 5, 3, 0x1234)
    assert read_tag(make_tag(9, 2, 0, 4, stub=True))[:4] == (True, True, 9, 2)
    assert checksum([0, 0, 0]) != 0


class Log:
    """A hand-made log over a dict of words, for recovery-rule tests."""

    def __init__(self) -> None:
        self.lay = LogLayout(0x1000, 4, 2, LogLayout.record_words_for(4))
        self.w: dict[int, int] = {self.lay.head: pack_head(1, 1)}
        self.sid = 1

    def group(self, blocks: list[tuple[int, int, int, bool]]) -> None:
        """One group: (txid, TxCnt, line, stub) per slot; data word 0 of a slot = its line."""
        pos = (self.sid - 1) % self.lay.groups
        self.w[self.lay.meta(pos) + 8 * self.lay.sid_word] = self.sid
        for j, (t, cnt, line, stub) in enumerate(blocks):
            self.w[self.lay.tag(pos, j)] = make_tag(t, cnt, line, 22, stub)
            if not stub:
                self.w[self.lay.slot(pos, j)] = 100 + line
        self.sid += 1

    def record(self, first: int, ntx: int, pairs: list[tuple[int, int, int]]) -> None:
        from pmsim.hw.loc import pack_pair

        head = [first, ntx, 0, len(pairs)]
        body = [pack_pair(a - first, b - first, n) for a, b, n in pairs]
        for i, v in enumerate(head + [checksum(head + body)] + body):
            self.w[self.lay.record(0) + 8 * i] = v

    def words(self, addr: int, n: int) -> list[int]:
        return [self.w.get(addr + 8 * i, 0) for i in range(n)]

    def decode(self, skip: tuple[str, ...] = ()) -> list[int]:
        return decode(self.words, self.lay, 0, "loc", 22, lambda c: c not in skip).replayed


def m19_log() -> Log:
    """T1 wrote lines 1 and 3 (3 coalesced into T3), T2 line 2 (its tag lost), T3 line 3."""
    g = Log()
    g.group([(1, 2, 1, False)])
    g.group([(3, 1, 3, False)])
    g.record(1, 3, [(1, 3, 1)])
    return g


def test_recovery_cut_is_closed_under_pair_successors() -> None:
    g = m19_log()
    assert g.decode() == []  # T2 is partial, so T3 is cut, so T1 (which needs T3's line) too
    assert g.decode(("loc.recover.close-prefix",)) == [1]  # the paper's steps: T1 torn (M19)


def test_recovery_counts_pairs_only_with_a_committed_successor() -> None:
    g = Log()
    g.group([(1, 2, 1, False), (2, 1, 2, False)])
    g.record(1, 3, [(1, 3, 1)])  # T3 wrote nothing that persisted
    assert g.decode() == []  # T1 needs T3; T1 is first, so nothing is replayed
    assert g.decode(("loc.recover.pair-successor-committed", "loc.recover.close-prefix")) == [1, 2]


def test_recovery_prefix_cut_stops_at_a_gap() -> None:
    g = Log()
    g.group([(1, 1, 1, False), (3, 1, 3, False)])  # T2 left no block at all
    assert g.decode() == [1]
    assert g.decode(("loc.recover.prefix-cut",)) == [1, 3]  # M10: non-prefix


def test_loc_runs_one_hardware_thread() -> None:
    with pytest.raises(ConfigError, match="threads=1"):
        Session.create("loc", "sps", threads=2, txs=2)


@pytest.mark.ccore
@pytest.mark.parametrize("rt", ("loc", "hwal", "loc-spill"))
def test_c_and_python_engines_agree(rt: str) -> None:
    if not native.available():
        pytest.skip("C core not built")
    a = session(rt, "sps", txs=12, backend="c")
    b = session(rt, "sps", txs=12, backend="python")
    ta, tb = a.machine.trace().events, b.machine.trace().events
    assert np.array_equal(ta, tb)
    assert np.array_equal(a.machine.stats(), b.machine.stats())
    assert a.runtime.counters() == b.runtime.counters()


def _fuzz(rt: str, wl: str, domain: str, order: str, txs: int) -> crashfuzz.Report:
    return crashfuzz.fuzz(runtime=rt, workload=wl, domain=domain, order=order, txs=txs,
                          budget=1 << 16)


@pytest.mark.parametrize(("rt", "wl", "domain"), [
    ("loc-fine", "btree", "pdom1"), ("loc-fine", "hashtable", "pdom2"), ("loc-fine", "rbtree", "pdom0"),
    ("loc-fine", "sps", "pdom1"), ("loc-ec", "sps", "pdom2"), ("hwal", "hashtable", "pdom1"),
    ("loc-spill", "sps", "pdom1"), ("loc-wrap", "script", "pdom1"),
])
def test_crash_fuzzing_finds_nothing(rt: str, wl: str, domain: str) -> None:
    """The default suite's share; test_long_campaign runs the whole matrix."""
    rep = _fuzz(rt, wl, domain, "line", 3)
    assert rep.ok, rep.failures[0].summary()


@pytest.mark.slow
@pytest.mark.parametrize("order", ("line", "px86"))
@pytest.mark.parametrize("domain", ("pdom0", "pdom1", "pdom2"))
@pytest.mark.parametrize("wl", WORKLOADS)
@pytest.mark.parametrize("rt", ("loc", "loc-fine", "loc-ec", "hwal", "loc-spill", "loc-wrap"))
def test_long_campaign(rt: str, wl: str, domain: str, order: str) -> None:
    rep = _fuzz(rt, wl, domain, order, 8)
    assert rep.ok, rep.failures[0].summary()
    assert rep.exhaustive, f"{rep.points_sampled} points sampled"


def test_the_hardware_orders_are_edges_the_campaign_uses() -> None:
    rt = get_runtime("loc")
    edges = {"loc.edge.meta-after-data", "loc.edge.line-burst"}
    assert {s.name for s in rt.persist_steps() if s.kind == "edge"} == edges
    s = session("loc", "script", txs=3)
    names = ["loc_meta_after_data", "loc_line_bursts"]
    assert [p.__name__ for p in s.runtime.edge_providers()] == names
    m4 = session("loc:M4", "script", txs=3)
    assert [p.__name__ for p in m4.runtime.edge_providers()] == names[1:]


def test_a_log_line_persists_as_a_prefix_of_its_words_in_px86() -> None:
    """An edge between neighbouring words of each non-temporal log line (7 per full line, one
    fewer than the line's stores per line), pointing forward; none in line mode, where a line is
    one chain already."""
    s = session("loc-fine", "script", txs=6)
    c = s.runtime.crl.counts  # type: ignore[attr-defined]
    bursts = c.log_lines + c.meta_lines + c.record_lines
    trace = s.machine.trace()
    provider = line_bursts(s.runtime.lay)  # type: ignore[attr-defined]
    ix = TraceIndex(trace, "px86")
    edges = provider(ix, "pdom1")
    nt = int((trace.events["kind"] == Ev.NTSTORE).sum())
    assert c.record_lines and len(edges) == nt - bursts
    for e in edges:
        x, y = int(ix.chain_key[e.x_chain]), int(ix.chain_key[e.y_chain])
        assert y == x + 1 and y % 8
        assert ix.store_event_of(e.y_chain, e.y_count) == ix.store_event_of(e.x_chain, e.x_count) + 1
    assert provider(TraceIndex(trace, "line"), "pdom1") == []


def test_a_spilled_line_counts_every_copy() -> None:
    """L15's campaign passes exhaustively. loc:M2 keeps the card's count of distinct lines: on
    loc-spill a transaction of eight lines logs each twice (spilled, then final), and its
    copies span three META lines, which persist in any order before the window's wait. With the
    middle one lost, the early copies and the count complete the card's count and recovery
    replays the early copies (torn lines); counting copies leaves the count short."""
    kw = dict(workload="sps", params=(("entries", 16), ("swaps", 2)), txs=12, budget=1 << 14,
              idempotence=0, depth=1)
    good = crashfuzz.fuzz(runtime="loc-spill", **kw)
    assert good.ok and good.exhaustive, good.failures[0].summary() if good.failures else good
    wide = dict(workload="script", params=WIDE, txs=1, idempotence=0, depth=1)
    assert crashfuzz.fuzz(runtime="loc-spill", **wide).ok
    bad = crashfuzz.fuzz(runtime="loc:M2", stop_at_first=True, **wide)
    assert not bad.ok
    f = bad.failures[0]
    assert (f.kind, f.step, f.recovered[:6]) == ("data", "loc.log.meta", "('torn")


WRAP = dict(runtime="loc-wrap", workload="script", txs=24)
"""The campaign that tore a transaction once loc-wrap's ring had wrapped twice: the card's META
layout let a META line persist with its new SID over the tags of the lap before, whose 4-bit
TxIDs read as current ones."""


@pytest.mark.parametrize("domain", ("pdom0", "pdom1", "pdom2"))
def test_a_wrapped_ring_recovers_the_committed_prefix(domain: str) -> None:
    rep = crashfuzz.fuzz(domain=domain, **WRAP)  # type: ignore[arg-type]
    assert rep.ok and rep.exhaustive, rep.failures[0].summary() if rep.failures else rep
    s = session("loc-wrap", "script", txs=24)
    assert s.runtime.counters()["truncations"] >= 2  # the ring's groups reused twice


def test_the_sid_is_the_last_word_of_a_meta_line() -> None:
    """META is [7 tags, SID] (the card's [SID, 7 tags] is loc:M20): a prefix of its words with
    a new SID holds every new tag. loc:M20 tears a transaction on the loc-wrap campaign."""
    lay = LogLayout(0x1000, 4, 2, 8)
    assert lay.sid_word == 7 and [lay.tag(1, j) - lay.meta(1) for j in (0, 6)] == [0, 48]
    assert lay.meta_words(9, list(range(7))) == [0, 1, 2, 3, 4, 5, 6, 9]
    card = LogLayout(0x1000, 4, 2, 8, sid_first=True)
    assert card.sid_word == 0 and card.tag(1, 0) - card.meta(1) == 8
    rep = crashfuzz.fuzz(runtime="loc:M20", workload="script", txs=24, stop_at_first=True,
                         depth=1, idempotence=0)
    f = rep.failures[0]
    assert (f.kind, f.step, f.recovered) == ("data", "loc.log.meta", "('torn', 0, 3, 1)")


def _own_kill(name: str, **light: int) -> tuple[crashfuzz.Report, crashfuzz.Report]:
    """The mutant's own kill campaign (the kill matrix's first trial and settings, in PDOM-1,
    with ``light`` overrides) on the mutant and, the same config, on its unmodified base."""
    from dataclasses import replace

    from crashfuzz.mutants import trials

    m = get_mutant(name)
    base = crashfuzz.FuzzConfig(runtime=name, domain="pdom1", txs=8, idempotence=2, reduce=False,
                                budget=4096, new_tx=3, new_tx_every_image=True, stop_at_first=True)
    cfg = replace(next(iter(trials(base, m.workload, m.txs, m.params))), **light)
    return crashfuzz.fuzz(cfg), crashfuzz.fuzz(replace(cfg, runtime=m.base_name))


def test_m5_is_killed_by_its_own_bug() -> None:
    """loc:M5 (no SID rule) fails on its own campaign, which its base runtime passes (the slow
    test below runs every LOC mutant with the kill matrix's full settings)."""
    bad, good = _own_kill("loc:M5", depth=1, idempotence=0, new_tx=0)
    assert not bad.ok and good.ok, good.failures[0].summary() if good.failures else bad


LOC_MUTANTS = sorted(n for n in MUTANTS if n.startswith("loc:"))


@pytest.mark.slow
@pytest.mark.parametrize("name", LOC_MUTANTS)
def test_every_loc_mutant_is_killed_by_its_own_bug(name: str) -> None:
    bad, good = _own_kill(name)
    assert not bad.ok, f"{name} survives its own campaign"
    assert good.ok, good.failures[0].summary()


class LateInitStack(Workload):
    """A workload bug: a push links a new node transactionally and stores the node's fields
    with plain stores after the commit has returned (nothing flushes them)."""

    name = "late-init-stack"

    def spec(self) -> PMSpec:
        return PMSpec(statics=(StaticArray("head", 1, 2),), heap=((2, 2, 16),),
                      max_tx_writes=2, max_tx_words=4, max_tx_allocs=1, max_tx_objects=2)

    def nlocks(self) -> int:
        return 1

    def next_op(self, tid: int, rng: np.random.Generator) -> int:
        return int(rng.integers(1, 1 << 32))

    def locks_of(self, op: int) -> tuple[int]:
        return (0,)

    def body(self, tx: Any, op: int) -> None:
        head = tx.rt.static("head", 0)
        top, count = tx.read_words(head, 0, 2)
        node = tx.alloc(2)
        tx.write_words(head, 0, [node, count + 1])
        self.late = (node, op, top)

    def transaction(self, cpu: Any, rt: Runtime, op: int) -> Generator[Any, Any, None]:
        yield from super().transaction(cpu, rt, op)
        node, value, top = self.late
        cpu.store(rt.field_addr(node, 0), value)
        cpu.store(rt.field_addr(node, 1), top)

    def model(self) -> Model:
        return PushModel()

    def nodes(self, rt: Runtime) -> list[int]:
        out, node = [], rt.peek(rt.static("head", 0), 0)
        while node and len(out) <= 16:
            out.append(node)
            node = rt.peek(node, 1)
        return out

    def read_data(self, rt: Runtime) -> Hashable:
        nodes = self.nodes(rt)
        if rt.peek(rt.static("head", 0), 1) != len(nodes):
            return ("corrupt", "the count disagrees with the list")
        return tuple(rt.peek(n, 0) for n in reversed(nodes))

    def live_objects(self, rt: Runtime) -> list[int]:
        return self.nodes(rt)


class PushModel(Model):
    def __init__(self) -> None:
        self.items: list[int] = []

    def apply(self, op: int) -> None:
        self.items.append(op)

    def snapshot(self) -> Hashable:
        return tuple(self.items)


@pytest.mark.parametrize(("rt", "domain", "txs", "found"), [
    ("loc", "pdom1", 2, True),  # the plain stores are never flushed
    ("loc", "pdom2", 6, False),  # they persist at once, before the window's log
    ("loc[sd=4]", "pdom2", 3, False),
    ("loc[sd=4]", "pdom2", 4, True),  # the 4th commit closes the window before they are stored
    ("loc-ec", "pdom2", 2, True),  # every commit closes its window
])
def test_plain_stores_after_commit_show_once_a_commit_closes_the_window(
        rt: str, domain: str, txs: int, found: bool) -> None:
    """LOC's TxCommit returns before anything of the transaction is durable; its log is written
    at the window's close. In PDOM-2 a store persists when it is visible, in store order, so the
    plain stores after a commit persist before the log of their transaction unless that commit
    itself closed the window (the sd-th writing transaction): only then can a recovered image
    hold the linked node without its fields."""
    rep = crashfuzz.fuzz(runtime=rt, workload=LateInitStack, domain=domain, txs=txs,
                         stop_at_first=True)
    assert rep.ok is not found, rep.failures[0].summary() if rep.failures else rep
    assert rep.exhaustive
    if found:  # the linked node without its fields: a value of 0, or a list cut short
        assert rep.failures[0].kind == "data"
