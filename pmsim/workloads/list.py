"""List: a sorted linked list of keys under per-node locks (DUDETx Fig. 7, card §8).

Every key ``k`` in ``1..keys`` has a fixed node, static object ``node[k]`` = ``[key, next,
live]`` (``next`` is a node index, 0 = the end; ``node[0]`` is the head sentinel). Inserting k
links its node, deleting k unlinks it and clears ``live``. Node i has lock i, which guards its
``next`` and ``live``; every lock is taken in ascending key order (a node's key never changes),
so no two bodies deadlock.

A transaction runs ``ops`` operations (insert, delete or lookup). Each operation locks in the
body itself (``body_locks``), in one of two ways:

* ``coupling=False`` (the paper's list): search from the head without locks, lock the
  predecessor (and, for an insert, the new node) and the current node, validate (the
  predecessor is live and still points at the current node) and retry after a failed
  validation. One operation is two-phase locking.
* ``coupling=True``: hand over hand from the head: hold a node's lock, take the next node's,
  release the first.

Locks are released at the end of each operation, so a transaction of several operations takes a
lock after it released another: two transactions can then hand locks to each other in both
directions (a cycle of card §5's <_d; paper Fig. 2b). Keys are owned by threads (thread t draws
the keys ``k`` with ``(k - 1) % threads == t``), so operations of different threads commute and
any order that keeps each thread's program order is a serialization order for the model, while
the nodes and locks they pass through are shared. On a runtime without lock coupling the body's
locks are held to the end and ``locks_of`` gives the coarse fallback, the head's lock 0, which
serializes the transactions.

Initially the odd keys are in the list.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import check_types, param
from ..errors import PmsimError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import Model, Workload, check_range, register_workload
from .structures import check_locks

INSERT, DELETE, LOOKUP = 0, 1, 2
KEY, NEXT, LIVE = 0, 1, 2  # the fields of a node


@dataclass(frozen=True)
class ListParams:
    keys: int = param(1024, "keys", "key universe 1..keys, one node and one lock each; the odd "
                      "keys are in the list at the start (the paper's size is not given: "
                      "documented default)")
    ops: int = param(1, "ops", "operations per transaction (the paper: 1; more make lock "
                     "hand-offs in both directions between two transactions possible)")
    insert_pct: float = param(40.0, "%", "share of inserts (not given by the paper: documented "
                              "default)")
    delete_pct: float = param(40.0, "%", "share of deletes; the rest are lookups")
    coupling: bool = param(False, "", "hand-over-hand locking instead of the paper's optimistic "
                           "search, lock and validate")

    def __post_init__(self) -> None:
        check_types(self, "workload 'list': parameter ")
        check_range("list", "keys", self.keys, 1)
        check_locks("list", "keys", self.keys, self.keys + 1, "use fewer keys")
        check_range("list", "ops", self.ops, 1, 64)
        check_range("list", "insert_pct", self.insert_pct, 0, 100)
        check_range("list", "delete_pct", self.delete_pct, 0, 100 - self.insert_pct)


class ListModel(Model):
    """The reference: the set of keys in the list."""

    def __init__(self, keys: int) -> None:
        self.present = {k for k in range(1, keys + 1) if k % 2}

    def apply(self, op: tuple[tuple[int, int], ...]) -> None:
        for kind, key in op:
            if kind == INSERT:
                self.present.add(key)
            elif kind == DELETE:
                self.present.discard(key)

    def snapshot(self) -> Hashable:
        return tuple(sorted(self.present))


@register_workload
class LinkedList(Workload):
    name = "list"
    Params = ListParams
    help = "a sorted linked list under per-node locks taken in the body (optimistic or coupling)"
    fuzz_params = {"keys": 6, "ops": 2, "coupling": True}
    body_locks = True

    def spec(self) -> PMSpec:
        n = self.p.ops
        return PMSpec(statics=(StaticArray("node", self.p.keys + 1, 3),), heap=(),
                      max_tx_writes=2 * n, max_tx_words=3 * n, max_tx_allocs=0,
                      max_tx_objects=2 * n)

    def nlocks(self) -> int:
        return self.p.keys + 1

    def init_data(self, rt: Runtime) -> None:
        present = [k for k in range(1, self.p.keys + 1) if k % 2]
        chain = [0, *present]
        for i in range(self.p.keys + 1):
            rt.init_words(rt.static("node", i), KEY, [i, 0, 1 if i == 0 or i % 2 else 0])
        for a, b in zip(chain, [*present, 0], strict=True):
            rt.init_words(rt.static("node", a), NEXT, [b])

    def owned(self, tid: int) -> list[int]:
        """The keys thread ``tid`` inserts, deletes and looks up."""
        return [k for k in range(1, self.p.keys + 1) if (k - 1) % self.threads == tid]

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[tuple[int, int], ...]:
        mine = self.owned(tid)
        if not mine:
            raise PmsimError(f"workload 'list': thread {tid} owns no key: use keys >= threads "
                             f"(keys={self.p.keys}, threads={self.threads})")
        out = []
        for _ in range(self.p.ops):
            r = rng.random() * 100
            kind = INSERT if r < self.p.insert_pct else (
                DELETE if r < self.p.insert_pct + self.p.delete_pct else LOOKUP)
            out.append((kind, mine[int(rng.integers(len(mine)))]))
        return tuple(out)

    def locks_of(self, op: Any) -> tuple[int]:
        """The coarse fallback for runtimes without lock coupling: the head's lock."""
        return (0,)

    # -- the body ----------------------------------------------------------------------------------
    def body(self, tx: Any, op: tuple[tuple[int, int], ...]) -> Generator[Any, Any, None]:
        for kind, key in op:
            if self.p.coupling:
                yield from self._coupled(tx, kind, key)
            else:
                yield from self._optimistic(tx, kind, key)

    def _node(self, tx: Any, i: int) -> int:
        return int(tx.rt.static("node", i))

    def _apply(self, tx: Any, kind: int, key: int, pred: int, curr: int) -> None:
        """The operation with ``pred`` and ``curr`` (and, for an insert, ``key``) locked."""
        if kind == INSERT and curr != key:
            tx.write_words(self._node(tx, key), NEXT, [curr, 1])
            tx.write(self._node(tx, pred), NEXT, key)
        elif kind == DELETE and curr == key:
            nxt = tx.read(self._node(tx, key), NEXT)
            tx.write(self._node(tx, pred), NEXT, nxt)
            tx.write(self._node(tx, key), LIVE, 0)
        elif kind == LOOKUP and curr:
            tx.read(self._node(tx, curr), KEY)

    def _optimistic(self, tx: Any, kind: int, key: int) -> Generator[Any, Any, None]:
        """Search without locks, lock, validate, retry (paper §6.8)."""
        bound = self.p.keys + 1
        while True:
            pred, curr = 0, tx.read(self._node(tx, 0), NEXT)
            steps = 0
            while curr and curr < key:
                pred, curr = curr, tx.read(self._node(tx, curr), NEXT)
                steps += 1
                if steps > bound:
                    raise PmsimError("workload 'list': the search is longer than the list")
                yield from tx.pause()
            held = [pred, key] if kind == INSERT and curr != key else [pred]
            if curr:
                held.append(curr)
            for i in held:
                yield from tx.lock(i)
            p = self._node(tx, pred)
            valid = (pred == 0 or tx.read(p, LIVE)) and tx.read(p, NEXT) == curr
            if valid:
                self._apply(tx, kind, key, pred, curr)
            for i in reversed(held):
                yield from tx.unlock(i)
            if valid:
                return
            yield from tx.pause()

    def _coupled(self, tx: Any, kind: int, key: int) -> Generator[Any, Any, None]:
        """Hand over hand from the head: at most two nodes locked (three for an insert)."""
        pred = 0
        yield from tx.lock(0)
        curr = tx.read(self._node(tx, 0), NEXT)
        while True:
            if kind == INSERT and curr != key and (curr == 0 or curr > key):
                yield from tx.lock(key)
            if curr:
                yield from tx.lock(curr)
            if curr == 0 or curr >= key:
                break
            yield from tx.unlock(pred)
            pred, curr = curr, tx.read(self._node(tx, curr), NEXT)
            yield from tx.pause()
        self._apply(tx, kind, key, pred, curr)
        if curr:
            yield from tx.unlock(curr)
        if kind == INSERT and curr != key:
            yield from tx.unlock(key)
        yield from tx.unlock(pred)

    # -- reading -----------------------------------------------------------------------------------
    def model(self) -> Model:
        return ListModel(self.p.keys)

    def read_data(self, rt: Runtime) -> Hashable:
        """The keys from the head; a node that is not live, out of order or a cycle is corrupt."""
        nodes = rt.peek_static("node")
        out = []
        i = int(nodes[0, NEXT])
        while i:
            if i > self.p.keys or len(out) > self.p.keys:
                raise PmsimError(f"node index {i} out of range, or a cycle")
            key, nxt, live = (int(v) for v in nodes[i])
            if key != i or live != 1 or (out and key <= out[-1]):
                return ("corrupt", f"node {i}: key {key}, live {live} after {out[-1:]}")
            out.append(key)
            i = nxt
        return tuple(out)
