"""Read-set classes: every crash state of a point, checked by recovering one image per class.

Recovery is a deterministic program of the PM image. Run it on one image with the machine's
read log on (:meth:`pmsim.machine.Machine.start_read_log`) and let ``R`` be the PM words it
read, together with the words the data reader and the invariant check read. Every image that
agrees with this one on ``R`` makes the same run read the same values, so it recovers to the
same data with the same errors: one recovery decides the whole class.

On a product space (every chain's prefix length ranges independently) a class is itself a
product: per free chain, the prefix lengths that give each read word of that chain the value it
had. What is left of the space after taking a class out is a disjoint union of products (fix
the first ``j`` touched chains to the class, move chain ``j+1`` outside it), so the search is a
depth-first walk over products that stops when the space is covered. Class sizes add up to the
state count exactly. With ordering edges the same boxes are walked and only the states that
satisfy the edges kept (:meth:`ReadClasses._walk`). A point is then checked exhaustively
with one recovery per class instead of one per distinct image.

Typical win: before a log's fence the log lines are free (in Px86 every word of them is a chain
of its own), but recovery reads a clear flag and never looks at the log, so ``9**k`` states are
one class. The limit: a run whose reads depend on many free words still splits into many
classes; past the caller's limit the point is sampled as before.

The word sets are only as good as the read log. Instruction reads and the machine's untimed
reads are logged; code reading the engine's arrays directly must call ``note_reads``. The
campaign therefore also recovers a second, maximally different member of the first classes of
a point and treats any disagreement as a miss of the log (the point is then sampled and the
report counts it), so a runtime with an unlogged read path loses the reduction, not bugs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator

import numpy as np

from pmsim.interrupts import raise_pending

from .model import ATOMS_PER_LINE
from .states import State, StateSpace

Reads = Callable[[State], Collection[int]]


class ReadClasses:
    """Iterate ``(representative, other member or None, class size)`` over a product or an
    ordered state space, split depth-first (the module docstring and :meth:`_walk`).

    ``reads(state)`` recovers the state's image and returns the PM word indices read. After the
    iteration ``complete`` says whether the classes cover the space (False: the ``limit`` on
    classes stopped it) and ``covered`` counts the states of the classes yielded.
    """

    def __init__(self, space: StateSpace, reads: Reads, limit: int,
                 probe: int = 0) -> None:
        if space.kind not in ("product", "ordered"):
            raise ValueError(f"read-set classes walk product or ordered spaces, not {space.kind!r}")
        self.space = space
        self.reads = reads
        self.limit = limit
        self.probe = probe
        """Give up (incomplete) after this many classes of a product if they averaged fewer
        than four states each: enumerating the images is then cheaper (0: never)."""
        self.complete = False
        self.covered = 0
        self.classes = 0
        ix = space.model.index
        self._ix = ix
        self._lo = space.free_lo.tolist()
        self._hi = space.free_hi.tolist()
        keys = ix.chain_key[space.free].tolist()
        self._free_of_key = {int(k): i for i, k in enumerate(keys)}
        self._line = ix.order == "line"
        self._base = ix.trace.base.view(np.uint64)
        self._values: dict[tuple[int, int], np.ndarray] = {}
        self.members: list[np.ndarray] = []

    def _word_values(self, i: int, w: int) -> np.ndarray:
        """Value of PM word ``w`` after each prefix ``lo..hi`` of free chain ``i``."""
        key = (i, w)
        vals = self._values.get(key)
        if vals is None:
            ix = self._ix
            c = int(self.space.free[i])
            o, e = int(ix.off[c]), int(ix.off[c + 1])
            q = np.flatnonzero(ix.st_word[o:e] == w)  # the chain's stores to w, in order
            x = np.arange(self._lo[i], self._hi[i] + 1)
            last = np.searchsorted(q, x, side="left") - 1  # last store to w inside the prefix
            vals = np.where(last >= 0, ix.st_val[o + q[np.maximum(last, 0)]] if len(q) else 0,
                            self._base[w]).astype(np.uint64)
            self._values[key] = vals
        return vals

    def _touched(self, reads: Collection[int]) -> dict[int, list[int]]:
        """Free chain -> the read words it stores to (chains no read word lives in are left out)."""
        out: dict[int, list[int]] = {}
        fk = self._free_of_key
        for w in reads:
            i = fk.get(w // ATOMS_PER_LINE if self._line else w)
            if i is not None:
                out.setdefault(i, []).append(w)
        return out

    def __iter__(self) -> Iterator[tuple[State, State | None, int]]:
        if self.space.kind == "product":
            return self._walk([])
        assert self.space._ordered is not None
        return self._walk(self.space._ordered.edges)

    def _walk(self, edges: list[tuple[int, int, int, int]]) -> Iterator[tuple[State, State | None, int]]:
        """Split the product of the chains' ranges depth-first (module docstring). With
        ordering ``edges`` the states are the members of the product that satisfy them: a box
        without one is skipped, and a class's representative is its least member (members are
        closed under the componentwise min and max, the edges being monotone implications);
        sizes are then not counted (yielded as 0)."""
        root = [np.arange(a, b + 1, dtype=np.int64) for a, b in zip(self._lo, self._hi, strict=True)]
        stack = [root]
        boxes = 0
        while stack:
            raise_pending()  # a walk can be long: a stop request is honoured per box
            if self.classes >= self.limit or boxes >= 8 * self.limit + 64:
                return
            if self.probe and self.classes == self.probe and not edges \
                    and self.covered < 4 * self.classes:
                return
            allowed = stack.pop()
            boxes += 1
            least = _extreme(allowed, edges, low=True)
            if least is None:
                continue  # no state of the space in this box
            rep = tuple(least)
            touched = self._touched(self.reads(rep))
            inside = list(allowed)
            splits: list[tuple[int, np.ndarray]] = []
            for i in sorted(touched):
                a = allowed[i]
                keep = np.ones(len(a), bool)
                for w in touched[i]:
                    v = self._word_values(i, w)
                    keep &= v[a - self._lo[i]] == v[rep[i] - self._lo[i]]
                inside[i] = a[keep]
                if not keep.all():
                    splits.append((i, a[~keep]))
            size = 1
            for a in inside:
                size *= len(a)
            if edges:
                most = _extreme(inside, edges, low=False)
                other = tuple(most) if most is not None and tuple(most) != rep else None
                size = 0
            else:
                other = tuple(int(a[-1]) for a in inside) if size > 1 else None
            self.classes += 1
            self.covered += size
            self.members = inside
            yield rep, other, size
            # the rest: chains before the j-th split inside the class, the j-th outside it
            for j, (i, out) in enumerate(splits):
                rest = list(allowed)
                for k, _ in splits[:j]:
                    rest[k] = inside[k]
                rest[i] = out
                stack.append(rest)
        self.complete = True
        if edges:
            self.covered = self.space.count


def _extreme(allowed: list[np.ndarray], edges: list[tuple[int, int, int, int]],
             low: bool) -> list[int] | None:
    """The least (``low``) or greatest member of the box ``allowed`` (per chain, sorted prefix
    lengths) that satisfies every edge ``(x, i, y, j)``: ``x_y >= j`` implies ``x_x >= i``;
    None if there is none. From the box's corner, raise ``x_x`` (least) or lower ``x_y``
    (greatest) to the nearest allowed value until no edge is violated."""
    x = [int(a[0] if low else a[-1]) for a in allowed]
    changed = True
    while changed:
        changed = False
        for xi, i, yi, j in edges:
            if x[yi] >= j and x[xi] < i:
                if low:
                    a = allowed[xi]
                    k = int(np.searchsorted(a, i))
                    if k == len(a):
                        return None
                    x[xi] = int(a[k])
                else:
                    a = allowed[yi]
                    k = int(np.searchsorted(a, j)) - 1
                    if k < 0:
                        return None
                    x[yi] = int(a[k])
                changed = True
    return x
