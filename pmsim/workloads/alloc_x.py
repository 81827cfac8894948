"""Alloc-X (card §7, Fig. 6): allocation-heavy transactions.

Each thread owns ``groups`` groups of ``x`` root pointers. Its transaction on a group frees the
blocks the group points to (allocated by an earlier transaction), allocates ``x`` new blocks of
random size ``min_bytes..max_bytes``, writes each block's size and a tag into it, and stores the
pointers. ``abort_pct`` of the transactions abort at the end instead of committing.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import check_types, param
from ..errors import ConfigError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import Model, Workload, check_range, register_workload

MAX_LIVE_BYTES = 1 << 28
"""Most bytes of live blocks per thread (the heap is planned for all of them)."""


@dataclass(frozen=True)
class AllocXParams:
    x: int = param(8, "blocks", "blocks allocated per transaction")
    groups: int = param(2, "groups", "root groups per thread (a group is freed when reused; "
                        "groups x x x max_bytes at most 256 MiB)")
    min_bytes: int = param(1, "bytes", "smallest block requested")
    max_bytes: int = param(512, "bytes", "largest block requested")
    abort_pct: float = param(0.0, "%", "share of transactions that abort")

    def __post_init__(self) -> None:
        label = "workload 'alloc-x': parameter "
        check_types(self, label)
        check_range("alloc-x", "x", self.x, 1, 256)
        check_range("alloc-x", "groups", self.groups, 1)
        check_range("alloc-x", "min_bytes", self.min_bytes, 1, 4096)
        check_range("alloc-x", "max_bytes", self.max_bytes, self.min_bytes, 4096)
        check_range("alloc-x", "abort_pct", self.abort_pct, 0, 100)
        live = self.groups * self.x * self.max_bytes
        if live > MAX_LIVE_BYTES:
            raise ConfigError(f"{label}groups={self.groups!r} is too large: groups x x x "
                              f"max_bytes = {live} bytes of live blocks per thread, more than "
                              f"256 MiB; use groups <= {MAX_LIVE_BYTES // (self.x * self.max_bytes)}")


def words_for(nbytes: int) -> int:
    """Fields of a block of ``nbytes`` (at least 2: size and tag)."""
    return max(2, -(-nbytes // 8))


class AllocXModel(Model):
    def __init__(self) -> None:
        self.roots: dict[int, tuple[int, int]] = {}

    def apply(self, op: tuple[int, tuple[int, ...], tuple[int, ...], bool]) -> None:
        first, words, tags, aborts = op
        if aborts:
            return
        for j, (w, t) in enumerate(zip(words, tags, strict=True)):
            self.roots[first + j] = (w, t)

    def snapshot(self) -> Hashable:
        return tuple(sorted(self.roots.items()))


@register_workload
class AllocX(Workload):
    name = "alloc-x"
    Params = AllocXParams
    help = "allocate x blocks of random size per transaction, free them when the group is reused"

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self._next_group = [0] * self.threads

    @property
    def nroots(self) -> int:
        return self.threads * self.p.groups * self.p.x

    def spec(self) -> PMSpec:
        p = self.p
        lo, hi = words_for(p.min_bytes), words_for(p.max_bytes)
        live = self.nroots + self.threads * p.x  # old groups and the blocks replacing them
        return PMSpec(statics=(StaticArray("roots", self.nroots, 1),), heap=((lo, hi, live),),
                      max_tx_writes=p.x, max_tx_words=p.x, max_tx_allocs=2 * p.x,
                      max_tx_objects=p.x)

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[int, tuple[int, ...],
                                                                   tuple[int, ...], bool]:
        p = self.p
        g = self._next_group[tid]
        self._next_group[tid] = (g + 1) % p.groups
        first = (tid * p.groups + g) * p.x
        sizes = rng.integers(p.min_bytes, p.max_bytes + 1, size=p.x)
        words = tuple(words_for(int(s)) for s in sizes)
        tags = tuple(int(t) for t in rng.integers(1, 1 << 62, size=p.x))
        aborts = bool(rng.random() * 100 < p.abort_pct)
        return first, words, tags, aborts

    def body(self, tx: Any, op: Any) -> Generator[Any, Any, bool]:
        first, words, tags, aborts = op
        roots = [tx.rt.static("roots", first + j) for j in range(len(words))]
        for r in roots:
            old = tx.read(r, 0)
            if old:
                tx.free(old)
        for r, w, t in zip(roots, words, tags, strict=True):
            blk = tx.alloc(w)
            tx.write_words(blk, 0, [w, t])
            tx.write(r, 0, blk)
            yield from tx.pause()
        return not aborts

    def model(self) -> Model:
        return AllocXModel()

    def read_data(self, rt: Runtime) -> Hashable:
        ptrs = rt.peek_static("roots")[:, 0]
        return tuple((int(i), (rt.peek(int(ptrs[i]), 0), rt.peek(int(ptrs[i]), 1)))
                     for i in np.flatnonzero(ptrs))

    def live_objects(self, rt: Runtime) -> list[int]:
        return [int(v) for v in rt.peek_static("roots")[:, 0] if v]
