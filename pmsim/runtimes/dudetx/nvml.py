"""NVML-like durable transactions (Intel NVML / PMDK libpmemobj, as DUDETx measures it),
DUDETx's undo-logging baseline (papers/dudetx-decoupled.md §2.2, §8 "Systems", §10 item 10,
D7); its recovery is the undo runtime's.

**Protocol.** A lock-based runtime: a workload's body runs once under the locks it names
(``locks_of(op)``, NVML's manual fine-grained locks). NVML's static transactions add the whole
write set to the undo log up front (``pmemobj_tx_add_range``), so the log costs one ordering
for the whole transaction instead of one per store (§2.2: "static undo ... 1, but the write set
must be known in advance"). pmsim learns the write set from the body itself: its writes are
buffered in a volatile write set while it runs (a read of a written word sees the buffered
value; the load is still issued, so the timing is that of the in-place access), and at commit:

1. ``nvml.log.record`` / ``nvml.log.checksum``: one undo record per written range (the
   :mod:`pmsim.runtimes.marathe.undo` record format: sentinel, version, address, length, old
   words, checksum), all at once; ``nvml.log.flush``: CLFLUSH their lines; ``nvml.log.pb``: the
   one ordering of the log (when the batch reaches past the previous transaction's first
   record, the header's ordering ``undo.append.order-header`` comes first, as in ``undo``);
   ``nvml.log.tail``;
2. ``nvml.write.in-place``: the buffered values stored at their homes; ``nvml.write.flush``;
3. the undo runtime's commit: commit flush (``undo.commit.pb1``), COMMIT record, ordering,
   and the allocation log (``undo.commit.*``).

Every cache-line flush is a CLFLUSH (NVML on the paper's Haswell-era Xeon; card §10: "CLFLUSH
misses"): it waits for its line to reach the WPQ, so in PDOM-1/2 a flushed line is persistent
when the flush returns and the orderings cost little; PDOM-0 still needs each barrier.

**Per-transaction cost.** ``tx_overhead_ns`` is charged at begin: libpmemobj's transaction
metadata and log allocation (lane acquisition, undo-log setup, the transaction stage machine,
``pmemobj_tx_begin``/``_commit``/``_end``), which card D7 measures as a cap of 1.14 M empty
transactions per second per thread. Its value (see the attribute) is that cap's period minus
what pmsim already charges for an empty transaction of this runtime, so ``empty`` runs near
the cap.

**Fidelity and departures.** The undo records, their checksums and recovery are Marathe's
``undo`` (subclassed, not rewritten); NVML's own ulog format and its redo log for allocation
metadata are not modelled (allocation uses the undo runtime's allocation log; the paper hoists
allocation out of the measured transactions). The write set is known up front because pmsim
captures it, where NVML's programmer declares it. docs/protocols/dudetx/baselines.md describes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from ...errors import ConfigError
from ..base import H_TAIL, Runtime, Tx, lines_of
from ..marathe.undo import DATA, SENTINEL, UndoRuntime, UndoTx
from ..mutation import Mutant, drop, skip_check
from ..registry import register_mutant, register_runtime


class _ClflushCpu:
    """A Cpu whose clwb and clflushopt are CLFLUSH (code of the CLFLUSH era)."""

    def __init__(self, cpu: Any) -> None:
        self._cpu = cpu

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cpu, name)

    def clwb(self, line: int) -> None:
        self._cpu.clflush(line)

    clflushopt = clwb

    def clwb_many(self, lines: Iterable[int]) -> None:
        fl = self._cpu.clflush
        for line in lines:
            fl(line)


class ClflushSteps:
    """Mixin for a runtime whose every named flush is a CLFLUSH (its steps and the ones it
    inherits, e.g. the undo runtime's)."""

    _clf: dict[int, _ClflushCpu]

    def _clflush_cpu(self, cpu: Any) -> Any:
        clf = self.__dict__.setdefault("_clf", {})
        c = clf.get(cpu.tid)
        if c is None or c._cpu is not cpu:
            c = clf[cpu.tid] = _ClflushCpu(cpu)
        return c

    def flush(self, cpu: Any, name: str, lines: Iterable[int]) -> None:
        super().flush(self._clflush_cpu(cpu), name, lines)  # type: ignore[misc]

    def step(self, cpu: Any, name: str) -> Any:
        return super().step(self._clflush_cpu(cpu), name)  # type: ignore[misc]


class NvmlTx(UndoTx):
    """An undo transaction whose writes wait in a volatile write set until commit."""

    def __init__(self, rt: Runtime, cpu: Any, txid: int) -> None:
        super().__init__(rt, cpu, txid)
        self.pending: dict[int, int] = {}
        """Word address -> newest value written (first-write order)."""
        self.ranges: list[tuple[int, int]] = []
        """(address, words) of every logged TXN_WRITE, in order."""

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        cpu = self.cpu
        cpu.work(self.rt.costs.call_ns)
        a = obj + 8 * field
        out = cpu.load_words(a, n)
        if self.pending:
            get = self.pending.get
            out = [get(a + 8 * i, v) for i, v in enumerate(out)]
        return out


@register_runtime
class NvmlRuntime(ClflushSteps, UndoRuntime):
    """NVML-like: the write set's undo log persisted with one ordering, then in-place writes,
    a commit flush and the COMMIT record; CLFLUSH throughout."""

    name = "nvml"
    family = "nvml"
    empty_tx_model_ns: ClassVar[float] = 349.0
    """What pmsim itself charges an empty ``nvml`` transaction on the default preset (ns,
    measured with ``tx_overhead_ns`` in place): the begin header's store, which misses because
    the previous transaction's CLFLUSH evicted the line (LLC + media read, ~315 ns), and its
    CLFLUSH to the WPQ (~30 ns); then the markers and the workload's loop."""
    tx_overhead_ns: ClassVar[float] = 1e9 / 1.14e6 - empty_tx_model_ns
    """Software cost of one transaction's metadata and log allocation (ns, charged at begin).
    Derivation: card D7 caps NVML at 1.14 M empty transactions/s per thread, a period of
    877.2 ns; pmsim models ``empty_tx_model_ns`` of it, so 877.2 - 349 = 528.2 ns is left for
    what it does not model, and ``empty`` runs at ~1.14 M/s per thread on the default preset
    (on a machine whose PM reads are cheaper, e.g. ``dudetx-xeon``, correspondingly faster)."""

    STEPS = {
        "nvml.log.record": ("group", "store the undo records of the whole write set (header and "
                            "old words of each range)"),
        "nvml.log.checksum": ("group", "store each record's checksum, last"),
        "nvml.log.flush": ("flush", "CLFLUSH the records' lines"),
        "nvml.log.pb": ("pb", "the one ordering of the log: every record persistent before any "
                        "in-place write"),
        "nvml.log.tail": ("group", "move the tail past the records; flush the header"),
        "nvml.write.in-place": ("group", "store the write set at its homes"),
        "nvml.write.flush": ("flush", "CLFLUSH the written lines (the commit flush; ordered by "
                             "undo.commit.pb1)"),
    }

    def _new_tx(self, cpu: Any, txid: int) -> Tx:
        return NvmlTx(self, cpu, txid)

    def _begin(self, tx: Tx) -> None:
        super()._begin(tx)
        tx.cpu.work(self.tx_overhead_ns)

    def _write(self, tx: UndoTx, obj: int, addr: int, values: Sequence[int]) -> None:
        """Buffer the write (an object this transaction allocated is written in place, unlogged,
        as in ``undo``)."""
        assert isinstance(tx, NvmlTx)
        if obj in tx.fresh:
            super()._write(tx, obj, addr, values)
            return
        cpu = tx.cpu
        cpu.work(self.costs.call_ns)
        pend = tx.pending
        if any(addr + 8 * i not in pend for i in range(len(values))):
            tx.ranges.append((addr, len(values)))
        for i, v in enumerate(values):
            pend[addr + 8 * i] = v
        tx.writes += 1

    def _commit(self, tx: Tx) -> None:
        assert isinstance(tx, NvmlTx)
        if tx.pending:
            self._log_write_set(tx)
            self._write_in_place(tx)
        super()._commit(tx)

    def _log_write_set(self, tx: NvmlTx) -> None:
        """Store an undo record of every written range (old words read now, before any in-place
        write), each CLFLUSHed after it is stored; one ordering; then the tail."""
        cpu = tx.cpu
        t = tx.tid
        head = self.layout.log[t]
        records = []
        logged: set[int] = set()
        for addr, n in tx.ranges:
            if all(addr + 8 * i in logged for i in range(n)):
                continue
            logged.update(addr + 8 * i for i in range(n))
            old = cpu.load_words(addr, n)
            records.append((addr, old))
            tx.records.append((addr, old))
        pos = tx.tail
        spans = []
        for addr, old in records:
            words = [SENTINEL, tx.version, addr, (DATA << 56) | len(old), *old]
            spans.append((pos, words))
            pos += 8 * (len(words) + 1)
        if pos > head + self.layout.log_bytes:
            raise ConfigError(f"transaction {tx.txid:#x} overflowed its undo log "
                              f"({self.layout.log_bytes} bytes): raise PMSpec.max_tx_writes/words")
        if tx.tail == head and spans:
            # as undo's first append: a batch that reaches past the previous transaction's
            # first record must not persist before the new header (version) does
            nwords = (pos - head) >> 3
            if nwords > self.first_words[t]:
                self.order(cpu, "undo.append.order-header")
            self.first_words[t] = len(spans[0][1]) + 1
        for rec, words in spans:
            with self.step(cpu, "nvml.log.record") as c:
                c.store_words(rec, words)
            with self.step(cpu, "nvml.log.checksum") as c:
                c.work(self.costs.checksum_ns_per_byte * 8 * len(words))
                c.store(rec + 8 * len(words), self.checksum(words))
            self.flush(cpu, "nvml.log.flush", lines_of(rec, 8 * (len(words) + 1)))
        self.pb(cpu, "nvml.log.pb")
        hdr = self.layout.desc[t]
        with self.step(cpu, "nvml.log.tail") as c:
            c.store(hdr + 8 * H_TAIL, pos)
            c.clwb(hdr)
        tx.tail = pos

    def _write_in_place(self, tx: NvmlTx) -> None:
        """Store the write set at its homes, range by range, each range's lines flushed after
        it (the commit flush; a range written twice is stored twice, with its final value)."""
        cpu = tx.cpu
        for addr, n in tx.ranges:
            with self.step(cpu, "nvml.write.in-place") as c:
                st = c.store
                for i in range(n):
                    st(addr + 8 * i, tx.pending[addr + 8 * i])
            self.flush(cpu, "nvml.write.flush", lines_of(addr, 8 * n))


__all__ = ["ClflushSteps", "NvmlRuntime", "NvmlTx"]

for _m in (
    Mutant("nvml:no-log-flush", NvmlRuntime, (drop("nvml.log.flush"),), ("pdom0", "pdom1"),
           "the undo records are never flushed: an in-place write persists while its undo "
           "record does not, and a crash before COMMIT cannot roll it back"),
    Mutant("nvml:no-write-flush", NvmlRuntime, (drop("nvml.write.flush"),), ("pdom0", "pdom1"),
           "no commit flush: COMMIT persists while the in-place writes are still cached, and a "
           "crash loses a committed transaction"),
    Mutant("nvml:no-checksum", NvmlRuntime, (drop("nvml.log.checksum"),
                                              skip_check("undo.recover.checksum")),
           why="no record checksums: a record whose header persisted before its old words is "
               "accepted, and recovery restores garbage"),
):
    register_mutant(_m)
