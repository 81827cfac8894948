"""The volatile ``locks`` runtime reads the words of one read as one group of independent
loads, as every other runtime does: on the out-of-order core their misses overlap."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pmsim import preset
from pmsim.runtimes.volatile.locks import LocksTx
from pmsim.workloads import Session


class _Cpu:
    tid = 0

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def work(self, ns: float) -> None:
        pass

    def load(self, addr: int) -> int:
        self.calls.append(("load", addr))
        return 0

    def load_words(self, addr: int, n: int) -> list[int]:
        self.calls.append(("load_words", (addr, n)))
        return [0] * n


def test_a_read_is_one_group_of_loads() -> None:
    cpu = _Cpu()
    tx = LocksTx(SimpleNamespace(costs=SimpleNamespace(call_ns=0.0)), cpu, 1)  # type: ignore[arg-type]
    assert tx.read_words(4096, 2, 24) == [0] * 24
    assert cpu.calls == [("load_words", (4096 + 16, 24))]


def test_locks_and_stm_read_a_cold_slot_alike_on_the_ooo_core() -> None:
    """Read-only Array transactions over 8-line slots, prefetchers off: the lock runtime's
    reads overlap their misses like the STM's, so it is not slower than the STM, which adds
    read barriers (reading word by word, it took 3.4x the STM's time)."""
    cfg = preset("marathe-pdom2").replace(**{"prefetch.stream": False, "prefetch.adjacent": False})
    assert cfg.core.model == "ooo"
    ns = {}
    for rt in ("locks", "stm"):
        s = Session.create(rt, "array", cfg, threads=1, seed=1, txs=20,
                           params={"slots": 4096, "slot_words": 64, "per_tx": 4, "write_pct": 0})
        s.run(20)
        ns[rt] = s.machine.cpu(0).clock
    assert ns["locks"] <= ns["stm"]
