"""A TinySTM-like word-based software transactional memory on the simulated machine.

The algorithm is TinySTM's (Felber, Fetzer, Riegel, PPoPP'08: the lazy snapshot algorithm
with encounter-time locking), the STM that DUDETx's Perform step and NV-HTM's PSTM baseline
run on (papers/dudetx-decoupled.md §5, papers/nv-htm.md §7)::

    stm = Stm(machine)                        # clock and lock table in the machine's DRAM
    stx = stm.begin(cpu)
    v = stx.read(addr); stx.write(addr, v + 1)
    ts = stx.commit()                         # raises StmAbort if validation fails

    stx = yield from stm.atomic(cpu, body)    # or: retry body(stx) until it commits

Metadata lives in simulated DRAM and every access to it is a timed instruction, so its cache
misses, coherence traffic and CAS costs are modelled: a **global version clock** (one word,
its own line) and a **lock table** of ``StmConfig.locks`` words; address ``a`` maps to lock
``(a >> log2(stripe)) & (locks - 1)``. An unlocked lock word holds ``version << 4 |
incarnation << 1``, a locked one ``owner tid << 1 | 1``.

- **Reads** load lock, value, lock again (a consistent pair) and record (lock, version) in the
  read set. A version newer than the snapshot ``end`` extends the snapshot (sample the clock,
  validate the read set, move ``end``) or aborts (``AbortCause.READ_VALIDATION``). A stripe
  locked by another transaction aborts the reader (``LOCKED``; TinySTM's default contention
  manager, suicide).
- **Writes** lock the stripe at once (encounter-time locking, TinySTM's default), aborting on a
  stripe locked by another transaction (``LOCKED``) or one this transaction read at an older
  version (``READ_VALIDATION``; TinySTM's VAL_WRITE).
- **Design** ``write-back`` (the default, TinySTM's WRITE_BACK_ETL): writes are buffered in a
  redo write set, stored at commit. ``write-through`` (WRITE_THROUGH): writes go in place and
  the old value joins an undo set, restored on abort (DUDETx's Perform, fn. 5; PSTM).
- **Commit** of a read-only transaction does nothing: it is serialized at its snapshot ``end``.
  An update transaction takes ``ts = clock + 1`` by fetch-and-increment, validates its read
  set unless no transaction committed since it began (``COMMIT_VALIDATION`` on failure),
  calls ``on_commit``, writes back (write-back) and releases its locks with version ``ts``.
  Timestamps are unique and increase with commit order, but need not be dense: a failed
  commit validation burns one, as does a write-through abort once a stripe's incarnation
  numbers run out.
- **Abort** raises :class:`StmAbort` from the access that failed (TinySTM longjmps), after the
  rollback: locks released (write-through: old values restored first, the lock's incarnation
  bumped so a concurrent reader sees the dirty value was there). :meth:`Stm.atomic` catches it,
  backs off (randomized exponential, TinySTM's CM_BACKOFF: without it a retried transaction
  would spin against a lock held by a thread that cannot run until it yields) and retries.

Simulated threads interleave only where they yield, so each STM operation is atomic with
respect to the others; transactions overlap across pause points (``cpu.maybe_yield``) and the
retry loop. Hooks let durable runtimes log before publishing: ``on_write`` (each write, lock
held, before it takes effect), ``on_commit`` (after validation, before write-back and lock
release) and ``on_abort`` (after the undo set is restored, before the locks are released).
"""

from __future__ import annotations

import enum
import math
import random
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, fields
from typing import Any, Literal, NoReturn, get_args

from ..config import LINE, param
from ..errors import ConfigError, PmsimError
from ..hw.engines.reference import as_word

Design = Literal["write-back", "write-through"]

LOCKED_BIT = 1
INC_SHIFT = 1
INC_BITS = 3
INC_MAX = (1 << INC_BITS) - 1
VERSION_SHIFT = INC_SHIFT + INC_BITS
"""Lock word layout: bit 0 set = locked (bits 1.. hold the owner tid); clear = unlocked with
an incarnation number in bits 1-3 (write-through aborts bump it) and the version above."""


