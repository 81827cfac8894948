"""BTree: B+-trees (DUDETx B+-tree, LOC B+Tree, Proteus BT).

``trees`` independent trees of order ``node_keys`` (at most that many keys a node). Values live
in the leaves, which are linked left to right; inner nodes hold separators (a separator is at
most every key of the subtree to its right and above every key to its left). Nodes are heap
objects of one size, with their entries interleaved so that an insert or delete shifts one
contiguous span:

* leaf: ``[meta, next, key0, value0 words..., key1, value1 words..., ...]``
* inner: ``[meta, child0, key0, child1, key1, ..., child_n]``

where ``meta`` is the entry count, with bit 32 set in leaves. An insert into a full node splits
it (the split can cascade to a new root); a delete that leaves a node under half full borrows
from a sibling or merges with it (the merge can cascade and shrink the tree). One lock per tree.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Generator
from dataclasses import dataclass
from itertools import chain, pairwise
from typing import Any

from ..config import check_most, param
from ..errors import PmsimError
from ..runtimes.base import Runtime
from .base import check_range, register_workload
from .structures import (
    DELETE,
    INSERT,
    Nodes,
    TreeWorkload,
    btree_height,
    check_locks,
    check_map_params,
    check_node,
    check_value,
)

META, NEXT = 0, 1
LEAF = 1 << 32
COUNT = LEAF - 1


@dataclass(frozen=True)
class BTreeParams:
    trees: int = param(16, "trees", "independent trees, one lock each (Proteus BT: 16; DUDETx "
                       "and LOC use one tree)")
    node_keys: int = param(4, "keys", "most keys a node holds (Proteus: B-trees of about 3 "
                           "keys a node, the default; LOC: 200 pairs in 4 KB nodes; DUDETx: "
                           "not given)")
    keys: int = param(256, "keys", "key space per tree: keys are 1..keys (not given in the "
                      "papers; default 256)")
    initial: int = param(128, "keys", "keys inserted in each tree before the run (Proteus "
                         "fast-forwards 100 k operations; default half the key space, where a "
                         "50/50 mix settles)")
    insert_pct: float = param(50.0, "%", "share of inserts (DUDETx: 100% random inserts; LOC: "
                              "50/50 insert/delete; Proteus: not given, the card's default "
                              "50/50)")
    delete_pct: float = param(50.0, "%", "share of deletes (the rest are lookups)")
    ops_per_tx: int = param(1, "ops", "operations per transaction (DUDETx, Proteus: one; LOC: 4)")
    value_words: int = param(1, "words", "words per value (LOC: 8 B keys, 4 B values)")

    def __post_init__(self) -> None:
        check_map_params("btree", self, self.trees)
        check_range("btree", "trees", self.trees, 1)
        check_range("btree", "node_keys", self.node_keys, 2)
        check_most("workload 'btree': parameter ", "node_keys",
                   self.node_keys * (1 + self.value_words), 8000,
                   "a node must fit a 64 KiB heap block on every runtime: node_keys x (1 + "
                   "value_words) at most 8000 words")
        check_locks("btree", "trees", self.trees, self.trees, "use fewer trees")


def _count(n: list[int]) -> int:
    return n[META] & COUNT


class _Shape:
    """Encoding and decoding of the nodes of one tree order and value size."""

    def __init__(self, order: int, value_words: int) -> None:
        self.order = order
        self.entry = 1 + value_words
        self.words = max(2 + order * self.entry, 2 + 2 * order)
        self.min_leaf = (order + 1) // 2
        self.min_inner = order // 2

    def entries(self, n: list[int]) -> list[list[int]]:
        """A leaf's ``[key, value words...]`` entries."""
        e = self.entry
        return [n[j: j + e] for j in range(2, 2 + _count(n) * e, e)]

    def set_leaf(self, n: list[int], entries: list[list[int]], nxt: int) -> None:
        e = self.entry
        n[META] = LEAF | len(entries)
        n[NEXT] = nxt
        n[2: 2 + len(entries) * e] = list(chain.from_iterable(entries))

    @staticmethod
    def inner(n: list[int]) -> tuple[list[int], list[int]]:
        """An inner node's separators and children."""
        c = _count(n)
        return n[2: 2 + 2 * c: 2], n[1: 3 + 2 * c: 2]

    @staticmethod
    def set_inner(n: list[int], keys: list[int], children: list[int]) -> None:
        n[META] = len(keys)
        n[1: 1 + 2 * len(children): 2] = children
        n[2: 2 + 2 * len(keys): 2] = keys


