"""Lock-based DUDETx (papers/dudetx-decoupled.md §5 "Locks", paper §5 and §6.8): Perform runs
the body under real locks on the DRAM shadow, and a durability dependency graph decides what
Reproduce may replay.

**Perform.** A transaction (a FASE: ``txBegin`` .. ``txEnd``, independent of lock operations) is
a node of the graph. ``txBegin`` adds the node with an edge from the thread's previous node
(program order). Locks come up front (the workload's ``locks_of``: 2PL) or from the body
(``tx.lock``/``tx.unlock``, lock coupling). ``txLock`` adds an edge from the node that last
released the lock, and ``txUnlock`` stamps the lock with ``{thread, seq}`` if the transaction
wrote while it held the lock ([F]: otherwise nothing the lock guards changed and the old stamp
stays, so a failed validation or a hand-over-hand step adds no edge). pm_alloc/pm_free flip
their bitmap bits at ``txEnd``; a bitmap word is a lock of its own there (threads that hold
different locks share bitmap words), so a user abort has no bit to undo. The body reads and
writes the shadow with plain loads and stores; every store first appends ``(home | gseq << 40,
value)`` to the thread's vlog, where ``gseq`` is a global store sequence number (the order in
which stores became visible).
``txEnd`` appends the predecessor list and ``END = 1 | n << 1 | k << 17 | seq << 24`` (n
entries, k predecessor slots, each holding two ids ``(thread << 40 | seq) << 1``) and
emits TX_COMMIT. Under 2PL that is the commit point (every lock is still held), and
``commit_order`` follows it. Perform issues no PM store, flush or fence. A worker blocks at
``txBegin`` while the graph buffer holds ``graph_nodes`` nodes; ``graph_stalls`` counts these
stalls.

**Persist** (DUDETx's thread) copies records to the thread's plog, then clwb and one ordering
point per batch. The node is then *persistent*.

**Detect** (a background thread) removes *reproducible* nodes: persistent, with every
predecessor reproducible. They go to Reproduce in topological order, and their transactions
are acknowledged (TX_DURABLE). An SCC is reproducible as one unit, and its members are
acknowledged together.

* ``dudetx-locks-1r``, one-round: walk each thread's queue from its head and accept a node
  whose predecessors were all removed. Each ``txLock`` edge that closes a cycle raises
  :class:`~pmsim.errors.PmsimError` (the check ``dudetx-locks.detect.acyclic``): one-round
  detection needs an acyclic graph (2PL).
* ``dudetx-locks-2r``, two-round (Atlas): every persistent node is a candidate. A DFS from
  each volatile node unmarks its descendants. Tarjan's algorithm groups what remains into SCCs
  in topological order. Each round visits the whole graph. ``cycles`` and ``scc_merged``
  count what it tolerated.

**Reproduce** stores a batch of units at their homes. Within a unit, entries go in global
store-sequence order, so an SCC's writes replay as they happened. Then clwb and an ordering
point. Then the per-thread watermark ``R[t]`` (the last seq of thread t reproduced, descriptor
word 0) is stored, followed by clwb and an ordering point. Only then is the plog space recycled.

**Recovery** scans every plog slot for records whose checksum verifies with the epoch. A node
is processed if its seq is <= R[t] or it is an ancestor of a processed node. The per-thread R
stores of one batch need not persist together, and this closure keeps an older batch member
from being replayed over a newer one. Recovery rebuilds the graph from the remaining logs and
their predecessor lists. A missing log (a gap in a thread's seqs, or a predecessor without a
log) is a volatile node. Recovery then reruns the runtime's own detection and replays the
reproducible units in topological order, in store-sequence order inside an SCC. Then clwb, an
ordering point, the new R[t], an ordering point, and an epoch bump that truncates the plogs.

The oracle needs nothing new. A recovered set is downward-closed under <_d, which contains
program order, so it is a per-thread prefix. It holds every acknowledged transaction.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...config import LINE
from ...errors import ConfigError, PmsimError, StallError
from ...trace import Mark
from ..alloclog import ALLOC_STEPS
from ..base import Body, Tx
from ..descriptor import G_EPOCH
from ..layout import PMSpec
from ..mutation import Mutant, patch, skip_check
from ..registry import register_mutant, register_runtime, variant
from ..volatile.locks import CouplingLocks
from .dudetx import SLOT, DudeTxRuntime, record_checksum

GSHIFT = 40
"""An entry's first word is ``home | gseq << GSHIFT`` (homes are below 2**40)."""
HOME_MASK = (1 << GSHIFT) - 1
GSEQ_MAX = (1 << (64 - GSHIFT)) - 1
W_R = 0
"""Word of a thread's descriptor header line holding its reproduce watermark R[t]."""
N_BITS, K_BITS = 16, 7
SEQ_SHIFT = 1 + N_BITS + K_BITS
MAX_THREADS = 8
"""Threads a plog record has room for: a predecessor list holds one id per other thread."""
PRED_SLOTS = MAX_THREADS // 2
NodeId = tuple[int, int]
"""(thread, seq): a node's name; seqs are dense per thread."""


def end_word(seq: int, n: int, k: int) -> int:
    """The first word of the END of a record with ``n`` entries and ``k`` predecessor slots."""
    return 1 | n << 1 | k << (1 + N_BITS) | seq << SEQ_SHIFT


def pred_word(u: int, s: int) -> int:
    return (u << 40 | s) << 1


