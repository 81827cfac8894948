"""Script: a fixed sequence of transactions over line-sized slots, for crash windows that need
one precise interleaving (hardware ordering rows, mutants whose bug needs a given overlap).

``script`` lists the transactions, separated by ``;``: each is a comma-separated list of slot
writes ``slot=value`` (or just ``slot``: the value is the transaction's position, from 1), and
a transaction ending in ``!`` aborts after its writes. Thread ``t`` runs the script from the
start, repeating it. The default, ``"0,2;2,1!;1;0"``, is LOC's M19 shape (T1 writes lines 0
and 2, then T3 line 1, T4 line 0 again) with a transaction between T1 and T3 that writes lines
2 and 1 and aborts (M13's shape). Each slot is one 64-byte line; a write stores its value in the slot's
first and last word (the first words of all the transaction's writes, then the last words, so
each line is written twice), so a torn line is visible.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import param
from ..errors import ConfigError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import Model, Workload, check_range, register_workload

WORDS = 8
Op = tuple[int, tuple[tuple[int, int], ...], bool]


@dataclass(frozen=True)
class ScriptParams:
    script: str = param("0,2;2,1!;1;0", "", "transactions separated by ';': comma-separated slot "
                        "writes 'slot=value' or 'slot' (value: the transaction's position); a "
                        "trailing '!' aborts the transaction")
    slots: int = param(4, "slots", "slots (one 64-byte line each)")

    def __post_init__(self) -> None:
        check_range("script", "slots", self.slots, 1, 1 << 20)
        parse(self.script, self.slots)


def parse(script: str, slots: int) -> list[tuple[tuple[tuple[int, int], ...], bool]]:
    """The script as ``[(writes, aborts)]``; a ConfigError says what is malformed."""
    out = []
    if not isinstance(script, str) or not script.strip():
        raise ConfigError("workload 'script': script must be a non-empty string such as "
                          "'0,2;1;0'")
    for n, text in enumerate(script.split(";"), start=1):
        text = text.strip()
        aborts = text.endswith("!")
        text = text.rstrip("!").strip()
        writes = []
        for item in filter(None, (s.strip() for s in text.split(","))):
            slot, _, value = item.partition("=")
            try:
                s, v = int(slot), int(value) if value else n
            except ValueError:
                raise ConfigError(f"workload 'script': transaction {n} has the write {item!r}; "
                                  "write 'slot' or 'slot=value' with integers") from None
            if not 0 <= s < slots or not 0 <= v < 1 << 63:
                raise ConfigError(f"workload 'script': write {item!r} of transaction {n} needs a "
                                  f"slot in 0..{slots - 1} and a value in 0..2**63-1")
            writes.append((s, v))
        out.append((tuple(writes), aborts))
    return out


class ScriptModel(Model):
    def __init__(self, slots: int) -> None:
        self.v = [0] * slots

    def apply(self, op: Op) -> None:
        _, writes, aborts = op
        if not aborts:
            for s, v in writes:
                self.v[s] = v

    def snapshot(self) -> Hashable:
        return tuple(self.v)


@register_workload
class Script(Workload):
    """A fixed, repeating sequence of slot-writing transactions."""

    name = "script"
    Params = ScriptParams
    help = "a fixed sequence of transactions over line-sized slots (precise crash windows)"

    def spec(self) -> PMSpec:
        txs = parse(self.p.script, self.p.slots)
        most = max((len(w) for w, _ in txs), default=0)
        return PMSpec(statics=(StaticArray("slots", self.p.slots, WORDS),),
                      max_tx_writes=2 * most, max_tx_words=2 * most, max_tx_allocs=0,
                      max_tx_objects=most)

    def next_op(self, tid: int, rng: np.random.Generator) -> Op:
        """Thread ``tid``'s next transaction: the script's entry after those it has begun."""
        txs = parse(self.p.script, self.p.slots)
        i = sum(1 for t in self.executed if t >> 32 == tid)
        writes, aborts = txs[i % len(txs)]
        return i, writes, aborts

    def body(self, tx: Any, op: Op) -> Generator[Any, Any, bool | None]:
        _, writes, aborts = op
        rt = tx.rt
        for word in (0, WORDS - 1):  # first words, then last words: a line is written twice
            for s, v in writes:
                tx.write(rt.static("slots", s), word, v)
        yield from ()
        return False if aborts else None

    def model(self) -> Model:
        return ScriptModel(self.p.slots)

    def read_data(self, rt: Runtime) -> Hashable:
        a = rt.peek_static("slots")
        if not np.array_equal(a[:, 0], a[:, WORDS - 1]):
            bad = int(np.nonzero(a[:, 0] != a[:, WORDS - 1])[0][0])
            return ("torn", bad, int(a[bad, 0]), int(a[bad, WORDS - 1]))
        return tuple(int(x) for x in a[:, 0])