@register_workload
class BTree(TreeWorkload):
    name = "btree"
    Params = BTreeParams
    help = "B+-trees (DUDETx, LOC, Proteus BT): leaf splits and merges cascade up the tree"
    fuzz_params = {"trees": 1, "node_keys": 2, "keys": 8, "initial": 4, "value_words": 1}

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.shape = _Shape(self.p.node_keys, self.p.value_words)

    @property
    def node_words(self) -> int:
        return self.shape.words

    def height(self) -> int:
        return btree_height(self.p.keys, self.p.node_keys)

    def max_nodes(self) -> int:
        """Every non-root leaf is at least half full and an inner node has two or more
        children, so a tree of n keys has at most 2 (n // min_leaf + 1) nodes."""
        return 2 * (self.p.trees + self.max_keys() // self.shape.min_leaf)

    def objects_per_op(self) -> int:
        """An insert: the path, a new node a level and a new root; a delete: the path and a
        sibling a level; and the root pointer."""
        return 2 * self.height() + 2

    def allocs_per_op(self) -> int:
        """A split a level and a new root, or a merge a level (and the root collapsing)."""
        return self.height() + 1

    def operate(self, nodes: Nodes, root: list[int], kind: int, key: int,
                vals: list[int]) -> Generator[Any, Any, None]:
        sh = self.shape
        x = root[0]
        if not x:
            if kind == INSERT:
                leaf, n = nodes.new()
                sh.set_leaf(n, [[key, *vals]], 0)
                root[0] = leaf
            return
        path: list[tuple[int, int]] = []  # (inner node, index of the child taken)
        while True:
            yield from nodes.tx.pause()
            n = nodes.get(x)
            if n[META] & LEAF:
                break
            keys, children = sh.inner(n)
            i = bisect_right(keys, key)
            path.append((x, i))
            x = children[i]
        c, e = _count(n), sh.entry
        pos = bisect_left(n[2: 2 + c * e: e], key)
        at = 2 + pos * e  # the entry's first word
        found = pos < c and n[at] == key
        if kind == INSERT:
            if found:
                n[at + 1: at + e] = vals
            elif c < sh.order:  # room in the leaf: shift the later entries up by one
                n[at: 2 + (c + 1) * e] = [key, *vals, *n[at: 2 + c * e]]
                n[META] = LEAF | (c + 1)
            else:
                entries = sh.entries(n)
                entries.insert(pos, [key, *vals])
                self._insert(nodes, root, path, x, entries)
        elif kind == DELETE and found:
            n[at: 2 + (c - 1) * e] = n[at + e: 2 + c * e]
            n[META] = LEAF | (c - 1)
            self._rebalance(nodes, root, path, x)

    def _insert(self, nodes: Nodes, root: list[int], path: list[tuple[int, int]], x: int,
                entries: list[list[int]]) -> None:
        """Store ``entries`` in leaf ``x``, splitting it and its ancestors as needed."""
        sh = self.shape
        n = nodes.get(x)
        if len(entries) <= sh.order:
            sh.set_leaf(n, entries, n[NEXT])
            return
        half = (sh.order + 1) // 2
        right, rn = nodes.new()
        sh.set_leaf(rn, entries[half:], n[NEXT])
        sh.set_leaf(n, entries[:half], right)
        sep = entries[half][0]
        while path:
            p, i = path.pop()
            pn = nodes.get(p)
            keys, children = sh.inner(pn)
            keys.insert(i, sep)
            children.insert(i + 1, right)
            if len(keys) <= sh.order:
                sh.set_inner(pn, keys, children)
                return
            mid = sh.order // 2
            right, rn = nodes.new()
            sh.set_inner(rn, keys[mid + 1:], children[mid + 1:])
            sh.set_inner(pn, keys[:mid], children[:mid + 1])
            sep = keys[mid]
        new, nn = nodes.new()
        sh.set_inner(nn, [sep], [root[0], right])
        root[0] = new

    def _rebalance(self, nodes: Nodes, root: list[int], path: list[tuple[int, int]],
                   x: int) -> None:
        """After a delete from leaf ``x``: borrow from or merge with a sibling while a node is
        under half full, up the path; collapse an empty root."""
        sh = self.shape
        while True:
            xn = nodes.get(x)
            leaf = bool(xn[META] & LEAF)
            if not path:
                if not _count(xn):
                    root[0] = 0 if leaf else xn[1]
                    nodes.free(x)
                return
            if _count(xn) >= (sh.min_leaf if leaf else sh.min_inner):
                return
            p, i = path.pop()
            pn = nodes.get(p)
            pkeys, pch = sh.inner(pn)
            if i > 0:
                s = pch[i - 1]
                sn = nodes.get(s)
                if _count(sn) > (sh.min_leaf if leaf else sh.min_inner):  # borrow from the left
                    if leaf:
                        se, xe = sh.entries(sn), sh.entries(xn)
                        xe.insert(0, se.pop())
                        sh.set_leaf(sn, se, sn[NEXT])
                        sh.set_leaf(xn, xe, xn[NEXT])
                        pkeys[i - 1] = xe[0][0]
                    else:
                        (sk, sc), (xk, xc) = sh.inner(sn), sh.inner(xn)
                        xk.insert(0, pkeys[i - 1])
                        xc.insert(0, sc.pop())
                        pkeys[i - 1] = sk.pop()
                        sh.set_inner(sn, sk, sc)
                        sh.set_inner(xn, xk, xc)
                    sh.set_inner(pn, pkeys, pch)
                    return
                if leaf:  # merge x into its left sibling
                    sh.set_leaf(sn, sh.entries(sn) + sh.entries(xn), xn[NEXT])
                else:
                    (sk, sc), (xk, xc) = sh.inner(sn), sh.inner(xn)
                    sh.set_inner(sn, sk + [pkeys[i - 1]] + xk, sc + xc)
                nodes.free(x)
                del pkeys[i - 1], pch[i]
            else:
                s = pch[1]
                sn = nodes.get(s)
                if _count(sn) > (sh.min_leaf if leaf else sh.min_inner):  # borrow from the right
                    if leaf:
                        se, xe = sh.entries(sn), sh.entries(xn)
                        xe.append(se.pop(0))
                        sh.set_leaf(sn, se, sn[NEXT])
                        sh.set_leaf(xn, xe, xn[NEXT])
                        pkeys[0] = se[0][0]
                    else:
                        (sk, sc), (xk, xc) = sh.inner(sn), sh.inner(xn)
                        xk.append(pkeys[0])
                        xc.append(sc.pop(0))
                        pkeys[0] = sk.pop(0)
                        sh.set_inner(sn, sk, sc)
                        sh.set_inner(xn, xk, xc)
                    sh.set_inner(pn, pkeys, pch)
                    return
                if leaf:  # merge the right sibling into x
                    sh.set_leaf(xn, sh.entries(xn) + sh.entries(sn), sn[NEXT])
                else:
                    (sk, sc), (xk, xc) = sh.inner(sn), sh.inner(xn)
                    sh.set_inner(xn, xk + [pkeys[0]] + sk, xc + sc)
                nodes.free(s)
                del pkeys[0], pch[1]
            sh.set_inner(pn, pkeys, pch)
            x = p

    def walk(self, rt: Runtime, root: int) -> tuple[list[int], list[tuple[int, int]]]:
        """Depth-first walk checking the search order, the fill of every node (at most
        node_keys; at least half full below the root, which is not empty), that all leaves
        are at one depth and that the leaf links run through the leaves in order."""
        sh = self.shape
        p = self.p
        limit = self.height()
        nodes: list[int] = []
        leaves: list[tuple[int, int]] = []  # (leaf, its next link)
        items: list[tuple[int, int]] = []
        seen: set[int] = set()
        depths: set[int] = set()

        def visit(x: int, lo: int, hi: int, depth: int) -> None:
            if depth > limit:
                raise PmsimError(f"B+-tree deeper than {limit} levels (a cycle?)")
            check_node(rt, x, seen)
            nodes.append(x)
            n = rt.peek_words(x, 0, sh.words)
            leaf, c = bool(n[META] & LEAF), _count(n)
            least = 1 if depth == 1 else sh.min_leaf if leaf else sh.min_inner
            if not least <= c <= sh.order or n[META] >> 33:
                raise PmsimError(f"B+-tree: node {x:#x} holds {c} keys, not "
                                 f"{least}..{sh.order}")
            if leaf:
                depths.add(depth)
                leaves.append((x, n[NEXT]))
                prev = lo - 1
                for ent in sh.entries(n):
                    k = ent[0]
                    if not max(lo, prev + 1) <= k < hi:
                        raise PmsimError(f"B+-tree: key {k} out of order in leaf {x:#x}")
                    items.append((k, check_value(ent[1:], f"leaf {x:#x}")))
                    prev = k
                return
            keys, children = sh.inner(n)
            bounds = [lo, *keys, hi]
            if any(a >= b for a, b in pairwise(bounds)):
                raise PmsimError(f"B+-tree: separators of node {x:#x} out of order")
            for j, child in enumerate(children):
                visit(child, bounds[j], bounds[j + 1], depth + 1)

        if root:
            visit(root, 1, p.keys + 1, 1)
        if len(depths) > 1:
            raise PmsimError(f"B+-tree: leaves at depths {sorted(depths)}")
        follows = [leaf for leaf, _ in leaves[1:]] + [0]
        for (_, nxt), follow in zip(leaves, follows[:len(leaves)], strict=True):
            if nxt != follow:
                raise PmsimError("B+-tree: the leaf links skip or reorder leaves")
        return nodes, items