@dataclass(eq=False, slots=True)
class Node:
    """One transaction in the dependency graph."""

    thread: int
    seq: int
    txid: int
    start: float
    preds: dict[int, int] = field(default_factory=dict)
    """Other thread -> the largest seq of it this node depends on (older ones are implied by
    program order)."""
    succs: set[Node] = field(default_factory=set)
    po_next: Node | None = None
    persistent: bool = False
    stamped: bool = False
    """The node released a lock after writing: others may depend on it."""
    record: LockRecord | None = None

    @property
    def id(self) -> NodeId:
        return (self.thread, self.seq)

    def successors(self) -> Iterable[Node]:
        yield from self.succs
        if self.po_next is not None:
            yield self.po_next


@dataclass(eq=False, slots=True)
class LockRecord:
    """A node's redo record: entries, predecessor ids, END."""

    node: Node
    thread: int
    seq: int
    entries: list[tuple[int, int]]
    preds: list[int]
    vslot: int
    pos: int = -1

    @property
    def kslots(self) -> int:
        return (len(self.preds) + 1) // 2

    @property
    def nslots(self) -> int:
        return len(self.entries) + self.kslots + 1

    def words(self) -> list[tuple[int, int]]:
        """The record's slots after the entries: predecessor pairs, then nothing (END apart)."""
        p = [*self.preds, 0] if len(self.preds) % 2 else list(self.preds)
        return [(p[i], p[i + 1]) for i in range(0, len(p), 2)]


class DudeTxLocksTx(Tx):
    """Plain loads and stores on the shadow; every store logged with its gseq."""

    def __init__(self, rt: DudeTxLocksRuntime, cpu: Any, txid: int, node: Node) -> None:
        super().__init__(rt, cpu, txid)
        self.drt = rt
        self.node = node
        self.undo: list[tuple[int, int]] = []
        self.stores = 0  # logged stores so far
        self.held_since: dict[int, int] = {}  # id(lock) -> ``stores`` when it was taken

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        rt = self.drt
        self.cpu.work(rt.costs.call_ns)
        return self.cpu.load_words(rt._shadow(obj + 8 * field, n), n)

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        rt = self.drt
        self.cpu.work(rt.costs.call_ns)
        a = rt._shadow(obj + 8 * field, len(values))
        for i, v in enumerate(values):
            rt._logged_store(self, a + 8 * i, v)
        self.writes += 1


