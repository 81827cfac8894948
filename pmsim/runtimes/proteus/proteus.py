"""Proteus: software-supported hardware undo logging (card ``proteus.md``). The hardware is
:mod:`pmsim.hw.proteus.proteus` (log registers, LogQ, LLT, the memory controller's LPQ with log-write
removal); this runtime is the thin software side the compiler would emit:

``tx-begin``; for every store, ``log-load`` + ``log-flush`` of its 32-byte block (the LLT
filters repeats) and the store; at the end ``clwb`` of every modified line, ``sfence`` and
``tx-end`` (card §3.4 defaults 1-5: wait for every log acknowledgement, persist the data, send
TX_END, whose processing at the memory controller is the commit point, clear the LLT).

* ``proteus``: log-write removal (LWR): log lines live in the LPQ and are flash-cleared at
  tx-end; the last entry keeps END until the thread's next transaction logs.
* ``proteus-nolwr``: every log line drains to NVM; nothing is cleared (Proteus+NoLWR).
* ``proteus-tiny`` (fuzzing): LogQ 2, a 2-entry direct-mapped LLT and a 3-entry LPQ, so LogQ
  stalls, duplicate entries after LLT evictions and LPQ spills to NVM happen in small runs.
* ``proteus-switch`` (fuzzing): a context switch every three logged stores (card §5: LogQ
  drained, the transaction's LPQ entries written to NVM, the LLT cleared).
* ``proteus-pcommit``: the card's pcommit machine, whose memory-controller queues are volatile
  (PDOM-0 too): the LPQ writes every entry through to NVM and acknowledges a log-flush only
  from there, END is written through, and tx-end persists the data with ``sfence; pcommit;
  sfence`` before TX_END. Acknowledging from the volatile queue instead is mutant X15.

Locks serialise transactions (the workloads' per-structure locks). Allocation is not logged in
the paper ("assumed failure-safe"); here a block's bitmap bit changes inside the transaction
as a logged store at tx-end, under one allocator lock when several threads run (bitmap words of
different structures share 32-byte blocks, which card §5 forbids for data under different
locks). Objects and static elements are padded to 32-byte blocks for the same reason.

A user abort stores the logged old values back inside the transaction and ends it (its END
then commits no change). Recovery (card §6, [D]) undoes, per thread, the highest txID's
entries unless one of them carries END, using the earliest entry of each block, persists the
blocks, then persists END on that transaction's last entry: a crash during recovery repeats it.

The LPQ must be in the persistence domain (card R6): PDOM-1 (ADR) or PDOM-2 (eADR). PDOM-0,
where the memory controller's queues are volatile, is refused, except by ``proteus-pcommit``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ...config import LINE
from ...hw.proteus.proteus import (
    BLOCK,
    END,
    EntryFormat,
    LogBeforeData,
    ProteusUnit,
    undo_plan,
)
from ..alloclog import ALLOC_STEPS
from ..base import Tx
from ..mutation import Mutant, drop, patch, skip_check
from ..registry import register_mutant, register_runtime, variant
from .hwundo import HwUndoRuntime

FMT = EntryFormat(BLOCK // 8)


@register_runtime
class ProteusRuntime(HwUndoRuntime):
    """Proteus with log-write removal (card §3-§6)."""

    name = "proteus"
    family = "proteus"
    unit_format: ClassVar[EntryFormat] = FMT
    pad = BLOCK
    domain_reason = ("the memory controller's queues in the persistence domain (card R6: ADR "
                     "keeps the LPQ)")
    lwr = True
    """Log-write removal: flash-clear a transaction's LPQ entries at tx-end (False: NoLWR)."""
    logq = 16
    """LogQ entries: log-flushes in flight per core (card Table 1)."""
    llt_entries = 64
    llt_ways = 8
    lpq = 256
    """LPQ entries at the memory controller."""
    end_before_data = False
    end_discard_at = "first-log"
    clear_by_core = True
    overflow_check = True
    log_first_block_only = False
    log_through = False
    """Volatile memory-controller queues (the pcommit machine): write every entry through to NVM
    and acknowledge it from there; END through too; tx-end persists the data (pcommit)."""
    switch_every = 0
    """Context switches (card §5): one after every this many logged stores of a transaction
    (0: none, as in the paper's runs)."""

    STEPS = {
        "proteus.log.flush": ("group", "log-load + log-flush of a store's 32-byte block before "
                              "the store (unless the LLT has it)"),
        "proteus.logq.stall": ("order", "O3: dispatch stalls at a log-flush while the LogQ is "
                               "full (no untracked log-flush)"),
        "proteus.o1.log-before-data": ("edge", "O1: a store is released only after its block's "
                                       "log-flush is acknowledged (a persist-order edge)"),
        "proteus.ack.at-accept": ("edge", "the MC acknowledges a log-flush once it holds it in "
                                  "the LPQ (not when it is sent)"),
        "proteus.ack.nvm": ("edge", "volatile queues: a log-flush is acknowledged only once NVM "
                            "holds it, not when the volatile LPQ takes it"),
        "proteus.end.wait-acks": ("order", "tx-end waits for every log acknowledgement"),
        "proteus.end.flush": ("flush", "clwb every line the transaction modified"),
        "proteus.end.fence": ("fence", "sfence: the data in the WPQ before TX_END"),
        "proteus.mc.end-mark": ("store", "TX_END: the MC sets END on the transaction's last "
                                "entry (the commit point)"),
        "proteus.mc.flash-clear": ("group", "TX_END: the MC discards the transaction's other "
                                   "LPQ entries (log-write removal)"),
        "proteus.llt.clear": ("group", "tx-end clears the LLT"),
        "proteus.mc.spill": ("group", "a full LPQ writes its oldest entry to NVM"),
        "proteus.switch.write-back": ("group", "context switch: the MC writes the "
                                      "transaction's LPQ entries to NVM"),
        "proteus.switch.llt-clear": ("group", "context switch: clear the LLT"),
        "proteus.recover.undo": ("group", "recovery: write back the earliest entry of each "
                                 "block of an unfinished transaction; clwb"),
        "proteus.recover.fence": ("order", "recovery: the undone blocks durable before END"),
        "proteus.recover.end": ("group", "recovery: END on the undone transaction's last entry"),
        "proteus.recover.fence-end": ("order", "recovery: END durable before recovery returns"),
    }
    OMIT_STEPS = frozenset(ALLOC_STEPS) | {"proteus.ack.nvm"}
    CHECKS = {
        "proteus.recover.earliest": "undo each block from its earliest entry in seq order (O6)",
        "proteus.recover.whole-entry": "ignore an entry whose checksum fails (a log-flush that "
                                       "had not arrived whole)",
    }

    def __init__(self, machine: Any, layout: Any, costs: Any = None) -> None:
        self.untracked: set[tuple[int, int, int]] = set()
        super().__init__(machine, layout, costs)

    def _make_unit(self, machine: Any, layout: Any, slots: int) -> ProteusUnit:
        return ProteusUnit(self, machine, layout.log, slots, self.unit_format, logq=self.logq,
                           llt_entries=self.llt_entries, llt_ways=self.llt_ways, lpq=self.lpq,
                           lwr=self.lwr, through=self.log_through)

    def _tx_end(self, tx: Tx) -> None:
        """tx-end; with volatile queues the data's fence is a persist barrier (pcommit)."""
        if not self.log_through:
            super()._tx_end(tx)
            return
        cpu = tx.cpu
        self.unit.tx_end(cpu, lambda lines: self.flush(cpu, "proteus.end.flush", lines),
                         lambda: self.order(cpu, "proteus.end.fence"))

    # -- transactions --------------------------------------------------------------------------
    def _log_stores(self, tx: Tx, addr: int, values: Sequence[int]) -> None:
        cpu = tx.cpu
        unit = self.unit
        log = self.hw_step(cpu.tid, "proteus.log.flush")
        first = addr & ~(BLOCK - 1)
        for i, v in enumerate(values):
            a = addr + 8 * i
            block = a & ~(BLOCK - 1)
            if log and (block == first or not self.log_first_block_only):
                unit.log_block(cpu, block)
            unit.store(cpu, a, int(v))
            if self.switch_every:
                tx.stores += 1  # type: ignore[attr-defined]
                if tx.stores % self.switch_every == 0:  # type: ignore[attr-defined]
                    unit.context_switch(cpu)

    # -- the hardware's ordering for the crash-state model ---------------------------------------
    def edge_providers(self) -> list[Any]:
        lay = self.layout
        out: list[Any] = []
        if not (self.dropped("proteus.o1.log-before-data") or self.dropped("proteus.ack.at-accept")):
            out.append(LogBeforeData(tuple(lay.log), lay.log_bytes, self.unit_format,
                                     frozenset(self.untracked)))
        return out

    def counters(self) -> dict[str, float]:
        c = self.unit.counts
        return {"log_flushes": c.log_flushes, "llt_hits": c.llt_hits,
                "log_writes": c.log_writes, "log_removed": c.removed, "end_marks": c.end_marks,
                "logq_stall_ns": c.logq_stall_ns, "end_stall_ns": c.end_stall_ns,
                "o1_waits": c.o1_waits, "lpq_max": c.lpq_max, "switches": c.switches,
                "lpq_occ_mean": c.lpq_occ_sum / c.lpq_samples if c.lpq_samples else 0.0}

    # -- recovery -------------------------------------------------------------------------------
    def _recover(self, cpu: Any) -> None:
        lay = self.layout
        fmt = self.unit_format
        todo = []
        for t in range(lay.threads):
            ents = self._entries(t)
            top, plan = undo_plan(ents, self.check("proteus.recover.earliest"))
            if plan:
                todo.append((t, top, ents, plan))
        if not todo:
            return
        with self.step(cpu, "proteus.recover.undo") as c:
            lines: dict[int, None] = {}
            for _, _, _, plan in todo:
                for e in plan:
                    for i, w in enumerate(e.data):
                        c.store(e.src + 8 * i, w)
                    lines[e.src & ~(LINE - 1)] = None
            for line in lines:
                c.clwb(line)
        self.order(cpu, "proteus.recover.fence")
        with self.step(cpu, "proteus.recover.end") as c:
            for t, top, ents, _ in todo:
                last = max((e for e in ents if e.txid == top), key=lambda e: e.seq)
                a = lay.log[t] + last.slot * fmt.nbytes + 8 * fmt.end_word([])
                c.store(a, self.m.peek(a) | END)
                c.clwb(a)
        self.order(cpu, "proteus.recover.fence-end")

    def _check_logs(self) -> list[str]:
        out = []
        for t in range(self.layout.threads):
            top, plan = undo_plan(self._entries(t))
            if plan:
                out.append(f"log: thread {t}'s transaction {top} is unfinished after recovery")
        return out


