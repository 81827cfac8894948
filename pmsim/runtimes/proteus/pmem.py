"""PMEM, PMEM+pcommit and PMEM+nolog: the software baselines of Proteus (papers/proteus.md §8,
Fig. 2, §2.2).

``pmem`` is software undo logging with ``clwb``/``sfence`` in the card's four steps per
transaction, each ended by one ``sfence``:

1. **Log** (``pmem.log.copy``, ``pmem.log.header``, ``pmem.log.alloc``): copy every 64-byte line
   the transaction will modify to the thread's log, write the log header (count and home line
   addresses) and the allocation log; ``clwb`` each line (``pmem.log.flush``); ``sfence``
   (``pmem.log.fence``).
2. **Flag** (``pmem.flag.set``): set the thread's logFlag; ``clwb`` (``pmem.flag.flush``);
   ``sfence`` (``pmem.flag.fence``).
3. **Data** (``pmem.data.store``): the body's stores in place; at commit ``clwb`` each modified
   line (``pmem.data.flush``) and flip the allocation bits (``alloc.apply``); ``sfence``
   (``pmem.data.fence``).
4. **Clear** (``pmem.flag.clear``, the commit point, TX_COMMIT): clear the flag; ``clwb``
   (``pmem.flag.clear-flush``); ``sfence`` (``pmem.flag.clear-fence``). TX_DURABLE follows, then
   the locks are released.

**Conservative logging through a discovery pass.** The card's programs log every node they may
modify before modifying any. pmsim's bodies are re-executable (:data:`~pmsim.runtimes.base.Body`), so
:meth:`PmemRuntime.run` runs the body twice under the transaction's locks (taken at begin and
held to the end, so both passes see the same data). The *discovery pass* buffers writes
privately (reads see them; nothing reaches PM; no flush or fence) and learns the set of lines
the transaction writes, in first-write order. Its loads are real, timed loads: they are the
traversal the hand-written program does to find the nodes it logs, and they warm the caches
for the log copy and the real pass. The *real pass* then logs that whole set up front
(steps 1-2) and runs the body again with in-place stores (step 3). A body that aborts (returns
False) or writes nothing in discovery ends there: nothing was logged, and it does not run again.
Allocations made in discovery are handed to the real pass in order, so both see the same
blocks. The logged set is the exact write set, the lower bound of the programmer's
"might be modified" set, unless the workload's layout asks for a **conservative log**
(``PMSpec.conservative_log``, set by the trees AT/BT/RT: the card's tree programs log every node
that rebalancing might modify, papers/proteus.md §8 and P3): then every line the discovery pass
reads is logged too (the search path and the nodes rebalancing looks at), the read-only ones
first.

**Lines outside the discovered set** (a body that does not repeat itself, or a transaction
driven directly with ``begin``/``commit``, where there is no discovery pass) are logged at their
first write: entry and home address, ``clwb``, ``sfence`` (``pmem.fallback.*``), then the count
(and on the first, the flag), ``clwb``, ``sfence``, then the data store. Two fences per line,
where the up-front log pays two per transaction; ``counters()["fallback_lines"]`` counts them.

**Log format** (per thread, :meth:`PmemRuntime.log_bytes`): header lines, then 64-byte entries.
Header word 0 is ``version << 20 | count``; word ``1 + i`` the home line of entry ``i``. The flag
is the descriptor's state word, ``version << 8 | RUNNING`` (set) or ``| IDLE`` (clear). The
version tags the count and the allocation-log count too, so recovery never reads another
transaction's count (:data:`COUNT_TAG`).

**Recovery**: for each thread whose flag is set (``pmem.recover.flag``), restore the logged lines
its count names (``pmem.recover.restore``) and revert the bit flips of its allocation log
(``pmem.recover.revert-alloc``), ``clwb``, ``sfence`` (``pmem.recover.fence``); then clear every
flag and reset the counts (``pmem.recover.clear``), ``clwb``, ``sfence``. A flag that is clear
means the log is ignored. Restoring stores values, so a crash during recovery only repeats it.

**Allocation** uses the base allocator and allocation log of the other lock-based software
runtimes (:mod:`pmsim.runtimes.alloclog`): entries persisted with the log in step 1 (before the flag), bits
flipped in step 3 (before the flag is cleared), reverted by recovery when the flag is set. An
allocation log written only in the body (no discovery pass) is persisted at commit, entries
fenced before their count (``pmem.alloc.*``), since recovery acts on a count while the flag is
set. Freed blocks return to the volatile lists after step 4.

**Alignment.** Objects and static array elements are 64-byte aligned and padded to whole lines
(the card's 64 B cache-aligned nodes), so an undo entry (a whole line) never holds another
lock's data.

``pmem-pcommit`` (the card's PMEM+pcommit, a volatile WPQ): every ``sfence`` of the protocol and
of recovery becomes a persist barrier (:meth:`~pmsim.runtimes.steps.PersistSteps.pb`), which is exactly
``sfence; pcommit; sfence`` in PDOM-0, the configuration the card names, and waits for the WPQ
to drain to the media. It is failure-safe in every domain; ``pmem`` (plain ``sfence``) needs the
WPQ in the persistence domain (``supported_domains``: PDOM-1/2) and refuses PDOM-0, where it is
not failure-safe, suggesting ``pmem-pcommit``; so does ``pmem-nolog``.

``pmem-nolog`` (PMEM+nolog, the card's "ideal"): step 3 only, the body once with in-place
stores, ``clwb`` each modified line and bitmap line, one ``sfence``. No log, no flag, no
recovery: it is not failure-safe, so it is declared ``durable = False`` and the crash fuzzer
refuses it. A user abort restores the words from a volatile copy.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any, ClassVar

from ...config import LINE
from ...errors import ConfigError
from ...trace import Mark
from ..alloc import ALLOC, FREE
from ..alloclog import ALLOC_STEPS
from ..base import (
    COUNT_BITS,
    H_NALLOC,
    H_STATE,
    IDLE,
    RUNNING,
    Body,
    Runtime,
    Tx,
    count_of,
    lines_of,
    state_of,
)
from ..labels import Label, Labeller, register_labels
from ..layout import PMSpec, block_size
from ..mutation import Mutant, drop, patch
from ..registry import register_mutant, register_runtime, variant

WORDS = LINE // 8
COUNT_TAG = COUNT_BITS
"""The log header's count word is ``version << COUNT_TAG | count``."""


