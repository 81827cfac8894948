"""Bank: transfers between accounts; the total is conserved.

A transfer debits the source, re-reads it (a read-after-write of the same field) and aborts if
the balance went negative, else credits the destination. The re-read is what exposes a runtime
that returns stale data after a write (redo's R5).
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import check_most, check_types, param
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import MASK64, Model, Workload, check_range, register_workload

SIGN = 1 << 63


@dataclass(frozen=True)
class BankParams:
    accounts: int = param(16, "accounts", "number of accounts (one lock each; 2..2**18)")
    initial: int = param(100, "units", "initial balance of every account")
    max_amount: int = param(60, "units", "transfers move 1..max_amount units")

    def __post_init__(self) -> None:
        label = "workload 'bank': parameter "
        check_types(self, label)
        check_range("bank", "accounts", self.accounts, 2)
        check_most(label, "accounts", self.accounts, 1 << 18,
                   "use at most 2**18 = 262144 accounts (each has a lock, a SimPy resource)")
        check_range("bank", "initial", self.initial, 0, 1 << 40)
        check_range("bank", "max_amount", self.max_amount, 1, 1 << 40)


class BankModel(Model):
    def __init__(self, n: int, initial: int) -> None:
        self.bal = [initial] * n

    def apply(self, op: tuple[int, int, int]) -> None:
        a, b, amt = op
        if self.bal[a] >= amt:
            self.bal[a] -= amt
            self.bal[b] += amt

    def snapshot(self) -> Hashable:
        return tuple(self.bal)


@register_workload
class Bank(Workload):
    name = "bank"
    Params = BankParams
    help = "transfers between accounts (aborts on insufficient funds); total conserved"

    def spec(self) -> PMSpec:
        return PMSpec(statics=(StaticArray("accounts", self.p.accounts, 1),), max_tx_writes=2,
                      max_tx_words=2, max_tx_allocs=0, max_tx_objects=2)

    def nlocks(self) -> int:
        return self.p.accounts

    def init_data(self, rt: Runtime) -> None:
        for i in range(self.p.accounts):
            rt.init_words(rt.static("accounts", i), 0, [self.p.initial])

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[int, int, int]:
        a, b = (int(x) for x in rng.choice(self.p.accounts, size=2, replace=False))
        return a, b, int(rng.integers(1, self.p.max_amount + 1))

    def locks_of(self, op: tuple[int, int, int]) -> tuple[int, int]:
        return op[0], op[1]

    def body(self, tx: Any, op: tuple[int, int, int]) -> Generator[Any, Any, bool]:
        a, b, amt = op
        oa, ob = tx.rt.static("accounts", a), tx.rt.static("accounts", b)
        tx.write(oa, 0, (tx.read(oa, 0) - amt) & MASK64)
        if tx.read(oa, 0) & SIGN:
            return False
        yield from tx.pause()
        tx.write(ob, 0, (tx.read(ob, 0) + amt) & MASK64)
        return True

    def model(self) -> Model:
        return BankModel(self.p.accounts, self.p.initial)

    def read_data(self, rt: Runtime) -> Hashable:
        return tuple(int(v) for v in rt.peek_static("accounts")[:, 0])
