"""A linked-list stack: push builds a node, persists it, then publishes it at the head.

The head pointer is the commit point: a node is reachable only once it is durable. Nodes come
from the heap and are never reused, as in a log-structured allocator; a crash may leak one.
"""

from __future__ import annotations

from collections.abc import Hashable

from ..api import PM, PMProgram, operation

HEAD = 0
LIMIT = 10_000


class ListModel:
    """The reference: a Python list, top last."""

    def __init__(self) -> None:
        self.items: list[int] = []

    def push(self, v: int) -> None:
        self.items.append(v)

    def pop(self) -> int | None:
        return self.items.pop() if self.items else None

    def state(self) -> Hashable:
        return tuple(reversed(self.items))


class PStack(PMProgram):
    """Persist the node, then publish it."""

    size = 64
    heap_per_op = 16
    model = ListModel

    @operation(args=lambda rng: (int(rng.integers(1, 1 << 32)),), weight=2)
    def push(self, pm: PM, v: int) -> None:
        node = pm.alloc(16)
        pm.store(node, v)
        pm.store(node + 8, pm.load(HEAD))
        self._publish(pm, node)

    def _publish(self, pm: PM, node: int) -> None:
        pm.persist(node, 16, step="push.node")
        pm.store(HEAD, node)
        pm.persist(HEAD, step="push.publish")

    @operation()
    def pop(self, pm: PM) -> int | None:
        top = pm.load(HEAD)
        if not top:
            return None
        v = pm.load(top)
        pm.store(HEAD, pm.load(top + 8))
        pm.persist(HEAD, step="pop.unlink")
        return v

    def state(self, pm: PM) -> Hashable:
        out, p = [], pm.load(HEAD)
        while p and len(out) < LIMIT:
            out.append(pm.load(p))
            p = pm.load(p + 8)
        return tuple(out)

    def check(self, pm: PM) -> list[str]:
        p, n = pm.load(HEAD), 0
        while p and n < LIMIT:
            if p < self.size or p % 8:
                return [f"node {n} is at {p:#x}, not a heap block"]
            p, n = pm.load(p + 8), n + 1
        return ["the list has a cycle"] if p else []


class PStackEarlyPublish(PStack):
    """BROKEN: the pointer is published before its target is persistent (node and head are
    flushed together after the head store): the head may persist first, pointing at a node
    whose value and link never persisted."""

    def _publish(self, pm: PM, node: int) -> None:
        pm.store(HEAD, node)
        pm.flush(node, 16, step="push.flush-node")
        pm.persist(HEAD, step="push.publish")
