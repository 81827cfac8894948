"""RBTree: red-black trees (LOC's RBTree, Proteus RT).

``trees`` independent trees; a node is a heap object ``[key, left, right, color, value
words...]`` with no parent link: an operation keeps the path it went down and rebalances
bottom-up along it (CLRS insert and delete fix-ups). A delete of a node with two children
moves its successor's key and value into it and removes the successor. One lock per tree.
:func:`bulk_nodes` lays a balanced tree out at once from its keys, in this node layout (for
initial data too large to insert key by key: Vacation at STAMP's 2**20 records).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import param
from ..errors import PmsimError
from ..runtimes.base import Runtime
from .base import check_range, register_workload
from .structures import (
    DELETE,
    INSERT,
    Nodes,
    TreeWorkload,
    check_locks,
    check_map_params,
    check_node,
    check_value,
    rb_height,
    rotate,
    set_child,
)

KEY, LEFT, RIGHT, COLOR, VALUE = 0, 1, 2, 3, 4  # fields of a node
BLACK, RED = 0, 1


@dataclass(frozen=True)
class RBTreeParams:
    trees: int = param(16, "trees", "independent trees, one lock each (Proteus RT: 16)")
    keys: int = param(256, "keys", "key space per tree: keys are 1..keys (not given in LOC or "
                      "Proteus; default 256)")
    initial: int = param(128, "keys", "keys inserted in each tree before the run (Proteus "
                         "fast-forwards 100 k operations; default half the key space, where a "
                         "50/50 mix settles)")
    insert_pct: float = param(50.0, "%", "share of inserts (LOC: 50/50 insert/delete; Proteus: "
                              "not given, the card's default 50/50)")
    delete_pct: float = param(50.0, "%", "share of deletes (the rest are lookups)")
    ops_per_tx: int = param(1, "ops", "operations per transaction (Proteus: one; LOC: 4)")
    value_words: int = param(4, "words", "words per value (Proteus: 64 B nodes, so 4 beside "
                             "key, links and color)")

    def __post_init__(self) -> None:
        check_map_params("rbtree", self, self.trees)
        check_range("rbtree", "trees", self.trees, 1)
        check_locks("rbtree", "trees", self.trees, self.trees, "use fewer trees")


def balanced(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A perfectly balanced red-black tree of the ranks ``0..n-1``, built level by level from
    the sorted order (each subtree's root is the middle of its range, so sibling subtrees
    differ by at most one node): the left and right child rank of every rank (-1: none) and
    its color. It has ``ceil(log2(n + 1))`` levels, every one but the last full, and the root
    is the middle rank ``n // 2``.

    Colors go by level, so every path to a nil link has as many black nodes as long as an
    incomplete last level is red (its nil links are one level below the others'); above it
    every second level is red (never the root, never two adjacent levels). An all-black tree
    (red only on the last level) is as valid, but a delete's fix-up then recolors its way up
    the tree: on Vacation at 2**16 records it logged 3-10% more NV-HTM entries a transaction
    than the trees random inserts build; with red levels every second level, within 1.5%."""
    left = np.full(n, -1, np.int64)
    right = np.full(n, -1, np.int64)
    depth = np.zeros(n, np.int64)
    lo, hi = np.zeros(1 if n else 0, np.int64), np.full(1 if n else 0, n, np.int64)
    levels = 0  # lo, hi: the ranges of one level's subtrees; their middles are its nodes
    while lo.size:
        mid = (lo + hi) // 2
        depth[mid] = levels
        has_l, has_r = lo < mid, mid + 1 < hi
        left[mid[has_l]] = (lo[has_l] + mid[has_l]) // 2
        right[mid[has_r]] = (mid[has_r] + 1 + hi[has_r]) // 2
        lo = np.concatenate([lo[has_l], mid[has_r] + 1])
        hi = np.concatenate([mid[has_l], hi[has_r]])
        levels += 1
    red_top = levels - 1 if n + 1 != 1 << levels else levels  # an incomplete last level is red
    red = (depth > 0) & ((red_top - depth) % 2 == 0)
    return left, right, np.where(red, RED, BLACK).astype(np.uint64)


