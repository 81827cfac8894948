"""Hardware transactional memory (Intel TSX/RTM-like): the reference rules of both engines.

:class:`HtmState` is the executable specification shared by ``PyEngine`` and
``FunctionalEngine``; the C core (``csrc/machine.c``, ``htm_*``) implements the same rules in
the same order, and tests/hw/test_htm_differential.py checks that they agree.

Rules (nv-htm.md §2 H1-H7, §10):

* ``xbegin`` starts a transaction (no nesting). Until ``xend``, every access of the thread is
  transactional: loads join its read set, stores (and movnt, and CAS/xchg, which read and write)
  its write set, per 64-byte line, with a mask of the 8-byte words touched. Stores are buffered
  per word and are invisible to the caches' contents, memory and the trace; loads see the
  thread's own buffered stores.
* Conflicts are eager and the requester wins: a load of a line in another live transaction's
  write set, or a store/CAS/xchg/movnt to a line in its read or write set, aborts that other
  transaction at once, whether the requester is transactional or not (a background thread's
  read aborts a writer). A clwb of a line another transaction wrote, and a clflush/clflushopt
  of a line it read or wrote, abort it too. A conflict on a line where the words touched do not
  overlap is also counted as false sharing.
* Conflict-exempt lines (dudetx-decoupled.md §5, the hardware tweak DUDETx proposes: "HTM
  ignores conflicts on designated addresses"): an access to a line marked with
  ``htm_exempt(addr)`` is never transactional. A live transaction runs it as a plain access
  (applied at once, not buffered, not rolled back on an abort, in no read or write set, never
  a capacity or flush abort), and no access to such a line, transactional or not, aborts any
  transaction. A doomed thread's access is still dropped. The marks survive a power cycle
  (they configure the hardware, like the set bounds).
* Capacity: a new read line beyond ``htm.read_set_lines``, a new written line beyond
  ``htm.write_set_lines`` or beyond the ways of its L1 set aborts the transaction itself. Two
  hardware threads on one core (``core.physical_cores``) each get half the write set, and the
  ways of a set hold both live transactions' written lines (card nv-htm §10.1: the capacity
  halves when the sibling hyper-thread is active).
* A flush of a line in the thread's own write set (any flush with ``htm.abort_on_any_flush``)
  aborts it; other flushes run as usual. ``xabort(code)`` aborts with an 8-bit code.
* An aborted transaction is *doomed*: its sets and buffered stores are dropped at once, and the
  thread's further accesses are not applied (no value, time, statistic or trace event; loads
  return 0) until ``xend``, which returns the abort status and ends it. ``xstatus`` tells a
  doomed thread early. A committing ``xend`` writes the buffered words to memory and emits
  their STORE events (lines in order of first write, words in address order, each word once
  with its final value), all at the commit time.
* Fences, pcommit, persist barriers, work and markers inside a transaction run as usual (on
  TSX fences do not abort): they order the thread's earlier flushes, never its buffered stores,
  which become visible at ``xend``. ``xend`` is not a persist-ordering point; a runtime that
  needs one after a commit issues a fence (NV-HTM does).

Timing (the timed engines only): a transactional access costs what the plain access costs
and takes the line for writing (other copies invalidated) without dirtying it; at commit the
written lines are marked dirty, a line evicted from L1 meanwhile being fetched again at its
access latency. ``xbegin``/``xend`` cost ``htm.xbegin_ns``/``htm.xend_ns``; an abort costs
``htm.abort_ns`` when the thread learns of it at ``xend``. Time spent in an aborted attempt is
never given back.

The abort status follows RTM's EAX layout: bit 0 explicit, bit 1 retry, bit 2 conflict, bit 3
capacity, bits 24-31 the xabort code; pmsim adds bit 6 for a flush abort.
"""

from __future__ import annotations

from collections.abc import Callable

from ..config import MachineConfig
from ..errors import ConfigError

XABORT_EXPLICIT = 1 << 0
XABORT_RETRY = 1 << 1
XABORT_CONFLICT = 1 << 2
XABORT_CAPACITY = 1 << 3
XABORT_FLUSH = 1 << 6
"""pmsim's own cause bit (RTM reports a flush abort as an unspecified abort)."""

XABORT_LOCK_BUSY = 0xFF
"""The xabort code a lock-elision runner uses when it finds its fallback lock taken (glibc's
``_ABORT_LOCK_BUSY``); the engines count such aborts as ``htm_aborts_lock``."""

EXEMPT_MAX = 16
"""Most conflict-exempt lines per machine (``PM_HTM_EXEMPT_MAX`` in the C core)."""

