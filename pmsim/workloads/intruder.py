"""Intruder: STAMP's network intrusion detector (Minh et al., IISWC'08), its three transactions.

A stream of packets, the fragments of many flows shuffled together, is processed by every
thread in turn with three transactions (STAMP's ``processPackets``):

- **get a packet** (``TMSTREAM_GETPACKET``): take the next packet of the shared stream queue
  (read its pop index and slot, advance the index; read-only once the stream is empty);
- **decode it** (``TMDECODER_PROCESS``): a flow of one fragment is complete at once; otherwise
  look the flow up in the fragmented map (a red-black tree, STAMP's ``MAP_USE_RBTREE``): a new
  flow gets a map entry and a one-node fragment list, a known one a node inserted in order of
  fragment id (a walk of the list reading each fragment's header). When the last fragment
  arrives the flow is reassembled: the list is walked and freed, a decoded record (flow id,
  length, data) is allocated and pushed on the decoded queue, and the flow leaves the map;
- **get a completed flow** (``TMDECODER_GETCOMPLETE``): pop a record off the decoded queue and
  free it (read-only when the queue is empty, as it mostly is).

The stream is STAMP's ``stream_generate``: a flow's data is 1..``max_length`` bytes (STAMP's
"++" input ``-l128``), split into 1..length fragments of equal size (the last takes the
remainder), and all packets are shuffled. Every thread's transactions cycle through the three
kinds, so they are a third each.

What pmsim leaves out: the stream holds as many flows as the run needs (``flows``: by default
exactly one packet for every get of the run, the last flow's fragment count cut to fit, so
that the run drains the shuffled stream and reassembles every flow as STAMP does; STAMP's
``-n262144`` would leave nearly every flow unfinished in a run of pmsim's length: a flow is
complete only when its last fragment, spread over the whole stream, arrives), so the map holds
hundreds of flows rather than STAMP's hundreds of thousands and its tree is shallower. Attack flows (STAMP's
``-a10``: 10% are dictionary signatures) are drawn like the others, and the detector that scans
a reassembled flow outside the transactions is not run (STAMP frees the data after it). A
flow's list header (head and size) lives in its map node instead of a list object of its own,
and its decoded record holds the flow id, length and data in one object (STAMP: a ``decoded_t``
pointing at the data). The reassembly copies the data through the transaction (STAMP's
``memcpy`` into freshly allocated memory is not instrumented): a durable runtime must persist
it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator, Hashable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..config import check_types, param
from ..errors import ConfigError, PmsimError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import MASK64, Model, check_range, register_workload
from .rbtree import VALUE, RBTree
from .structures import DELETE, GOLDEN, INIT_STREAM, INSERT, Nodes, WalkedImage, check_node

GET, DECODE, COMPLETE = 0, 1, 2
"""First element of an op: ``(GET, tid)``, ``(DECODE, packet)`` (packet -1: none was got),
``(COMPLETE,)``."""
FLOW, FRAG, NFRAG, NBYTES = 0, 1, 2, 3
"""A packet header's words (STAMP's ``packet_t``: flowId, fragmentId, numFragment, length)."""
HEAD, SIZE = VALUE, VALUE + 1
"""A map node's fragment list: its first list node and its length."""
DATA, NEXT = 0, 1
"""A fragment list node's words (STAMP's ``list_node_t``: dataPtr, nextPtr)."""
POP, PUSH = 0, 1
"""A queue header's words."""
DEFAULT_FLOWS = 1024
"""Flows of the stream when the run's length is not known."""


