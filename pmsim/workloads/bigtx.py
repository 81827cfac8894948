"""BigTx: Proteus's large-transaction microbenchmark (Table 3, card §9 and claim P14).

Proteus §7.3: "a microbenchmark with variable-sized, large transactions based on the linked list
benchmark. The number of elements updated per node is taken as a variable [...] Each
transaction completes once all elements on a node are updated", with 1024, 2048, 4096 and 8192
elements. Here the list is ``nodes`` static 64 B nodes ``[key, next, elems]`` linked in key
order behind a head sentinel (node 0); node ``k``'s ``elems`` points at its element array, a
static object of ``elements`` elements of ``element_words`` words. A transaction picks a node,
walks the list from the head to it (reading ``key`` and ``next`` of every node on the way) and
updates every element of the node: it reads the element and writes it back plus the
transaction's ``delta``, one write per element, so an element is one logged store (Proteus's
log-load/log-flush pair) and consecutive elements share 32 B log blocks.

Word ``j`` of node ``k``'s array is ``init(k) + s_k + j * GOLDEN``, where ``s_k`` is the sum of
the deltas applied to node ``k``: the reference model keeps ``s_k`` per node, and a node some
of whose elements were updated and others not (a torn transaction) is reported as torn. The
list's shape never changes (only the elements are written), so each node has its own lock and
transactions on different nodes run in parallel.

Sizes: the defaults are the paper's smallest transaction (1024 elements); crash campaigns use
``fuzz_params`` (16 elements, 3 nodes). The paper's element size and list length are not
given. With 4-byte elements one store in eight misses a 32 B-granular LLT, which matches
Table 3's "7x of 20x" filtered entries against Table 4's mean miss rate (about 35 %); pmsim
stores whole 8-byte words, so ``element_words=1`` (8 B) makes one store in four miss.
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
from .structures import check_locks

KEY, NEXT, ELEMS = 0, 1, 2  # the fields of a list node
NODE_WORDS = 8  # 64 B, cache-line nodes as in Proteus
GOLDEN = 0x9E3779B97F4A7C15
MAX_NODE_WORDS = 1 << 13
"""Most words in one node's element array (64 KiB): the largest heap block, which a
copy-on-write runtime copies a written node into."""
MAX_WORDS = 1 << 26
"""Most words of element data in all nodes (512 MiB)."""

Op = tuple[int, int]  # (node key 1..nodes, delta)


def array_words(elements: int, element_words: int) -> int:
    """Words of one element array, padded to whole 64 B lines (nodes never share a line)."""
    return -(-elements * element_words // 8) * 8


def initial(key: int, words: int) -> list[int]:
    """Node ``key``'s element words before any transaction."""
    return [((key << 40) + j * GOLDEN) & MASK64 for j in range(words)]


@dataclass(frozen=True)
class BigTxParams:
    elements: int = param(1024, "elements", "elements a transaction updates: every element of "
                          "one node (Proteus Table 3: 1024, 2048, 4096, 8192)")
    element_words: int = param(1, "words", "element size in 8-byte words; one write per element "
                               "(not given by Proteus, whose elements look like 4-byte ints: "
                               "documented default, the smallest pmsim store)")
    nodes: int = param(16, "nodes", "list length: nodes a transaction picks from uniformly (not "
                       "given by Proteus: documented default)")

    def __post_init__(self) -> None:
        label = "workload 'bigtx': parameter "
        check_types(self, label)
        check_range("bigtx", "elements", self.elements, 1)
        check_range("bigtx", "element_words", self.element_words, 1, MAX_NODE_WORDS)
        check_range("bigtx", "nodes", self.nodes, 1)
        words = array_words(self.elements, self.element_words)
        if words > MAX_NODE_WORDS:
            raise ConfigError(
                f"{label}elements={self.elements!r} is too large: a node holds at most "
                f"{MAX_NODE_WORDS} words (64 KiB, the largest block a copy-on-write runtime "
                f"copies it into), so with element_words={self.element_words} use elements <= "
                f"{MAX_NODE_WORDS // self.element_words}")
        check_most(label, "nodes", self.nodes, MAX_WORDS // words,
                   f"nodes x elements x element_words must be at most 2**26 words (512 MiB); "
                   f"use nodes <= {MAX_WORDS // words}")
        check_locks("bigtx", "nodes", self.nodes, self.nodes + 1, "use fewer nodes")