def bulk_nodes(keys: np.ndarray, objs: np.ndarray) -> tuple[int, np.ndarray]:
    """The root and the first words ``[key, left, right, color]`` of every node of a balanced
    red-black tree (:func:`balanced`) holding the distinct ``keys``, the node of ``keys[j]``
    at heap object ``objs[j]``: an ``(n, 4)`` uint64 array in the order of ``keys``, the node
    layout of :class:`RBTree` (its value words follow)."""
    order = np.argsort(keys, kind="stable")  # rank -> position in keys
    left, right, color = balanced(len(keys))
    at = np.append(objs[order].astype(np.uint64), np.uint64(0))  # rank -> object; -1 -> nil
    words = np.empty((len(keys), VALUE), np.uint64)
    words[:, KEY] = keys
    words[order, LEFT] = at[left]
    words[order, RIGHT] = at[right]
    words[order, COLOR] = color
    return int(at[len(keys) // 2]), words


def _color(nodes: Nodes, x: int) -> int:
    return nodes.get(x)[COLOR] if x else BLACK


@register_workload
class RBTree(TreeWorkload):
    name = "rbtree"
    Params = RBTreeParams
    help = "red-black trees (LOC RBTree, Proteus RT): inserts and deletes with rebalancing"
    fuzz_params = {"trees": 1, "keys": 8, "initial": 4, "value_words": 1}

    @property
    def node_words(self) -> int:
        return VALUE + self.p.value_words

    def objects_per_op(self) -> int:
        """The path (with a new node), the siblings along it, the removed node's child, three
        nephews a delete fix-up may recolor or rotate, and the root pointer."""
        h = rb_height(self.p.keys) + 1
        return 2 * h + 6

    def operate(self, nodes: Nodes, root: list[int], kind: int, key: int,
                vals: list[int]) -> Generator[Any, Any, None]:
        path: list[int] = []
        x = root[0]
        while x:
            yield from nodes.tx.pause()
            n = nodes.get(x)
            if n[KEY] == key:
                break
            path.append(x)
            x = n[LEFT] if key < n[KEY] else n[RIGHT]
        if kind == INSERT:
            if x:
                nodes.get(x)[VALUE:] = vals
            else:
                self._insert(nodes, root, path, key, vals)
        elif kind == DELETE and x:
            yield from self._delete(nodes, root, path, x)

    def _insert(self, nodes: Nodes, root: list[int], path: list[int], key: int,
                vals: list[int]) -> None:
        z, zn = nodes.new()
        zn[:] = [key, 0, 0, RED, *vals]
        if not path:
            zn[COLOR] = BLACK
            root[0] = z
            return
        pn = nodes.get(path[-1])
        pn[LEFT if key < pn[KEY] else RIGHT] = z
        path.append(z)
        i = len(path) - 1
        while i >= 2 and _color(nodes, path[i - 1]) == RED:
            x, p, g = path[i], path[i - 1], path[i - 2]
            gn = nodes.get(g)
            left = gn[LEFT] == p
            u = gn[RIGHT] if left else gn[LEFT]
            if _color(nodes, u) == RED:
                nodes.get(p)[COLOR] = BLACK
                nodes.get(u)[COLOR] = BLACK
                gn[COLOR] = RED
                i -= 2
                continue
            pn = nodes.get(p)
            if x == (pn[RIGHT] if left else pn[LEFT]):  # inner grandchild: turn it outward
                gn[LEFT if left else RIGHT] = rotate(nodes, p, left, LEFT, RIGHT)
                p = x
            nodes.get(p)[COLOR] = BLACK
            gn[COLOR] = RED
            top = rotate(nodes, g, not left, LEFT, RIGHT)
            set_child(nodes, root, path[i - 3] if i >= 3 else 0, g, top, LEFT, RIGHT)
            break
        nodes.get(root[0])[COLOR] = BLACK

    def _delete(self, nodes: Nodes, root: list[int], path: list[int],
                x: int) -> Generator[Any, Any, None]:
        xn = nodes.get(x)
        if xn[LEFT] and xn[RIGHT]:  # take the successor's place: remove the successor
            path.append(x)
            y = xn[RIGHT]
            yn = nodes.get(y)
            while yn[LEFT]:
                yield from nodes.tx.pause()
                path.append(y)
                y = yn[LEFT]
                yn = nodes.get(y)
            xn[KEY] = yn[KEY]
            xn[VALUE:] = yn[VALUE:]
            x, xn = y, yn
        child = xn[LEFT] or xn[RIGHT]
        parent = path[-1] if path else 0
        left = bool(parent) and nodes.get(parent)[LEFT] == x
        set_child(nodes, root, parent, x, child, LEFT, RIGHT)
        removed = xn[COLOR]
        nodes.free(x)
        if removed == RED:
            return
        if _color(nodes, child) == RED:
            nodes.get(child)[COLOR] = BLACK
            return
        self._fix_double_black(nodes, root, path, child, left)

    def _fix_double_black(self, nodes: Nodes, root: list[int], path: list[int], cur: int,
                          left: bool) -> None:
        """CLRS delete fix-up: ``cur`` (maybe nil) is one black short; ``path`` ends with its
        parent, and ``left`` says on which side of it ``cur`` hangs."""
        j = len(path) - 1
        while j >= 0:
            p = path[j]
            pn = nodes.get(p)
            if cur:
                left = pn[LEFT] == cur
            w = pn[RIGHT] if left else pn[LEFT]
            if not w:
                raise PmsimError(f"red-black tree: node {p:#x} is unbalanced (no sibling)")
            wn = nodes.get(w)
            if wn[COLOR] == RED:  # case 1: make the sibling black
                wn[COLOR] = BLACK
                pn[COLOR] = RED
                set_child(nodes, root, path[j - 1] if j else 0, p,
                          rotate(nodes, p, left, LEFT, RIGHT), LEFT, RIGHT)
                path.insert(j, w)
                j += 1
                w = pn[RIGHT] if left else pn[LEFT]
                wn = nodes.get(w)
            near, far = (wn[LEFT], wn[RIGHT]) if left else (wn[RIGHT], wn[LEFT])
            if _color(nodes, near) == BLACK and _color(nodes, far) == BLACK:  # case 2
                wn[COLOR] = RED
                if pn[COLOR] == RED:
                    pn[COLOR] = BLACK
                    return
                cur = p
                j -= 1
                continue
            if _color(nodes, far) == BLACK:  # case 3: the near nephew rises
                nodes.get(near)[COLOR] = BLACK
                wn[COLOR] = RED
                w = rotate(nodes, w, not left, LEFT, RIGHT)
                pn[RIGHT if left else LEFT] = w
                wn = nodes.get(w)
                far = wn[RIGHT] if left else wn[LEFT]
            wn[COLOR] = pn[COLOR]  # case 4
            pn[COLOR] = BLACK
            nodes.get(far)[COLOR] = BLACK
            set_child(nodes, root, path[j - 1] if j else 0, p,
                      rotate(nodes, p, left, LEFT, RIGHT), LEFT, RIGHT)
            return
        if cur:
            nodes.get(cur)[COLOR] = BLACK

    def lookup(self, nodes: Nodes, root: list[int], key: int
               ) -> Generator[Any, Any, list[int] | None]:
        """The words of ``key``'s node (edited in place through ``nodes``), or None: a walk down
        from ``root[0]`` that pauses before each node."""
        x = root[0]
        while x:
            yield from nodes.tx.pause()
            n = nodes.get(x)
            if n[KEY] == key:
                return n
            x = n[LEFT] if key < n[KEY] else n[RIGHT]
        return None

    def node_value(self, vals: list[int], where: str) -> Any:
        """The value a node's value words hold, checked whole (a torn value is an error)."""
        return check_value(vals, where)

    def walk(self, rt: Runtime, root: int) -> tuple[list[int], list[tuple[int, int]]]:
        """In-order walk checking the search order, the colors (a black root, no red node
        with a red child) and equal black heights on every path."""
        p = self.p
        limit = rb_height(p.keys)
        nodes: list[int] = []
        items: list[tuple[int, int]] = []
        seen: set[int] = set()

        def visit(x: int, lo: int, hi: int, depth: int, parent_red: bool) -> int:
            if not x:
                return 0
            if depth > limit:
                raise PmsimError(f"red-black tree deeper than {limit} levels (a cycle?)")
            check_node(rt, x, seen)
            nodes.append(x)
            key, left, right, color, *vals = rt.peek_words(x, KEY, self.node_words)
            if not lo < key < hi:
                raise PmsimError(f"red-black tree: key {key} out of order (not in {lo}..{hi})")
            if color not in (BLACK, RED):
                raise PmsimError(f"red-black tree: node {x:#x} has color {color}")
            if color == RED and (parent_red or depth == 1):
                raise PmsimError(f"red-black tree: red node {x:#x} is the root or has a red "
                                 "parent")
            bl = visit(left, lo, key, depth + 1, color == RED)
            items.append((key, self.node_value(vals, f"node {x:#x}")))
            br = visit(right, key, hi, depth + 1, color == RED)
            if bl != br:
                raise PmsimError(f"red-black tree: black heights {bl} and {br} under {x:#x}")
            return bl + (color == BLACK)

        visit(root, 0, p.keys + 1, 1, False)
        return nodes, items