class AbortCause(enum.Enum):
    """Why an attempt aborted (the buckets of TinySTM's abort reasons)."""

    READ_VALIDATION = "read-validation"
    """A read's snapshot extension failed (VAL_READ), or a write found a stripe the
    transaction had read at an older version (VAL_WRITE)."""
    LOCKED = "locked"
    """A read or write met a stripe whose write lock another transaction holds (RW/WW)."""
    COMMIT_VALIDATION = "commit-validation"
    """The read set failed validation at commit (VALIDATE)."""
    USER = "user"
    """The body asked to abort (``StmTx.abort``, or a body returning False): not retried."""


class StmAbort(BaseException):  # noqa: N818 (TinySTM's name for the event, not an error)
    """An attempt aborted on a conflict; raised from the access (or commit) that failed.

    A BaseException, like the longjmp it stands for: a body's ``except Exception`` must not
    swallow it, since the attempt is already rolled back and must unwind to the retry loop.
    """

    def __init__(self, cause: AbortCause, tx: StmTx) -> None:
        super().__init__(f"thread {tx.tid}: transaction aborted ({cause.value})")
        self.cause = cause
        self.tx = tx


@dataclass(frozen=True)
class StmConfig:
    """Geometry and instruction costs of the STM (costs beyond its timed memory accesses)."""

    design: Design = param("write-back", "", "'write-back' (redo buffer, TinySTM's default) or "
                           "'write-through' (in place with an undo set)")
    locks: int = param(1 << 12, "locks", "lock-table entries, a power of two (one DRAM word "
                       "each; TinySTM has 2**20, the default fits small DRAM regions)")
    stripe: int = param(32, "bytes", "bytes of address space per lock, a power of two >= 8 "
                        "(TinySTM: 32)")
    begin_ns: float = param(5.0, "ns", "begin: descriptor reset and setjmp, beside the clock load")
    access_ns: float = param(2.0, "ns", "bookkeeping of one read or write (read/write-set entry)")
    lookup_ns: float = param(3.0, "ns", "search of the own write set (a read or write of a "
                             "stripe this transaction locked; a write to a read stripe)")
    validate_ns: float = param(1.0, "ns", "per read-set entry validated, beside its lock load")
    commit_ns: float = param(5.0, "ns", "commit bookkeeping")
    abort_ns: float = param(20.0, "ns", "rollback bookkeeping and the longjmp")
    backoff_ns: float = param(50.0, "ns", "mean back-off after the first abort in a row; it "
                              "doubles with every further abort")
    backoff_doublings: int = param(10, "", "most doublings of the back-off")
    max_attempts: int = param(10_000, "", "attempts of one transaction before atomic() gives "
                              "up with an error (a livelock guard)")

    def __post_init__(self) -> None:
        if self.design not in get_args(Design):
            raise ConfigError(f"StmConfig.design: unknown design {self.design!r}; use "
                              "'write-back' or 'write-through'")
        for name in ("locks", "stripe"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1 or v & (v - 1):
                raise ConfigError(f"StmConfig.{name}={v!r} must be a power of two")
        if self.stripe < 8:
            raise ConfigError(f"StmConfig.stripe={self.stripe} is less than a word; use >= 8")
        if self.locks > 1 << 24:
            raise ConfigError(f"StmConfig.locks={self.locks} is more than 2**24; the lock table "
                              "lives in simulated DRAM")
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name.endswith("_ns") and (not isinstance(v, (int, float)) or isinstance(v, bool)
                                           or not math.isfinite(v) or v < 0):
                raise ConfigError(f"StmConfig.{f.name}={v!r} must be a finite number >= 0")
        for name in ("backoff_doublings", "max_attempts"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < (1 if name == "max_attempts"
                                                                     else 0):
                raise ConfigError(f"StmConfig.{name}={v!r} must be a non-negative integer "
                                  "(max_attempts >= 1)")


@dataclass
class StmStats:
    """One thread's counters."""

    attempts: int = 0
    commits: int = 0
    read_only: int = 0  # commits of transactions that wrote nothing
    extensions: int = 0  # successful snapshot extensions
    aborts: dict[AbortCause, int] = field(default_factory=lambda: dict.fromkeys(AbortCause, 0))

    def add(self, other: StmStats) -> None:
        self.attempts += other.attempts
        self.commits += other.commits
        self.read_only += other.read_only
        self.extensions += other.extensions
        for c, n in other.aborts.items():
            self.aborts[c] += n

    def as_dict(self) -> dict[str, int]:
        """Flat counters, aborts as ``aborts.<cause>``."""
        return {"attempts": self.attempts, "commits": self.commits, "read_only": self.read_only,
                "extensions": self.extensions,
                **{f"aborts.{c.value}": n for c, n in self.aborts.items()}}


ACTIVE, COMMITTED, ABORTED = "active", "committed", "aborted"

WriteHook = Callable[["StmTx", int, int, "int | None"], None]
CommitHook = Callable[["StmTx", int], None]
AbortHook = Callable[["StmTx", AbortCause], None]


class StmTx:
    """One attempt of a transaction on one thread.

    ``reads``: the read set, ``(lock index, version)`` per validated read, in order.
    ``write_set``: address -> newest value written, in first-write order (what write-back
    stores). ``owned``: lock index -> its word when this transaction locked it. ``undo``:
    write-through only, ``(address, old value)`` per first write of an address.
    ``start``/``end``: the snapshot's bounds; ``ts``: the commit timestamp (update
    transactions) or the snapshot ``end`` (read-only ones), set at commit.
    """

    __slots__ = ("stm", "cpu", "tid", "start", "end", "reads", "write_set", "owned", "undo",
                 "status", "ts", "cause", "_ld", "_st", "_work", "_cost")

    def __init__(self, stm: Stm, cpu: Any, start: int) -> None:
        self.stm = stm
        self.cpu = cpu
        self.tid: int = cpu.tid
        self.start = start
        self.end = start
        self.reads: list[tuple[int, int]] = []
        self.write_set: dict[int, int] = {}
        self.owned: dict[int, int] = {}
        self.undo: list[tuple[int, int]] = []
        self.status = ACTIVE
        self.ts = 0
        self.cause: AbortCause | None = None
        self._ld = cpu.load
        self._st = cpu.store
        self._work = cpu.work
        self._cost = stm.config

    # -- state -----------------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self.status == ACTIVE

    @property
    def committed(self) -> bool:
        return self.status == COMMITTED

    @property
    def read_only(self) -> bool:
        """True while the transaction has written nothing (it holds no lock)."""
        return not self.owned

    @property
    def serial(self) -> tuple[int, int]:
        """Sort key of a committed transaction in an equivalent serial order: ``(ts, 0)`` for
        an update transaction, ``(end, 1)`` for a read-only one (after the update that
        committed at ``end``, before the next)."""
        return (self.ts, 1 if self.read_only else 0)

    def _live(self) -> None:
        if self.status != ACTIVE:
            raise PmsimError(f"thread {self.tid}: the STM transaction already "
                             f"{self.status}; begin a new one (a body must let StmAbort "
                             "propagate to the retry loop)")

    # -- accesses --------------------------------------------------------------------------------
    def read(self, addr: int) -> int:
        """Transactional load of the 8-byte word at ``addr``."""
        if self.status != ACTIVE:
            self._live()
        stm = self.stm
        ld = self._ld
        li = (addr >> stm._shift) & stm._mask
        la = stm._locks + 8 * li
        self._work(self._cost.access_ns)
        lw = ld(la)
        while True:
            if lw & LOCKED_BIT:
                if lw >> 1 != self.tid:
                    stm._abort(self, AbortCause.LOCKED)
                self._work(self._cost.lookup_ns)
                v = self.write_set.get(addr) if stm._wb else None
                return ld(addr) if v is None else v  # our stripe: nobody else changes it
            value = ld(addr)
            lw2 = ld(la)
            if lw2 != lw:
                lw = lw2
                continue
            version = lw >> VERSION_SHIFT
            if version > self.end:
                if not stm._extend(self):
                    stm._abort(self, AbortCause.READ_VALIDATION)
                lw2 = ld(la)
                if lw2 != lw:
                    lw = lw2
                    continue
            self.reads.append((li, version))
            return value

    def read_range(self, addr: int, n: int) -> list[int]:
        """Transactional loads of ``n`` consecutive words from ``addr``. Each word's read
        barrier depends on nothing the others load, so an out-of-order core runs ahead through
        them: their lines and lock words are fetched together first (``Cpu.run_ahead``), then
        each barrier runs as :meth:`read` does."""
        stm = self.stm
        words = [addr + 8 * i for i in range(n)]
        locks = {stm._locks + 8 * ((a >> stm._shift) & stm._mask): None for a in words}
        self.cpu.run_ahead([*dict.fromkeys(a & ~63 for a in words), *locks])
        rd = self.read
        return [rd(a) for a in words]

    def write(self, addr: int, value: int) -> None:
        """Transactional store of ``value`` to the 8-byte word at ``addr``."""
        if self.status != ACTIVE:
            self._live()
        if value.__class__ is not int or not 0 <= value < 1 << 64:
            value = as_word(value, "STM write value")
        stm = self.stm
        ld = self._ld
        li = (addr >> stm._shift) & stm._mask
        la = stm._locks + 8 * li
        self._work(self._cost.access_ns)
        lw = ld(la)
        if lw & LOCKED_BIT:
            if lw >> 1 != self.tid:
                stm._abort(self, AbortCause.LOCKED)
            self._work(self._cost.lookup_ns)
        else:
            if lw >> VERSION_SHIFT > self.end:
                self._work(self._cost.lookup_ns)
                if any(r == li for r, _ in self.reads):
                    stm._abort(self, AbortCause.READ_VALIDATION)
            if self.cpu.cas(la, lw, self.tid << 1 | LOCKED_BIT) != lw:
                raise PmsimError(f"lock word {la:#x} changed between a load and a CAS of one "
                                 "STM operation: something outside the STM wrote the lock table")
            self.owned[li] = lw
        fresh = addr not in self.write_set
        if fresh and stm._wb:
            stm.m.engine.mem.locate(addr)  # a clear error for a bad address now, not at commit
        old = None
        if not stm._wb and fresh:
            old = ld(addr)
            self.undo.append((addr, old))
        if stm.on_write is not None:
            stm.on_write(self, addr, value, old)
        self.write_set[addr] = value
        if not stm._wb:
            self._st(addr, value)

    # -- end -------------------------------------------------------------------------------------
    def commit(self) -> int:
        """Commit; returns the timestamp (the snapshot ``end`` for a read-only transaction).
        Raises :class:`StmAbort` (after rolling back) if commit-time validation fails."""
        self._live()
        stm = self.stm
        cpu = self.cpu
        st = stm.stats[self.tid]
        self._work(self._cost.commit_ns)
        if not self.owned:
            self.ts = self.end
            self.status = COMMITTED
            st.commits += 1
            st.read_only += 1
            stm._active[self.tid] = None
            return self.ts
        ts = stm._tick(cpu)
        if self.start != ts - 1 and not stm._validate(self):
            stm._abort(self, AbortCause.COMMIT_VALIDATION)
        self.ts = ts
        if stm.on_commit is not None:
            stm.on_commit(self, ts)
        st_ = self._st
        if stm._wb:
            for a, v in self.write_set.items():
                st_(a, v)
        word = ts << VERSION_SHIFT
        locks = stm._locks
        for li in self.owned:
            st_(locks + 8 * li, word)
        self.status = COMMITTED
        st.commits += 1
        stm._active[self.tid] = None
        return ts

    def abort(self) -> None:
        """A user abort: roll back and end the transaction (no exception, never retried)."""
        self._live()
        self.stm._rollback(self, AbortCause.USER)


class Stm:
    """A TinySTM-like STM over ``machine`` with its metadata at DRAM address ``base``
    (default: the start of the machine's first DRAM region). See the module docstring."""

    def __init__(self, machine: Any, config: StmConfig | None = None, base: int | None = None,
                 on_write: WriteHook | None = None, on_commit: CommitHook | None = None,
                 on_abort: AbortHook | None = None) -> None:
        self.m = machine
        self.config = cfg = config or StmConfig()
        if not isinstance(cfg, StmConfig):
            raise ConfigError(f"Stm(config): expected an StmConfig, got {type(cfg).__name__}")
        need = self.footprint(cfg)
        dram = [r for r in machine.config.regions if r.kind == "dram"]
        if not dram:
            raise ConfigError(
                "the STM keeps its clock and lock table in DRAM (volatile metadata whose cost is "
                "modelled), but the machine config has no 'dram' region: add one, e.g. "
                "regions=(Region('pm', 0, 1 << 24, 'pm'), Region('dram', 1 << 30, 1 << 22, "
                f"'dram')); the STM needs {need} bytes")
        base = dram[0].base if base is None else base
        if base % LINE or not any(r.base <= base and base + need <= r.end for r in dram):
            where = ", ".join(f"{r.name}=[{r.base:#x}, {r.end:#x})" for r in dram)
            raise ConfigError(
                f"the STM's metadata ({need} bytes: clock line + {cfg.locks} locks) at "
                f"{base:#x} must be 64-byte aligned and lie inside one DRAM region ({where}): "
                "enlarge the DRAM region, move base, or use fewer StmConfig.locks")
        self.base = base
        self.clock_addr = base
        self._locks = base + LINE
        self._shift = cfg.stripe.bit_length() - 1
        self._mask = cfg.locks - 1
        self._wb = cfg.design == "write-back"
        r, w = machine.engine.mem.locate(base)
        machine.engine.mem.arrays[r][w: w + need // 8] = 0  # a fresh clock and lock table
        cores = machine.config.cores
        self.stats = [StmStats() for _ in range(cores)]
        self._active: list[StmTx | None] = [None] * cores
        self._rngs = [random.Random(machine.config.seed * 1_000_003 + 7919 * t) for t in range(cores)]
        self.on_write = on_write
        self.on_commit = on_commit
        self.on_abort = on_abort

    @staticmethod
    def footprint(config: StmConfig | None = None) -> int:
        """Bytes of DRAM the metadata takes from ``base`` (callers place other data after)."""
        cfg = config or StmConfig()
        return LINE + (8 * cfg.locks + LINE - 1) // LINE * LINE

    # -- geometry and state (untimed) -----------------------------------------------------------
    def lock_of(self, addr: int) -> int:
        """The lock-table index covering ``addr``."""
        return (addr >> self._shift) & self._mask

    def lock_addr(self, index: int) -> int:
        """The DRAM address of lock ``index``."""
        return self._locks + 8 * index

    def clock(self) -> int:
        """The global version clock (untimed)."""
        return self.m.peek(self.clock_addr)

    def lock_word(self, index: int) -> tuple[bool, int]:
        """``(locked, owner tid or version)`` of lock ``index`` (untimed)."""
        w = self.m.peek(self._locks + 8 * index)
        return (True, w >> 1) if w & LOCKED_BIT else (False, w >> VERSION_SHIFT)

    def active(self, tid: int) -> StmTx | None:
        """Thread ``tid``'s running transaction, if any."""
        return self._active[tid]

    def totals(self) -> StmStats:
        """The counters summed over threads."""
        out = StmStats()
        for s in self.stats:
            out.add(s)
        return out

    # -- transactions ----------------------------------------------------------------------------
    def begin(self, cpu: Any) -> StmTx:
        """Start an attempt on ``cpu``'s thread (flat: one transaction per thread at a time)."""
        tid = cpu.tid
        if self._active[tid] is not None:
            raise PmsimError(f"thread {tid} already runs an STM transaction: commit or abort it "
                             "first (nesting is not supported)")
        cpu.work(self.config.begin_ns)
        tx = StmTx(self, cpu, cpu.load(self.clock_addr))
        self._active[tid] = tx
        self.stats[tid].attempts += 1
        return tx

    def atomic(self, cpu: Any, body: Callable[[StmTx], Any],
               on_retry: Callable[[StmTx], None] | None = None) -> Generator[Any, Any, StmTx]:
        """Run ``body(stx)`` (a function or generator function) until an attempt commits or
        the body returns False (a user abort); returns the last attempt. ``on_retry(stx)``
        runs after each conflict abort, before the back-off."""
        failures = 0
        while True:
            stx = self.begin(cpu)
            try:
                res = body(stx)
                if isinstance(res, Generator):
                    res = yield from res
                if not stx.active:
                    return stx  # the body ended it itself
                if res is False:
                    stx.abort()
                else:
                    stx.commit()
                return stx
            except StmAbort as e:
                if e.tx is not stx:
                    raise
            except GeneratorExit:
                raise  # the run was abandoned (closed or collected): nothing more to simulate
            except BaseException:
                if stx.active:
                    self._rollback(stx, None)
                raise
            if on_retry is not None:
                on_retry(stx)
            failures += 1
            if failures >= self.config.max_attempts:
                raise PmsimError(
                    f"thread {cpu.tid}: a transaction aborted {failures} times in a row (last "
                    f"cause: {stx.cause.value if stx.cause else '?'}); a livelock? Raise "
                    "StmConfig.max_attempts or reduce contention")
            yield from self.backoff(cpu, failures)

    def backoff(self, cpu: Any, failures: int) -> Generator[Any, Any, None]:
        """Wait a random time (mean ``backoff_ns * 2**(failures - 1)``, capped) after the
        ``failures``-th abort in a row, then yield if the thread is a quantum ahead."""
        c = self.config
        mean = c.backoff_ns * (1 << min(failures - 1, c.backoff_doublings))
        cpu.work(2 * mean * self._rngs[cpu.tid].random())
        yield from cpu.maybe_yield()

    # -- internals -------------------------------------------------------------------------------
    def _tick(self, cpu: Any) -> int:
        """Fetch-and-increment the clock (a CAS loop); returns the new value."""
        ca = self.clock_addr
        old = cpu.load(ca)
        while True:
            got = cpu.cas(ca, old, old + 1)
            if got == old:
                return old + 1
            old = got

    def _validate(self, tx: StmTx) -> bool:
        """Every read-set entry still holds its version (or is a stripe this tx locked at that
        version)."""
        ld = tx._ld
        locks = self._locks
        per = self.config.validate_ns
        owned = tx.owned
        tid = tx.tid
        n = 0
        ok = True
        for li, version in tx.reads:
            n += 1
            lw = ld(locks + 8 * li)
            if lw & LOCKED_BIT:
                if lw >> 1 != tid or owned[li] >> VERSION_SHIFT != version:
                    ok = False
                    break
            elif lw >> VERSION_SHIFT != version:
                ok = False
                break
        tx._work(per * n)
        return ok

    def _extend(self, tx: StmTx) -> bool:
        now = tx._ld(self.clock_addr)
        if self._validate(tx):
            tx.end = now
            self.stats[tx.tid].extensions += 1
            return True
        return False

    def _abort(self, tx: StmTx, cause: AbortCause) -> NoReturn:
        self._rollback(tx, cause)
        raise StmAbort(cause, tx)

    def _rollback(self, tx: StmTx, cause: AbortCause | None) -> None:
        """Undo (write-through), call on_abort, release the locks; count ``cause``."""
        cpu = tx.cpu
        cpu.work(self.config.abort_ns)
        st = cpu.store
        for addr, old in reversed(tx.undo):
            st(addr, old)
        tx.status = ABORTED
        tx.cause = cause
        if cause is not None:
            self.stats[tx.tid].aborts[cause] += 1
            if self.on_abort is not None:
                self.on_abort(tx, cause)
        locks = self._locks
        fresh = 0
        for li, lw in tx.owned.items():
            if self._wb:
                word = lw
            else:
                inc = (lw >> INC_SHIFT) & INC_MAX
                if inc < INC_MAX:
                    word = lw + (1 << INC_SHIFT)
                else:
                    fresh = fresh or self._tick(cpu)
                    word = fresh << VERSION_SHIFT
            st(locks + 8 * li, word)
        self._active[tx.tid] = None


def place_serial(keys: list[tuple[int, int]], order: list[int], key: tuple[int, int],
                 txid: int) -> None:
    """Insert ``txid`` into a serialization order at its :attr:`StmTx.serial` ``key``: after
    every entry whose key is not larger (``keys`` holds the entries' keys, kept beside
    ``order``). The scan runs from the end, where a new key nearly always lands, and stays
    right when the keys are sorted only nearly (DUDETx appends updates in ID order)."""
    i = len(keys)
    while i and keys[i - 1] > key:
        i -= 1
    keys.insert(i, key)
    order.insert(i, txid)


__all__ = ["ABORTED", "ACTIVE", "COMMITTED", "AbortCause", "Design", "Stm", "StmAbort",
           "StmConfig", "StmStats", "StmTx", "place_serial"]
