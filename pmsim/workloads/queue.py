"""Queue (Proteus QE): persistent FIFO queues, one enqueue or dequeue per transaction.

Each queue has a static header ``[head, tail, count]`` and a singly linked list of nodes
``[next, payload...]`` (64 B nodes, as Proteus's). An enqueue allocates a node, writes it, links
it after the tail and updates the header; a dequeue unlinks the head and frees it. Proteus
fast-forwards InitOps before measuring; here ``prefill`` nodes per queue are laid out as static
objects at setup (a dequeued static node is dropped, never freed). One lock per queue, as in
Proteus ("one lock per structure instance").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import check_most, check_types, param
from ..errors import ConfigError, PmsimError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import MASK64, Model, Workload, check_range, register_workload

ENQ, DEQ = 0, 1
HEAD, TAIL, COUNT = 0, 1, 2  # header fields
NEXT, VALUE = 0, 1  # node fields; payload words VALUE.. hold payload(value)
GOLDEN = 0x9E3779B97F4A7C15
PREFILL_TAG = 1 << 62
"""Prefilled values are ``PREFILL_TAG + queue * capacity + k``; drawn values are below it."""
MAX_NODES = 1 << 22
"""Most nodes the queues may hold in total (the heap is planned for all of them)."""


def payload(value: int, words: int) -> list[int]:
    """The payload words of a node holding ``value``: word k is ``value + k * GOLDEN``, so a
    torn node (some words of another value) is detected."""
    return [(value + k * GOLDEN) & MASK64 for k in range(words)]


@dataclass(frozen=True)
class QueueParams:
    queues: int = param(8, "queues", "number of queues, one lock each (Proteus QE: 8)")
    capacity: int = param(64, "nodes", "most nodes per queue; an enqueue onto a full queue does "
                          "nothing (not given by Proteus: documented default)")
    prefill: int = param(8, "nodes", "nodes per queue at setup, standing in for Proteus's "
                         "fast-forwarded InitOps (20 k per thread; how many remain queued is not "
                         "given: documented default)")
    node_words: int = param(8, "words", "node size in 8-byte words, next pointer included "
                            "(Proteus: 64 B nodes = 8)")
    enqueue_pct: float = param(50.0, "%", "share of enqueues, the rest dequeues (not given by "
                               "Proteus: documented default)")

    def __post_init__(self) -> None:
        label = "workload 'queue': parameter "
        check_types(self, label)
        check_range("queue", "queues", self.queues, 1)
        check_most(label, "queues", self.queues, 1 << 18,
                   "use at most 2**18 = 262144 queues (each has a lock, a SimPy resource)")
        check_range("queue", "capacity", self.capacity, 1)
        check_range("queue", "prefill", self.prefill, 0, self.capacity)
        check_range("queue", "node_words", self.node_words, 2, 512)
        check_range("queue", "enqueue_pct", self.enqueue_pct, 0, 100)
        if self.queues * self.capacity > MAX_NODES:
            raise ConfigError(f"{label}capacity={self.capacity!r} is too large: queues x capacity "
                              f"must be at most 2**22 nodes (the heap is planned for all of them); "
                              f"use capacity <= {MAX_NODES // self.queues}")


class QueueModel(Model):
    """The reference: one bounded deque of values per queue."""

    def __init__(self, queues: int, capacity: int, prefill: int) -> None:
        self.capacity = capacity
        self.qs = [deque(PREFILL_TAG + q * capacity + k for k in range(prefill))
                   for q in range(queues)]

    def apply(self, op: tuple[int, int, int]) -> None:
        q, kind, value = op
        dq = self.qs[q]
        if kind == ENQ and len(dq) < self.capacity:
            dq.append(value)
        elif kind == DEQ and dq:
            dq.popleft()

    def snapshot(self) -> Hashable:
        return tuple(tuple(dq) for dq in self.qs)


@register_workload
class Queue(Workload):
    name = "queue"
    Params = QueueParams
    help = "enqueue/dequeue on persistent linked-list queues (Proteus QE)"
    fuzz_params = {"queues": 2, "capacity": 3, "prefill": 1, "node_words": 2}

    def spec(self) -> PMSpec:
        p = self.p
        return PMSpec(statics=(StaticArray("queues", p.queues, 3),
                               StaticArray("prefill", p.queues * p.prefill, p.node_words)),
                      heap=((p.node_words, p.node_words, p.queues * p.capacity),),
                      max_tx_writes=3, max_tx_words=p.node_words + 4, max_tx_allocs=1,
                      max_tx_objects=3)

    def nlocks(self) -> int:
        return self.p.queues

    def init_data(self, rt: Runtime) -> None:
        p = self.p
        for q in range(p.queues):
            nodes = [rt.static("prefill", q * p.prefill + k) for k in range(p.prefill)]
            for k, node in enumerate(nodes):
                nxt = nodes[k + 1] if k + 1 < len(nodes) else 0
                rt.init_words(node, NEXT, [nxt, *payload(PREFILL_TAG + q * p.capacity + k,
                                                          p.node_words - 1)])
            if nodes:
                rt.init_words(rt.static("queues", q), HEAD, [nodes[0], nodes[-1], len(nodes)])

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[int, int, int]:
        q = int(rng.integers(0, self.p.queues))
        kind = ENQ if float(rng.random()) * 100 < self.p.enqueue_pct else DEQ
        return q, kind, int(rng.integers(1, PREFILL_TAG))

    def locks_of(self, op: tuple[int, int, int]) -> tuple[int]:
        return (op[0],)

    def _is_static(self, rt: Runtime, node: int) -> bool:
        s = rt.layout.static("prefill")
        return s.base <= node < s.base + s.count * s.stride

    def body(self, tx: Any, op: tuple[int, int, int]) -> Generator[Any, Any, None]:
        q, kind, value = op
        hdr = tx.rt.static("queues", q)
        head, tail, count = tx.read_words(hdr, HEAD, 3)
        if kind == ENQ:
            if count >= self.p.capacity:
                return
            node = tx.alloc(self.p.node_words)
            tx.write_words(node, NEXT, [0, *payload(value, self.p.node_words - 1)])
            yield from tx.pause()
            if tail:
                tx.write(tail, NEXT, node)
            else:
                head = node
            tx.write_words(hdr, HEAD, [head, node, count + 1])
        elif head:
            nxt, _ = tx.read_words(head, NEXT, 2)  # the successor and the dequeued value
            tx.write_words(hdr, HEAD, [nxt, tail if nxt else 0, count - 1])
            if not self._is_static(tx.rt, head):
                tx.free(head)

    def model(self) -> Model:
        return QueueModel(self.p.queues, self.p.capacity, self.p.prefill)

    def _walk(self, rt: Runtime, q: int) -> list[int]:
        """Queue ``q``'s nodes from the head, checked against its header; a PmsimError when
        they disagree. The walk is bounded by the capacity (a cycle is corrupt data)."""
        head, tail, count = rt.peek_words(rt.static("queues", q), HEAD, 3)
        nodes: list[int] = []
        node = head
        while node:
            nodes.append(node)
            if len(nodes) > self.p.capacity:
                raise PmsimError(f"queue {q} holds more than capacity={self.p.capacity} nodes "
                                 "(a cycle?)")
            node = rt.peek(node, NEXT)
        if count != len(nodes):
            raise PmsimError(f"queue {q}: count {count} but {len(nodes)} nodes are linked")
        if tail != (nodes[-1] if nodes else 0):
            raise PmsimError(f"queue {q}: the tail is not the last node")
        return nodes

    def check(self, rt: Runtime) -> None:
        """Raise PmsimError unless every header's head, tail and count match its list."""
        for q in range(self.p.queues):
            self._walk(rt, q)

    def read_data(self, rt: Runtime) -> Hashable:
        w = self.p.node_words - 1
        out = []
        for q in range(self.p.queues):
            values = []
            for node in self._walk(rt, q):
                words = rt.peek_words(node, VALUE, w)
                if words != payload(words[0], w):
                    raise PmsimError(f"queue {q}: a node's payload is torn")
                values.append(words[0])
            out.append(tuple(values))
        return tuple(out)

    def live_objects(self, rt: Runtime) -> list[int]:
        try:
            return [n for q in range(self.p.queues) for n in self._walk(rt, q)
                    if not self._is_static(rt, n)]
        except (PmsimError, IndexError):
            return []
