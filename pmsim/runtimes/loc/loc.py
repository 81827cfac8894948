"""LOC-WAL, EC-WAL and H-WAL: hardware redo logging with loose or strict ordering (card
``loc.md``). The hardware is :mod:`pmsim.hw.loc` (the CRL, versioned lines, the NVM log and
its recovery); this runtime is the thin software side: TxBegin / TxCommit / TxAbort / TxFlush
around a workload's transaction bodies, allocation, and the hardware's recovery run at restart.

* ``loc``: Eager Commit + Speculative Persistence, speculation degree ``sd`` (default 16);
* ``loc-ec``: Eager Commit alone (``sd`` = 1, one wait per transaction);
* ``hwal``: H-WAL, the same hardware log with a commit record and two waits per transaction;
* ``loc-fine`` (fuzzing): windows of three transactions, each with a META line of its own, so
  a crash inside a window close has few enough unordered lines to enumerate;
* ``loc-spill`` (fuzzing): one TxDirty version in the whole LLC, so every second version
  spills to the log early (overflow, re-logged lines, counts carried by stubs);
* ``loc-wrap`` (fuzzing): 4-bit TxIDs in the tags, so stale tags of earlier laps look current
  unless the SID rule rejects them (mutant M5).

One hardware thread (the card's default machine: one core, one thread): ``threads`` must be 1.
Every transactional store goes through the unit (the allocator's bitmap too), so recovery needs
nothing but the log. Acknowledgement (TX_DURABLE) comes when the transaction's window closes;
a run's last window is closed by TxFlush when the workers end.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any, ClassVar

import numpy as np

from ...errors import ConfigError
from ...hw.loc import SLOTS, Crl, LogLayout, decode, line_bursts, meta_after_data, pack_head
from ...trace import Mark
from ..alloclog import ALLOC_STEPS, FreeListAlloc
from ..base import PB_DOMAINS, Runtime, Tx
from ..layout import PMSpec
from ..mutation import Mutant, drop, patch, skip_check
from ..registry import register_mutant, register_runtime, variant

RECORDS = 4
"""Window-record slots in PM: the CRL truncates once they are all used."""


class LocTx(Tx):
    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        return self.rt.crl.load_words(self.cpu, obj + 8 * field, n)  # type: ignore[attr-defined]

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        crl = self.rt.crl  # type: ignore[attr-defined]
        a = obj + 8 * field
        for i, v in enumerate(values):
            crl.store(self.cpu, self, a + 8 * i, int(v))
        self.writes += 1


def _lines_per_tx(spec: PMSpec) -> int:
    """Lines one transaction may write: its words, a straddled line per write, bitmap words."""
    return spec.max_tx_words + spec.max_tx_writes + 2 * spec.max_tx_allocs + 2


@register_runtime
class LocRuntime(FreeListAlloc, Runtime):
    """LOC-WAL: the CRL's Eager Commit and Speculative Persistence (:mod:`pmsim.hw.loc`)."""

    name = "loc"
    family = "loc"
    mode: ClassVar[str] = "loc"
    sd = 16
    """Speculation degree: writing transactions per window (card §4; 1 = EC-WAL)."""
    version_ways = 0
    """TxDirty versions one LLC set may hold before the oldest spills to the log (0: the LLC's
    associativity)."""
    version_sets = 0
    """LLC sets the version budget is kept per (0: the LLC's sets; 1: one budget for all)."""
    txid_bits = 22
    """Width of the TxID in a log tag (the card's 8-bit wrap needs SID validity, M5)."""
    log_groups = 0
    """Block groups in the log ring (0: room for two of the workload's largest transactions)."""
    home_gate = "window"
    coalesce_at = "commit"
    overflow_to_home = False
    count_on_overflow = False
    ack_before_wait = False
    pair_for_logged = False
    coalesce_without_pair = False
    count_lines = False
    sid_first = False
    """The card's META layout, SID first (M20): a META line written over an earlier lap's may
    persist with its new SID before its tags."""
    group_per_tx = False
    """End the current block group after each transaction's blocks at a window close (one
    META line never holds two transactions' tags: fewer crash states per close, more slots)."""

    STEPS = {
        "loc.log.block": ("group", "write a 64-byte version to a data slot of the log (movnt)"),
        "loc.log.meta": ("group", "write a group's META line: 7 BLK-TAGs, then its SID "
                         "(movnt)"),
        "loc.edge.meta-after-data": ("edge", "hardware order: a tag persists only after its data "
                                     "line (a persist-order edge, no wait)"),
        "loc.edge.line-burst": ("edge", "hardware order: a log line is one burst, persisting "
                                "as a prefix of its words (px86; line mode has it already)"),
        "loc.close.record": ("group", "write the window record: first TxID, aborted TxIDs, "
                             "dependency pairs (movnt)"),
        "loc.close.wait": ("order", "the window's one ordering point: wait until its log, META "
                           "and record are durable"),
        "hwal.commit.wait-log": ("order", "H-WAL O1: the transaction's log durable before its "
                                 "commit record"),
        "hwal.commit.record": ("group", "H-WAL: store the commit record (last committed TxID)"),
        "hwal.commit.wait-record": ("order", "H-WAL O2: the commit record durable before the "
                                    "acknowledgement and the home writes"),
        "loc.close.home": ("group", "release the window's newest lines to be written home "
                           "(cached stores, persisted lazily)"),
        "loc.trunc.flush-home": ("flush", "truncation: write back the released home lines"),
        "loc.trunc.wait-home": ("order", "truncation: home lines durable before the head moves"),
        "loc.trunc.head": ("group", "truncation: advance the head (start TxID, start SID)"),
        "loc.trunc.wait-head": ("order", "truncation: the head durable before the ring is reused"),
        "loc.recover.replay": ("group", "recovery: write the committed prefix's lines home"),
        "loc.recover.wait": ("pb", "recovery: the replayed lines durable before the head moves"),
        "loc.recover.head": ("group", "recovery: move the head past every logged transaction"),
        "loc.recover.wait-head": ("pb", "recovery: the head durable before recovery returns"),
    }
    OMIT_STEPS = frozenset(ALLOC_STEPS) | {"hwal.commit.wait-log", "hwal.commit.record",
                                           "hwal.commit.wait-record"}
    CHECKS = {
        "loc.recover.sid-valid": "ignore groups whose SID is below the head's start SID",
        "loc.recover.count-copies": "count every log copy of a transaction (TxCnt counts a "
                                    "line spilled early and logged again twice)",
        "loc.recover.count-complete": "commit only when logged + coalesced lines equal TxCnt",
        "loc.recover.pair-successor-committed": "count a pair only when its successor committed",
        "loc.recover.pairs-tail-to-head": "evaluate the window's transactions successors first",
        "loc.recover.prefix-cut": "discard everything after the first uncommitted transaction",
        "loc.recover.close-prefix": "move the cut before a transaction whose pair successor is "
                                    "cut (the card's fix to the paper's steps 2-3, M19)",
        "loc.recover.replay-commit-order": "replay in commit order, not by SID across transactions",
    }

    def __init__(self, machine: Any, layout: Any, costs: Any = None) -> None:
        super().__init__(machine, layout, costs)
        self.ack_latencies: list[float] = []  # begin -> acknowledgement at the window close
        if layout.threads != 1:
            raise ConfigError(f"{self.name} models one hardware thread (the card's machine: one "
                              f"core, one thread); run it with threads=1, not {layout.threads}")
        if not 2 <= self.txid_bits <= 22 or self.sd < 1:
            raise ConfigError(f"{self.name}: txid_bits must be in 2..22 and sd >= 1")
        if machine.pm.size > (1 << 30):
            raise ConfigError(f"{self.name}: a log tag addresses 2**24 lines (1 GiB of PM); the "
                              f"machine has {machine.pm.size} bytes: shrink the PM region")
        groups, self.groups_per_tx = self._ring(layout.spec)
        self.lay = LogLayout(layout.log[0], groups, RECORDS, LogLayout.record_words_for(self.sd),
                             self.sid_first)
        ways = self.version_ways or machine.config.cache.llc.ways
        self.crl = Crl(self, self.lay, self.mode, 1 if self.mode == "hwal" else self.sd, ways,
                       self.txid_bits)

    # -- layout --------------------------------------------------------------------------------
    @classmethod
    def _ring(cls, spec: PMSpec) -> tuple[int, int]:
        """(ring groups, groups a transaction needs)."""
        need = -(-(_lines_per_tx(spec) + 1) // SLOTS) + 1
        return max(cls.log_groups, 2 * need + 2), need

    @classmethod
    def log_bytes(cls, spec: PMSpec) -> int:
        groups, _ = cls._ring(spec)
        return LogLayout(0, groups, RECORDS, LogLayout.record_words_for(cls.sd)).nbytes

    def _new_tx(self, cpu: Any, txid: int) -> Tx:
        return LocTx(self, cpu, txid)

    def _begin(self, tx: Tx) -> None:
        tx.cpu.work(self.costs.call_ns)

    def _commit(self, tx: Tx) -> None:
        tx.cpu.mark(Mark.TX_COMMIT, tx.txid)
        self.crl.commit(tx.cpu, tx)
        self._release_frees(tx)

    def _abort(self, tx: Tx) -> None:
        self.crl.abort(tx.cpu, tx)
        self._return_allocs(tx)

    def commit(self, tx: Tx) -> Generator[Any, Any, None]:
        """TxCommit returns at once; the CRL acknowledges durability when the window closes."""
        self._check_live(tx)
        self._commit(tx)
        self.end_steps(tx.tid)
        self.commits += 1
        self.commit_order.append(tx.txid)
        yield from self._finish(tx)

    def _set_bit(self, tx: Tx, block: int, allocated: bool) -> None:
        """The allocator's bit changes inside the transaction, through the unit like any write."""
        word, mask = self.heap.bit_of(block)
        old = tx.read_words(word, 0, 1)[0]
        tx.write_words(word, 0, [old | mask if allocated else old & ~mask])

    def stop_after(self, workers: Sequence[Any]) -> None:
        """TxFlush once every worker has ended, so the run's last window is durable too."""
        super().stop_after(workers)
        env = self.m.env

        def closer() -> Generator[Any, Any, None]:
            yield env.all_of(list(workers))
            cpu = self.m.cpu(0)
            yield from cpu.sync()
            self.crl.flush(cpu)

        env.process(closer())

    def edge_providers(self) -> list[Any]:
        out: list[Any] = []
        if not self.dropped("loc.edge.meta-after-data"):
            out.append(meta_after_data(self.lay))
        if not self.dropped("loc.edge.line-burst"):
            out.append(line_bursts(self.lay))
        return out

    def counters(self) -> dict[str, float]:
        c = self.crl.counts
        return {"log_lines": c.log_lines, "meta_lines": c.meta_lines,
                "record_lines": c.record_lines, "home_lines": c.home_lines,
                "coalesced": c.coalesced, "overflow": c.overflow, "stubs": c.stubs,
                "windows": c.windows, "window_txs": c.window_txs,
                "close_stall_ns": c.close_stall_ns,
                "truncations": c.truncations, "max_versions": c.max_versions}

    # -- what software sees without a transaction (untimed) ---------------------------------------
    def peek(self, obj: int, field: int) -> int:
        a = self.field_addr(obj, field)
        v = self.crl.newest(a)
        return self.m.peek(a) if v is None else v

    def peek_static(self, name: str) -> np.ndarray:
        out = super().peek_static(name)
        s = self.layout.static(name)
        for line, vs in self.crl.versions.items():
            for k, w in enumerate(vs[-1].words):
                i, rem = divmod((line << 6) + 8 * k - s.base, s.stride)
                if 0 <= i < s.count and rem // 8 < s.words:
                    out[i, rem // 8] = w
        return out

    # -- format and recovery ---------------------------------------------------------------------
    def format(self, cpu: Any = None) -> None:
        super().format(cpu)
        self.m.poke(self.lay.head, pack_head(1, 1))
        self.m.poke(self.lay.head + 8, 0)
        self.crl.load_head()

    def _load(self) -> None:
        super()._load()
        self.crl.load_head()

    def _recover(self, cpu: Any) -> None:
        """The CRL's recovery (card §5): replay the committed prefix, then move the head past
        every logged transaction. H-WAL's commit record is left as it is: raising it here could
        commit a discarded transaction should the head's other word not persist."""
        d = decode(self.m.pm_words, self.lay, self.m.pm.base, self.mode, self.txid_bits, self.check)
        if d.replay:
            with self.step(cpu, "loc.recover.replay") as c:
                for addr, words in d.replay:
                    for i, w in enumerate(words):
                        c.store(addr + 8 * i, w)
                for addr in dict.fromkeys(a for a, _ in d.replay):
                    c.clwb(addr)
            self.pb(cpu, "loc.recover.wait")
        with self.step(cpu, "loc.recover.head") as c:
            c.store(self.lay.head, pack_head(d.next_txid, d.next_sid))
            c.clwb(self.lay.head)
        self.pb(cpu, "loc.recover.wait-head")

    def _check_logs(self) -> list[str]:
        d = decode(self.m.pm_words, self.lay, self.m.pm.base, self.mode, self.txid_bits,
                   lambda _: True)
        return [f"log: transaction {t} is still in the log after recovery" for t in d.order]


LOC_EC = variant(LocRuntime, "loc-ec", sd=1)
HWAL = variant(LocRuntime, "hwal", mode="hwal", sd=1,
               OMIT_STEPS=frozenset(ALLOC_STEPS) | {"loc.close.record", "loc.close.wait"})
LOC_FINE = variant(LocRuntime, "loc-fine", sd=3, group_per_tx=True, fuzz_variant=True)
LOC_SPILL = variant(LocRuntime, "loc-spill", version_ways=1, version_sets=1, sd=4,
                    fuzz_variant=True)
LOC_WRAP = variant(LocRuntime, "loc-wrap", txid_bits=4, sd=2, fuzz_variant=True)

ALL = ("pdom0", "pdom1", "pdom2")
WIDE = (("script", "0,1,2,3,4,5,6,7"), ("slots", 8))
"""A transaction of eight lines: its tags span two META lines (three on ``loc-spill``, which
logs every line twice), which persist in any order until the window's wait."""


def _set(value: Any) -> Any:
    """A patch that replaces a class switch by ``value``."""
    return lambda _orig: value


for _m in (
    Mutant("loc:M1", LocRuntime, (skip_check("loc.recover.count-complete"),), ALL,
           "a tag with TxCnt != 0 counts as a commit record: a torn transaction whose count "
           "block persisted is replayed", needs="a transaction whose tags span two META lines",
           workload="script", txs=1, params=WIDE),
    Mutant("loc:M2", LOC_SPILL, (skip_check("loc.recover.count-copies"),
                                  patch("count_lines", _set(True), "TxCnt over distinct lines")),
           ALL, "the card's count of distinct lines (TxCnt and recovery): a line spilled early "
           "and written again has two copies, and the early one completes the count while the "
           "final one is lost", needs="a spilled line written again, its two copies and the "
           "count in three META lines", workload="script", txs=1, params=WIDE),
    Mutant("loc:M4", LocRuntime, (drop("loc.edge.meta-after-data"),), ALL,
           "META may persist before its data lines: a tag names a slot still holding garbage",
           workload="script", txs=8),
    Mutant("loc:M5", LOC_WRAP, (skip_check("loc.recover.sid-valid"),), ALL,
           "no SID validity with 4-bit TxIDs: a stale tag of an earlier lap completes a count or "
           "replays an old line", needs="the ring reused with wrapped TxIDs",
           workload="script", txs=24),
    Mutant("loc:M20", LOC_WRAP, (patch("sid_first", _set(True), "SID first in META"),), ALL,
           "the card's META layout [SID, 7 BLK-TAGs]: a META line persists as a prefix of its "
           "words, so a new SID over an earlier lap's tags passes the SID rule and the stale tags "
           "(wrapped TxIDs) complete a count", needs="the ring reused with wrapped TxIDs",
           workload="script", txs=24),
    Mutant("loc:M6", LocRuntime, (patch("ack_before_wait", _set(True), "ack before the wait"),),
           ALL, "LastCommittedTxID advances (and transactions are acknowledged) before the window "
           "is durable: an acknowledged transaction is lost",
           workload="script", txs=8),
    Mutant("loc:M7", LocRuntime, (patch("coalesce_without_pair", _set(True),
                                        "coalesce without a pair"),), ALL,
           "coalesce without a dependency pair and shrink TxCnt: Tx is applied without the line "
           "it left to its successor", needs="two transactions of a window writing one line",
           workload="script", txs=8),
    Mutant("loc:M8", LOC_FINE, (skip_check("loc.recover.pair-successor-committed"),
                                  skip_check("loc.recover.close-prefix")), ALL,
           "paper-literal steps 2-3 that add a pair's n without checking its successor "
           "committed: Tx applied without its coalesced line",
           workload="script", txs=8),
    Mutant("loc:M9", LocRuntime, (skip_check("loc.recover.pairs-tail-to-head"),), ALL,
           "pairs evaluated head to tail: a transaction with a successor is never committed, so "
           "durable transactions are cut",
           workload="script", txs=8),
    Mutant("loc:M10", LocRuntime, (skip_check("loc.recover.prefix-cut"),), ALL,
           "no prefix cut: a complete transaction after a partial one is replayed (non-prefix)",
           workload="script", txs=8),
    Mutant("loc:M11", LocRuntime, (patch("home_gate", _set("own-log"), "home after own log"),),
           ALL, "home writes once the transaction's own blocks are issued (the paper's literal "
           "gate): its lines reach home while it may still be discarded",
           workload="script", txs=8),
    Mutant("loc:M12", LOC_SPILL, (patch("overflow_to_home", _set(True), "spill home"),), ALL,
           "a TxDirty line evicted to home: uncommitted data at home",
           workload="script", txs=8),
    Mutant("loc:M13", LOC_FINE, (patch("coalesce_at", _set("write"), "coalesce at write"),),
           ALL, "an older version dropped when a later transaction writes (not when it commits): "
           "if that one aborts the older value is lost", needs="a user abort after a write",
           workload="script", txs=8),
    Mutant("loc:M14", LOC_SPILL, (patch("count_on_overflow", _set(True), "count on spill"),),
           ALL, "TxCnt written on an early spill: a transaction that then aborts looks complete",
           needs="a user abort after a spill", workload="script", txs=8),
    Mutant("loc:M15", LOC_SPILL, (patch("pair_for_logged", _set(True), "pair for logged"),),
           ALL, "a pair recorded for an already-logged block: Tx's count overshoots and it never "
           "commits (durable transactions cut)",
           workload="script", txs=8),
    Mutant("loc:M16", LOC_EC, (drop("loc.trunc.wait-home"),), PB_DOMAINS,
           "the head moves before the home writes are durable: committed data lost",
           needs="a truncation (the ring's groups reused)", workload="script", txs=10),
    Mutant("loc:M18", LocRuntime, (drop("loc.close.wait"),), ALL,
           "no wait at window close: the next window (and home writes) persist before this one",
           workload="script", txs=8),
    Mutant("loc:M19", LOC_FINE, (skip_check("loc.recover.close-prefix"),), ALL,
           "the cut not closed under pair successors (the paper's steps 2-3): Tx applied "
           "without the line coalesced into a discarded successor",
           needs="T1 writes A and C, T2 B, T3 A again, in one window", workload="script", txs=4),
):
    register_mutant(_m)