PROTEUS_NOLWR = variant(ProteusRuntime, "proteus-nolwr", lwr=False,
                        OMIT_STEPS=ProteusRuntime.OMIT_STEPS | {"proteus.mc.flash-clear",
                                                                "proteus.mc.spill"})
PROTEUS_PCOMMIT = variant(
    ProteusRuntime, "proteus-pcommit", lwr=False, log_through=True,
    supported_domains=("pdom0", "pdom1", "pdom2"),
    OMIT_STEPS=frozenset(ALLOC_STEPS) | {"proteus.mc.flash-clear", "proteus.mc.spill"},
    STEPS={"proteus.end.fence": ("order", "sfence (PDOM-0: sfence; pcommit; sfence): the data "
                                 "durable before TX_END")})
PROTEUS_TINY = variant(ProteusRuntime, "proteus-tiny", logq=2, llt_entries=2, llt_ways=1, lpq=3)
PROTEUS_SWITCH = variant(ProteusRuntime, "proteus-switch", switch_every=3, fuzz_variant=True)
"""Fuzzing: a context switch every three logged stores (LPQ write-back, duplicates)."""


def _set(value: Any) -> Any:
    """A patch that replaces a class switch by ``value``."""
    return lambda _orig: value


PROTEUS_WRAP = type("ProteusRuntime_wrap", (ProteusRuntime,), {"name": "proteus-wrap",
                                                               "log_slots": 4})