NONE, LIVE, DOOMED = 0, 1, 2
"""A thread's transaction state."""

READ, WRITE, RMW, CLEAN, INVAL = 0, 1, 2, 3, 4
"""Access kinds for conflict detection: load; store/movnt; CAS/xchg; clwb; clflush(opt)."""

PLAIN, TX, SKIP = 0, 1, 2
"""What an engine does with an access: run it as usual, run it transactionally, or drop it."""


def xabort_code(status: int) -> int:
    """The 8-bit code of an explicit abort status."""
    return (status >> 24) & 0xFF


def cause_counter(status: int) -> str:
    """The statistic an abort with ``status`` counts in."""
    if status & XABORT_EXPLICIT:
        return "htm_aborts_lock" if xabort_code(status) == XABORT_LOCK_BUSY else "htm_aborts_explicit"
    if status & XABORT_CONFLICT:
        return "htm_aborts_conflict"
    if status & XABORT_CAPACITY:
        return "htm_aborts_capacity"
    return "htm_aborts_flush"


def describe_status(status: int) -> str:
    """An abort status as text, e.g. ``'conflict|retry'`` or ``'explicit(0xfe)'``."""
    if not status:
        return "committed"
    parts = [name for bit, name in ((XABORT_CONFLICT, "conflict"), (XABORT_CAPACITY, "capacity"),
                                    (XABORT_FLUSH, "flush"), (XABORT_RETRY, "retry"))
             if status & bit]
    if status & XABORT_EXPLICIT:
        parts.insert(0, f"explicit({xabort_code(status):#x})")
    return "|".join(parts)


def nested_error(tid: int) -> ConfigError:
    return ConfigError(f"xbegin: thread {tid} is already in a hardware transaction; end it "
                       "with xend first (pmsim does not nest transactions)")


def outside_error(tid: int) -> ConfigError:
    return ConfigError(f"xend: thread {tid} is not in a hardware transaction; begin one with "
                       "xbegin")


