"""Patches behind the NV-HTM card mutants (papers/nv-htm.md §6) that are not plain drops or
delays of named steps: each takes the original class attribute and returns the broken one.
The mutants themselves are declared at the end of :mod:`.nvhtm`. :class:`DupBank` is the
workload M16 needs (a transaction that writes one word twice), :class:`Latecomer` the one M8
needs (a transaction that reads what another committed after it began).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Hashable
from typing import Any, ClassVar

import numpy as np

from ..workloads.bank import Bank
from ..workloads.base import Model, Workload
from .layout import PMSpec, StaticArray

Fn = Callable[..., Any]
INF = (1 << 64) - 1
LAPS = 64
"""How many laps back the whole-ring scan of M11 recognises a marker from."""


def const(value: Any) -> Fn:
    """A patch replacing a class attribute (a switch) by ``value``."""
    def _patch(orig: Any) -> Any:
        return value
    return _patch


def no_wait_update(orig: Fn) -> Fn:
    """M3: an update transaction skips WAITCOMMIT (read-only ones still wait)."""
    def _wait_commit(self: Any, cpu: Any, x: int, tid: int) -> Any:
        if tid == cpu.tid:
            return iter(())
        return orig(self, cpu, x, tid)
    return _wait_commit


def no_wait_read_only(orig: Fn) -> Fn:
    """M4: a read-only transaction returns without WAITCOMMIT."""
    def _wait_commit(self: Any, cpu: Any, x: int, tid: int) -> Any:
        if tid != cpu.tid:
            return iter(())
        return orig(self, cpu, x, tid)
    return _wait_commit


def begin_ts_as_commit_ts(orig: Fn) -> Fn:
    """M8: the timestamp advertised at begin is the commit timestamp (and the read-only wait
    threshold)."""
    def _take_ts(self: Any, cpu: Any, tx: Any) -> None:
        orig(self, cpu, tx)
        tx.ts = self._begin_ts[tx.tid]
    return _take_ts


def whole_ring(orig: Fn) -> Fn:
    """M11: recovery ignores startP and endP and scans the whole ring (the slots before endP),
    taking any marker of any lap."""
    from .nvhtm import LogTx, marker_word

    def _parse(self: Any, ld: Callable[[int], int], t: int, s: int, e: int) -> list[Any]:
        n = self._slots
        out: list[Any] = []
        first = e - n
        for p in range(e - n, e):
            a = self._slot(t, p)
            w = int(ld(a))
            if not w & 1:
                continue
            ts = int(ld(a + 8))
            if any(w == marker_word(p - k * n, ts) for k in range(LAPS) if p - k * n >= 0):
                out.append(LogTx(ts, t, first, p + 1))
                first = p + 1
        return out
    return _parse


def no_cplog(orig: Fn) -> Fn:
    """M13: the startPs are stored (and flushed) directly, without the checkpoint log."""
    def _truncate(self: Any, cpu: Any, new: list[int], kind: int, prefix: str) -> None:
        with self.step(cpu, prefix + ".startp") as c:
            self._store_pointers(c, new, kind)
        self.order(cpu, prefix + ".fence-startp")
    return _truncate


def per_log_cut(orig: Fn) -> Fn:
    """M14: each log is checkpointed up to its own threshold position, not to one timestamp
    cut."""
    def _window(self: Any, t: int | None) -> list[Any]:
        if t is None:
            return orig(self, t)
        thr = self.prune_threshold if self.prune_threshold is not None else 1.0
        out = []
        for u, q in enumerate(self._durable):
            limit = self._start[u] + max(1, int(thr * self._slots))
            for k, lt in enumerate(q):
                if k and lt.end > limit:
                    break
                out.append(lt)
        return out
    return _window


def filter_per_line(orig: Fn) -> Fn:
    """M15: the filter map marks whole lines, not words."""
    def _filter_key(self: Any, addr: int) -> int:
        return addr & ~63
    return _filter_key


def forward_within_tx(orig: Fn) -> Fn:
    """M16: BFC visits a transaction's entries in log order, so the first of two writes to a
    word wins."""
    def _tx_entries(self: Any, entries: list[tuple[int, int]]) -> list[tuple[int, int]]:
        return entries
    return _tx_entries


def boundary_start(orig: Fn) -> Fn:
    """M21: a log's new startP is its newest checkpointed transaction itself (Alg. 2
    literally), so that transaction is replayed again by the next checkpoint or recovery."""
    def _new_start(self: Any, lt: Any) -> int:
        return int(lt.start)
    return _new_start


def ws_is_ps(orig: Fn) -> Fn:
    """M18: the working snapshot is the persistent snapshot (mapped shared)."""
    def _ws_base(self: Any, dram_next: int) -> int:
        return int(self._data_lo)
    return _ws_base


class DupBank(Bank):
    """Bank whose update transactions make two transfers among four accounts, so one transaction
    often writes an account twice (what M16 needs)."""

    name = "nvhtm-dup-bank"
    fuzz_params: ClassVar[dict[str, Any]] = {"accounts": 4, "w": 2}


def idle_before_fence(orig: Fn) -> Fn:
    """M5: C8 (ts = +inf) before F2: the thread looks idle while its marker is not durable."""
    def _make_durable(self: Any, cpu: Any, tx: Any, mline: int) -> Generator[Any, Any, None]:
        t = tx.tid
        self._flush(cpu, "nvhtm.commit.flush-marker", [mline, self._endp_addr(t)])
        self.st(cpu, "nvhtm.commit.idle", self._tsw[t], INF)
        yield from self._gap(cpu)
        self.order(cpu, "nvhtm.commit.fence-marker")
    return _make_durable


class PairBank(Bank):
    """Bank over two accounts: every transfer reads and writes both, so any two update
    transactions depend on each other word by word (what the ordering mutants need)."""

    name = "nvhtm-pair-bank"
    fuzz_params: ClassVar[dict[str, Any]] = {"accounts": 2}


def markerless_replayed(orig: Fn) -> Fn:
    """M17: recovery also replays the entries that follow a log's last marker, up to the first
    slot that is not an entry of application data (past endP too), as the newest transaction
    of that log: entries of transactions that never became durable, and stale ones of an older
    lap."""
    from .nvhtm import INF as TS_INF
    from .nvhtm import LogTx

    def _parse(self: Any, ld: Callable[[int], int], t: int, s: int, e: int) -> list[Any]:
        out = orig(self, ld, t, s, e)
        first = out[-1].end if out else s
        p = first
        while p < s + self._slots:
            w = int(ld(self._slot(t, p)))
            if w & 1 or not self._is_home(w):
                break
            p += 1
        if p > first:
            out.append(LogTx(TS_INF, t, first, p + 1))
        return out
    return _parse


LATE_WORDS = 12
"""Private words a Latecomer transaction of thread 0 writes before it reads the counter."""
LATE_STRIDE = 16
"""Cells between two threads' private words (whole lines: no false sharing)."""


