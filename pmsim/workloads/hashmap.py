"""HashMap: chained hash maps (Proteus HM; the NV-HTM card gives no hash-map parameters).

``maps`` independent maps of ``buckets`` buckets each; a bucket is a static head pointer and a
node is a heap object ``[key, next, value words...]``. An insert updates the key's node or
allocates one and links it at the head of its bucket; a delete unlinks and frees it. Locks
stripe each map's buckets (``stripes`` locks a map, bucket b under lock b mod stripes): an
operation touches one bucket, so it takes one lock.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any

from ..config import check_most, param
from ..errors import PmsimError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import check_range, register_workload
from .structures import (
    DELETE,
    INSERT,
    LOOKUP,
    MapWorkload,
    TxOp,
    check_locks,
    check_map_params,
    check_value,
    heap_blocks,
    mix,
    value_words,
)

KEY, NEXT, VALUE = 0, 1, 2  # fields of a node


@dataclass(frozen=True)
class HashMapParams:
    maps: int = param(16, "maps", "independent hash maps (Proteus HM: 16)")
    buckets: int = param(1024, "buckets", "buckets per map (not given in Proteus; 1024 is the "
                         "card's default)")
    keys: int = param(1024, "keys", "key space per map: keys are 1..keys (not given; default "
                      "1024)")
    initial: int = param(512, "keys", "keys inserted in each map before the run (Proteus "
                         "fast-forwards 100 k operations; default half the key space, where a "
                         "50/50 mix settles)")
    stripes: int = param(1, "locks", "locks per map, bucket b under lock b mod stripes "
                         "(Proteus: one lock per map)")
    insert_pct: float = param(50.0, "%", "share of inserts (not given in Proteus; the card's "
                              "default 50/50 insert/delete)")
    delete_pct: float = param(50.0, "%", "share of deletes (the rest are lookups)")
    ops_per_tx: int = param(1, "ops", "operations per transaction (Proteus: one; LOC's Hash: 4)")
    value_words: int = param(6, "words", "words per value (Proteus: 64 B nodes, so 6 beside "
                             "the key and the link)")

    def __post_init__(self) -> None:
        check_map_params("hashmap", self, self.maps)
        label = "workload 'hashmap': parameter "
        check_range("hashmap", "maps", self.maps, 1)
        check_range("hashmap", "buckets", self.buckets, 1)
        check_most(label, "buckets", self.maps * self.buckets, 1 << 22,
                   "maps x buckets must be at most 2**22 bucket heads")
        check_range("hashmap", "stripes", self.stripes, 1, self.buckets)
        check_locks("hashmap", "stripes", self.stripes, self.maps * self.stripes,
                    "use fewer maps or stripes")


@register_workload
class HashMap(MapWorkload):
    name = "hashmap"
    Params = HashMapParams
    help = "chained hash maps (Proteus HM): inserts allocate nodes, deletes free them"
    fuzz_params = {"maps": 2, "buckets": 2, "keys": 6, "initial": 2, "stripes": 2,
                   "value_words": 1, "insert_pct": 50.0, "delete_pct": 40.0}

    @property
    def node_words(self) -> int:
        return 2 + self.p.value_words

    def instances(self) -> int:
        return self.p.maps

    def bucket(self, m: int, key: int) -> int:
        return m * self.p.buckets + mix(key) % self.p.buckets

    def spec(self) -> PMSpec:
        p = self.p
        n = p.ops_per_tx
        heads = p.maps * p.buckets
        written = None if self.txs is None else min(heads, self.threads * self.txs * n)
        # an operation writes a new node whole and a head, or a value, or one link
        return PMSpec(statics=(StaticArray("buckets", heads, 1, written),),
                      heap=((self.node_words, self.node_words, self.max_keys()),),
                      max_tx_writes=2 * n, max_tx_words=(self.node_words + 1) * n,
                      max_tx_allocs=n, max_tx_objects=2 * n)

    def nlocks(self) -> int:
        return self.p.maps * self.p.stripes if self.threads > 1 else 0

    def locks_of(self, op: TxOp) -> list[int]:
        p = self.p
        return sorted({m * p.stripes + mix(key) % p.buckets % p.stripes for _, m, key, _ in op})

    def body(self, tx: Any, op: TxOp) -> Generator[Any, Any, None]:
        p = self.p
        for j, (kind, m, key, value) in enumerate(op):
            if j:
                yield from tx.pause()
            head = tx.rt.static("buckets", self.bucket(m, key))
            prev, node = 0, tx.read(head, 0)
            while node and tx.read(node, KEY) != key:
                yield from tx.pause()
                prev, node = node, tx.read(node, NEXT)
            if kind == INSERT:
                vals = value_words(value, p.value_words)
                if node:
                    tx.write_words(node, VALUE, vals)
                else:
                    new = tx.alloc(self.node_words)
                    tx.write_words(new, KEY, [key, tx.read(head, 0), *vals])
                    tx.write(head, 0, new)
            elif kind == DELETE and node:
                nxt = tx.read(node, NEXT)
                if prev:
                    tx.write(prev, NEXT, nxt)
                else:
                    tx.write(head, 0, nxt)
                tx.free(node)
            elif kind == LOOKUP and node:
                tx.read_words(node, VALUE, p.value_words)

    def _walk(self, rt: Runtime) -> tuple[list[int], list[list[tuple[int, int]]]]:
        """Every node, and each map's items; a PmsimError on a broken chain (a cycle, a node
        reachable twice, a key in the wrong bucket or map, a key twice, a torn value)."""
        p = self.p
        limit = heap_blocks(rt)
        heads = rt.peek_static("buckets")[:, 0].tolist()
        nodes: list[int] = []
        seen: set[int] = set()
        maps: list[dict[int, int]] = [{} for _ in range(p.maps)]
        for b in (i for i, h in enumerate(heads) if h):
            m = b // p.buckets
            node = heads[b]
            while node:
                if node in seen:
                    raise PmsimError(f"node {node:#x} is reachable twice (a cycle or a shared "
                                     "tail)")
                seen.add(node)
                nodes.append(node)
                if len(nodes) > limit:
                    raise PmsimError("the chains hold more nodes than the heap")
                key, nxt, *vals = rt.peek_words(node, KEY, self.node_words)
                if not 1 <= key <= p.keys or self.bucket(m, key) != b:
                    raise PmsimError(f"bucket {b} holds key {key}, which does not hash to it")
                if key in maps[m]:
                    raise PmsimError(f"map {m} holds key {key} twice")
                maps[m][key] = check_value(vals, f"node {node:#x}")
                node = nxt
        return nodes, [sorted(d.items()) for d in maps]

    def read_data(self, rt: Runtime) -> Hashable:
        return tuple(tuple(items) for items in self._walk(rt)[1])

    def live_objects(self, rt: Runtime) -> list[int]:
        try:
            return self._walk(rt)[0]
        except (PmsimError, IndexError):
            return []