class HtmState:
    """Every thread's transaction: state, abort status, read/write sets and buffered stores.

    ``bump(tid, name)`` adds one to a statistic of thread ``tid`` (the engine's counters).
    """

    def __init__(self, cfg: MachineConfig, bump: Callable[[int, str], None]) -> None:
        n = cfg.cores
        h = cfg.htm
        self.read_lines = h.read_set_lines
        self.write_lines = h.write_set_lines
        self.any_flush = h.abort_on_any_flush
        self.set_mask = cfg.cache.l1.sets - 1
        self.ways = cfg.cache.l1.ways
        self.bump = bump
        self.state = [NONE] * n
        self.status = [0] * n
        self.rset: list[dict[int, int]] = [{} for _ in range(n)]  # line -> word mask
        self.wset: list[dict[int, int]] = [{} for _ in range(n)]  # line -> mask, first-write order
        self.buf: list[dict[int, int]] = [{} for _ in range(n)]  # address -> buffered value
        self.sets: list[dict[int, int]] = [{} for _ in range(n)]  # L1 set -> written lines
        # two threads on one core (CoreConfig.physical_cores) share its L1, so a written line
        # takes a way from both, and each gets half the write capacity
        self.sib = cfg.core.placement(n)[1]
        self.write_limit = [h.write_set_lines // 2 if s >= 0 else h.write_set_lines
                            for s in self.sib]
        self.active = 0  # threads in a transaction (live or doomed)
        self.live = 0
        self.exempt: set[int] = set()  # conflict-exempt lines

    def exempt_line(self, addr: int) -> None:
        """Mark the line holding ``addr`` conflict-exempt (see the module docstring)."""
        line = int(addr) >> 6
        if line not in self.exempt and len(self.exempt) >= EXEMPT_MAX:
            raise ConfigError(f"htm_exempt: at most {EXEMPT_MAX} lines can be conflict-exempt; "
                              "put the exempt words on fewer lines")
        self.exempt.add(line)

    # -- transitions ---------------------------------------------------------------------------
    def begin(self, tid: int) -> None:
        if self.state[tid] != NONE:
            raise nested_error(tid)
        self.state[tid] = LIVE
        self.active += 1
        self.live += 1
        self.bump(tid, "htm_begins")

    def _clear(self, tid: int) -> None:
        self.rset[tid].clear()
        self.wset[tid].clear()
        self.buf[tid].clear()
        self.sets[tid].clear()

    def doom(self, tid: int, status: int) -> None:
        """Abort thread ``tid``'s live transaction with ``status``."""
        self.state[tid] = DOOMED
        self.status[tid] = status
        self.live -= 1
        self._clear(tid)
        self.bump(tid, cause_counter(status))

    def abort(self, tid: int, code: int) -> None:
        """xabort: abort a live transaction with ``code`` (nothing outside one)."""
        if self.state[tid] == LIVE:
            self.doom(tid, XABORT_EXPLICIT | code << 24)

    def end_doomed(self, tid: int) -> int:
        """End a doomed transaction; its abort status."""
        status = self.status[tid]
        self.state[tid] = NONE
        self.status[tid] = 0
        self.active -= 1
        return status

    def commit(self, tid: int) -> tuple[list[tuple[int, int]], list[int]]:
        """End a live transaction: its buffered ``(address, value)`` words in commit order and
        the lines they modify."""
        buf = self.buf[tid]
        words: list[tuple[int, int]] = []
        lines: list[int] = []
        for line in self.wset[tid]:
            base = line << 6
            n = len(words)
            for j in range(8):
                v = buf.get(base + 8 * j)
                if v is not None:
                    words.append((base + 8 * j, v))
            if len(words) > n:
                lines.append(line)
        self._clear(tid)
        self.state[tid] = NONE
        self.active -= 1
        self.live -= 1
        self.bump(tid, "htm_commits")
        return words, lines

    def xstatus(self, tid: int) -> int:
        return self.status[tid] if self.state[tid] == DOOMED else 0

    # -- accesses ------------------------------------------------------------------------------
    def access(self, tid: int, addr: int, kind: int) -> int:
        """Track and check an access of thread ``tid`` at ``addr``: PLAIN, TX or SKIP.

        A live thread's access joins its sets (or aborts it: capacity, flush); then every other
        live transaction it conflicts with aborts. A doomed thread's access is dropped.
        """
        s = self.state[tid]
        if s == DOOMED:
            return SKIP
        line = addr >> 6
        if line in self.exempt:
            return PLAIN
        bit = 0xFF if kind >= CLEAN else 1 << ((addr >> 3) & 7)
        if s == LIVE:
            if kind >= CLEAN:
                if self.any_flush or line in self.wset[tid]:
                    self.doom(tid, XABORT_FLUSH)
                    return SKIP
            elif not self._track(tid, line, bit, kind != WRITE, kind != READ):
                return SKIP
        if self.live > (1 if s == LIVE else 0):
            self._conflicts(tid, line, bit, kind)
        return TX if s == LIVE and kind < CLEAN else PLAIN

    def _track(self, tid: int, line: int, bit: int, rd: bool, wr: bool) -> bool:
        """Add the access to the sets; False (and the transaction aborted) on overflow."""
        rs, ws = self.rset[tid], self.wset[tid]
        new_r = rd and line not in rs
        new_w = wr and line not in ws
        st = line & self.set_mask
        ways = self.sets[tid].get(st, 0)
        sib = self.sib[tid]
        if sib >= 0 and self.state[sib] == LIVE:
            ways += self.sets[sib].get(st, 0)
        if (new_r and len(rs) >= self.read_lines) or (new_w and (
                len(ws) >= self.write_limit[tid] or ways >= self.ways)):
            self.doom(tid, XABORT_CAPACITY)
            return False
        if rd:
            rs[line] = rs.get(line, 0) | bit
        if wr:
            ws[line] = ws.get(line, 0) | bit
            if new_w:
                self.sets[tid][st] = self.sets[tid].get(st, 0) + 1
        return True

    def _conflicts(self, tid: int, line: int, bit: int, kind: int) -> None:
        for u, s in enumerate(self.state):
            if u == tid or s != LIVE:
                continue
            w = self.wset[u].get(line, 0)
            if kind == READ or kind == CLEAN:
                mask = w
            else:
                mask = w | self.rset[u].get(line, 0)
            if mask:
                self.doom(u, XABORT_CONFLICT | XABORT_RETRY)
                if not mask & bit:
                    self.bump(u, "htm_false_sharing")

    def buffered(self, tid: int, addr: int) -> int | None:
        """The value thread ``tid``'s transaction stored at ``addr``, if any."""
        return self.buf[tid].get(addr)

    def buffer(self, tid: int, addr: int, value: int) -> None:
        self.buf[tid][addr] = value


__all__ = ["DOOMED", "EXEMPT_MAX", "HtmState", "LIVE", "NONE", "XABORT_CAPACITY", "XABORT_CONFLICT",
           "XABORT_EXPLICIT", "XABORT_FLUSH", "XABORT_LOCK_BUSY", "XABORT_RETRY",
           "cause_counter", "describe_status", "xabort_code"]