def flow_words(flow: int, nbytes: int) -> list[int]:
    """A flow's reassembled data, ``ceil(nbytes / 8)`` words derived from its id (STAMP's
    random printable characters: only their number matters to a runtime)."""
    return [((flow << 24) + k) * GOLDEN & MASK64 for k in range(-(-nbytes // 8))]


@dataclass(frozen=True)
class IntruderParams:
    max_length: int = param(128, "bytes", "longest flow data (STAMP -l; the '++' input: 128)")
    flows: int = param(0, "flows", "flows in the stream; 0: a packet for every get of the "
                       "run (STAMP -n262144, see the module's notes)")
    capacity: int = param(1024, "slots", "slots of the decoded queue (STAMP: 1024); must "
                          "exceed the threads")

    def __post_init__(self) -> None:
        check_types(self, "workload 'intruder': parameter ")
        check_range("intruder", "max_length", self.max_length, 1, 1024)
        check_range("intruder", "flows", self.flows, 0, 1 << 18)
        check_range("intruder", "capacity", self.capacity, 2, 1 << 20)

    # what the red-black tree code reads
    @property
    def keys(self) -> int:
        return max(self.flows, 1)

    @property
    def trees(self) -> int:
        return 1

    @property
    def value_words(self) -> int:
        return 2

    @property
    def initial(self) -> int:
        return 0

    @property
    def ops_per_tx(self) -> int:
        return 1


def generate(seed: int, flows: int, max_length: int, packets: int | None
             ) -> tuple[list[tuple[int, int, int, int]], list[int]]:
    """STAMP's stream: the packet headers in flow order and the shuffled queue of their
    indices. ``flows`` flows, or (``packets`` given) flows until there are exactly that many
    packets: the last flow's fragment count is cut to fit (its length raised to at least one
    byte a fragment)."""
    rng = np.random.default_rng([seed, INIT_STREAM])
    heads: list[tuple[int, int, int, int]] = []
    f = 0
    while (f < flows) if packets is None else len(heads) < max(packets, 1):
        f += 1
        length = int(rng.integers(1, max_length + 1))
        n = int(rng.integers(1, length + 1))
        if packets is not None and len(heads) + n > packets:
            n = packets - len(heads)
            length = max(length, n)
        size = length // n
        for p in range(n):
            heads.append((f, p, n, size + (length % n if p == n - 1 else 0)))
    return heads, rng.permutation(len(heads)).tolist()


class IntruderModel(Model):
    def __init__(self, heads: list[tuple[int, int, int, int]], queue: list[int]) -> None:
        self.heads, self.queue = heads, queue
        self.pop = 0
        self.flows: dict[int, list[tuple[int, int]]] = {}  # flow -> [(fragment, packet)]
        self.decoded: deque[tuple[int, ...]] = deque()

    def apply(self, op: tuple[int, ...]) -> None:
        if op[0] == GET:
            self.pop = min(self.pop + 1, len(self.queue))
        elif op[0] == COMPLETE:
            if self.decoded:
                self.decoded.popleft()
        elif op[1] >= 0:
            flow, frag, nfrag, nbytes = self.heads[op[1]]
            if nfrag == 1:
                self.decoded.append((flow, nbytes, *flow_words(flow, nbytes)))
                return
            frags = self.flows.setdefault(flow, [])
            frags.append((frag, op[1]))
            frags.sort()
            if len(frags) == nfrag:
                total = sum(self.heads[i][NBYTES] for _, i in frags)
                self.decoded.append((flow, total, *flow_words(flow, total)))
                del self.flows[flow]

    def snapshot(self) -> Hashable:
        return (self.pop, tuple(sorted((f, tuple(i for _, i in fr))
                                       for f, fr in self.flows.items())),
                tuple(self.decoded))


@register_workload
class Intruder(WalkedImage, RBTree):
    """STAMP's Intruder: get a packet, reassemble its flow, take a completed flow."""

    name = "intruder"
    Params = IntruderParams  # type: ignore[assignment]
    help = ("STAMP's Intruder: threads take packets off a shared stream, reassemble flows in a "
            "red-black tree of fragment lists and queue the completed ones")
    fuzz_params = {"max_length": 4, "capacity": 4}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        p = self.p
        if p.capacity <= self.threads:
            raise ConfigError(f"workload 'intruder': capacity={p.capacity} decoded-queue slots "
                              f"for {self.threads} threads could fill up; use capacity > "
                              "threads")
        gets = None if p.flows or self.txs is None else self.threads * -(-self.txs // 3)
        self.heads, self.queue = generate(self.seed, p.flows or DEFAULT_FLOWS, p.max_length,
                                          gets)
        self.p = replace(p, flows=max(h[FLOW] for h in self.heads))
        self._next: dict[int, int] = {}
        self._held: dict[int, int] = {}

    def spec(self) -> PMSpec:
        p = self.p
        n = len(self.heads)
        record = 2 + -(-p.max_length // 8)
        tree = self.objects_per_op()
        # a reassembly: the map's nodes (one write each), the record, the new list node, the
        # link to it, the queue's slot and push index; it frees every fragment's list node
        return PMSpec(statics=(StaticArray("roots", 1, 1), StaticArray("stream", 1, 2),
                               StaticArray("queue", n, 1, 0), StaticArray("packets", n, 4, 0),
                               StaticArray("decoded", p.capacity, 1), StaticArray("dq", 1, 2)),
                      heap=((self.node_words, self.node_words, p.flows), (2, 2, n),
                            (3, record, p.capacity)),
                      max_tx_writes=tree + 5, max_tx_words=tree * self.node_words + record + 4,
                      max_tx_allocs=p.max_length + 3, max_tx_objects=tree + p.max_length + 5,
                      conservative_log=True)

    def nlocks(self) -> int:
        """The stream, the fragmented map and the decoded queue: one lock each."""
        return 3

    def locks_of(self, op: tuple[int, ...]) -> tuple[int, ...]:
        return {GET: (0,), DECODE: (1, 2), COMPLETE: (2,)}[op[0]]

    def init_data(self, rt: Runtime) -> None:
        for i, h in enumerate(self.heads):
            rt.init_words(rt.static("packets", i), 0, list(h))
        for i, k in enumerate(self.queue):
            rt.init_words(rt.static("queue", i), 0, [k])
        rt.init_words(rt.static("stream", 0), 0, [0, len(self.queue)])

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[int, ...]:
        """The thread's next of get, decode (the packet its last get took) and complete."""
        k = self._next.get(tid, GET)
        self._next[tid] = (k + 1) % 3
        if k == GET:
            return (GET, tid)
        if k == DECODE:
            return (DECODE, self._held.pop(tid, -1))
        return (COMPLETE,)

    def resume(self, order: Any) -> None:
        """A recovered run's threads start with a get (a packet got before the crash and not
        decoded is lost, as STAMP's is)."""
        self._next, self._held = {}, {}

    def body(self, tx: Any, op: tuple[int, ...]) -> Generator[Any, Any, None]:
        static = tx.rt.static
        if op[0] == GET:
            s = static("stream", 0)
            pop, push = tx.read_words(s, 0, 2)
            if pop >= push:
                self._held[op[1]] = -1
                return
            self._held[op[1]] = int(tx.read(static("queue", pop), 0))
            tx.write(s, POP, pop + 1)
            return
        if op[0] == COMPLETE:
            q = static("dq", 0)
            pop, push = tx.read_words(q, 0, 2)
            if pop == push:
                return
            rec = tx.read(static("decoded", pop), 0)
            tx.read_words(rec, 0, 2)
            tx.write(q, POP, (pop + 1) % self.p.capacity)
            tx.free(rec)
            return
        if op[1] < 0:
            return
        yield from self._decode(tx, op[1])

    def _decode(self, tx: Any, packet: int) -> Generator[Any, Any, None]:
        static = tx.rt.static
        flow, frag, nfrag, nbytes = (int(w) for w in tx.read_words(static("packets", packet),
                                                                   0, 4))
        if nfrag == 1:
            yield from self._push(tx, flow, nbytes)
            return
        nodes = Nodes(tx, self.node_words)
        root = nodes.get(static("roots", 0), 1)
        n = yield from self.lookup(nodes, root, flow)
        if n is None:
            node = tx.alloc(2)
            tx.write_words(node, 0, [packet, 0])
            yield from self.operate(nodes, root, INSERT, flow, [node, 1])
            nodes.flush()
            return
        prev, cur = 0, n[HEAD]
        while cur:
            yield from tx.pause()
            data, nxt = tx.read_words(cur, 0, 2)
            if tx.read(static("packets", int(data)), FRAG) >= frag:
                break
            prev, cur = cur, int(nxt)
        node = tx.alloc(2)
        tx.write_words(node, 0, [packet, cur])
        if prev:
            tx.write(prev, NEXT, node)
        else:
            n[HEAD] = node
        n[SIZE] += 1
        if n[SIZE] < nfrag:
            nodes.flush()
            return
        total, cur = 0, n[HEAD]
        while cur:
            yield from tx.pause()
            data, nxt = tx.read_words(cur, 0, 2)
            total += int(tx.read(static("packets", int(data)), NBYTES))
            tx.free(cur)
            cur = int(nxt)
        yield from self._push(tx, flow, total)
        yield from self.operate(nodes, root, DELETE, flow, [])
        nodes.flush()

    def _push(self, tx: Any, flow: int, nbytes: int) -> Generator[Any, Any, None]:
        """Allocate the flow's decoded record and push it on the decoded queue."""
        words = flow_words(flow, nbytes)
        rec = tx.alloc(2 + len(words))
        tx.write_words(rec, 0, [flow, nbytes, *words])
        yield from tx.pause()
        q = tx.rt.static("dq", 0)
        pop, push = (int(w) for w in tx.read_words(q, 0, 2))
        if (push + 1) % self.p.capacity == pop:
            raise PmsimError("intruder: the decoded queue is full (capacity must exceed the "
                             "threads)")
        tx.write(tx.rt.static("decoded", push), 0, rec)
        tx.write(q, PUSH, (push + 1) % self.p.capacity)

    def model(self) -> Model:
        return IntruderModel(self.heads, self.queue)

    def node_value(self, vals: list[int], where: str) -> Any:
        return tuple(int(v) for v in vals)

    def _read(self, rt: Runtime) -> tuple[list[int], Hashable]:
        """The live heap objects and the application data of an image; a PmsimError if a
        structure is broken."""
        nodes, (items,) = self._walk_all(rt)
        live = list(nodes)
        seen: set[int] = set(nodes)
        flows = []
        limit = self.p.max_length
        for flow, (head, size) in items:
            frags: list[tuple[int, int]] = []
            x = head
            while x:
                check_node(rt, x, seen)
                live.append(x)
                data, x = (int(w) for w in rt.peek_words(x, 0, 2))
                if not 0 <= data < len(self.heads) or len(frags) >= limit:
                    raise PmsimError(f"intruder: flow {flow}'s fragment list is broken")
                frags.append((self.heads[data][FRAG], data))
            if len(frags) != size or frags != sorted(frags):
                raise PmsimError(f"intruder: flow {flow}'s list holds {len(frags)} fragments "
                                 f"out of order or not its size {size}")
            flows.append((flow, tuple(i for _, i in frags)))
        pop, push = (int(w) for w in rt.peek_static("dq")[0])
        decoded = []
        i = pop
        while i != push:
            rec = int(rt.peek_static("decoded")[i, 0])
            check_node(rt, rec, seen)
            live.append(rec)
            flow, nbytes = (int(w) for w in rt.peek_words(rec, 0, 2))
            words = rt.peek_words(rec, 2, -(-nbytes // 8)) if 0 < nbytes <= 8 * limit else None
            if words is None:
                raise PmsimError(f"intruder: decoded record {rec:#x} has length {nbytes}")
            decoded.append((flow, nbytes, *(int(w) for w in words)))
            i = (i + 1) % self.p.capacity
        stream_pop = int(rt.peek_static("stream")[0, POP])
        return live, (stream_pop, tuple(sorted(flows)), tuple(decoded))


__all__ = ["Intruder", "IntruderParams"]