"""A 4-entry log (not registered: with the overflow check a larger transaction stops the run)."""

ADR = ("pdom1",)
BOTH = ("pdom1", "pdom2")
WIDE = (("entries", 8), ("string_words", 8), ("swaps", 2))
"""SPS with 64-byte strings: each write spans two blocks, a transaction logs up to 8."""

for _m in (
    Mutant("proteus:X1", ProteusRuntime, (drop("proteus.o1.log-before-data"),), BOTH,
           "a store released before its log-flush is acknowledged: the data persists without "
           "its undo entry (torn transaction)", workload="sps", params=WIDE, txs=3),
    Mutant("proteus:X2", ProteusRuntime, (drop("proteus.ack.at-accept"),), BOTH,
           "a log-flush acknowledged when sent: the store goes out while the entry may still be "
           "in flight (in the persist order, X1 again)", workload="sps", params=WIDE, txs=3),
    Mutant("proteus:X3", PROTEUS_TINY, (drop("proteus.logq.stall"),), BOTH,
           "no dispatch stall on a full LogQ: the log-flush goes out untracked and the store "
           "after it finds no entry to wait for", needs="more log-flushes in flight than the "
           "LogQ holds", workload="sps", params=WIDE, txs=3),
    Mutant("proteus:X5", PROTEUS_TINY, (skip_check("proteus.recover.earliest"),), BOTH,
           "recovery restores a block from its latest duplicate: the transaction's own update "
           "is 'restored'", needs="a block logged twice in one transaction (LLT eviction)",
           workload="sps", params=(("entries", 3), ("string_words", 4), ("swaps", 3)), txs=2),
    Mutant("proteus:X6", ProteusRuntime, (drop("proteus.llt.clear"),), BOTH,
           "the LLT survives tx-end: the next transaction's first store to a block logged by "
           "the previous one is not logged", workload="queue", txs=6),
    Mutant("proteus:X7", ProteusRuntime, (drop("proteus.end.fence"),), ADR,
           "tx-end does not wait for the data's clwb: the log is flash-cleared while the data "
           "may still be in the caches", workload="swap", txs=3),
    Mutant("proteus:X8", ProteusRuntime, (patch("end_before_data", _set(True), "END first"),),
           ADR, "END (and the flash clear) before the data is durable: recovery accepts a torn "
           "transaction", workload="swap", txs=3),
    Mutant("proteus:X9", PROTEUS_TINY, (patch("end_discard_at", _set("begin"),
                                              "END dropped at tx-begin"),), BOTH,
           "the END entry dropped at the next tx-begin, not when the next transaction's first "
           "entry arrives: a committed transaction whose entries spilled to NVM is rolled back",
           needs="LPQ overflow (a transaction with more entries than the LPQ)", workload="bigtx", txs=2),
    Mutant("proteus:X10", ProteusRuntime, (patch("clear_by_core", _set(False),
                                                 "flash clear by txID"),), BOTH,
           "flash clear keyed on txID only: another core's in-flight transaction with the same "
           "txID loses its undo entries", needs="two threads in transactions at once", threads=2,
           workload="bank", params=(("accounts", 64),), txs=6),
    Mutant("proteus:X12", PROTEUS_TINY, (drop("proteus.mc.spill"),), BOTH,
           "a full LPQ drops its oldest entry instead of writing it to NVM: a large transaction "
           "loses undo entries", needs="LPQ overflow", workload="bigtx", txs=2),
    Mutant("proteus:X15", PROTEUS_PCOMMIT, (drop("proteus.ack.nvm"),), ("pdom0",),
           "with volatile memory-controller queues, a log-flush acknowledged once the LPQ takes "
           "it: the store goes out and may persist while the entry is lost with the queue",
           workload="swap", txs=3),
    Mutant("proteus:X13", ProteusRuntime, (patch("log_first_block_only", _set(True),
                                                 "first block only"),), BOTH,
           "a store spanning 32-byte blocks logs only its first block: the others are torn",
           needs="multi-block writes", workload="sps", params=WIDE, txs=3),
    Mutant("proteus:X16", PROTEUS_WRAP, (patch("overflow_check", _set(False), "no overflow "
                                               "exception"),), BOTH,
           "the circular log wraps over the current transaction: its earliest undo entries are "
           "lost", needs="a transaction with more entries than the log", workload="sps",
           params=WIDE, txs=3),
):
    register_mutant(_m)
