"""KV: a persistent chained hash table with integer keys and values (card §7, K-V store).

Buckets are a static array of head pointers; a node is a heap object ``[key, value, next]``.
Each transaction is one get, put (update in place, or allocate and link a node at the head) or
delete (unlink and free), under the bucket's lock. ``get_ns`` and ``put_ns`` charge the server's
time per request outside the transaction (receiving, parsing and answering the client): a K-V
server's socket I/O, which the papers' K-V transactions of tens of ns sit inside.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import check_most, check_types, param
from ..errors import ConfigError, PmsimError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import MASK64, Model, Workload, check_range, register_workload

GET, PUT, DELETE = 0, 1, 2
NODE = 3  # key, value, next


@dataclass(frozen=True)
class KVParams:
    buckets: int = param(16, "buckets", "hash-table buckets (one lock each; at most 2**18)")
    keys: int = param(64, "keys", "key space: keys are 1..keys (at most 2**24)")
    get_pct: float = param(50.0, "%", "share of gets")
    put_pct: float = param(40.0, "%", "share of puts (the rest are deletes)")
    get_ns: float = param(0.0, "ns", "server time per get outside the transaction (socket I/O "
                          "and parsing; 0: none)")
    put_ns: float = param(0.0, "ns", "server time per put or delete outside the transaction")

    def __post_init__(self) -> None:
        label = "workload 'kv': parameter "
        check_types(self, label)
        check_range("kv", "buckets", self.buckets, 1)
        check_most(label, "buckets", self.buckets, 1 << 18,
                   "use at most 2**18 = 262144 buckets (each has a lock, a SimPy resource)")
        check_most(label, "keys", self.keys, 1 << 24,
                   "use at most 2**24 = 16777216 keys (the heap holds a node per key)")
        check_range("kv", "keys", self.keys, 1)
        check_range("kv", "get_pct", self.get_pct, 0, 100)
        check_range("kv", "put_pct", self.put_pct, 0, 100 - self.get_pct)
        for name in ("get_ns", "put_ns"):
            v = getattr(self, name)
            if not 0 <= v <= 1e9:  # NaN fails too
                raise ConfigError(f"workload 'kv': parameter {name}={v!r} must be a time in "
                                  "[0, 1e9] ns")


class KVModel(Model):
    def __init__(self) -> None:
        self.d: dict[int, int] = {}

    def apply(self, op: tuple[int, int, int]) -> None:
        kind, key, value = op
        if kind == PUT:
            self.d[key] = value
        elif kind == DELETE:
            self.d.pop(key, None)

    def snapshot(self) -> Hashable:
        return tuple(sorted(self.d.items()))


@register_workload
class KV(Workload):
    name = "kv"
    Params = KVParams
    help = "chained hash table: get/put/delete mix, nodes allocated and freed"

    def spec(self) -> PMSpec:
        return PMSpec(statics=(StaticArray("buckets", self.p.buckets, 1),),
                      heap=((NODE, NODE, self.p.keys),), max_tx_writes=4, max_tx_words=8,
                      max_tx_allocs=2, max_tx_objects=2)

    def nlocks(self) -> int:
        return self.p.buckets

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[int, int, int]:
        r = float(rng.random()) * 100
        kind = GET if r < self.p.get_pct else PUT if r < self.p.get_pct + self.p.put_pct else DELETE
        return kind, int(rng.integers(1, self.p.keys + 1)), int(rng.integers(1, 1 << 62))

    def transaction(self, cpu: Any, rt: Runtime, op: Any) -> Generator[Any, Any, None]:
        """The request's I/O (``get_ns``/``put_ns``, outside the transaction), then the
        transaction."""
        ns = self.p.get_ns if op[0] == GET else self.p.put_ns
        if ns:
            cpu.work(ns)
        yield from super().transaction(cpu, rt, op)

    def locks_of(self, op: tuple[int, int, int]) -> tuple[int]:
        return (op[1] % self.p.buckets,)

    def body(self, tx: Any, op: tuple[int, int, int]) -> Generator[Any, Any, None]:
        kind, key, value = op
        bucket = tx.rt.static("buckets", key % self.p.buckets)
        prev, node = 0, tx.read(bucket, 0)
        while node and tx.read(node, 0) != key:
            yield from tx.pause()
            prev, node = node, tx.read(node, 2)
        if kind == PUT:
            if node:
                tx.write(node, 1, value & MASK64)
            else:
                new = tx.alloc(NODE)
                tx.write_words(new, 0, [key, value, tx.read(bucket, 0)])
                tx.write(bucket, 0, new)
        elif kind == DELETE and node:
            nxt = tx.read(node, 2)
            if prev:
                tx.write(prev, 2, nxt)
            else:
                tx.write(bucket, 0, nxt)
            tx.free(node)

    def model(self) -> Model:
        return KVModel()

    def _nodes(self, rt: Runtime) -> list[int]:
        out: list[int] = []
        limit = sum(c.nblocks for c in rt.layout.heap)
        for bi in range(self.p.buckets):
            node = rt.peek(rt.static("buckets", bi), 0)
            while node:
                out.append(node)
                if len(out) > limit:
                    raise PmsimError("the hash chains hold a cycle")
                node = rt.peek(node, 2)
        return out

    def read_data(self, rt: Runtime) -> Hashable:
        items = [(rt.peek(n, 0), rt.peek(n, 1)) for n in self._nodes(rt)]
        if len({k for k, _ in items}) != len(items):
            return ("corrupt", "a key appears twice")
        return tuple(sorted(items))

    def live_objects(self, rt: Runtime) -> list[int]:
        try:
            return self._nodes(rt)
        except (PmsimError, IndexError):
            return []