class BigTxModel(Model):
    """The reference: per node, the sum of the deltas applied to it (mod 2**64)."""

    def __init__(self, nodes: int) -> None:
        self.sums = [0] * nodes

    def apply(self, op: Op) -> None:
        key, delta = op
        self.sums[key - 1] = (self.sums[key - 1] + delta) & MASK64

    def snapshot(self) -> Hashable:
        return tuple(self.sums)


@register_workload
class BigTx(Workload):
    """Large transactions: update every element of one linked-list node (Proteus Table 3)."""

    name = "bigtx"
    Params = BigTxParams
    help = "update all elements of one linked-list node per transaction (Proteus's Table 3)"
    fuzz_params = {"elements": 16, "nodes": 3}

    @property
    def words(self) -> int:
        return array_words(self.p.elements, self.p.element_words)

    def spec(self) -> PMSpec:
        p = self.p
        return PMSpec(statics=(StaticArray("node", p.nodes + 1, NODE_WORDS),
                               StaticArray("elems", p.nodes, self.words)),
                      max_tx_writes=p.elements, max_tx_words=p.elements * p.element_words,
                      max_tx_allocs=0, max_tx_objects=1)

    def nlocks(self) -> int:
        return self.p.nodes + 1

    def init_data(self, rt: Runtime) -> None:
        n = self.p.nodes
        rt.init_words(rt.static("node", 0), KEY, [0, rt.static("node", 1) if n else 0, 0])
        for k in range(1, n + 1):
            nxt = rt.static("node", k + 1) if k < n else 0
            arr = rt.static("elems", k - 1)
            rt.init_words(rt.static("node", k), KEY, [k, nxt, arr])
            rt.init_words(arr, 0, initial(k, self.words))

    def next_op(self, tid: int, rng: np.random.Generator) -> Op:
        return int(rng.integers(1, self.p.nodes + 1)), int(rng.integers(1, 1 << 63))

    def locks_of(self, op: Op) -> tuple[int]:
        return (op[0],)

    def body(self, tx: Any, op: Op) -> Generator[Any, Any, None]:
        key, delta = op
        node = tx.read(tx.rt.static("node", 0), NEXT)
        for _ in range(self.p.nodes):
            k, nxt = tx.read_words(node, KEY, 2)
            if k == key:
                break
            node = nxt
            yield from tx.pause()
        else:
            raise PmsimError(f"workload 'bigtx': node {key} is not in the list")
        arr = tx.read(node, ELEMS)
        ew = self.p.element_words
        for e in range(self.p.elements):
            old = tx.read_words(arr, e * ew, ew)
            tx.write_words(arr, e * ew, [(w + delta) & MASK64 for w in old])
            if e % 64 == 63:
                yield from tx.pause()

    def model(self) -> Model:
        return BigTxModel(self.p.nodes)

    def read_data(self, rt: Runtime) -> Hashable:
        """Per node, in list order, the sum of the deltas its elements show; a list that is
        not ``1..nodes`` in order or a node whose elements disagree (torn) is corrupt."""
        nodes = rt.peek_static("node")
        elems = rt.peek_static("elems")
        n, used = self.p.nodes, self.p.elements * self.p.element_words
        out = []
        addr = int(nodes[0, NEXT])
        for k in range(1, n + 1):
            if addr != rt.static("node", k):
                return ("corrupt", f"node {k - 1}'s next is {addr:#x}, not node {k}")
            key, nxt, arr = (int(v) for v in nodes[k, :3])
            if key != k or arr != rt.static("elems", k - 1):
                return ("corrupt", f"node {k}: key {key}, elements at {arr:#x}")
            words = elems[k - 1, :used].tolist()
            init = initial(k, used)
            s = (words[0] - init[0]) & MASK64
            if any((w - i) & MASK64 != s for w, i in zip(words, init, strict=True)):
                bad = next(j for j, (w, i) in enumerate(zip(words, init, strict=True))
                           if (w - i) & MASK64 != s)
                return ("torn", k, bad // self.p.element_words)
            out.append(s)
            addr = nxt
        if addr != 0:
            return ("corrupt", f"the last node's next is {addr:#x}, not 0")
        return tuple(out)
