"""The allocator mutations of card §4.4 (A1, A2), for any runtime built on :mod:`.alloclog`."""

from __future__ import annotations

from typing import Any

from .alloc import ALLOC
from .base import Runtime, Tx
from .mutation import Mutant, drop, patch
from .registry import register_mutant

ALLOCS = "a transaction that allocates or frees"


def _flip_at_call(orig: Any) -> Any:
    def _log_alloc(self: Runtime, tx: Tx, addr: int, kind: int) -> None:
        orig(self, tx, addr, kind)
        tx.cpu.clwb(self.heap.flip(tx.cpu, addr, kind == ALLOC))
    return _log_alloc


def _revert_on_abort(orig: Any) -> Any:
    def _return_allocs(self: Runtime, tx: Tx) -> None:
        orig(self, tx)
        if tx.alog:
            self._revert_alog(tx.cpu, tx.alog)
    return _return_allocs


def _push_at_free(orig: Any) -> Any:
    def _free(self: Runtime, tx: Tx, obj: int) -> None:
        n = len(tx.frees)
        orig(self, tx, obj)
        for b in tx.frees[n:]:
            self.heap.push(b)
    return _free


def register_alloc_mutants(base: type[Runtime]) -> None:
    """Register ``<base>:A1`` and ``<base>:A2``."""
    register_mutant(Mutant(
        f"{base.name}:A1", base,
        (patch("_log_alloc", _flip_at_call, "flip the bit at pm_alloc/pm_free time"),
         drop("alloc.apply"),
         patch("_return_allocs", _revert_on_abort, "revert the flips on abort")),
        why="flip allocation bits at pm_alloc/pm_free time, before the commit point (leak or "
            "double allocation if the transaction does not commit)", needs=ALLOCS))
    register_mutant(Mutant(
        f"{base.name}:A2", base,
        (patch("_free", _push_at_free, "free list at pm_free time"),
         patch("_release_frees", lambda orig: lambda self, tx: None, "no release after IDLE")),
        why="put a freed block on the volatile list at pm_free time, before IDLE is durable "
            "(threads interleave only at lock waits here, so it shows as reuse by the freeing "
            "transaction itself, e.g. when it then aborts)",
        needs="a transaction that frees, then allocates, then aborts"))
