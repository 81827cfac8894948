"""The DUDETx card mutants (papers/dudetx-decoupled.md §6), declared and registered at the end,
and the patches behind those that are not plain drops or delays of named steps: each takes the
original class attribute and returns the broken one. :class:`Claim` is the workload M11 needs (a
retry that writes another word than its aborted attempt).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Hashable
from typing import Any

import numpy as np

from ...workloads.base import Model, Workload
from ..base import PB_DOMAINS
from ..descriptor import lines_of
from ..layout import PMSpec, StaticArray
from ..mutation import Mutant, delay, drop, patch, skip_check
from ..registry import register_mutant
from .dudetx import DUDETX_FINE, DudeTxRuntime

Fn = Callable[..., Any]


def max_persisted_frontier(orig: Fn) -> Fn:
    """M3: D is the largest ID persisted so far, not the first unpersisted ID minus one."""
    def _frontier(self: Any, sampled: int, pending: list[int], persisted: int) -> int:
        return persisted
    return _frontier


def reproduce_unpersisted(orig: Fn) -> Fn:
    """M5: Reproduce runs up to the last committed ID, past D."""
    def _reproduce_limit(self: Any) -> int:
        return int(self.m.peek(self._ctr))
    return _reproduce_limit


def record_from_vlog(orig: Fn) -> Fn:
    """M5: a record not yet in the plog is reproduced straight from the volatile log."""
    def _record(self: Any, ident: int) -> Any:
        rec = orig(self, ident)
        if rec is not None:
            return rec
        for q in self._vq:
            for r in q:
                if r.id == ident:
                    return r
        return None
    return _record


def recycle_before_fence(orig: Fn) -> Fn:
    """M6: a Reproduce batch recycles its plog space, lets the other threads run, and only
    then fences the replayed data and persists R."""
    def _reproduce_batch(self: Any, cpu: Any, recs: list[Any]) -> Generator[Any, Any, None]:
        last = recs[-1].id
        self._apply(cpu, recs, "dudetx.reproduce.apply")
        self._recycle(recs)
        yield from self.idle(cpu, self.reproduce_idle_ns)
        self.order(cpu, "dudetx.reproduce.fence")
        with self.step(cpu, "dudetx.reproduce.watermark") as c:
            self._store_watermark(c, last, recs)
        self.order(cpu, "dudetx.reproduce.fence-r")
        self.R = last
    return _reproduce_batch


W_RT = 0
"""M7: word of a thread's descriptor line holding its own reproduce watermark."""


def per_thread_watermarks(orig: Fn) -> Fn:
    """M7: each thread's watermark (the last ID of its records reproduced) is stored in its
    descriptor; there is no global R."""
    def _store_watermark(self: Any, c: Any, last: int, recs: list[Any]) -> None:
        tops: dict[int, int] = {}
        for r in recs:
            tops[r.thread] = r.id
        for t, top in sorted(tops.items()):
            a = self.layout.desc[t] + 8 * W_RT
            c.store(a, top)
            c.clwb(a)
    return _store_watermark


def per_thread_unprocessed(orig: Fn) -> Fn:
    """M7: recovery drops a record iff its ID is at most its own thread's watermark."""
    def _unprocessed(self: Any, found: dict[int, tuple[int, list[tuple[int, int]]]],
                     r: int) -> dict[int, tuple[int, list[tuple[int, int]]]]:
        marks = [self.m.peek(d + 8 * W_RT) for d in self.layout.desc]
        return {i: v for i, v in found.items() if i > marks[v[0]]}
    return _unprocessed


def min_thread_watermark(orig: Fn) -> Fn:
    """M7: replay starts after the smallest per-thread watermark."""
    def _watermark(self: Any) -> int:
        return min(self.m.peek(d + 8 * W_RT) for d in self.layout.desc)
    return _watermark


def max_thread_watermark(orig: Fn) -> Fn:
    """M7: IDs restart after the largest per-thread watermark."""
    def _restart_id(self: Any) -> int:
        return max(self.m.peek(d + 8 * W_RT) for d in self.layout.desc) + 1
    return _restart_id


def per_thread_order(orig: Fn) -> Fn:
    """M8: a Reproduce batch replays thread by thread (the last thread's plog first), each in
    ID order, not the batch in ID order."""
    def _replay_order(self: Any, recs: list[Any]) -> list[Any]:
        return sorted(recs, key=lambda r: (-r.thread, r.id))
    return _replay_order


