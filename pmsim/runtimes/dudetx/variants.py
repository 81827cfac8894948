"""DUDETx-Inf and DUDETx-Sync (papers/dudetx-decoupled.md §8 "Systems"): the paper's two
variants of DUDETx, built on :class:`~.dudetx.DudeTxRuntime` with the same persist steps,
recovery and record format.

**DUDETx-Inf** (``dudetx-inf``) has an "infinite" volatile log: Perform never waits for vlog
space. A simulated vlog is still DRAM, so "infinite" is a ring of ``vlog_entries = 2**16``
slots per thread (1 MiB each, in the DRAM region :meth:`~.dudetx.DudeTxRuntime.fit_config`
sizes), large enough that no transaction of the experiments waits; the ring never blocks: if
a run ever needed to wait, it raises and asks for a larger ring instead of silently becoming
DUDETx. ``counters()`` adds the ring's high-water mark (``vlog_peak_slots``) beside DUDETx's
``vlog_stalls`` (always 0 here), so card D2 (Inf ≈ DUDETx) and D14 (Perform stalls only on a
full vlog) can be checked against ``dudetx``'s own stall count.

**DUDETx-Sync** (``dudetx-sync``) merges Perform and Persist (card §2 "Commit point", §6.1):
right after its transaction commits on the shadow, the worker itself persists its vlog records
(the ``dudetx.persist.*`` steps: plog append, clwb, one ordering, the emulated
``max(persist_latency_ns, bytes / persist_bw)`` on the bandwidth shared with every other
worker), then waits until the durable ID D passes its transaction's ID (or, for a read-only
transaction, the counter it saw) and acknowledges it before ``run`` returns: every transaction
is durable before its worker's next transaction begins. There is no persist thread; Reproduce
stays in the background (one extra core). D is the same frontier as DUDETx's (every lower ID
persisted), so a worker may wait for another worker's lower ID. ``persist_latency_ns`` is
1,000 cycles at 3.4 GHz (the card's default); ``dudetx-sync-3500`` uses 3,500 cycles (card §8,
the setting of D4).

Fidelity: the card's calibration warning (§10) notes that the paper's Sync-DUDETx gaps do not
follow ``max(lat, bytes/BW)``; pmsim models only that term (no fitted per-transaction
overhead), so Sync's gap to DUDETx follows the model, not Table 2's exact values.
``dudetx-inf-fine`` and ``dudetx-sync-fine`` are the fine-batch variants the crash fuzzer
enumerates exhaustively (as ``dudetx-fine`` is for DUDETx). docs/protocols/dudetx/baselines.md
describes both.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator, Iterable
from typing import Any, ClassVar

from ...errors import ConfigError, StallError
from ..base import PB_DOMAINS, Tx
from ..mutation import Mutant, delay, drop
from ..registry import register_mutant, register_runtime, variant
from .dudetx import DudeTxRuntime, Record


@register_runtime
class DudeTxInfRuntime(DudeTxRuntime):
    """DUDETx whose volatile log never blocks Perform (a ring large enough for the run)."""

    name = "dudetx-inf"
    vlog_entries: ClassVar[int] = 1 << 16
    """Slots of each thread's vlog: 2**16 x 16 B = 1 MiB of DRAM per thread ("infinite": more
    than any run of the experiments holds unpersisted; the paper's DUDETx has 10**6)."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.vlog_peak_slots = 0

    def counters(self) -> dict[str, float]:
        """DUDETx's counters plus the vlog high-water mark (slots, over all threads)."""
        out = super().counters()
        out["vlog_peak_slots"] = float(self.vlog_peak_slots)
        return out

    def _wait_vlog(self, cpu: Any, tid: int) -> Generator[Any, Any, None]:
        """Never wait: a vlog that would have to is too small to stand for an infinite one."""
        used = self._vtail[tid] - self._vhead[tid]
        if self._vslots - used < self._rec_slots:
            raise ConfigError(f"{self.name}: thread {tid}'s volatile log ({self._vslots} slots) "
                              f"is full; an infinite vlog never blocks Perform: raise "
                              f"vlog_entries (e.g. {self.name}[vlog_entries={4 * self._vslots}])")
        yield from ()

    def _on_commit(self, stx: Any, ts: int) -> None:
        super()._on_commit(stx, ts)
        t = stx.tid
        used = self._vtail[t] - self._vhead[t]
        if used > self.vlog_peak_slots:
            self.vlog_peak_slots = used


