"""The HTM runner: run a transaction body in hardware transactions, with retries and a
single-global-lock (SGL) fallback, the way TSX lock elision does (nv-htm.md §2 H4-H6, §10).

Each attempt waits until the SGL is free, begins a hardware transaction, *subscribes* to the
SGL (reads its word, so that taking the lock, a write, aborts every live hardware transaction
through ordinary conflict detection; a taken lock makes the attempt ``xabort(0xFF)``), runs the
body and commits. An aborted attempt is retried until ``budget`` hardware attempts have failed;
a capacity or flush abort goes to the SGL at once (a retry would overflow or flush again). The
SGL is a CAS spin lock in simulated memory (the machine's DRAM region when it has one); under
it the body runs non-transactionally. A body that returns False is a user abort: the attempt
is discarded (``xabort(0xFE)`` in hardware; under the SGL the runtime undoes it) and not
retried.

The SGL word is a sequence lock: odd while held, and each acquisition and release adds one. An
attempt remembers the value it subscribed to, so a conflict abort is attributed to the lock
when the word changed since (the lock was taken while the attempt was live, or after it had
aborted for another reason, which the hardware cannot tell apart).

A transactional access that finds its transaction aborted raises :class:`HtmAbort`, which
unwinds the body (a generator or a plain function) back to the runner::

    runner = HtmRunner(machine)
    ok = yield from runner.run(cpu, attempt, on_commit, on_abort, on_retry)

The quantum and conflict detection
----------------------------------
Threads are SimPy processes that interleave only where they yield: at ``Tx.pause()`` inside a
body, and where the runner yields, just before ``xbegin`` and just before ``xend``. A live
transaction can therefore be aborted only while it is suspended at one of these points, and
only by accesses other threads make while it is. A thread yields at a pause once it is a
quantum ahead of simulated time, so with a quantum ``q``:

* a transaction whose live span has no pause at least ``q`` ahead never yields, and runs as if
  alone: conflicts with transactions that overlap it in simulated time are *missed*;
* a thread that does yield may be up to ``q`` ahead, so threads resumed before it run accesses
  that are up to ``q`` earlier in simulated time than its live span: conflicts that did not
  overlap in simulated time are *invented*.

Both errors shrink with ``q``. Once ``q`` is below the shortest time between two yield
points (one L1 hit, 1.0-1.6 ns in the presets), a thread yields at *every* pause, threads resume in
simulated-time order, and a smaller quantum changes nothing: what remains is the body's own
pause granularity (accesses between two pauses run atomically). HTM runs therefore use
``min(quantum_ns, htm.quantum_ns)`` inside the runner and the bodies, with ``htm.quantum_ns`` =
1 ns by default. Measured with the ``htm`` runtime on the optane-adr preset, 4 threads, 200
transactions each, mean abort rate of 3 seeds at quanta of 1000 / 100 / 10 / 1 / 0.5 / 0.25 ns:

======================  =====  =====  =====  =====  =====  =====
workload                 1000    100     10      1    0.5   0.25
======================  =====  =====  =====  =====  =====  =====
bank (16 accounts) [a]   0.04   0.54   0.80   0.81   0.81   0.81
kv (8 buckets)           0.06   0.46   0.51   0.52   0.52   0.52
array (6 slots per tx)   0.07   0.30   0.21   0.23   0.23   0.23
======================  =====  =====  =====  =====  =====  =====

[a] the 16 accounts share two lines: most of bank's conflicts are false sharing.

At the default and below the rates are identical; the machine's default 1000 ns quantum
misses almost every conflict, and 100 ns both misses some (bank, kv) and invents some (array).
tests/tm/test_htm_runner.py checks this. A single thread never depends on the quantum.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, fields
from typing import Any

from ..errors import ConfigError, PmsimError
from ..hw.htm import (
    XABORT_CAPACITY,
    XABORT_CONFLICT,
    XABORT_EXPLICIT,
    XABORT_FLUSH,
    XABORT_LOCK_BUSY,
    describe_status,
    xabort_code,
)

LOCK_BUSY = XABORT_LOCK_BUSY
"""xabort code: the attempt found the SGL taken (glibc's ``_ABORT_LOCK_BUSY``)."""
USER_ABORT = 0xFE
"""xabort code reserved for a user abort (the body returned False)."""

Step = Generator[Any, Any, Any] | Any
"""What a callback returns: a generator (run with ``yield from``) or anything else."""


class HtmAbort(PmsimError):
    """The hardware transaction aborted; raised from a transactional access to unwind the body.

    ``status`` is the RTM abort status (:mod:`pmsim.hw.htm`)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"hardware transaction aborted ({describe_status(status)})")
        self.status = status


def check(cpu: Any) -> None:
    """Raise :class:`HtmAbort` if ``cpu``'s transaction has been aborted."""
    status = cpu.xstatus()
    if status:
        raise HtmAbort(status)


@dataclass
class HtmRunStats:
    """What the runner did on one thread (or in all: :meth:`HtmRunner.total`)."""

    attempts: int = 0
    """Hardware attempts (xbegin)."""
    commits: int = 0
    """Bodies committed in hardware."""
    fallbacks: int = 0
    """Bodies run under the SGL."""
    user_aborts: int = 0
    """Bodies that returned False."""
    conflict: int = 0
    capacity: int = 0
    explicit: int = 0
    flush: int = 0
    lock: int = 0
    """Aborts by cause. ``lock``: the SGL was found taken, or taken since the subscription."""

    @property
    def aborts(self) -> int:
        """Hardware attempts that aborted, user aborts excluded."""
        return self.conflict + self.capacity + self.explicit + self.flush + self.lock

    @property
    def abort_rate(self) -> float:
        """Aborted hardware attempts per attempt (0 without attempts)."""
        return self.aborts / self.attempts if self.attempts else 0.0

    def add(self, other: HtmRunStats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def as_dict(self) -> dict[str, int | float]:
        d: dict[str, int | float] = {f.name: getattr(self, f.name) for f in fields(self)}
        d["aborts"], d["abort_rate"] = self.aborts, self.abort_rate
        return d


def _run(step: Step) -> Generator[Any, Any, Any]:
    """Run a callback's result: ``yield from`` a generator, return anything else."""
    if isinstance(step, Generator):
        return (yield from step)
    return step


class HtmRunner:
    """Hardware attempts with retries, then the SGL (see the module docstring).

    ``lock_addr``: the SGL's 8-byte word (on a line of its own; default the first line of the
    machine's DRAM region); ``budget``: hardware attempts before the SGL (default 5);
    ``spin_ns``: time one spin of a lock wait costs (> 0, so spinning threads advance).
    """

    def __init__(self, machine: Any, lock_addr: int | None = None, budget: int = 5,
                 spin_ns: float = 20.0) -> None:
        if lock_addr is None:
            if machine.dram is None:
                raise ConfigError("the HTM runner needs a word for its fallback lock: the machine "
                                  "has no DRAM region, so pass lock_addr (a PM word on a line of "
                                  "its own)")
            lock_addr = machine.dram.base
        machine.engine.mem.locate(lock_addr)
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
            raise ConfigError(f"HtmRunner: budget must be an integer >= 1 (hardware attempts "
                              f"before the fallback lock), got {budget!r}")
        if not isinstance(spin_ns, (int, float)) or isinstance(spin_ns, bool) or \
                not 0 < spin_ns <= 1e6:
            raise ConfigError(f"HtmRunner: spin_ns must be in (0, 1e6] ns, got {spin_ns!r}")
        cfg = machine.config
        self.m = machine
        self.lock = lock_addr
        self.budget = budget
        self.spin_ns = float(spin_ns)
        self.quantum = min(cfg.quantum_ns, cfg.htm.quantum_ns)
        self.stats = [HtmRunStats() for _ in range(cfg.cores)]

    def total(self) -> HtmRunStats:
        """The statistics of every thread summed."""
        out = HtmRunStats()
        for s in self.stats:
            out.add(s)
        return out

    # -- the SGL -------------------------------------------------------------------------------
    def _spin(self, cpu: Any) -> Generator[Any, Any, None]:
        cpu.work(self.spin_ns)
        return cpu.maybe_yield(self.quantum)

    def wait_free(self, cpu: Any) -> Generator[Any, Any, None]:
        """Spin (non-transactionally) until the SGL is free."""
        while cpu.load(self.lock) & 1:
            yield from self._spin(cpu)

    def acquire(self, cpu: Any) -> Generator[Any, Any, int]:
        """Take the SGL (the CAS aborts every subscribed hardware transaction); the value the
        lock word now holds."""
        while True:
            v = cpu.load(self.lock)
            if not v & 1 and cpu.cas(self.lock, v, v + 1) == v:
                return v + 1
            yield from self._spin(cpu)

    def release(self, cpu: Any, held: int) -> None:
        cpu.store(self.lock, held + 1)

    # -- one transaction -------------------------------------------------------------------------
    def run(self, cpu: Any, attempt: Callable[[bool], Step], on_commit: Callable[[], Step],
            on_abort: Callable[[], Step],
            on_retry: Callable[[int], None] | None = None,
            before_end: Callable[[bool], None] | None = None) -> Generator[Any, Any, bool]:
        """Run one transaction; True if it committed, False on a user abort.

        ``attempt(hw)`` runs the body once (``hw``: inside a hardware transaction, else under
        the SGL) and returns what the body returned. ``on_commit()`` runs at the commit point
        (right after ``xend``, or before the SGL is released), ``on_abort()`` after a user
        abort (under the SGL it must undo the attempt), ``on_retry(status)`` after each
        hardware abort, before the next attempt. ``before_end(hw)`` runs after a body that
        commits: in hardware as the last action before ``xend``, with no yield in between (so no
        other thread runs there: DUDETx takes its ID there with a conflict-exempt fetch-and-add),
        under the SGL before ``on_commit()``.
        """
        st = self.stats[cpu.tid]
        q = self.quantum
        for _ in range(self.budget):
            yield from self.wait_free(cpu)
            yield from cpu.maybe_yield(q)
            st.attempts += 1
            cpu.xbegin()
            live = True
            seen = 0
            try:
                seen = cpu.load(self.lock)  # the subscription
                if seen & 1:
                    cpu.xabort(LOCK_BUSY)
                    raise HtmAbort(cpu.xstatus())
                res = yield from _run(attempt(True))
                if res is not False:
                    yield from cpu.maybe_yield(q)
                    if before_end is not None and not cpu.xstatus():
                        before_end(True)
                else:
                    cpu.xabort(USER_ABORT)
                live = False
                status = cpu.xend()
            except HtmAbort:
                if cpu.xstatus() == 0:  # raised while live: never commit what raised
                    cpu.xabort(USER_ABORT)
                live = False
                status = cpu.xend()
                res = None
            except GeneratorExit:
                live = False  # the run was abandoned (closed or collected): simulate nothing
                raise
            finally:
                if live:  # another exception left the body: end the transaction, discarded
                    cpu.xabort(USER_ABORT)
                    cpu.xend()
            if status == 0:
                st.commits += 1
                yield from _run(on_commit())
                return True
            if res is False and status == XABORT_EXPLICIT | USER_ABORT << 24:
                st.user_aborts += 1
                yield from _run(on_abort())
                return False
            persistent = self._count(cpu, st, status, seen)
            if on_retry is not None:
                on_retry(status)
            if persistent:
                break
        return (yield from self._fallback(cpu, st, attempt, on_commit, on_abort, before_end))

    def _count(self, cpu: Any, st: HtmRunStats, status: int, seen: int) -> bool:
        """Count an abort by cause (``seen``: the lock word at the subscription); True if
        retrying in hardware is pointless."""
        if status & XABORT_EXPLICIT:
            if xabort_code(status) == LOCK_BUSY:
                st.lock += 1
            else:
                st.explicit += 1
        elif status & XABORT_CONFLICT:
            if cpu.load(self.lock) != seen:
                st.lock += 1
            else:
                st.conflict += 1
        elif status & XABORT_CAPACITY:
            st.capacity += 1
            return True
        elif status & XABORT_FLUSH:
            st.flush += 1
            return True
        return False

    def _fallback(self, cpu: Any, st: HtmRunStats, attempt: Callable[[bool], Step],
                  on_commit: Callable[[], Step],
                  on_abort: Callable[[], Step],
                  before_end: Callable[[bool], None] | None = None) -> Generator[Any, Any, bool]:
        st.fallbacks += 1
        held = yield from self.acquire(cpu)
        try:
            res = yield from _run(attempt(False))
            if res is False:
                st.user_aborts += 1
                yield from _run(on_abort())
            else:
                if before_end is not None:
                    before_end(False)
                yield from _run(on_commit())
        except GeneratorExit:
            raise  # the run was abandoned (closed or collected): simulate nothing
        except BaseException:
            self.release(cpu, held)
            raise
        self.release(cpu, held)
        return res is not False


__all__ = ["HtmAbort", "HtmRunStats", "HtmRunner", "LOCK_BUSY", "USER_ABORT", "check"]