def shadow_is_home(orig: Fn) -> Fn:
    """M9: the "shadow" is the data's home in PM, so Perform's uncommitted stores (and any
    evicted line of them) reach PM."""
    def _shadow_base(self: Any, dram_next: int) -> int:
        return int(self._data_lo)
    return _shadow_base


def pop_user_aborts_only(orig: Fn) -> Fn:
    """M11: only an explicit (user) abort pops the volatile log; a conflict abort leaves its
    entries there, to be persisted with the next attempt's record."""
    def _on_abort(self: Any, stx: Any, cause: Any) -> None:
        if cause is not None and cause.value == "user":
            orig(self, stx, cause)
    return _on_abort


def bits_outside_the_log(orig: Fn) -> Fn:
    """M16: pm_alloc/pm_free flip the block's bit in PM at once (CAS, clwb) instead of logging
    it in the transaction's redo record."""
    def _set_bit(self: Any, tx: Any, block: int, allocated: bool) -> None:
        cpu = tx.cpu
        for line in lines_of(self.heap.flip(cpu, block, allocated), 8):
            cpu.clwb(line)
    return _set_bit


def ignore_plog_head(orig: Fn) -> Fn:
    """M19: Persist writes at the plog tail without checking the head: records not yet
    reproduced are overwritten when the ring wraps."""
    def _plog_room(self: Any, t: int, need: int) -> bool:
        return True
    return _plog_room


def restart_at_one(orig: Fn) -> Fn:
    """M20: transaction IDs restart at 1 after recovery."""
    def _restart_id(self: Any) -> int:
        return 1
    return _restart_id


class ClaimModel(Model):
    def __init__(self, n: int) -> None:
        self.cells = [0] * (1 + n)

    def apply(self, op: tuple[int]) -> None:
        c = self.cells
        c[1 + c[0] % (len(c) - 1)] = op[0] + 1
        c[0] += 1

    def snapshot(self) -> Hashable:
        return tuple(self.cells)


class Claim(Workload):
    """Reads a shared counter v, writes its thread's number + 1 into slot v, then v + 1 into the
    counter. An attempt that aborts after writing slot v (another thread took v meanwhile)
    retries on slot v + 1, and slot v belongs to another transaction: what M11 needs to show."""

    name = "dudetx-claim"

    def _slots(self) -> int:
        return 2 * self.threads * (self.txs or 32)

    def spec(self) -> PMSpec:
        return PMSpec(statics=(StaticArray("cells", 1 + self._slots(), 1),), max_tx_writes=2,
                      max_tx_words=2, max_tx_allocs=0, max_tx_objects=2)

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[int]:
        return (tid,)

    def body(self, tx: Any, op: tuple[int]) -> Generator[Any, Any, None]:
        cell = tx.rt.static
        v = tx.read(cell("cells", 0), 0)
        yield from tx.pause()
        tx.write(cell("cells", 1 + v % self._slots()), 0, op[0] + 1)
        yield from tx.pause()
        tx.write(cell("cells", 0), 0, v + 1)

    def model(self) -> Model:
        return ClaimModel(self._slots())

    def read_data(self, rt: Any) -> Hashable:
        return tuple(int(x) for x in rt.peek_static("cells")[:, 0])


def small_ring(records: int) -> Fn:
    """A plog of ``records`` largest records, so the ring wraps within a short campaign."""
    return lambda orig: records


__all__ = ["W_RT", "Claim", "ClaimModel", "bits_outside_the_log", "ignore_plog_head",
           "max_persisted_frontier",
           "max_thread_watermark", "min_thread_watermark", "per_thread_order",
           "per_thread_unprocessed", "per_thread_watermarks", "pop_user_aborts_only",
           "record_from_vlog", "recycle_before_fence", "reproduce_unpersisted", "restart_at_one",
           "shadow_is_home", "small_ring"]

TWO = "two worker threads"
WRAP = "a plog that wraps during the run"
_SMALL = patch("plog_records", small_ring(2), "plog of 2 records")

