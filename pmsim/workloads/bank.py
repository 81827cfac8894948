"""Bank: transfers between accounts; the total is conserved.

A transfer debits the source, re-reads it (a read-after-write of the same field) and aborts if
the balance went negative, else credits the destination. The re-read is what exposes a runtime
that returns stale data after a write (redo's R5).

NV-HTM's Bank adds read-only transactions that sum ``r`` random accounts, a fraction ``1 - u``
of all transactions, and update transactions of ``w`` transfers (the whole transaction aborts
if any debit overdraws). The defaults (u = 1, w = 1) draw exactly the transfers the plain Bank
drew: the extra random number that picks a read-only transaction is drawn only when u < 1.
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
READ = -1
"""First element of a read-only transaction's op: ``(READ, account, ...)``."""


@dataclass(frozen=True)
class BankParams:
    accounts: int = param(16, "accounts", "number of accounts (one lock each; 2..2**18)")
    initial: int = param(100, "units", "initial balance of every account")
    max_amount: int = param(60, "units", "transfers move 1..max_amount units")
    u: float = param(1.0, "", "update fraction: the share of update transactions, the rest "
                     "are read-only (NV-HTM: 0.9; Fig. 6: 0.1)")
    r: int = param(0, "accounts", "accounts a read-only transaction sums, 0 = all (NV-HTM: 128 "
                   "of 16K accounts, or all 64 of 64)")
    w: int = param(1, "transfers", "transfers per update transaction (NV-HTM: 2)")

    def __post_init__(self) -> None:
        label = "workload 'bank': parameter "
        check_types(self, label)
        check_range("bank", "accounts", self.accounts, 2)
        check_most(label, "accounts", self.accounts, 1 << 18,
                   "use at most 2**18 = 262144 accounts (each has a lock, a SimPy resource)")
        check_range("bank", "initial", self.initial, 0, 1 << 40)
        check_range("bank", "max_amount", self.max_amount, 1, 1 << 40)
        check_range("bank", "u", self.u, 0, 1)
        check_range("bank", "r", self.r, 0, self.accounts)
        check_range("bank", "w", self.w, 1, 4096)


class BankModel(Model):
    def __init__(self, n: int, initial: int) -> None:
        self.bal = [initial] * n

    def apply(self, op: tuple[int, ...]) -> None:
        if op[0] == READ:
            return
        if len(op) == 3:
            a, b, amt = op
            if self.bal[a] >= amt:
                self.bal[a] -= amt
                self.bal[b] += amt
            return
        bal = list(self.bal)
        for k in range(0, len(op), 3):
            a, b, amt = op[k: k + 3]
            if bal[a] < amt:
                return  # an overdraft aborts the whole transaction
            bal[a] -= amt
            bal[b] += amt
        self.bal = bal

    def snapshot(self) -> Hashable:
        return tuple(self.bal)


@register_workload
class Bank(Workload):
    name = "bank"
    Params = BankParams
    help = ("transfers between accounts (aborts on insufficient funds); total conserved; "
            "optional read-only sums (NV-HTM)")

    def spec(self) -> PMSpec:
        n = 2 * self.p.w
        return PMSpec(statics=(StaticArray("accounts", self.p.accounts, 1),), max_tx_writes=n,
                      max_tx_words=n, max_tx_allocs=0, max_tx_objects=min(n, self.p.accounts))

    def nlocks(self) -> int:
        return self.p.accounts

    def init_data(self, rt: Runtime) -> None:
        for i in range(self.p.accounts):
            rt.init_words(rt.static("accounts", i), 0, [self.p.initial])

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[int, ...]:
        """``(a, b, amount)`` per transfer, flattened; ``(READ, account, ...)`` for a read-only
        transaction."""
        p = self.p
        if p.u < 1 and float(rng.random()) >= p.u:
            n = p.r or p.accounts
            return (READ, *(int(x) for x in rng.choice(p.accounts, size=n, replace=False)))
        out: list[int] = []
        for _ in range(p.w):
            a, b = (int(x) for x in rng.choice(p.accounts, size=2, replace=False))
            out += (a, b, int(rng.integers(1, p.max_amount + 1)))
        return tuple(out)

    def locks_of(self, op: tuple[int, ...]) -> tuple[int, ...]:
        if op[0] == READ:
            return op[1:]
        return tuple(x for k in range(0, len(op), 3) for x in op[k: k + 2])

    def body(self, tx: Any, op: tuple[int, ...]) -> Generator[Any, Any, bool]:
        static = tx.rt.static
        if op[0] == READ:
            total = 0
            for k, a in enumerate(op[1:]):
                if k:
                    yield from tx.pause()
                total += tx.read(static("accounts", a), 0)
            self.summed(tx, op, total & MASK64)
            return True
        for k in range(0, len(op), 3):
            if k:
                yield from tx.pause()
            a, b, amt = op[k: k + 3]
            oa, ob = static("accounts", a), static("accounts", b)
            tx.write(oa, 0, (tx.read(oa, 0) - amt) & MASK64)
            if tx.read(oa, 0) & SIGN:
                return False
            yield from tx.pause()
            tx.write(ob, 0, (tx.read(ob, 0) + amt) & MASK64)
        return True

    def summed(self, tx: Any, op: tuple[int, ...], total: int) -> None:
        """Called with a read-only transaction's sum (modulo 2**64) before it commits; a hook
        for tests and examples, called once per attempt. Does nothing."""

    def model(self) -> Model:
        return BankModel(self.p.accounts, self.p.initial)

    def read_data(self, rt: Runtime) -> Hashable:
        return tuple(int(v) for v in rt.peek_static("accounts")[:, 0])
