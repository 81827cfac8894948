"""AVL: AVL trees (Proteus AT).

``trees`` independent trees; a node is a heap object ``[key, left, right, height, value
words...]`` (a leaf has height 1) with no parent link: an operation keeps the path it went
down and, after linking or unlinking a node, recomputes heights and rotates bottom-up along it.
A delete of a node with two children moves its successor's key and value into it and removes
the successor. One lock per tree.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from ..config import param
from ..errors import PmsimError
from ..runtimes.base import Runtime
from .base import check_range, register_workload
from .structures import (
    DELETE,
    INSERT,
    Nodes,
    TreeWorkload,
    avl_height,
    check_locks,
    check_map_params,
    check_node,
    check_value,
    rotate,
    set_child,
)

KEY, LEFT, RIGHT, HEIGHT, VALUE = 0, 1, 2, 3, 4  # fields of a node


@dataclass(frozen=True)
class AVLParams:
    trees: int = param(16, "trees", "independent trees, one lock each (Proteus AT: 16)")
    keys: int = param(256, "keys", "key space per tree: keys are 1..keys (not given in Proteus; "
                      "default 256)")
    initial: int = param(128, "keys", "keys inserted in each tree before the run (Proteus "
                         "fast-forwards 100 k operations; default half the key space, where a "
                         "50/50 mix settles)")
    insert_pct: float = param(50.0, "%", "share of inserts (not given in Proteus; the card's "
                              "default 50/50 insert/delete)")
    delete_pct: float = param(50.0, "%", "share of deletes (the rest are lookups)")
    ops_per_tx: int = param(1, "ops", "operations per transaction (Proteus: one)")
    value_words: int = param(4, "words", "words per value (Proteus: 64 B nodes, so 4 beside "
                             "key, links and height)")

    def __post_init__(self) -> None:
        check_map_params("avl", self, self.trees)
        check_range("avl", "trees", self.trees, 1)
        check_locks("avl", "trees", self.trees, self.trees, "use fewer trees")


def _height(nodes: Nodes, x: int) -> int:
    return nodes.get(x)[HEIGHT] if x else 0


def _fix(nodes: Nodes, x: int) -> None:
    n = nodes.get(x)
    n[HEIGHT] = 1 + max(_height(nodes, n[LEFT]), _height(nodes, n[RIGHT]))


def _rotate(nodes: Nodes, x: int, to_left: bool) -> int:
    y = rotate(nodes, x, to_left, LEFT, RIGHT)
    _fix(nodes, x)
    _fix(nodes, y)
    return y


def _rebalance(nodes: Nodes, x: int) -> int:
    """Fix ``x``'s height and rotate if its children's heights differ by 2; returns the
    subtree's new root."""
    _fix(nodes, x)
    n = nodes.get(x)
    bal = _height(nodes, n[LEFT]) - _height(nodes, n[RIGHT])
    if bal > 1:
        c = nodes.get(n[LEFT])
        if _height(nodes, c[LEFT]) < _height(nodes, c[RIGHT]):
            n[LEFT] = _rotate(nodes, n[LEFT], True)
        return _rotate(nodes, x, False)
    if bal < -1:
        c = nodes.get(n[RIGHT])
        if _height(nodes, c[RIGHT]) < _height(nodes, c[LEFT]):
            n[RIGHT] = _rotate(nodes, n[RIGHT], False)
        return _rotate(nodes, x, True)
    return x


@register_workload
class AVL(TreeWorkload):
    name = "avl"
    Params = AVLParams
    help = "AVL trees (Proteus AT): inserts and deletes with rotations"
    fuzz_params = {"trees": 1, "keys": 8, "initial": 4, "value_words": 1}

    @property
    def node_words(self) -> int:
        return VALUE + self.p.value_words

    def objects_per_op(self) -> int:
        """The path (with a new node), the child and grandchild each rotation on it may
        move, and the root pointer."""
        return 3 * (avl_height(self.p.keys) + 1) + 1

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
                return
            z, zn = nodes.new()
            zn[:] = [key, 0, 0, 1, *vals]
            if path:
                pn = nodes.get(path[-1])
                pn[LEFT if key < pn[KEY] else RIGHT] = z
            else:
                root[0] = z
            self._retrace(nodes, root, path)
        elif kind == DELETE and x:
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
            set_child(nodes, root, path[-1] if path else 0, x, xn[LEFT] or xn[RIGHT], LEFT,
                      RIGHT)
            nodes.free(x)
            self._retrace(nodes, root, path)

    def _retrace(self, nodes: Nodes, root: list[int], path: list[int]) -> None:
        """Rebalance every node of ``path`` bottom-up, relinking rotated subtrees."""
        for i in range(len(path) - 1, -1, -1):
            x = path[i]
            top = _rebalance(nodes, x)
            if top != x:
                set_child(nodes, root, path[i - 1] if i else 0, x, top, LEFT, RIGHT)

    def walk(self, rt: Runtime, root: int) -> tuple[list[int], list[tuple[int, int]]]:
        """In-order walk checking the search order, the stored heights and the balance."""
        p = self.p
        limit = avl_height(p.keys)
        nodes: list[int] = []
        items: list[tuple[int, int]] = []
        seen: set[int] = set()

        def visit(x: int, lo: int, hi: int, depth: int) -> int:
            if not x:
                return 0
            if depth > limit:
                raise PmsimError(f"AVL tree deeper than {limit} levels (a cycle?)")
            check_node(rt, x, seen)
            nodes.append(x)
            key, left, right, height, *vals = rt.peek_words(x, KEY, self.node_words)
            if not lo < key < hi:
                raise PmsimError(f"AVL tree: key {key} out of order (not in {lo}..{hi})")
            hl = visit(left, lo, key, depth + 1)
            items.append((key, check_value(vals, f"node {x:#x}")))
            hr = visit(right, key, hi, depth + 1)
            if abs(hl - hr) > 1:
                raise PmsimError(f"AVL tree: node {x:#x} is unbalanced ({hl} vs {hr})")
            if height != 1 + max(hl, hr):
                raise PmsimError(f"AVL tree: node {x:#x} stores height {height}, not "
                                 f"{1 + max(hl, hr)}")
            return height

        visit(root, 0, p.keys + 1, 1)
        return nodes, items