for _m in (
    Mutant("dudetx:M1", DUDETX_FINE, (skip_check("dudetx.recover.checksum"), _SMALL),
           why="recovery trusts an END without its checksum: a torn record replays stale ring "
               "bytes (PDOM-0/1), and records of an epoch before the last recovery are replayed "
               "again (any domain, after a second crash)", needs=WRAP, threads=2),
    Mutant("dudetx:M2", DUDETX_FINE,
           (delay("dudetx.persist.fence", after="dudetx.persist.ack"),), PB_DOMAINS,
           "advance D (acknowledge) with no Persist fence: an acknowledged transaction is lost"),
    Mutant("dudetx:M3", DUDETX_FINE,
           (patch("_frontier", max_persisted_frontier, "D = max persisted ID"),),
           why="D is the largest persisted ID: a lower ID of another thread not yet persisted is "
               "acknowledged, and lost", needs=TWO, threads=2),
    Mutant("dudetx:M4", DUDETX_FINE, (skip_check("dudetx.recover.gap"),),
           why="recovery skips gaps: a later ID is replayed without an earlier one (non-prefix)",
           needs=TWO, threads=2),
    Mutant("dudetx:M5", DUDETX_FINE,
           (patch("_reproduce_limit", reproduce_unpersisted, "reproduce past D"),
            patch("_record", record_from_vlog, "records from the vlog")),
           why="Reproduce replays committed records past D, straight from the vlog: a crash "
               "leaves their in-place writes with no durable log"),
    Mutant("dudetx:M6", DUDETX_FINE,
           (patch("_reproduce_batch", recycle_before_fence, "recycle before the data fence"),
            _SMALL),
           why="recycle plog space before the replayed data is fenced and R persisted: the "
               "overwritten records are gone while R still points before them (and, outside "
               "PDOM-2, their data may not be persistent)", needs=WRAP),
    Mutant("dudetx:M7", DUDETX_FINE,
           (patch("_store_watermark", per_thread_watermarks, "per-thread watermarks"),
            patch("_unprocessed", per_thread_unprocessed, "processed per thread"),
            patch("_watermark", min_thread_watermark, "replay from the lowest"),
            patch("_restart_id", max_thread_watermark, "restart after the highest")),
           why="per-thread reproduce watermarks, no global R: one thread's persists without the "
               "other's and recovery replays an older record over a newer one", needs=TWO, threads=2),
    Mutant("dudetx:M8", DudeTxRuntime,
           (patch("_replay_order", per_thread_order, "replay thread by thread"),),
           why="Reproduce replays thread by thread, not in ID order: a write-after-write across "
               "threads in one batch leaves the older value (no crash needed; on the default "
               "batches, which hold many transactions)", needs=TWO, threads=2),
    Mutant("dudetx:M9", DUDETX_FINE,
           (patch("_shadow_base", shadow_is_home, "shadow = home"),),
           why="the shadow is in the persistence domain (Perform writes the homes in PM): "
               "uncommitted or unpersisted writes survive a crash"),
    Mutant("dudetx:M11", DUDETX_FINE,
           (patch("_on_abort", pop_user_aborts_only, "no pop on conflict aborts"),),
           why="a conflict abort does not pop the vlog: the aborted attempt's writes are "
               "persisted and reproduced with the next record (invisible when the retry rewrites "
               "the same words, as in every workload of the kill matrix)",
           needs=TWO + " with a conflict abort whose retry writes another word", threads=2,
           workload="pmsim.runtimes.dudetx.mutants:Claim"),
    Mutant("dudetx:M16", DUDETX_FINE,
           (patch("_set_bit", bits_outside_the_log, "bits flipped in PM at once"),),
           why="allocation bits are flipped in PM at pm_alloc/pm_free, outside the redo record: "
               "a crash leaks a block or frees a reachable one", needs="a workload that allocates"),
    Mutant("dudetx:M18", DUDETX_FINE, (drop("dudetx.reproduce.fence"),), PB_DOMAINS,
           "persist R with no fence after the replayed data: R may persist before the data"),
    Mutant("dudetx:M19", DudeTxRuntime,
           (patch("_plog_room", ignore_plog_head, "plog wraps past R"), _SMALL),
           why="Persist wraps the plog over records not yet reproduced (on `dudetx`, whose "
               "batches hold more records than the ring)", needs=WRAP),
    Mutant("dudetx:M20", DUDETX_FINE,
           (drop("dudetx.recover.truncate"),
            patch("_restart_id", restart_at_one, "IDs restart at 1")),
           why="after recovery IDs restart at 1 and the plogs are not truncated: a later recovery "
               "mixes in stale records", needs="a second crash after a recovery"),
):
    register_mutant(_m)
