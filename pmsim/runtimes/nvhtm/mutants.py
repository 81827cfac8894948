"""The NV-HTM card mutants (papers/nv-htm.md §6), declared and registered at the end, and the
patches behind those that are not plain drops or delays of named steps: each takes the
original class attribute and returns the broken one. :class:`DupBank` is the workload M16
needs (a transaction that writes one word twice), :class:`Latecomer` the one M8 needs (a
transaction that reads what another committed after it began).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Hashable
from typing import Any, ClassVar

import numpy as np

from ...tm.htm import HtmAbort
from ...workloads.bank import Bank
from ...workloads.base import Model, Workload
from ..base import PB_DOMAINS
from ..layout import PMSpec, StaticArray
from ..mutation import Mutant, delay, drop, patch, skip_check
from ..registry import register_mutant, variant
from .nvhtm import INF as TS_INF
from .nvhtm import NVHTM_FINE, NVHTM_RACE, NVHTM_SKEW, LogTx, NvHtmRuntime, marker_word

Fn = Callable[..., Any]
INF = (1 << 64) - 1
LAPS = 64
"""How many laps back the whole-ring scan of M11 recognises a marker from."""


def const(value: Any) -> Fn:
    """A patch replacing a class attribute (a switch) by ``value``."""
    def _patch(orig: Any) -> Any:
        return value
    return _patch


# -- holds: the scheduling points the race mutants need, forced instead of left to timing ----
HELD = 0
"""The thread a race mutant's hold delays (the other threads run on)."""
HOLD_NS = 20_000.0
"""Longest hold of a worker. A hold ends when what it waits for happens; the bound only ends it
when the awaited thread has no transaction left (so runs end)."""
CP_HOLD_NS = 1e6
"""Longest hold of the checkpointer (it ends at once when the workers are done)."""
POLL_NS = 100.0
SPURIOUS = 0x21
"""xabort code of the hardware aborts :func:`hardware_aborts` forces."""


def _hold(rt: Any, cpu: Any, done: Callable[[], bool], ns: float = HOLD_NS
          ) -> Generator[Any, Any, None]:
    """Let simulated time pass on ``cpu`` until ``done()``, at most ``ns``."""
    t0 = cpu.clock
    while not done() and cpu.clock - t0 < ns:
        yield from rt.idle(cpu, POLL_NS)


def _commits(rt: Any, tid: int) -> int:
    """Transactions of thread ``tid`` committed (HTM or SGL) so far."""
    return sum(1 for x in rt.commit_order if x >> 32 == tid)


def hold_for_later_commit(orig: Fn) -> Fn:
    """Patch of ``_gap`` (the point right after a commit: after ``xend`` before C3, and after
    the SGL's release): thread :data:`HELD` stays there until a transaction of another thread
    that committed after it has taken its timestamp. Any pause there is legal; it is the
    window M7 and M19 read their timestamp after, so a dependent always gets a smaller one."""
    def _gap(self: Any, cpu: Any) -> Generator[Any, Any, None]:
        yield from orig(self, cpu)
        if cpu.tid != HELD:
            return
        n = len(self.commit_order)

        def done() -> bool:
            return any(x >> 32 != HELD and x in self.commit_ts for x in self.commit_order[n:])
        yield from _hold(self, cpu, done)
    return _gap


def hardware_aborts(orig: Fn) -> Fn:
    """Patch of ``_write``: thread :data:`HELD`'s hardware attempts abort at their first write
    (best-effort HTM may abort any transaction, card H4), so with a budget of one attempt its
    updates run under the SGL while the other threads' run in hardware (what M19 needs)."""
    def _write(self: Any, tx: Any, home: int, values: Any) -> None:
        if tx.hw and tx.tid == HELD:
            tx.cpu.xabort(SPURIOUS)
            raise HtmAbort(tx.cpu.xstatus())
        orig(self, tx, home, values)
    return _write