@register_runtime
class DudeTxSyncRuntime(DudeTxRuntime):
    """DUDETx-Sync: each worker persists its own log after Perform and waits for D."""

    name = "dudetx-sync"
    sync_poll_ns: ClassVar[float] = 20.0
    """How long a worker waits between looks at D while a lower ID of another worker is not
    yet persistent (or its plog is full)."""

    @classmethod
    def extra_cores(cls, threads: int) -> int:
        """One core, for the reproduce thread (the workers persist their own logs)."""
        return 1

    def start_threads(self) -> None:
        self._persist_done = True
        self.spawn_background("reproduce", self.layout.threads, self._reproduce_loop)

    def _persist_queues(self, cpu: Any) -> Iterable[tuple[int, deque[Record]]]:
        """A worker drains only its own vlog."""
        t = cpu.tid
        return ((t, self._vq[t]),) if t < self.layout.threads else ()

    def _finish(self, tx: Tx) -> Generator[Any, Any, None]:
        """Persist the worker's records, wait until D acknowledges its transaction, then end
        it (release, latency): the transaction is durable before the next one begins."""
        cpu, t = tx.cpu, tx.tid
        since, seen = cpu.clock, self._progress
        while self._vq[t] or self._acks[t]:
            if self._persist_batch(cpu):
                self._progress += 1
                since, seen = cpu.clock, self._progress
                continue
            if self._progress == seen and cpu.clock - since > self.stall_ns:
                raise StallError(f"{self.name}: thread {t} waited {self.stall_ns:,.0f} ns to persist "
                                 "and acknowledge its transaction with no progress")
            if self._progress != seen:
                since, seen = cpu.clock, self._progress
            yield from self._wait(cpu)
        yield from super()._finish(tx)

    def _wait(self, cpu: Any) -> Generator[Any, Any, None]:
        """Let the other workers (and Reproduce, which frees plog space) run for a while."""
        cpu.work(self.sync_poll_ns)
        yield from cpu.maybe_yield()


DUDETX_INF_FINE = variant(DudeTxInfRuntime, "dudetx-inf-fine", persist_batch_bytes=1,
                          reproduce_batch=2, vlog_entries=1 << 12, persist_fair=False)
"""DUDETx-Inf with one-record Persist batches and two-transaction Reproduce batches (and a
4096-slot ring, ample for a fuzzing run), so every crash point can be enumerated."""
DUDETX_SYNC_FINE = variant(DudeTxSyncRuntime, "dudetx-sync-fine", reproduce_batch=2)
"""DUDETx-Sync with two-transaction Reproduce batches (its Persist batches are a worker's own
records already), so every crash point can be enumerated."""
DUDETX_SYNC_3500 = variant(DudeTxSyncRuntime, "dudetx-sync-3500",
                           persist_latency_ns=3500 / 3.4)
"""DUDETx-Sync with the card's long persist latency: 3,500 cycles at 3.4 GHz (≈1.03 µs, D4)."""

__all__ = ["DUDETX_INF_FINE", "DUDETX_SYNC_3500", "DUDETX_SYNC_FINE", "DudeTxInfRuntime",
           "DudeTxSyncRuntime"]

for _m in (
    Mutant("dudetx-inf:no-persist-fence", DUDETX_INF_FINE, (drop("dudetx.persist.fence"),),
           PB_DOMAINS, "drop the Persist ordering: D advances (acknowledges) before the plog "
           "records are persistent, and a crash loses an acknowledged transaction"),
    Mutant("dudetx-sync:no-persist-fence", DUDETX_SYNC_FINE, (drop("dudetx.persist.fence"),),
           PB_DOMAINS, "the worker acknowledges its transaction with no ordering after its own "
           "log flush: a crash loses an acknowledged transaction"),
    Mutant("dudetx-sync:ack-before-persist", DUDETX_SYNC_FINE,
           (delay("dudetx.persist.append", after="dudetx.persist.ack"),), why=
           "the worker acknowledges before its log is even written (the plog stores are held "
           "until after the acknowledgement): a crash loses an acknowledged transaction"),
):
    register_mutant(_m)
