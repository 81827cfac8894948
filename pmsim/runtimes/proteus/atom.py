"""ATOM: hardware undo logging at the memory controller (Joshi et al., HPCA 2017), the hardware
baseline of the Proteus card (``proteus.md`` §8). The hardware is :mod:`pmsim.hw.proteus.atom`; this
runtime is the software side, the same as Proteus's: ``tx-begin``; the stores (each line's first
store in a transaction is logged by the hardware at its retirement, and the store waits for the
memory controller's acknowledgement); at the end ``clwb`` of every modified line, ``sfence`` and
``tx-end``, whose processing at the memory controller (END on the last entry) is the commit
point; the controller then invalidates the entries one by one (truncation), END's last.

Locks serialise transactions (the workloads' per-structure locks). As for Proteus, allocation
is not logged by the paper's software; here a block's bitmap bit changes inside the transaction
as a logged store at tx-end, under one allocator lock when several threads run (bitmap words of
different structures share lines). Objects and static elements are padded to whole lines: an
entry holds a whole line, and undoing it must not clobber another lock's data.

A user abort stores the logged old values back inside the transaction and ends it (END then
commits no change). Recovery (card §6) undoes, per thread, the highest txID's entries unless one
of them carries END, persists the lines, then invalidates every remaining entry, END entries
last, and persists that: a crash during recovery repeats it.

The memory controller's write queue must be in the persistence domain (a posted log is complete
on arrival): PDOM-1 (ADR) or PDOM-2 (eADR). PDOM-0 is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ...config import LINE
from ...hw.proteus.atom import FMT, META, TRACKING, AtomUnit
from ...hw.proteus.proteus import VALID, EntryFormat, LogBeforeData, undo_plan
from ..base import Tx
from ..mutation import Mutant, delay, drop
from ..registry import register_mutant, register_runtime
from .hwundo import HwUndoRuntime


@register_runtime
class AtomRuntime(HwUndoRuntime):
    """ATOM as the Proteus card models it (§8, §11)."""

    name = "atom"
    family = "atom"
    unit_format: ClassVar[EntryFormat] = FMT
    pad = LINE
    domain_reason = ("the memory controller's write queue in the persistence domain (a posted "
                     "log is complete on arrival)")
    tracking = TRACKING
    """Entries per transaction the memory controller's tracking table holds."""
    overflow_check = True
    end_entry_last = True
    """Truncation invalidates the END entry last (False: first, a broken order for tests)."""

    STEPS = {
        "atom.log.create": ("group", "at a store's retirement, the hardware logs its line's old "
                            "value to the MC (once per line per transaction: the logged bit; "
                            "built by the MC from the fill on a miss)"),
        "atom.log.stall": ("order", "the store waits at the ROB head until the MC acknowledges "
                           "its log (one outstanding log per core)"),
        "atom.mc.lock": ("edge", "posted log: the MC locks the data line until its log is "
                         "accepted, so no write of it persists before the log (a persist-order "
                         "edge)"),
        "atom.end.flush": ("flush", "clwb every line the transaction modified"),
        "atom.end.fence": ("fence", "sfence: the data in the WPQ before TX_END"),
        "atom.mc.end-mark": ("store", "TX_END: the MC sets END on the transaction's last entry "
                             "(the commit point)"),
        "atom.mc.truncate": ("group", "TX_END: the MC invalidates the transaction's entries one "
                             "by one, the END entry last"),
        "atom.log.bits-clear": ("group", "tx-end clears the per-line logged bits"),
        "atom.recover.undo": ("group", "recovery: write back every entry of an unfinished "
                              "transaction; clwb"),
        "atom.recover.fence": ("order", "recovery: the undone lines durable before truncation"),
        "atom.recover.truncate": ("group", "recovery: invalidate every entry without END; clwb"),
        "atom.recover.fence-truncate": ("order", "recovery: those invalidations durable before "
                                        "the END entries'"),
        "atom.recover.truncate-end": ("group", "recovery: invalidate the END entries; clwb"),
        "atom.recover.fence-end": ("order", "recovery: the log empty before recovery returns"),
    }
    CHECKS = {
        "atom.recover.whole-entry": "ignore an entry whose checksum fails (a log write that had "
                                    "not arrived whole)",
    }

    def _make_unit(self, machine: Any, layout: Any, slots: int) -> AtomUnit:
        return AtomUnit(self, machine, layout.log, slots, self.unit_format,
                        tracking=self.tracking)

    # -- transactions --------------------------------------------------------------------------
    def _log_stores(self, tx: Tx, addr: int, values: Sequence[int]) -> None:
        cpu = tx.cpu
        unit = self.unit
        log = not self.dropped("atom.log.create")
        for i, v in enumerate(values):
            a = addr + 8 * i
            if log:
                unit.log_line(cpu, a & ~(LINE - 1))
            unit.store(cpu, a, int(v))

    # -- the hardware's ordering for the crash-state model ---------------------------------------
    def edge_providers(self) -> list[Any]:
        if self.dropped("atom.mc.lock"):
            return []
        lay = self.layout
        return [LogBeforeData(tuple(lay.log), lay.log_bytes, self.unit_format)]

    def counters(self) -> dict[str, float]:
        c = self.unit.counts
        return {"log_entries": c.log_entries, "log_writes": c.log_writes,
                "source_logs": c.source_logs, "logged_hits": c.logged_hits,
                "end_marks": c.end_marks, "truncation_writes": c.truncation_writes,
                "truncation_reads": c.truncation_reads,
                "tracking_overflows": c.tracking_overflows, "wpq_merged": c.wpq_merged,
                "retire_stalls": c.retire_stalls, "retire_stall_ns": c.retire_stall_ns}

    # -- recovery -------------------------------------------------------------------------------
    def _invalidate(self, c: Any, tid: int, entries: Sequence[Any]) -> None:
        base = self.layout.log[tid]
        for e in entries:
            a = base + e.slot * self.unit_format.nbytes + 8 * META
            c.store(a, self.m.peek(a) & ~VALID)
            c.clwb(a)

    def _recover(self, cpu: Any) -> None:
        lay = self.layout
        logs = [(t, self._entries(t)) for t in range(lay.threads)]
        logs = [(t, ents) for t, ents in logs if ents]
        if not logs:
            return
        plans = [undo_plan(ents)[1] for _, ents in logs]
        if any(plans):
            with self.step(cpu, "atom.recover.undo") as c:
                lines: dict[int, None] = {}
                for plan in plans:
                    for e in plan:
                        for i, w in enumerate(e.data):
                            if self.m.peek(e.src + 8 * i) != w:  # the words the crash changed
                                c.store(e.src + 8 * i, w)
                        lines[e.src & ~(LINE - 1)] = None
                for line in lines:
                    c.clwb(line)
            self.order(cpu, "atom.recover.fence")
        with self.step(cpu, "atom.recover.truncate") as c:
            for t, ents in logs:
                self._invalidate(c, t, [e for e in ents if not e.end])
        self.order(cpu, "atom.recover.fence-truncate")
        if any(e.end for _, ents in logs for e in ents):
            with self.step(cpu, "atom.recover.truncate-end") as c:
                for t, ents in logs:
                    self._invalidate(c, t, [e for e in ents if e.end])
            self.order(cpu, "atom.recover.fence-end")

    def _check_logs(self) -> list[str]:
        out = []
        for t in range(self.layout.threads):
            ents = self._entries(t)
            if ents:
                out.append(f"log: thread {t} still holds {len(ents)} valid entries after "
                           "recovery")
        return out


ADR = ("pdom1",)
BOTH = ("pdom1", "pdom2")

for _m in (
    Mutant("atom:A1", AtomRuntime, (drop("atom.log.stall"), drop("atom.mc.lock")), BOTH,
           "a store retires before its log is accepted at the MC, and the MC does not lock the "
           "line: the data persists without its undo entry (torn transaction)",
           workload="queue", txs=3),
    Mutant("atom:A2", AtomRuntime, (delay("atom.end.flush", after="atom.mc.truncate"),
                                    delay("atom.end.fence", after="atom.mc.truncate")), ADR,
           "the MC truncates (END, then every entry invalidated) before the data is flushed: "
           "a crash leaves a torn transaction with no undo entries", workload="queue", txs=3),
):
    register_mutant(_m)