@register_runtime
class DudeTxLocksRuntime(CouplingLocks, DudeTxRuntime):
    """Lock-based DUDETx with one-round detection (``detection`` selects the algorithm)."""

    name = "dudetx-locks-1r"
    family = "dudetx"
    optimistic = False
    detection: ClassVar[str] = "one-round"
    """``one-round`` (needs an acyclic graph) or ``two-round`` (Atlas: tolerates cycles)."""
    graph_nodes: ClassVar[int] = 1024
    """Nodes the graph buffer holds; a worker blocks at txBegin while it is full ([F]: the
    paper gives no size)."""
    graph_op_ns: ClassVar[float] = 5.0
    """Work of the txBegin/txLock/txUnlock wrappers on the graph and the lock's stamp ([F])."""
    detect_visit_ns: ClassVar[float] = 20.0
    """Detector work per node or edge it visits (a pointer chase in the graph, [F])."""
    detect_idle_ns: ClassVar[float] = 200.0
    graph_wait_ns: ClassVar[float] = 200.0

    STEPS = {
        "dudetx-locks.persist.append": ("group", "copy finished vlog records (entries, "
                                        "predecessor ids, END with its checksum) to the plogs"),
        "dudetx-locks.persist.flush": ("flush", "clwb every plog line the batch wrote"),
        "dudetx-locks.persist.fence": ("order", "the batch is persistent before its nodes count "
                                       "as persistent"),
        "dudetx-locks.detect.ack": ("group", "acknowledge (TX_DURABLE) the transactions of the "
                                    "reproducible units"),
        "dudetx-locks.reproduce.apply": ("group", "store the units' entries at their homes "
                                         "(topological order; store-sequence order inside a "
                                         "unit); clwb"),
        "dudetx-locks.reproduce.fence": ("order", "the replayed data is persistent before R"),
        "dudetx-locks.reproduce.watermark": ("group", "store R[t] for every thread of the "
                                             "batch; clwb"),
        "dudetx-locks.reproduce.fence-r": ("order", "R is persistent before the plog space is "
                                           "recycled"),
        "dudetx-locks.recover.replay": ("group", "store the reproducible units' entries at their "
                                        "homes; clwb"),
        "dudetx-locks.recover.fence": ("order", "the replayed data is persistent before R"),
        "dudetx-locks.recover.watermark": ("group", "store every changed R[t]; clwb"),
        "dudetx-locks.recover.fence-r": ("order", "R is persistent before the truncation"),
        "dudetx-locks.recover.truncate": ("group", "bump the plog epoch; clwb"),
        "dudetx-locks.recover.fence-t": ("order", "the truncation is persistent before new "
                                         "transactions"),
    }
    OMIT_STEPS = frozenset(DudeTxRuntime.STEPS) | frozenset(ALLOC_STEPS)
    CHECKS = {
        "dudetx-locks.recover.checksum": "a record counts only if its END's checksum verifies",
        "dudetx-locks.recover.bounds": "every entry of a record names a word of application data",
        "dudetx-locks.recover.edges": "recovery rebuilds the graph from the persisted "
                                      "predecessor lists (a missing log is volatile)",
        "dudetx-locks.detect.acyclic": "one-round detection refuses a lock hand-off that closes "
                                       "a cycle",
        "dudetx-locks.detect.ancestors": "one-round detection accepts a node only once every "
                                         "predecessor was removed (reproducible), not merely "
                                         "persistent",
        "dudetx-locks.detect.propagate": "two-round detection unmarks every descendant of a "
                                         "volatile node (DFS), not only its successors",
    }

    # -- layout ------------------------------------------------------------------------------------
    @classmethod
    def extra_cores(cls, threads: int) -> int:
        """Persist, Reproduce and the detector each have a core."""
        return 3

    @classmethod
    def record_slots(cls, spec: PMSpec) -> int:
        """Entries (words written, bitmap words), predecessor slots, END."""
        return spec.max_tx_words + spec.max_tx_allocs + PRED_SLOTS + 1

    def __init__(self, machine: Any, layout: Any, costs: Any = None) -> None:
        if layout.threads > MAX_THREADS:
            raise ConfigError(f"{self.name}: a record has room for the predecessors of "
                              f"{MAX_THREADS} threads; run at most {MAX_THREADS} threads")
        super().__init__(machine, layout, costs)
        if self.detection not in ("one-round", "two-round"):
            raise ConfigError(f"{self.name}: detection must be 'one-round' or 'two-round', not "
                              f"{self.detection!r}")
        if self._data_hi > HOME_MASK:
            raise ConfigError(f"{self.name}: application data above 2**{GSHIFT} cannot be logged "
                              "with a store sequence number; use a smaller PM")
        self.graph_stalls = 0
        self.graph_stall_ns = 0.0
        self._persist_first = 0  # the thread whose vlog the next Persist batch drains first
        self.cycles = 0
        self.scc_merged = 0
        self.detect_rounds = 0
        self.detect_visits = 0
        self._detect_done = True

    def counters(self) -> dict[str, float]:
        """vlog and graph-buffer stalls, cycles, merged SCCs, detector rounds and visits,
        Persist and Reproduce batches."""
        return {"vlog_stalls": float(self.vlog_stalls), "vlog_stall_ns": self.vlog_stall_ns,
                "graph_stalls": float(self.graph_stalls), "graph_stall_ns": self.graph_stall_ns,
                "cycles": float(self.cycles), "scc_merged": float(self.scc_merged),
                "detect_rounds": float(self.detect_rounds),
                "detect_visits": float(self.detect_visits),
                "logged_entries": float(self.logged_entries),
                "persist_batches": float(self.persist_batches),
                "reproduce_batches": float(self.reproduce_batches)}

    def _watermarks(self) -> list[int]:
        """The persisted R[t] of every thread."""
        return [int(self.m.peek(d + 8 * W_R)) for d in self.layout.desc]

    def _reset_volatile(self) -> None:
        super()._reset_volatile()
        t = self.layout.threads
        self.Rt = self._watermarks()
        self._removed = list(self.Rt)
        self._nseq = list(self.Rt)
        self._graph: dict[NodeId, Node] = {}
        self._tq: list[deque[Node]] = [deque() for _ in range(t)]
        self._stamp: dict[int, NodeId] = {}
        self._wstamp: dict[int, NodeId] = {}
        self._units: deque[list[Node]] = deque()
        self._gseq = 0

    # -- Perform -----------------------------------------------------------------------------------
    def begin(self, cpu: Any, locks: Iterable[Any] = ()) -> Generator[Any, Any, Tx]:
        """Refused: transactions run through :meth:`run` (a workload's ``body``)."""
        raise ConfigError(f"runtime {self.name!r} runs a transaction only through Runtime.run: "
                          "define body(tx, op) (and locks_of(op)) instead of transaction()")

    def run(self, cpu: Any, body: Body, locks: Iterable[Any] = (),
            on_begin: Callable[[Tx], None] | None = None) -> Generator[Any, Any, Tx]:
        """txBegin, the up-front locks, the body under real locks on the shadow, txEnd."""
        start = cpu.clock
        txid = self._next_txid(cpu)
        tid = cpu.tid
        cpu.mark(Mark.TX_BEGIN, txid)
        yield from self._wait_vlog(cpu, tid)
        yield from self._wait_graph(cpu, tid)
        node = self._add_node(cpu, tid, txid, start)
        tx = DudeTxLocksTx(self, cpu, txid, node)
        tx.start = start
        self.active[tid] = tx
        try:
            for lock in locks:
                req = yield from cpu.acquire(lock)
                tx.locks.append((lock, req))
                self._acquired(tx, lock)
            if on_begin is not None:
                on_begin(tx)
            res = body(tx)
            if isinstance(res, Generator):
                res = yield from res
        except BaseException:
            self.active[tid] = None
            raise
        if res is False:
            self._user_abort(tx)
            self.aborts += 1
            cpu.mark(Mark.TX_ABORT, txid)
        else:
            self._end(tx)
            self._release_frees(tx)
            self.commits += 1
        yield from self._close(tx, res is not False)
        return tx

    def _close(self, tx: Tx, stamp: bool) -> Generator[Any, Any, None]:
        """The end of a transaction: release the locks still held (txUnlock, which stamps them
        unless the transaction aborted)."""
        tx.done = True
        self.active[tx.tid] = None
        self.latencies.append(tx.cpu.clock - tx.start)
        for lock, req in reversed(tx.locks):
            if stamp:
                self._releasing(tx, lock)
            yield from tx.cpu.release(lock, req)
        tx.locks = []

    def _wait_graph(self, cpu: Any, tid: int) -> Generator[Any, Any, None]:
        """Block while the graph buffer is full (paper §6.8: workers stop)."""
        if len(self._graph) < self.graph_nodes:
            return
        if not self.background:
            raise PmsimError(f"{self.name}: the dependency graph is full and no detector thread "
                             "runs; run workers with the runtime's background threads")
        self.graph_stalls += 1
        t0 = cpu.clock
        while len(self._graph) >= self.graph_nodes:
            seen, since = self._progress, cpu.clock
            yield from self.idle(cpu, self.graph_wait_ns)
            if self._progress == seen and cpu.clock - since > self.stall_ns:
                raise StallError(f"{self.name}: thread {tid} waited {self.stall_ns:,.0f} ns for room "
                                 "in the dependency graph with no background progress")
        self.graph_stall_ns += cpu.clock - t0

    def _add_node(self, cpu: Any, t: int, txid: int, start: float) -> Node:
        """txBegin: a new node, after the thread's previous one (program order)."""
        cpu.work(self.graph_op_ns)
        self._nseq[t] += 1
        node = Node(t, self._nseq[t], txid, start)
        q = self._tq[t]
        if q:
            q[-1].po_next = node
        q.append(node)
        self._graph[node.id] = node
        return node

    def _acquired(self, tx: Tx, lock: Any) -> None:
        """txLock: an edge from the lock's last releaser."""
        assert isinstance(tx, DudeTxLocksTx)
        tx.cpu.work(self.graph_op_ns)
        tx.held_since[id(lock)] = tx.stores
        src = self._stamp.get(id(lock))
        if src is not None:
            self._edge(tx, src)

    def _releasing(self, tx: Tx, lock: Any) -> None:
        """txUnlock: stamp the lock with {thread, seq}, unless the transaction wrote nothing
        while it held the lock (then nothing the lock guards changed: the previous stamp stays,
        so a failed validation or a hand-over-hand step makes no edge)."""
        assert isinstance(tx, DudeTxLocksTx)
        tx.cpu.work(self.graph_op_ns)
        if tx.stores > tx.held_since.pop(id(lock), -1):
            self._stamp[id(lock)] = tx.node.id
            tx.node.stamped = True

    def _edge(self, tx: DudeTxLocksTx, src: NodeId) -> None:
        """Record src <_d tx's node (unless program order or a removed node implies it)."""
        v = tx.node
        u, s = src
        if u == v.thread or s <= self._removed[u] or v.preds.get(u, 0) >= s:
            return
        un = self._graph.get(src)
        if un is None:
            raise PmsimError(f"{self.name}: lock stamp {src} names no node of the graph")
        v.preds[u] = s
        un.succs.add(v)
        if v.succs or v.po_next is not None:
            self._check_cycle(tx, un)

    def _check_cycle(self, tx: DudeTxLocksTx, target: Node) -> None:
        """Whether the new edge target -> node closes a cycle (node reaches target)."""
        seen: set[Node] = set()
        stack = [tx.node]
        while stack:
            n = stack.pop()
            if n is target:
                break
            if n in seen:
                continue
            seen.add(n)
            stack.extend(n.successors())
        else:
            tx.cpu.work(self.detect_visit_ns * len(seen))
            return
        tx.cpu.work(self.detect_visit_ns * len(seen))
        self.cycles += 1
        if self.detection == "one-round" and self.check("dudetx-locks.detect.acyclic"):
            raise PmsimError(
                f"{self.name}: transaction {tx.txid:#x} takes a lock released by node "
                f"{target.id} (thread, seq), which depends on it: the dependency graph has a "
                "cycle, and one-round detection needs an acyclic one (two-phase locking); use "
                "dudetx-locks-2r for workloads that release a lock before taking another")

    def _logged_store(self, tx: DudeTxLocksTx, saddr: int, value: int) -> None:
        """dtmWrite: append (home | gseq, value) to the vlog, then store to the shadow."""
        t, cpu = tx.tid, tx.cpu
        slot = self._vtail[t]
        if slot + 1 - self._vhead[t] >= self._vslots:
            raise ConfigError(f"{self.name}: a transaction of thread {t} wrote more words than its "
                              f"PMSpec declares (the vlog of {self._vslots} slots is full): raise "
                              "PMSpec.max_tx_words")
        self._gseq += 1
        if self._gseq > GSEQ_MAX:
            raise PmsimError(f"{self.name}: more than {GSEQ_MAX} logged stores since the last "
                             "restart: the store sequence number would wrap; run fewer "
                             "transactions")
        word = (saddr - self._off) | self._gseq << GSHIFT
        va = self._vlog[t] + SLOT * (slot % self._vslots)
        cpu.store(va, word)
        cpu.store(va + 8, value)
        self._vtail[t] = slot + 1
        self._cur[t].append((word, value))
        tx.stores += 1
        tx.undo.append((saddr, int(self.m.peek(saddr))))
        cpu.store(saddr, value)

    def _end(self, tx: DudeTxLocksTx) -> None:
        """txEnd: the predecessor list and END into the vlog; TX_COMMIT (the commit point)."""
        t, cpu, node = tx.tid, tx.cpu, tx.node
        for b in tx.allocs:
            self._set_bit(tx, b, True)
        for b in tx.frees:
            self._set_bit(tx, b, False)
        entries = self._cur[t]
        self._cur[t] = []
        self.logged_entries += len(entries)
        preds = sorted(pred_word(u, s) for u, s in node.preds.items() if s > self.Rt[u])
        slot = self._vtail[t]
        rec = LockRecord(node, t, node.seq, entries, preds, slot - len(entries))
        st = cpu.store
        for i, (a, b) in enumerate(rec.words()):
            va = self._vlog[t] + SLOT * ((slot + i) % self._vslots)
            st(va, a)
            st(va + 8, b)
        va = self._vlog[t] + SLOT * ((slot + rec.kslots) % self._vslots)
        st(va, end_word(node.seq, len(entries), rec.kslots))
        st(va + 8, 0)
        self._vtail[t] = slot + rec.kslots + 1
        node.record = rec
        self._vq[t].append(rec)  # type: ignore[arg-type]
        self.commit_order.append(tx.txid)
        cpu.mark(Mark.TX_COMMIT, tx.txid)

    def _user_abort(self, tx: DudeTxLocksTx) -> None:
        """The body returned False: restore the shadow, pop the vlog, drop the node."""
        node, t = tx.node, tx.tid
        if node.stamped or node.succs:
            raise PmsimError(f"{self.name}: transaction {tx.txid:#x} aborted after releasing a "
                             "lock it wrote under, which others may have taken since: its writes "
                             "cannot be rolled back; abort before releasing any such lock")
        st = tx.cpu.store
        for a, old in reversed(tx.undo):
            st(a, old)
        self._vtail[t] -= len(self._cur[t])
        self._cur[t] = []
        for u, s in node.preds.items():
            un = self._graph.get((u, s))
            if un is not None:
                un.succs.discard(node)
        q = self._tq[t]
        q.pop()
        if q:
            q[-1].po_next = None
        del self._graph[node.id]
        self._nseq[t] -= 1
        self._drop_allocs(tx)

    def _alloc(self, tx: Tx, words: int) -> int:
        """pm_alloc: a block from the thread's volatile free list; its bit is set at txEnd."""
        addr = self.heap.pop(tx.tid, self.obj_bytes(words))
        tx.cpu.work(self.costs.alloc_ns)
        tx.allocs.append(addr)
        tx.fresh.add(addr)
        return addr

    def _free(self, tx: Tx, obj: int) -> None:
        """pm_free: the bit is cleared at txEnd, the block freed after it."""
        self.heap.owner(obj)
        tx.cpu.work(self.costs.alloc_ns)
        tx.frees.append(obj)

    def _set_bit(self, tx: Tx, block: int, allocated: bool) -> None:
        """At txEnd, flip a block's bit in the shadow bitmap. Threads holding different locks
        share bitmap words, so the word is taken and released like a lock (an edge from its last
        writer), and the store is logged."""
        assert isinstance(tx, DudeTxLocksTx)
        word, mask = self.heap.bit_of(block)
        prev = self._wstamp.get(word)
        if prev is not None:
            self._edge(tx, prev)
        self._wstamp[word] = tx.node.id
        tx.node.stamped = True
        s = self._shadow(word, 1)
        old = int(tx.cpu.load(s))
        self._logged_store(tx, s, old | mask if allocated else old & ~mask)

    # -- Persist -----------------------------------------------------------------------------------
    def _persist_batch(self, cpu: Any) -> bool:
        """One Persist batch of finished records; their nodes become persistent. Records have no
        global order here, so the vlogs are drained in turn, each batch starting one thread
        later (``persist_fair``; else at thread 0): a Persist that falls behind serves every
        worker alike. Written thread by thread, in each vlog's order."""
        batch: list[LockRecord] = []
        nbytes = 0
        n = len(self._vq)
        first = self._persist_first if self.persist_fair else 0
        self._persist_first = (first + 1) % n
        for t in (*range(first, n), *range(first)):
            q = self._vq[t]
            taken = 0
            for rec in q:
                need = rec.nslots
                if batch and nbytes + SLOT * need > self.persist_batch_bytes:
                    break
                if not self._plog_room(t, need):
                    break
                rec.pos = self._ptail[t]
                self._ptail[t] += need
                nbytes += SLOT * need
                batch.append(rec)  # type: ignore[arg-type]
                taken += 1
            for _ in range(taken):
                q.popleft()
        if not batch:
            return False
        batch.sort(key=lambda r: (r.thread, r.vslot))
        self._write_records(cpu, batch, nbytes)
        self.order(cpu, "dudetx-locks.persist.fence")
        cpu.work(self.bandwidth.cost(cpu.clock, nbytes))
        self.persist_batches += 1
        self._progress += 1
        for rec in batch:
            self._vhead[rec.thread] = rec.vslot + rec.nslots
            rec.node.persistent = True
        return True

    def _write_records(self, cpu: Any, batch: list[LockRecord], nbytes: int) -> None:
        """Copy each record from the vlog to its plog slots with END's checksum; clwb."""
        lines: dict[int, None] = {}
        ps, vs = self._pslots, self._vslots
        epoch = self.epoch
        with self.step(cpu, "dudetx-locks.persist.append") as c:
            ld, st = c.load, c.store
            for rec in batch:
                base, vbase = self.layout.log[rec.thread], self._vlog[rec.thread]
                body = [*rec.entries, *rec.words()]
                end = end_word(rec.seq, len(rec.entries), rec.kslots)
                chk = record_checksum(epoch, rec.thread << 40 | rec.seq, end, tuple(body))
                for i, (a, v) in enumerate([*body, (end, chk)]):
                    va = vbase + SLOT * ((rec.vslot + i) % vs)
                    ld(va)
                    ld(va + 8)
                    p = base + SLOT * ((rec.pos + i) % ps)
                    st(p, a)
                    st(p + 8, v)
                    lines[p & ~(LINE - 1)] = None
            c.work(self.costs.checksum_ns_per_byte * nbytes)
        self.flush(cpu, "dudetx-locks.persist.flush", lines)

    # -- Detect ------------------------------------------------------------------------------------
    def start_threads(self) -> None:
        t = self.layout.threads
        self._persist_done = False
        self._detect_done = False
        self.spawn_background("persist", t, self._persist_loop)
        self.spawn_background("reproduce", t + 1, self._reproduce_loop)
        self.spawn_background("detect", t + 2, self._detect_loop)

    def _detect_loop(self, cpu: Any) -> Generator[Any, Any, None]:
        while True:
            units = self._detect(cpu)
            if units:
                with self.step(cpu, "dudetx-locks.detect.ack") as c:
                    for unit in units:
                        for n in unit:
                            c.mark(Mark.TX_DURABLE, n.txid)
                            self.ack_latencies.append(cpu.clock - n.start)
                self._units.extend(units)
                self._progress += 1
                yield from cpu.maybe_yield()
                continue
            if self.stopping and self._persist_done and not any(self._vq):
                if self._graph:
                    raise PmsimError(f"{self.name}: {len(self._graph)} persistent transactions "
                                     "can never be reproduced (the detector is stuck on a cycle)")
                break
            yield from self.idle(cpu, self.detect_idle_ns)
        self._detect_done = True

    def _detect(self, cpu: Any) -> list[list[Node]]:
        """One detection round: the reproducible units, removed from the graph, in topological
        order."""
        self.detect_rounds += 1
        if self.detection == "one-round":
            units, visits = self._one_round()
        else:
            units, visits = self._two_round()
        self.detect_visits += visits
        cpu.work(self.detect_visit_ns * visits)
        for unit in units:
            for n in unit:
                self._remove(n)
        return units

    def _pred_done(self, u: int, s: int) -> bool:
        """One-round: predecessor (u, s) was removed (or, without the ancestors check, is
        merely persistent)."""
        if s <= self._removed[u]:
            return True
        if self.check("dudetx-locks.detect.ancestors"):
            return False
        n = self._graph.get((u, s))
        return n is not None and n.persistent

    def _one_round(self) -> tuple[list[list[Node]], int]:
        """Walk each thread's queue from its head; accept persistent nodes whose predecessors
        are done, until a pass over all threads accepts none."""
        units: list[list[Node]] = []
        visits = 0
        taken: set[Node] = set()
        progress = True
        while progress:
            progress = False
            for q in self._tq:
                for n in q:
                    if n in taken:
                        continue
                    visits += 1
                    if not n.persistent or not all(
                            s <= self._removed[u] or self._graph.get((u, s)) in taken
                            or self._pred_done(u, s) for u, s in n.preds.items()):
                        break
                    taken.add(n)
                    units.append([n])
                    progress = True
        return units, visits

    def _two_round(self) -> tuple[list[list[Node]], int]:
        """Atlas: mark the persistent nodes, unmark the descendants of volatile ones, then group
        the marked nodes into SCCs in topological order (Tarjan)."""
        nodes = list(self._graph.values())
        visits = len(nodes)
        bad: set[Node] = set()
        volatile = [n for n in nodes if not n.persistent]
        if self.check("dudetx-locks.detect.propagate"):
            stack = list(volatile)
            while stack:
                n = stack.pop()
                if n in bad:
                    continue
                bad.add(n)
                visits += 1
                stack.extend(s for s in n.successors() if s not in bad)
        else:
            for n in volatile:
                bad.add(n)
                bad.update(n.successors())
        good = [n for n in nodes if n not in bad]
        sccs, edges = tarjan(good, set(good))
        visits += edges
        units = [sorted(c, key=lambda n: n.id) for c in reversed(sccs)]
        self.scc_merged += sum(1 for u in units if len(u) > 1)
        return units, visits

    def _remove(self, n: Node) -> None:
        """The node leaves the graph (its unit goes to Reproduce)."""
        self._graph.pop(n.id, None)
        q = self._tq[n.thread]
        if q and q[0] is n:
            q.popleft()
        else:
            q.remove(n)
        self._removed[n.thread] = max(self._removed[n.thread], n.seq)

    # -- Reproduce ---------------------------------------------------------------------------------
    def _reproduce_loop(self, cpu: Any) -> Generator[Any, Any, None]:
        while True:
            if self._units:
                batch = [self._units.popleft()]
                size = len(batch[0])
                while self._units and size + len(self._units[0]) <= self.reproduce_batch:
                    size += len(self._units[0])
                    batch.append(self._units.popleft())
                self._reproduce_units(cpu, batch)
                self.reproduce_batches += 1
                self._progress += 1
                yield from cpu.maybe_yield()
                continue
            if self.stopping and self._detect_done:
                break
            yield from self.idle(cpu, self.reproduce_idle_ns)

    def _record_values(self, c: Any, rec: LockRecord) -> list[tuple[int, int]]:
        """A record's entries (gseq word, value): loaded from its plog slots (timed), or as
        recovery read them."""
        if rec.pos < 0:
            return rec.entries
        base, ps = self.layout.log[rec.thread], self._pslots
        ld = c.load
        return [(int(ld(base + SLOT * ((rec.pos + i) % ps))),
                 int(ld(base + SLOT * ((rec.pos + i) % ps) + 8))) for i in range(len(rec.entries))]

    def _unit_entries(self, c: Any, unit: list[Node]) -> list[tuple[int, int]]:
        """A unit's (home, value) stores: a single transaction's in log order, an SCC's merged
        in global store-sequence order (how they happened on the shadow)."""
        out: list[tuple[int, int]] = []
        for n in unit:
            assert n.record is not None
            out.extend(self._record_values(c, n.record))
        if len(unit) > 1:
            out.sort(key=lambda e: e[0] >> GSHIFT)
        return [(w & HOME_MASK, v) for w, v in out]

    def _apply_units(self, cpu: Any, units: list[list[Node]], step: str) -> None:
        with self.step(cpu, step) as c:
            st = c.store
            lines: dict[int, None] = {}
            n = 0
            for unit in units:
                for a, v in self._unit_entries(c, unit):
                    if not self._is_home(a):
                        continue
                    st(a, v)
                    lines[a & ~(LINE - 1)] = None
                    n += 1
            c.work(self.costs.copy_ns_per_byte * 8 * n)
            for line in lines:
                c.clwb(line)

    def _store_watermarks(self, c: Any, tops: dict[int, int]) -> None:
        for t, s in sorted(tops.items()):
            a = self.layout.desc[t] + 8 * W_R
            c.store(a, s)
            c.clwb(a)

    def _reproduce_units(self, cpu: Any, units: list[list[Node]]) -> None:
        """Replay, data fence, R[t], fence, recycle."""
        self._apply_units(cpu, units, "dudetx-locks.reproduce.apply")
        self.order(cpu, "dudetx-locks.reproduce.fence")
        tops: dict[int, int] = {}
        for unit in units:
            for n in unit:
                tops[n.thread] = max(tops.get(n.thread, 0), n.seq)
        with self.step(cpu, "dudetx-locks.reproduce.watermark") as c:
            self._store_watermarks(c, tops)
        self.order(cpu, "dudetx-locks.reproduce.fence-r")
        for unit in units:
            for n in unit:
                rec = n.record
                assert rec is not None
                if rec.pos >= 0:
                    self._phead[n.thread] = max(self._phead[n.thread], rec.pos + rec.nslots)
        for t, s in tops.items():
            self.Rt[t] = max(self.Rt[t], s)

    # -- recovery ----------------------------------------------------------------------------------
    def _restart_id(self) -> int:
        return 1

    def _scan_records(self, cpu: Any, epoch: int) -> dict[NodeId, tuple[list[tuple[int, int]],
                                                                         list[NodeId]]]:
        """Every record of the current epoch in every plog: (thread, seq) -> (entries, preds)."""
        m, lay, ps = self.m, self.layout, self._pslots
        chk = self.check("dudetx-locks.recover.checksum")
        bounds = self.check("dudetx-locks.recover.bounds")
        out: dict[NodeId, tuple[list[tuple[int, int]], list[NodeId]]] = {}
        nmask, kmask = (1 << N_BITS) - 1, (1 << K_BITS) - 1
        for t in range(lay.threads):
            words = m.pm_words(lay.log[t], 2 * ps)
            for s in range(ps):
                w = int(words[2 * s])
                if not w & 1:
                    continue
                n, k, seq = (w >> 1) & nmask, (w >> (1 + N_BITS)) & kmask, w >> SEQ_SHIFT
                if n + k >= ps or (t, seq) in out or seq == 0:
                    continue
                idx = [2 * ((s - n - k + i) % ps) for i in range(n + k)]
                body = [(int(words[j]), int(words[j + 1])) for j in idx]
                if chk and int(words[2 * s + 1]) != record_checksum(epoch, t << 40 | seq, w,
                                                                    tuple(body)):
                    continue
                entries = body[:n]
                if bounds and not all(self._is_home(a & HOME_MASK) for a, _ in entries):
                    continue
                preds = [(p >> 41, (p >> 1) & HOME_MASK) for pair in body[n:] for p in pair if p]
                out[(t, seq)] = (entries, preds)
        cpu.work(self.costs.checksum_ns_per_byte * lay.threads * ps * SLOT)
        return out

    def _recovery_units(self, logs: dict[NodeId, tuple[list[tuple[int, int]], list[NodeId]]],
                        rt: list[int]) -> tuple[list[list[Node]], dict[int, int]]:
        """Rebuild the graph from the logs (missing = volatile), rerun detection; the units to
        replay and each thread's new watermark."""
        threads = self.layout.threads
        processed = {k for k in logs if k[1] <= rt[k[0]]}
        stack = list(processed)
        while stack:  # ancestors of processed nodes were processed in the same batch
            t, s = stack.pop()
            anc = [(t, s - 1), *logs[(t, s)][1]] if (t, s) in logs else [(t, s - 1)]
            for a in anc:
                if a[1] > rt[a[0]] and a in logs and a not in processed:
                    processed.add(a)
                    stack.append(a)
        base = list(rt)
        for t, s in processed:
            base[t] = max(base[t], s)
        todo = {k: v for k, v in logs.items() if k not in processed}
        top = list(base)
        for (t, s), (_, preds) in todo.items():
            top[t] = max(top[t], s)
            for u, q in preds:
                top[u] = max(top[u], q)
        self._removed = list(base)
        self._graph = {}
        self._tq = [deque() for _ in range(threads)]
        for t in range(threads):
            prev = None
            for s in range(base[t] + 1, top[t] + 1):
                node = Node(t, s, 0, 0.0)
                if (t, s) in todo:
                    entries, _ = todo[(t, s)]
                    node.persistent = True
                    node.record = LockRecord(node, t, s, entries, [], -1)
                if prev is not None:
                    prev.po_next = node
                prev = node
                self._tq[t].append(node)
                self._graph[(t, s)] = node
        for (t, s), (_, preds) in todo.items():
            v = self._graph[(t, s)]
            for u, q in preds:
                if u != t and q > base[u]:
                    v.preds[u] = max(v.preds.get(u, 0), q)
                    self._graph[(u, q)].succs.add(v)
        if not self.check("dudetx-locks.recover.edges"):
            units = [[n] for q in self._tq for n in q if n.persistent]
        else:
            units = []
            while True:
                got = self._one_round()[0] if self.detection == "one-round" else \
                    self._two_round()[0]
                if not got:
                    break
                for unit in got:
                    for n in unit:
                        self._remove(n)
                units.extend(got)
        tops = {t: base[t] for t in range(threads) if base[t] != rt[t]}
        for unit in units:
            for n in unit:
                tops[n.thread] = max(tops.get(n.thread, base[n.thread]), n.seq)
        return units, tops

    def _recover(self, cpu: Any) -> None:
        """Replay the reproducible logs after each thread's R; persist R; truncate."""
        lay = self.layout
        epoch = int(self.m.peek(lay.base + 8 * G_EPOCH))
        rt = self._watermarks()
        units, tops = self._recovery_units(self._scan_records(cpu, epoch), rt)
        cpu.work(self.detect_visit_ns * sum(len(u) for u in units))
        if units:
            self._apply_units(cpu, units, "dudetx-locks.recover.replay")
            self.order(cpu, "dudetx-locks.recover.fence")
        if tops:
            with self.step(cpu, "dudetx-locks.recover.watermark") as c:
                self._store_watermarks(c, tops)
            self.order(cpu, "dudetx-locks.recover.fence-r")
        with self.step(cpu, "dudetx-locks.recover.truncate") as c:
            a = lay.base + 8 * G_EPOCH
            c.store(a, epoch + 1)
            c.clwb(a)
        self.order(cpu, "dudetx-locks.recover.fence-t")