class LatecomerModel(Model):
    def __init__(self, threads: int) -> None:
        self.cells = [0] * (LATE_STRIDE * (threads + 1))

    def apply(self, op: tuple[int, int]) -> None:
        tid, n = op
        c = self.cells
        for k in range(LATE_WORDS if tid == 0 else 0):
            c[LATE_STRIDE * (tid + 1) + k] = n
        c[0] += 1
        c[1 + tid] = c[0]

    def snapshot(self) -> Hashable:
        return tuple(self.cells)


class Latecomer(Workload):
    """Thread 0's transactions first write twelve private words (lines of their own), then
    increment a shared counter and record its value; the other threads' only increment it. A
    transaction of thread 0 thus reads a counter that another thread committed after it began:
    ordering it by its begin timestamp (M8) replays it before that one."""

    name = "nvhtm-latecomer"

    def spec(self) -> PMSpec:
        return PMSpec(statics=(StaticArray("cells", LATE_STRIDE * (self.threads + 1), 1),),
                      max_tx_writes=LATE_WORDS + 2, max_tx_words=LATE_WORDS + 2, max_tx_allocs=0,
                      max_tx_objects=LATE_WORDS + 2)

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[int, int]:
        return (tid, int(rng.integers(1, 1 << 20)))

    def body(self, tx: Any, op: tuple[int, int]) -> Generator[Any, Any, None]:
        cell = tx.rt.static
        tid, n = op
        for k in range(LATE_WORDS if tid == 0 else 0):
            tx.write(cell("cells", LATE_STRIDE * (tid + 1) + k), 0, n)
            yield from tx.pause()
        v = tx.read(cell("cells", 0), 0) + 1
        tx.write(cell("cells", 0), 0, v)
        tx.write(cell("cells", 1 + tid), 0, v)

    def model(self) -> Model:
        return LatecomerModel(self.threads)

    def read_data(self, rt: Any) -> Hashable:
        return tuple(int(x) for x in rt.peek_static("cells")[:, 0])


class OverwriteModel(Model):
    def __init__(self, threads: int) -> None:
        self.cells = [0] * (LATE_STRIDE * (threads + 1))

    def apply(self, op: tuple[int, int, int]) -> None:
        tid, n, shared = op
        c = self.cells
        for k in range(LATE_WORDS if tid == 0 else 0):
            c[LATE_STRIDE * (tid + 1) + k] = n
        c[0 if shared else LATE_STRIDE * (tid + 1)] = n

    def snapshot(self) -> Hashable:
        return tuple(self.cells)


class Overwrite(Workload):
    """Thread 0's transactions write twelve private words, then a fresh value into one shared
    word; the other threads' store a fresh value into the shared word or into their private
    word, at random. Thread 0 commits seldom, so its log's newest checkpointed transaction
    often wrote the shared word before newer ones of another log that are checkpointed too:
    replaying it again (M21) regresses the word."""

    name = "nvhtm-overwrite"

    def spec(self) -> PMSpec:
        return PMSpec(statics=(StaticArray("cells", LATE_STRIDE * (self.threads + 1), 1),),
                      max_tx_writes=LATE_WORDS + 1, max_tx_words=LATE_WORDS + 1,
                      max_tx_allocs=0, max_tx_objects=LATE_WORDS + 1)

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[int, int, int]:
        return (tid, int(rng.integers(1, 1 << 20)), 1 if tid == 0 else int(rng.integers(0, 2)))

    def body(self, tx: Any, op: tuple[int, int, int]) -> Generator[Any, Any, None]:
        cell = tx.rt.static
        tid, n, shared = op
        for k in range(LATE_WORDS if tid == 0 else 0):
            tx.write(cell("cells", LATE_STRIDE * (tid + 1) + k), 0, n)
            yield from tx.pause()
        tx.write(cell("cells", 0 if shared else LATE_STRIDE * (tid + 1)), 0, n)

    def model(self) -> Model:
        return OverwriteModel(self.threads)

    def read_data(self, rt: Any) -> Hashable:
        return tuple(int(x) for x in rt.peek_static("cells")[:, 0])
