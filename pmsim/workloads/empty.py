"""Empty: transactions that read and write nothing (DUDETx §6.2.2's empty-transaction test).

What a runtime costs per transaction before any data is touched: begin, commit, its metadata
and log bookkeeping and (for background-persist runtimes) the acknowledgement. DUDETx reports
NVML at most 1.14 M empty transactions per second per thread, DUDETx and Mnemosyne above 30 M
(papers/dudetx-decoupled.md D7). One word of static data exists so that the layout is not
empty; no transaction touches it.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from typing import Any

import numpy as np

from ..errors import PmsimError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import Model, NoParams, Workload, register_workload

SENTINEL = 0x5EED


class EmptyModel(Model):
    """Nothing changes."""

    def apply(self, op: Any) -> None:
        pass

    def snapshot(self) -> Hashable:
        return ()


@register_workload
class Empty(Workload):
    """Transactions with an empty body."""

    name = "empty"
    Params = NoParams
    help = "empty transactions: begin and commit only (DUDETx's empty-transaction test)"
    fuzz_params: dict[str, Any] = {}

    def spec(self) -> PMSpec:
        return PMSpec(statics=(StaticArray("word", 1, 1),), max_tx_writes=0, max_tx_words=0,
                      max_tx_allocs=0, max_tx_objects=0)

    def init_data(self, rt: Runtime) -> None:
        rt.init_words(rt.static("word", 0), 0, [SENTINEL])

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[()]:
        return ()

    def locks_of(self, op: tuple[()]) -> list[int]:
        return []

    def body(self, tx: Any, op: tuple[()]) -> Generator[Any, Any, None]:
        return
        yield

    def model(self) -> Model:
        return EmptyModel()

    def check(self, rt: Runtime) -> None:
        """Raise PmsimError unless the one word still holds its initial value."""
        if int(rt.peek_static("word")[0, 0]) != SENTINEL:
            raise PmsimError("the empty workload's word changed, though no transaction writes")

    def read_data(self, rt: Runtime) -> Hashable:
        return ()
