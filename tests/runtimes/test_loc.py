"""LOC-WAL, EC-WAL and H-WAL (pmsim.hw.loc + pmsim.runtimes.loc): runs, counters, recovery
rules, both engines, and exhaustive crash fuzzing on the card's workloads."""

from __future__ import annotations

import numpy as np
import pytest

import crashfuzz
from crashfuzz.model import TraceIndex
from pmsim.cache import native
from pmsim.errors import ConfigError
from pmsim.hw.loc import LogLayout, checksum, decode, line_bursts, make_tag, pack_head, read_tag
from pmsim.runtimes.registry import get_runtime
from pmsim.trace import Ev, Mark
from pmsim.workloads import Session

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
    """L15's campaign: a transaction spills line A early, writes A again and its final copy
    lands in a group whose META is not durable. With the card's count of distinct lines the
    early copy completes the count and recovery replays a torn transaction (loc:M2 keeps that
    rule); counting copies leaves the count short."""
    kw = dict(workload="sps", params=(("entries", 16), ("swaps", 2)), txs=12, budget=1 << 14,
              idempotence=0, depth=1)
    good = crashfuzz.fuzz(runtime="loc-spill", **kw)
    assert good.ok and good.exhaustive, good.failures[0].summary() if good.failures else good
    bad = crashfuzz.fuzz(runtime="loc:M2", **kw)
    assert not bad.ok
    assert {f.step for f in bad.failures} == {"loc.log.meta"}
    assert all(f.kind == "data" for f in bad.failures)