def tarjan(nodes: list[Node], within: set[Node]) -> tuple[list[list[Node]], int]:
    """Strongly connected components of ``nodes`` over successor edges inside ``within``, in
    reverse topological order (Tarjan, iterative), and the number of edges followed."""
    index: dict[Node, int] = {}
    low: dict[Node, int] = {}
    on: set[Node] = set()
    stack: list[Node] = []
    out: list[list[Node]] = []
    edges = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter([s for s in root.successors() if s in within]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                edges += 1
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter([s for s in w.successors() if s in within])))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w is v:
                            break
                    out.append(comp)
    return out, edges


DUDETX_LOCKS_2R = variant(DudeTxLocksRuntime, "dudetx-locks-2r", detection="two-round")
"""Two-round (Atlas) detection: tolerates cycles, rescans the graph every round."""
DUDETX_LOCKS_1R_FINE = variant(DudeTxLocksRuntime, "dudetx-locks-1r-fine", persist_batch_bytes=1,
                               reproduce_batch=2, persist_fair=False)
"""Persist batches of one record, Reproduce batches of two transactions: every crash point's
states can be enumerated (as ``dudetx-fine``)."""
DUDETX_LOCKS_2R_FINE = variant(DudeTxLocksRuntime, "dudetx-locks-2r-fine", detection="two-round",
                               persist_batch_bytes=1, reproduce_batch=2, persist_fair=False)