def _up(x: int, a: int) -> int:
    return -(-x // a) * a


def entry_cap(spec: PMSpec) -> int:
    """Log entries per thread: a transaction writes at most as many lines as words."""
    return max(1, spec.max_tx_words)


def header_lines(entries: int) -> int:
    """Header lines holding the count word and ``entries`` home addresses."""
    return -(-(1 + entries) // WORDS)


class PmemDiscoveryTx(Tx):
    """The discovery pass: reads see the pass's own buffered writes, then load (timed); writes
    are buffered and their lines collected; nothing reaches PM."""

    def __init__(self, rt: PmemRuntime, tx: Tx) -> None:
        super().__init__(rt, tx.cpu, tx.txid)
        self.locks = tx.locks  # locks taken in the body are the transaction's (held to its end)
        self.lock_table = tx.lock_table
        self.buf: dict[int, int] = {}
        self.lines: dict[int, None] = {}  # lines written outside fresh objects, first-write order
        self.read_lines: dict[int, None] = {}  # lines read outside them (for a conservative log)
        self._conservative = rt.layout.spec.conservative_log
        self.reserved: list[tuple[int, int]] = []  # (block size, block) allocated, in order
        self.plan: list[int] = []  # allocation-log entries, in order

    @property
    def touched(self) -> bool:
        return bool(self.writes or self.plan)

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        cpu = self.cpu
        cpu.work(self.rt.costs.call_ns)
        ld = cpu.load
        a = obj + 8 * field
        if self._conservative and obj not in self.fresh:
            self.read_lines.update(dict.fromkeys(lines_of(a, 8 * n)))
        buf = self.buf
        if not buf:
            return self.cpu.load_words(a, n)
        out = []
        for i in range(n):
            v = buf.get(a + 8 * i)
            out.append(ld(a + 8 * i) if v is None else v)
        return out

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        self.cpu.work(self.rt.costs.call_ns)
        a = obj + 8 * field
        buf = self.buf
        for i, v in enumerate(values):
            buf[a + 8 * i] = int(v)
        if obj not in self.fresh:
            self.lines.update(dict.fromkeys(lines_of(a, 8 * len(values))))
        self.writes += 1

    def alloc(self, words: int) -> int:
        rt = self.rt
        size = block_size(rt.obj_bytes(words))
        addr = rt.heap.pop(self.tid, size)
        self.cpu.work(rt.costs.alloc_ns)
        self.reserved.append((size, addr))
        self.plan.append(addr | ALLOC)
        self.fresh.add(addr)
        return addr

    def free(self, obj: int) -> None:
        rt = self.rt
        rt.heap.owner(obj)  # a clear error for a non-block, as in the real pass
        self.plan.extend(b | FREE for b in rt._blocks_to_free(self, obj))  # type: ignore[attr-defined]


class PmemTx(Tx):
    """The real pass: plain loads, in-place stores; what is logged and written."""

    def __init__(self, rt: Runtime, cpu: Any, txid: int) -> None:
        super().__init__(rt, cpu, txid)
        self.version = 0
        self.covered: set[int] = set()  # lines treated as logged (no log at their first write)
        self.old: dict[int, list[int]] = {}  # logged line -> its words before the transaction
        self.entries = 0  # log entries used
        self.flag = False  # the flag is set (persisted by a fence)
        self.written: dict[int, None] = {}  # modified lines outside fresh objects
        self.plan: list[int] = []  # allocation-log entries persisted in step 1
        self.reserved: list[tuple[int, int]] = []  # blocks the discovery pass allocated
        self.undo: list[tuple[int, int]] = []  # pmem-nolog: (address, old word) for an abort

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        """Plain loads: the paper's programs access nodes directly (no per-access call, as
        for Proteus and ATOM, whose logging the hardware does)."""
        a = obj + 8 * field
        return self.cpu.load_words(a, n)

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        self.rt._write(self, obj, obj + 8 * field, values)  # type: ignore[attr-defined]


@register_runtime
class PmemRuntime(Runtime):
    """Software undo logging with clwb/sfence (the card's PMEM, Fig. 2)."""

    name = "pmem"
    family = "pmem"
    _pcommit: ClassVar[bool] = False
    """Every protocol sfence is a persist barrier (PMEM+pcommit)."""
    _nolog: ClassVar[bool] = False
    """Step 3 only: no log, no flag (PMEM+nolog)."""
    supported_domains = ("pdom1", "pdom2")
    """Plain sfences need the WPQ in the persistence domain (ADR): PDOM-0 is refused, where it
    would not be failure-safe (use pmem-pcommit there)."""
    domain_reason = ("the memory controller's write pending queue (WPQ) in the persistence "
                     "domain (its sfence does not wait for the WPQ to drain, so with a volatile "
                     "WPQ a transaction is not durable when commit returns)")
    domain_alternatives = ("pmem-pcommit",)

    STEPS = {
        "pmem.log.copy": ("group", "step 1: copy each line to be modified (8 words) to a log "
                          "entry"),
        "pmem.log.header": ("group", "step 1: store the log header (version|count, home line "
                            "addresses)"),
        "pmem.log.alloc": ("group", "step 1: store the allocation-log entries and their count"),
        "pmem.log.flush": ("flush", "step 1: clwb each log entry, header and allocation-log line"),
        "pmem.log.fence": ("fence", "step 1: the log durable before the flag"),
        "pmem.flag.set": ("store", "step 2: set logFlag (version|RUNNING)"),
        "pmem.flag.flush": ("flush", "step 2: clwb the flag's line"),
        "pmem.flag.fence": ("fence", "step 2: the flag durable before any data store"),
        "pmem.fallback.copy": ("group", "a line outside the logged set: copy it to the next entry "
                               "and store its home address"),
        "pmem.fallback.flush": ("flush", "clwb the entry and its header line"),
        "pmem.fallback.fence": ("fence", "the entry durable before the count names it"),
        "pmem.fallback.count": ("group", "store the count (and the flag, the first time)"),
        "pmem.fallback.count-flush": ("flush", "clwb the count's (and the flag's) line"),
        "pmem.fallback.count-fence": ("fence", "the count durable before the data store"),
        "pmem.data.store": ("group", "step 3: the body's stores in place"),
        "pmem.alloc.flush-entries": ("flush", "an allocation log written in the body: clwb its "
                                     "entries"),
        "pmem.alloc.fence-entries": ("fence", "the entries durable before their count"),
        "pmem.alloc.count": ("group", "store the allocation-log count; clwb the descriptor"),
        "pmem.alloc.fence": ("fence", "the count durable before the bit flips"),
        "pmem.data.flush": ("flush", "step 3: clwb each modified line"),
        "pmem.data.fence": ("fence", "step 3: data and bit flips durable before the flag is "
                            "cleared"),
        "pmem.flag.clear": ("store", "step 4: clear logFlag (version|IDLE): the commit point"),
        "pmem.flag.clear-flush": ("flush", "step 4: clwb the flag's line"),
        "pmem.flag.clear-fence": ("fence", "step 4: the cleared flag durable before the locks "
                                  "are released"),
        "pmem.abort.restore": ("group", "user abort: restore the logged lines (pmem-nolog: the "
                               "written words)"),
        "pmem.abort.flush": ("flush", "user abort: clwb the restored lines"),
        "pmem.abort.fence": ("fence", "user abort: restored lines durable before the flag is "
                             "cleared"),
        "pmem.abort.clear": ("store", "user abort: clear logFlag"),
        "pmem.abort.clear-flush": ("flush", "user abort: clwb the flag's line"),
        "pmem.abort.clear-fence": ("fence", "user abort: the cleared flag durable"),
        "pmem.recover.restore": ("group", "recovery, flag set: restore the logged lines; clwb"),
        "pmem.recover.revert-alloc": ("group", "recovery, flag set: revert the logged bit flips; "
                                      "clwb"),
        "pmem.recover.fence": ("fence", "recovery: restored lines durable before the flags are "
                               "cleared"),
        "pmem.recover.clear": ("group", "recovery: clear every flag, reset the log and "
                               "allocation-log counts; clwb"),
        "pmem.recover.clear-fence": ("fence", "recovery: the cleared flags durable before "
                                     "recovery returns"),
    }
    OMIT_STEPS = frozenset({"alloc.flush-log", "alloc.recover-apply"})
    CHECKS = {
        "pmem.recover.flag": "a descriptor whose flag is clear is skipped (its log is ignored)",
        "pmem.recover.count-tag": "the log count is used only if it carries the flag's version",
        "pmem.recover.entry-bounds": "an entry is restored only to a line of application data",
    }

    def __init__(self, machine: Any, layout: Any, costs: Any = None) -> None:
        super().__init__(machine, layout, costs)
        self.cap = entry_cap(layout.spec)
        self.hdr_lines = header_lines(self.cap)
        t = layout.threads
        self.version = [0] * t
        self.log_lines = 0
        self.log_header_lines = 0
        self.flag_writes = 0
        self.data_lines = 0
        self.alloc_lines = 0
        self.fallback_lines = 0
        self.discovery_passes = 0

    # -- layout --------------------------------------------------------------------------------
    @classmethod
    def obj_bytes(cls, words: int) -> int:
        """Whole 64-byte lines (blocks are powers of two >= 64, so line-aligned)."""
        return _up(8 * words, LINE)

    @classmethod
    def static_stride(cls, words: int) -> int:
        return _up(8 * words, LINE)

    @classmethod
    def log_bytes(cls, spec: PMSpec) -> int:
        cap = entry_cap(spec)
        return LINE * (header_lines(cap) + cap)

    def entry_addr(self, tid: int, i: int) -> int:
        return self.layout.log[tid] + LINE * (self.hdr_lines + i)

    def counters(self) -> dict[str, float]:
        """PM line writes by kind (each a flushed line: log entries, log header lines, flag
        stores, modified data lines, allocation-log and bitmap lines), lines logged at their
        first write, discovery passes."""
        return {"log_lines": float(self.log_lines),
                "log_header_lines": float(self.log_header_lines),
                "flag_writes": float(self.flag_writes),
                "data_lines": float(self.data_lines),
                "alloc_lines": float(self.alloc_lines),
                "fallback_lines": float(self.fallback_lines),
                "discovery_passes": float(self.discovery_passes)}

    # -- fences --------------------------------------------------------------------------------
    def _fence(self, cpu: Any, name: str) -> None:
        """The protocol's sfence: a persist barrier in pmem-pcommit (sfence; pcommit; sfence)."""
        if self._pcommit:
            self.pb(cpu, name)
        else:
            self.fence(cpu, name)

    # -- format and versions -------------------------------------------------------------------
    def _load(self) -> None:
        super()._load()
        self.version = [self.m.peek(d + 8 * H_STATE) >> 8 for d in self.layout.desc]

    def _tag(self, tx: Tx) -> int:
        assert isinstance(tx, PmemTx)
        return tx.version

    def _new_tx(self, cpu: Any, txid: int) -> Tx:
        return PmemTx(self, cpu, txid)

    def _begin(self, tx: Tx) -> None:
        """Nothing persistent: the previous transaction left the flag clear."""
        assert isinstance(tx, PmemTx)
        self.version[tx.tid] += 1
        tx.version = self.version[tx.tid]

    # -- transactions --------------------------------------------------------------------------
    def run(self, cpu: Any, body: Body, locks: Iterable[Any] = (),
            on_begin: Callable[[Tx], None] | None = None) -> Generator[Any, Any, Tx]:
        """Begin (locks), a discovery pass, the up-front log and flag, the real pass, commit."""
        tx = yield from self.begin(cpu, locks)
        assert isinstance(tx, PmemTx)
        if on_begin is not None:
            on_begin(tx)
        if not self._nolog:
            d = PmemDiscoveryTx(self, tx)
            res = body(d)
            if isinstance(res, Generator):
                res = yield from res
            self.discovery_passes += 1
            if res is False or not d.touched:
                # a user abort or a read-only body: nothing to log, no second pass
                for _, b in d.reserved:
                    self.heap.push(b)
                if res is False:
                    yield from self.abort(tx)
                else:
                    yield from self.commit(tx)
                return tx
            self._log_up_front(tx, d)
        res = body(tx)
        if isinstance(res, Generator):
            res = yield from res
        if res is False:
            yield from self.abort(tx)
        else:
            yield from self.commit(tx)
        return tx

    def _log_set(self, tx: PmemTx, lines: list[int]) -> list[int]:
        """The discovered lines the log holds (all of them; mutant S3 forgets one)."""
        return lines

    def _log_up_front(self, tx: PmemTx, d: PmemDiscoveryTx) -> None:
        """Steps 1-2 for the discovered write set and allocation log."""
        cpu = tx.cpu
        # the lines only read first (a conservative log's), then the written ones
        lines = [x for x in d.read_lines if x not in d.lines] + list(d.lines)
        logged = self._log_set(tx, lines)
        n = len(logged)
        if n > self.cap:
            self._overflow(tx)
        tx.covered = set(lines)
        tx.reserved = d.reserved
        tx.plan = d.plan
        t = tx.tid
        log = self.layout.log[t]
        flushed: list[int] = []
        with self.step(cpu, "pmem.log.copy") as c:
            ld, st = c.load, c.store
            for i, line in enumerate(logged):
                old = [ld(line + 8 * k) for k in range(WORDS)]
                e = self.entry_addr(t, i)
                for k, v in enumerate(old):
                    st(e + 8 * k, v)
                tx.old[line] = old
                flushed.append(e)
        with self.step(cpu, "pmem.log.header") as c:
            c.store(log, tx.version << COUNT_TAG | n)
            for i, line in enumerate(logged):
                c.store(log + 8 * (1 + i), line)
        hdr_used = header_lines(n)
        flushed.extend(log + LINE * j for j in range(hdr_used))
        tx.entries = n
        self.log_lines += n
        self.log_header_lines += hdr_used
        if d.plan:
            lay = self.layout
            desc = lay.desc[t]
            base = lay.alloc_log[t]
            if len(d.plan) > lay.alloc_cap:
                raise ConfigError(f"transaction {tx.txid:#x} made more than {lay.alloc_cap} "
                                  "alloc/free calls: raise PMSpec.max_tx_allocs")
            with self.step(cpu, "pmem.log.alloc") as c:
                for i, e in enumerate(d.plan):
                    c.store(base + 8 * i, e)
                c.store(desc + 8 * H_NALLOC, tx.version << COUNT_BITS | len(d.plan))
            alines = list(lines_of(base, 8 * len(d.plan)))
            flushed.extend(alines)
            flushed.append(desc)
            self.alloc_lines += len(alines) + 1
        self.flush(cpu, "pmem.log.flush", flushed)
        self._fence(cpu, "pmem.log.fence")
        self._set_flag(tx)

    def _set_flag(self, tx: PmemTx) -> None:
        """Step 2: set the flag, clwb, sfence."""
        cpu = tx.cpu
        desc = self.layout.desc[tx.tid]
        self.st(cpu, "pmem.flag.set", desc + 8 * H_STATE, tx.version << 8 | RUNNING)
        self.flush(cpu, "pmem.flag.flush", (desc,))
        self._fence(cpu, "pmem.flag.fence")
        tx.flag = True
        self.flag_writes += 1

    def _overflow(self, tx: Tx) -> None:
        raise ConfigError(f"transaction {tx.txid:#x} writes more than {self.cap} lines, the "
                          "PMEM log's size: raise PMSpec.max_tx_words")

    def _log_line(self, tx: PmemTx, line: int) -> None:
        """Log one line at its first write: entry and address, fence, count (flag), fence."""
        i = tx.entries
        if i >= self.cap:
            self._overflow(tx)
        cpu = tx.cpu
        t = tx.tid
        log = self.layout.log[t]
        e = self.entry_addr(t, i)
        slot = log + 8 * (1 + i)
        with self.step(cpu, "pmem.fallback.copy") as c:
            ld, st = c.load, c.store
            old = [ld(line + 8 * k) for k in range(WORDS)]
            for k, v in enumerate(old):
                st(e + 8 * k, v)
            st(slot, line)
        self.flush(cpu, "pmem.fallback.flush", (e, slot & ~(LINE - 1)))
        self._fence(cpu, "pmem.fallback.fence")
        desc = self.layout.desc[t]
        first = not tx.flag
        with self.step(cpu, "pmem.fallback.count") as c:
            c.store(log, tx.version << COUNT_TAG | (i + 1))
            if first:
                c.store(desc + 8 * H_STATE, tx.version << 8 | RUNNING)
        self.flush(cpu, "pmem.fallback.count-flush", (log, desc) if first else (log,))
        self._fence(cpu, "pmem.fallback.count-fence")
        tx.flag = True
        tx.entries = i + 1
        tx.covered.add(line)
        tx.old[line] = old
        self.log_lines += 1
        self.log_header_lines += 2 if slot >= log + LINE else 1
        self.flag_writes += first
        self.fallback_lines += 1

    def _write(self, tx: PmemTx, obj: int, addr: int, values: Sequence[int]) -> None:
        cpu = tx.cpu
        n = len(values)
        lines = lines_of(addr, 8 * n)
        if obj in tx.fresh:
            cpu.store_words(addr, values)
            tx.dirty.update(lines)
            return
        if self._nolog:
            peek = self.m.peek
            tx.undo.extend((addr + 8 * i, peek(addr + 8 * i)) for i in range(n))
        else:
            covered = tx.covered
            for line in lines:
                if line not in covered:
                    self._log_line(tx, line)
        with self.step(cpu, "pmem.data.store") as c:
            c.store_words(addr, values)
        tx.written.update(dict.fromkeys(lines))
        tx.writes += 1

    def _alloc(self, tx: Tx, words: int) -> int:
        """A block the discovery pass took for the same allocation, else a new one."""
        size = block_size(self.obj_bytes(words))
        res = getattr(tx, "reserved", None)
        addr = None
        if res:
            for k, (s, b) in enumerate(res):
                if s == size:
                    addr = b
                    del res[k]
                    break
        if addr is None:
            addr = self.heap.pop(tx.tid, size)
            tx.cpu.work(self.costs.alloc_ns)
        self._log_alloc(tx, addr, ALLOC)
        tx.allocs.append(addr)
        tx.fresh.add(addr)
        self._init_object(tx, addr, words)
        return addr

    def _log_alloc(self, tx: Tx, addr: int, kind: int) -> None:
        """An entry step 1 persisted already (or pmem-nolog, which keeps no log) is only
        recorded; any other is stored (``alloc.log-entry``) and persisted at commit."""
        entry = addr | kind
        i = len(tx.alog)
        plan = getattr(tx, "plan", ())
        if self._nolog or (i < len(plan) and plan[i] == entry):
            if i >= self.layout.alloc_cap:
                raise ConfigError(f"transaction {tx.txid:#x} made more than "
                                  f"{self.layout.alloc_cap} alloc/free calls: raise "
                                  "PMSpec.max_tx_allocs")
            tx.alog.append(entry)
            return
        super()._log_alloc(tx, addr, kind)

    def _commit(self, tx: Tx) -> None:
        """Steps 3 and 4 (the flag, and the allocation log, if not persisted yet)."""
        assert isinstance(tx, PmemTx)
        cpu = tx.cpu
        if not tx.modified:
            cpu.mark(Mark.TX_COMMIT, tx.txid)
            self._unreserve(tx)
            return
        if not self._nolog:
            pending = bool(tx.alog) and tx.alog != tx.plan
            if pending:
                self._persist_alog(tx)
            if not tx.flag:
                self._set_flag(tx)  # its fence also orders the allocation log
            elif pending:
                self._fence(cpu, "pmem.alloc.fence")
        else:
            cpu.mark(Mark.TX_COMMIT, tx.txid)
        data = list(tx.written)
        data.extend(tx.dirty)
        self.flush(cpu, "pmem.data.flush", data)
        self.data_lines += len(data)
        if tx.alog:
            self._apply_alog(cpu, tx.alog)
            self.alloc_lines += len({self.heap.bit_of(e & ~1)[0] & ~(LINE - 1)
                                     for e in tx.alog})
        self._fence(cpu, "pmem.data.fence")
        if not self._nolog:
            cpu.mark(Mark.TX_COMMIT, tx.txid)
            desc = self.layout.desc[tx.tid]
            self.st(cpu, "pmem.flag.clear", desc + 8 * H_STATE, tx.version << 8 | IDLE)
            self.flush(cpu, "pmem.flag.clear-flush", (desc,))
            self._fence(cpu, "pmem.flag.clear-fence")
            self.flag_writes += 1
        self._release_frees(tx)
        self._unreserve(tx)

    def _persist_alog(self, tx: PmemTx) -> None:
        """An allocation log written in the body: its entries durable before its count, which
        recovery acts on while the flag is set (a count over stale entries of an earlier
        transaction would revert that transaction's committed bits)."""
        cpu = tx.cpu
        t = tx.tid
        desc = self.layout.desc[t]
        alines = list(lines_of(self.layout.alloc_log[t], 8 * len(tx.alog)))
        self.flush(cpu, "pmem.alloc.flush-entries", alines)
        self._fence(cpu, "pmem.alloc.fence-entries")
        with self.step(cpu, "pmem.alloc.count") as c:
            c.store(desc + 8 * H_NALLOC, tx.version << COUNT_BITS | len(tx.alog))
            c.clwb(desc)
        self.alloc_lines += len(alines) + 1

    def _unreserve(self, tx: PmemTx) -> None:
        """Blocks the discovery pass took that the real pass did not use go back."""
        for _, b in tx.reserved:
            self.heap.push(b)
        tx.reserved = []

    def _abort(self, tx: Tx) -> None:
        """A user abort in the real pass: restore what was written, then clear the flag."""
        assert isinstance(tx, PmemTx)
        cpu = tx.cpu
        if self._nolog and tx.undo:
            lines: dict[int, None] = {}
            with self.step(cpu, "pmem.abort.restore") as c:
                for a, v in reversed(tx.undo):
                    c.store(a, v)
                    lines[a & ~(LINE - 1)] = None
            self.flush(cpu, "pmem.abort.flush", lines)
            self._fence(cpu, "pmem.abort.fence")
        elif tx.flag:
            restored = [line for line in tx.old if line in tx.written]
            if restored:
                with self.step(cpu, "pmem.abort.restore") as c:
                    for line in restored:
                        for k, v in enumerate(tx.old[line]):
                            c.store(line + 8 * k, v)
                    c.work(self.costs.copy_ns_per_byte * LINE * len(restored))
                self.flush(cpu, "pmem.abort.flush", restored)
                self._fence(cpu, "pmem.abort.fence")
            desc = self.layout.desc[tx.tid]
            self.st(cpu, "pmem.abort.clear", desc + 8 * H_STATE, tx.version << 8 | IDLE)
            self.flush(cpu, "pmem.abort.clear-flush", (desc,))
            self._fence(cpu, "pmem.abort.clear-fence")
            self.flag_writes += 1
        self._return_allocs(tx)
        self._unreserve(tx)

    # -- recovery ------------------------------------------------------------------------------
    def read_log(self, tid: int, version: int) -> list[tuple[int, list[int]]]:
        """The entries of thread ``tid``'s log recovery restores for a flag of ``version``
        (untimed): ``(home line, its 8 old words)``."""
        m, lay = self.m, self.layout
        log = lay.log[tid]
        w0 = m.peek(log)
        if self.check("pmem.recover.count-tag") and w0 >> COUNT_TAG != version:
            return []
        n = min(count_of(w0), self.cap)
        bounds = self.check("pmem.recover.entry-bounds")
        out = []
        for i in range(n):
            line = m.peek(log + 8 * (1 + i))
            if bounds and (line % LINE or not lay.is_data(line, LINE)):
                continue
            e = self.entry_addr(tid, i)
            out.append((line, [m.peek(e + 8 * k) for k in range(WORDS)]))
        return out

    def _recover(self, cpu: Any) -> None:
        """Flag set: restore the log and revert the bit flips; fence; clear every flag; fence."""
        if self._nolog:
            return
        m, lay = self.m, self.layout
        skip_clear = self.check("pmem.recover.flag")
        acted = False
        for t, desc in enumerate(lay.desc):
            w = m.peek(desc + 8 * H_STATE)
            if skip_clear and state_of(w) != RUNNING:
                continue
            version = w >> 8
            entries = self.read_log(t, version)
            if entries:
                with self.step(cpu, "pmem.recover.restore") as c:
                    st = c.store
                    for line, old in entries:
                        for k, v in enumerate(old):
                            st(line + 8 * k, v)
                    for line, _ in entries:
                        c.clwb(line)
                acted = True
            alog = self._read_alog(t, version)
            if alog:
                heap = self.heap
                with self.step(cpu, "pmem.recover.revert-alloc") as c:
                    for e in reversed(alog):
                        c.clwb(heap.flip(c, e & ~1, (e & 1) != ALLOC))
                acted = True
        if acted:
            self._fence(cpu, "pmem.recover.fence")
        with self.step(cpu, "pmem.recover.clear") as c:
            for t, desc in enumerate(lay.desc):
                v = (m.peek(desc + 8 * H_STATE) >> 8) + 1
                c.store(lay.log[t], v << COUNT_TAG)
                c.store(desc + 8 * H_NALLOC, v << COUNT_BITS)
                c.store(desc + 8 * H_STATE, v << 8 | IDLE)
                c.clwb(lay.log[t])
                c.clwb(desc)
        self._fence(cpu, "pmem.recover.clear-fence")

    def crash_irrelevant(self) -> list[int]:
        """None: recovery reads every word it or the protocol writes."""
        return []

    def _check_logs(self) -> list[str]:
        if self._nolog:
            return []
        return [f"descriptor {t}: PMEM log count not reset" for t, log in enumerate(self.layout.log)
                if count_of(self.m.peek(log))]


_FENCES = [k for k, (kind, _) in PmemRuntime.STEPS.items() if kind == "fence"]

PMEM_PCOMMIT = variant(PmemRuntime, "pmem-pcommit", _pcommit=True,
                       supported_domains=("pdom0", "pdom1", "pdom2"), STEPS={
    k: ("pb", PmemRuntime.STEPS[k][1] + " (sfence; pcommit; sfence in PDOM-0)") for k in _FENCES})
"""PMEM+pcommit: a volatile WPQ; every sfence of the protocol is a persist barrier."""

PMEM_NOLOG = variant(PmemRuntime, "pmem-nolog", _nolog=True, durable=False, OMIT_STEPS=frozenset(
    {k for k in PmemRuntime.STEPS if k.startswith(("pmem.log.", "pmem.flag.", "pmem.fallback.",
                                                   "pmem.recover.", "pmem.abort.clear"))}
    | {k for k in PmemRuntime.STEPS if k.startswith("pmem.alloc.")}
    | set(ALLOC_STEPS) - {"alloc.apply"}))
"""PMEM+nolog: step 3 only (the card's "ideal"); not failure-safe (``durable = False``)."""


def _pmem_log(lab: Labeller, tid: int, word: int) -> Label:
    """Header (count, home addresses), then 8-word entries."""
    hdr = header_lines(entry_cap(lab.layout.spec))
    owner = f"PMEM log T{tid}"
    if word < WORDS * hdr:
        if word == 0:
            return Label(f"{owner} header", "word", 0, "version|count")
        return Label(f"{owner} header", "slot", word - 1, "home line")
    i, k = divmod(word - WORDS * hdr, WORDS)
    return Label(f"{owner} entry {i}", "word", k)


register_labels("pmem", log=_pmem_log)


def _forget_last(orig: Any) -> Any:
    """S3: the last line the transaction writes (in discovery order) is not logged."""
    def _log_set(self: PmemRuntime, tx: PmemTx, lines: list[int]) -> list[int]:
        out = orig(self, tx, lines)
        return out[:-1] if len(out) > 1 else out
    return _log_set


for _m in (
    Mutant("pmem:S1", PmemRuntime, (drop("pmem.log.fence"),), ("pdom1",),
           "no sfence after step 1: the flag may persist before the log lines, and recovery "
           "restores stale entries over the data"),
    Mutant("pmem:S2", PmemRuntime, (drop("pmem.data.fence"),), ("pdom1",),
           "no sfence after step 3: the cleared flag may persist before the data (a committed "
           "transaction torn)"),
    Mutant("pmem:S3", PmemRuntime, (patch("_log_set", _forget_last, "last line unlogged"),),
           ("pdom1", "pdom2"),
           "one node the transaction modifies (the last one found, e.g. by a rotation) is not "
           "logged: a crash after its store persists leaves it new while the rest is rolled "
           "back",
           needs="a transaction writing two or more lines", workload="rbtree", txs=4),
):
    register_mutant(_m)