def follow(follower: int, leader: int, lead: int) -> Fn:
    """A patch of ``run``: thread ``follower`` starts its k-th transaction only once thread
    ``leader`` has committed ``k + lead`` (or the leader has none left): the threads' commits
    interleave in that order whatever the persist barriers cost."""
    def _patch(orig: Fn) -> Fn:
        def run(self: Any, cpu: Any, *args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            if cpu.tid == follower:
                need = self.seq[follower] + 1 + lead
                yield from _hold(self, cpu, lambda: _commits(self, leader) >= need)
            return (yield from orig(self, cpu, *args, **kwargs))
        return run
    return _patch


def checkpoint_when_idle(orig: Fn) -> Fn:
    """Patch of ``_checkpoint``: a checkpoint a log asked for starts only once the workers are
    done (or after :data:`CP_HOLD_NS`): a descheduled checkpointer, which M14 needs to see logs
    filled past their threshold with no commit racing its truncation."""
    def _checkpoint(self: Any, cpu: Any, t: int | None) -> Generator[Any, Any, None]:
        if t is not None and not self.stopping:
            yield from self.idle(cpu, CP_HOLD_NS)
        yield from orig(self, cpu, t)
    return _checkpoint


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
        tid, n, word = op
        c = self.cells
        for k in range(LATE_WORDS if tid else 0):
            c[LATE_STRIDE * (tid + 1) + k] = n
        for w in ((0, 1) if tid == 0 else (word,)):
            c[w] = n

    def snapshot(self) -> Hashable:
        return tuple(self.cells)


class Overwrite(Workload):
    """Two shared words x and y (cells 0 and 1). Thread 0's transactions store a fresh value
    into both (two log entries); every other thread's store twelve private words (lines of
    their own), then a fresh value into x or y, alternately. The other threads' records are
    thus seven times thread 0's, and any two of their consecutive transactions overwrite both
    words: the checkpointer mutants (M14, M21) need such a pair after thread 0's last
    transaction, or thread 0's last transaction after older overwrites, and the mutants' hold
    patches (:func:`follow`) order the threads accordingly."""

    name = "nvhtm-overwrite"

    def spec(self) -> PMSpec:
        return PMSpec(statics=(StaticArray("cells", LATE_STRIDE * (self.threads + 1), 1),),
                      max_tx_writes=LATE_WORDS + 1, max_tx_words=LATE_WORDS + 1,
                      max_tx_allocs=0, max_tx_objects=LATE_WORDS + 1)

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[int, int, int]:
        k = sum(1 for txid in self.executed if txid >> 32 == tid)  # the thread's earlier ones
        return (tid, int(rng.integers(1, 1 << 20)), k & 1)

    def body(self, tx: Any, op: tuple[int, int, int]) -> Generator[Any, Any, None]:
        cell = tx.rt.static
        tid, n, word = op
        for k in range(LATE_WORDS if tid else 0):
            tx.write(cell("cells", LATE_STRIDE * (tid + 1) + k), 0, n)
            yield from tx.pause()
        for w in ((0, 1) if tid == 0 else (word,)):
            tx.write(cell("cells", w), 0, n)

    def model(self) -> Model:
        return OverwriteModel(self.threads)

    def read_data(self, rt: Any) -> Hashable:
        return tuple(int(x) for x in rt.peek_static("cells")[:, 0])

BANK = "bank"
TWO = "two worker threads whose transactions conflict"
PAIR = "pmsim.runtimes.nvhtm.mutants:PairBank"
OVERWRITE = "pmsim.runtimes.nvhtm.mutants:Overwrite"


def _mutant(ident: str, base: Any, mutations: tuple[Any, ...], why: str,
            domains: tuple[str, ...] = ("pdom0", "pdom1", "pdom2"), needs: str = "",
            threads: int = 1, workload: str = "", txs: int = 0) -> Mutant:
    return Mutant(f"nvhtm:{ident}", base, mutations, domains, why, needs, threads, workload,
                  txs)


MUTANTS = (
    _mutant("M1", NVHTM_FINE, (drop("nvhtm.commit.flush-entries"),),
            "C4 skipped: the marker is flushed and fenced, the entries are not; recovery replays "
            "stale slots", PB_DOMAINS),
    _mutant("M2", NVHTM_FINE, (drop("nvhtm.commit.fence-entries"),),
            "F1 dropped: the marker and endP may persist before the entries", PB_DOMAINS),
    _mutant("M3", NVHTM_RACE, (patch("_wait_commit", no_wait_update, "no WAITCOMMIT"),),
            "an update skips WAITCOMMIT: it becomes durable before a transaction it read from",
            needs=TWO, threads=2, workload="array"),
    _mutant("M5", NVHTM_RACE, (patch("_make_durable", idle_before_fence, "C8 before F2"),),
            "C8 before F2: a later timestamp passes WAITCOMMIT and persists its marker first (a "
            "gap)", PB_DOMAINS, TWO, 2, BANK),
    _mutant("M6", NVHTM_RACE, (drop("nvhtm.begin.advertise"),),
            "no begin advertisement: between xend and C3 the thread looks idle, so a dependent "
            "skips the wait", needs=TWO, threads=2, workload="array"),
    _mutant("M7", NVHTM_RACE, (patch("ts_after_commit", const(True), "ts after xend"),
                                patch("_gap", hold_for_later_commit, "hold after xend")),
            "the timestamp is read after xend: a dependent gets a smaller one and is replayed "
            "first", needs=TWO + "; thread 0 held after xend until another commits",
            threads=2, workload=PAIR),
    _mutant("M8", NVHTM_RACE, (patch("_take_ts", begin_ts_as_commit_ts, "begin ts"),),
            "the begin timestamp is the commit timestamp: a long transaction that depends on a "
            "shorter one is ordered before it", needs=TWO + ", one long and one short", threads=2,
            workload="pmsim.runtimes.nvhtm.mutants:Latecomer"),
    _mutant("M9", NVHTM_SKEW, (patch("skew_delta_ns", const(0.0), "no Δ spin"),),
            "skewed TSCs and no Δ spin: a dependent on a core whose TSC lags gets a smaller "
            "timestamp", needs=TWO, threads=2, workload=BANK),
    _mutant("M10", NVHTM_FINE, (skip_check("nvhtm.recover.marker"),),
            "recovery trusts endP: when endP persists before the marker, the slot before it is "
            "taken as a marker with whatever timestamp it holds", PB_DOMAINS),
    _mutant("M11", NVHTM_FINE, (patch("_parse", whole_ring, "scan the whole ring"),),
            "recovery scans the whole ring, ignoring startP/endP: checkpointed transactions of an "
            "older lap are replayed again over newer values", needs="a log that wraps"),
    _mutant("M12", NVHTM_FINE, (delay("nvhtm.cp.flush", after="nvhtm.cp.startp"),),
            "the startPs are persisted before the PS lines are flushed: truncated transactions "
            "are lost", PB_DOMAINS),
    _mutant("M13", NVHTM_RACE, (patch("_truncate", no_cplog, "no CPLog"),),
            "the startPs advance without the CPLog: after a partial update an old transaction "
            "of an un-advanced log is replayed over a newer value", needs=TWO, threads=2,
            workload=BANK),
    _mutant("M14", variant(NvHtmRuntime, "nvhtm-wide-log", log_slots=256,
                           prune_threshold=0.1875, fuzz_variant=True),
            (patch("_window", per_log_cut, "a cut per log"),
             patch("_checkpoint", checkpoint_when_idle, "checkpoint when idle"),
             patch("run", follow(0, 1, 0), "thread 0 last")),
            "a separate cut per log: an older transaction is applied over a newer one",
            needs=TWO + ", thread 0's records small, thread 1's large, thread 0 last, the "
            "checkpointer late", threads=2, workload=OVERWRITE, txs=4),
    _mutant("M15", NVHTM_FINE, (patch("_filter_key", filter_per_line, "filter per line"),),
            "the filter marks lines: other words of a line lose their newest values"),
    _mutant("M16", NVHTM_FINE, (patch("_tx_entries", forward_within_tx, "forward in tx"),),
            "entries of a transaction visited forward: the first of two writes to a word wins",
            needs="a transaction that writes a word twice",
            workload="pmsim.runtimes.nvhtm.mutants:DupBank"),
    _mutant("M17", NVHTM_FINE, (patch("_parse", markerless_replayed, "no marker needed"),),
            "recovery replays the entries after a log's last marker: transactions that never "
            "became durable (and stale entries of an older lap) appear"),
    _mutant("M18", NVHTM_FINE, (patch("_ws_base", ws_is_ps, "WS = PS"),),
            "the working snapshot is mapped shared: HTM commits write the PS, and eviction "
            "persists non-durable data"),
    _mutant("M19", variant(NVHTM_RACE, "nvhtm-race-sgl", htm_budget=1),
            (patch("sgl_ts_after_release", const(True), "SGL ts after release"),
             patch("_write", hardware_aborts, "thread 0 on the SGL"),
             patch("_gap", hold_for_later_commit, "hold after the release")),
            "the SGL path reads its timestamp after releasing the lock: a hardware transaction "
            "that read its writes can get a smaller timestamp", needs=TWO + "; thread 0 on the "
            "SGL, held after the release until another commits", threads=2, workload=PAIR),
    _mutant("M21", NVHTM_FINE, (patch("_new_start", boundary_start, "startP at boundary"),
                                 patch("run", follow(1, 0, 2), "thread 0 first")),
            "a new startP is the boundary transaction itself: recovery replays it again over a "
            "newer value from another log", needs=TWO + ", thread 0 done two transactions "
            "before thread 1", threads=2, workload=OVERWRITE),
)
"""The card mutants crashfuzz kills. M4 (read-only skips WAITCOMMIT) and M20 (no marker
reservation) are in :data:`UNREGISTERED`: neither can change recovered data (R5 and liveness,
see docs/protocols/nvhtm/nvhtm.md)."""

UNREGISTERED = (
    _mutant("M4", NVHTM_FINE, (patch("_wait_commit", no_wait_read_only, "RO no wait"),),
            "a read-only transaction returns without WAITCOMMIT: what it read may be lost (R5; "
            "the recovered data is still a correct prefix)", needs=TWO, threads=2),
    _mutant("M20", NVHTM_FINE, (patch("marker_reserve", const(1), "no marker reservation"),),
            "logCheckSpace reserves no slot for the marker: a transaction commits in HTM with no "
            "room for it (liveness: the runtime raises)"),
)

for _m in MUTANTS:
    register_mutant(_m)