# -- mutants (card §6 M14, M14b, M15) ----------------------------------------------------------

def whole_transactions(orig: Callable[..., Any]) -> Callable[..., Any]:
    """M14b: an SCC is replayed one whole transaction after another, not in store order."""
    def _unit_entries(self: Any, c: Any, unit: list[Node]) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for n in unit:
            out.extend((w & HOME_MASK, v) for w, v in self._record_values(c, n.record))
        return out
    return _unit_entries


CYCLES = "lock hand-offs in both directions between two transactions (list with ops=2)"

for _m in (
    Mutant("dudetx-locks:M14", DUDETX_LOCKS_2R_FINE, (skip_check("dudetx-locks.detect.propagate"),),
           why="two-round detection unmarks only the direct successors of a volatile node: a "
               "node with a volatile ancestor further up is reproduced and acknowledged, and a "
               "crash loses the ancestor", needs="two worker threads", threads=2,
           workload="bank"),
    Mutant("dudetx-locks:M14-cycle", DUDETX_LOCKS_1R_FINE,
           (skip_check("dudetx-locks.detect.acyclic"), skip_check("dudetx-locks.detect.ancestors")),
           why="one-round detection on a cyclic graph: without the refusal it treats a persistent "
               "predecessor as done, so a cycle's transactions are reproduced one at a time, "
               "and a chain's tail before its volatile head", needs=CYCLES, threads=2,
           workload="list"),
    Mutant("dudetx-locks:M14b", DUDETX_LOCKS_2R,
           (patch("_unit_entries", whole_transactions, "SCC replayed transaction by transaction"),),
           why="an SCC is replayed one whole transaction at a time: a lock's data keeps the "
               "wrong writer (no crash needed: NVM after Reproduce differs from the shadow)",
           needs=CYCLES, threads=2, workload="list"),
    Mutant("dudetx-locks:M15", DUDETX_LOCKS_2R_FINE, (skip_check("dudetx-locks.recover.edges"),),
           why="recovery ignores the persisted predecessor lists and replays every complete log: "
               "a transaction whose predecessor's log was lost is replayed without it",
           needs="two worker threads", threads=2),
):
    register_mutant(_m)

__all__ = ["DUDETX_LOCKS_1R_FINE", "DUDETX_LOCKS_2R", "DUDETX_LOCKS_2R_FINE", "DudeTxLocksRuntime",
           "DudeTxLocksTx", "LockRecord", "Node", "tarjan"]
