"""The simulated machine: threads on cores issuing instructions to a timed memory system.

Usage::

    m = Machine(preset("optane-adr"))
    cpu = m.cpu(0)
    cpu.store(m.pm.base, 42); cpu.clwb(m.pm.base); cpu.sfence()
    print(m.stats_table())

``Machine(cfg, timed=False)`` runs the same instructions functionally: memory contents, loaded
values, CAS results, instruction counts and the persistence trace (without write-back events,
every event at time 0) are those of the timed machine, but caches, the WPQ and clocks are not
simulated. Crash recovery under the fuzzer needs only that, at a fraction of the cost.

Each ``Cpu`` method is one instruction. Plain accesses only advance the thread's own clock;
SimPy (``m.env``) is used only where threads meet: ``spawn`` runs generator threads, and
``Cpu.sync``, ``Cpu.acquire`` and ``Cpu.release`` yield to the scheduler. A thread also yields
in ``Cpu.maybe_yield`` once it has run ``quantum_ns`` ahead. A single-threaded run never
depends on the quantum.

Hardware transactions (:mod:`pmsim.hw.htm`): ``cpu.xbegin()``, ``cpu.xend()`` (0 on commit,
else the abort status), ``cpu.xabort(code)``, ``cpu.xstatus()`` and ``cpu.rdtsc()`` are
instructions like the others; threads interleave only at yields, so two transactions conflict
only if one yields while live (see :mod:`pmsim.tm.htm` on the quantum).
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Generator, Iterable, Sequence
from functools import partial
from typing import Any

import numpy as np
import simpy

from .config import LINE, MachineConfig, Region
from .errors import ConfigError
from .hw.engines.reference import ADDRESS, as_int, as_word
from .stats import format_table, records, transpose_table
from .trace import Mark, Trace

BACKENDS = ("c", "python")
_U64 = (1 << 64) - 1


def default_backend() -> str:
    """The engine backend: ``$PMSIM_BACKEND`` if set, else ``c`` when the C core is built."""
    env = os.environ.get("PMSIM_BACKEND")
    if env:
        if env not in BACKENDS:
            raise ConfigError(f"PMSIM_BACKEND={env!r} is not a backend; use 'c' or 'python'")
        return env
    from .cache import native

    if not native.available():
        return "python"
    import importlib.util

    if importlib.util.find_spec("pmsim.hw.engines.native_engine") is None:
        return "python"  # a C core built without the machine engine
    return "c"


def make_engine(cfg: MachineConfig, backend: str | None = None, timed: bool = True) -> Any:
    """The engine of ``backend`` (default: :func:`default_backend`), timed or functional."""
    backend = backend or default_backend()
    if backend == "python":
        from .hw.engines.reference import FunctionalEngine, PyEngine

        return PyEngine(cfg) if timed else FunctionalEngine(cfg)
    if backend == "c":
        from .hw.engines.native_engine import CEngine

        return CEngine(cfg, timed)
    raise ConfigError(f"unknown backend {backend!r}; use 'c' or 'python'")


def _moved_alone(env: simpy.Environment, ahead: float) -> bool:
    """Whether a thread ``ahead`` ns ahead of SimPy's time may carry on without waiting: when
    nothing else is due by then, SimPy would resume it next, so its time is moved exactly as
    that timeout would move it, without a scheduler round trip."""
    due = env._now + ahead  # what SimPy would schedule the timeout at
    if env.peek() > due:
        env._now = due
        return True
    return False


class Cpu:
    """One hardware thread. Instruction methods are bound straight to the engine for speed."""

    def __init__(self, machine: Machine, tid: int) -> None:
        self.machine = machine
        self.tid = tid
        e = machine.engine
        self.load: Callable[[int], int] = partial(e.load, tid)
        self.load_many: Callable[[list[int]], list[int]] = partial(e.load_many, tid)
        self.run_ahead: Callable[[list[int]], None] = partial(e.run_ahead, tid)
        self.store: Callable[[int, int], None] = partial(e.store, tid)
        self.store_words: Callable[[int, Sequence[int]], None] = partial(e.store_words, tid)
        self.clwb_many: Callable[[Sequence[int]], None] = partial(e.clwb_many, tid)
        self.load_words: Callable[[int, int], list[int]] = partial(e.load_words, tid)
        self.ntstore: Callable[[int, int], None] = partial(e.ntstore, tid)
        self.clflush: Callable[[int], None] = partial(e.clflush, tid)
        self.clflushopt: Callable[[int], None] = partial(e.clflushopt, tid)
        self.clwb: Callable[[int], None] = partial(e.clwb, tid)
        self.sfence: Callable[[], None] = partial(e.sfence, tid)
        self.mfence: Callable[[], None] = partial(e.mfence, tid)
        self.pcommit: Callable[[], None] = partial(e.pcommit, tid)
        self.cas: Callable[[int, int, int], int] = partial(e.cas, tid)
        self.xchg: Callable[[int, int], int] = partial(e.xchg, tid)
        self.work: Callable[[float], None] = partial(e.work, tid)
        self.mark: Callable[[int, int], None] = partial(e.mark, tid)
        self.persist_barrier: Callable[[], None] = partial(e.persist_barrier, tid)
        self.xbegin: Callable[[], None] = partial(e.xbegin, tid)
        self.xend: Callable[[], int] = partial(e.xend, tid)
        self.xabort: Callable[[int], None] = partial(e.xabort, tid)
        self.xstatus: Callable[[], int] = partial(e.xstatus, tid)
        self.rdtsc: Callable[[], int] = partial(e.rdtsc, tid)
        self._get_clock: Callable[[], float] = e.clock_reader(tid)
        self._set_clock = partial(e.set_clock, tid)
        shared = machine.siblings[tid] >= 0
        self._spin_work = machine.config.core.smt_speed if shared else 1.0

    def spin(self, ns: float) -> None:
        """A busy wait timed by the TSC (spinning until ``rdtsc`` passes a deadline, as the
        papers' PM emulations replace a flush with a spin): ``ns`` of time whether or not a
        sibling thread shares the core, where :meth:`work` is computation and takes
        1 / ``core.smt_speed`` times as long beside a sibling."""
        self.work(ns * self._spin_work)

    def _track_reads(self, log: ReadLog | None) -> None:
        """Route this thread's memory instructions through ``log``, or back straight to the
        engine when ``log`` is None (see Machine.start_read_log)."""
        e, tid = self.machine.engine, self.tid
        ld, cas, xchg = partial(e.load, tid), partial(e.cas, tid), partial(e.xchg, tid)
        st, nt = partial(e.store, tid), partial(e.ntstore, tid)
        many = partial(e.load_many, tid)
        if log is None:
            self.load, self.cas, self.xchg, self.store, self.ntstore = ld, cas, xchg, st, nt
            self.load_many = many
            self.store_words = partial(e.store_words, tid)
            self.load_words = partial(e.load_words, tid)
            return
        base, size = self.machine._pm_base, self.machine._pm_size

        def logged(op: Callable[..., Any], *marks: Callable[[int], None]) -> Callable[..., Any]:
            def run(addr: int, *args: int) -> Any:
                off = addr - base
                if 0 <= off < size:
                    for mark in marks:
                        mark(off >> 3)
                return op(addr, *args)
            return run

        self.load, self.cas, self.xchg = (logged(ld, log.read), logged(cas, log.read, log.wrote),
                                          logged(xchg, log.read, log.wrote))
        self.store, self.ntstore = logged(st, log.wrote), logged(nt, log.wrote)
        self.store_words = self._store_words_each
        self.load_words = self._load_words_each

        def logged_many(addrs: list[int]) -> list[int]:
            for a in addrs:
                off = a - base
                if 0 <= off < size:
                    log.read(off >> 3)
            return many(addrs)

        self.load_many = logged_many

    def __enter__(self) -> Cpu:
        """A Cpu is the context of a persist step when no hook watches the steps (see
        PersistSteps.step): ``with self.step(cpu, name) as c`` then costs no object."""
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    # -- time --------------------------------------------------------------------------------
    @property
    def clock(self) -> float:
        """This thread's simulated time in ns."""
        return self._get_clock()

    def sync(self) -> Generator[Any, Any, None]:
        """Yield to SimPy until global time catches up with this thread's clock."""
        env = self.machine.env
        ahead = self._get_clock() - env.now
        if ahead > 0:
            if not _moved_alone(env, ahead):
                yield env.timeout(ahead)
        elif ahead < 0:
            self._set_clock(env.now)

    def maybe_yield(self, quantum_ns: float | None = None) -> Generator[Any, Any, None]:
        """Yield if this thread has run more than one quantum ahead of the others: the
        machine's ``quantum_ns``, or ``quantum_ns`` when given (the HTM runner passes a smaller
        one, see :mod:`pmsim.tm.htm`)."""
        m = self.machine
        env = m.env
        ahead = self._get_clock() - env.now
        if ahead > 0 and ahead >= (m.quantum_ns if quantum_ns is None else quantum_ns) \
                and not _moved_alone(env, ahead):  # sync() inlined: the hottest pause point
            yield env.timeout(ahead)

    def wait(self, event: simpy.Event) -> Generator[Any, Any, None]:
        """Wait from this thread's current time for a SimPy event (a barrier's release); the
        thread's clock moves to the time it fired."""
        yield from self.sync()
        yield event
        if self.machine.env.now > self._get_clock():
            self._set_clock(self.machine.env.now)

    def acquire(self, lock: simpy.Resource) -> Generator[Any, Any, Any]:
        """Take a lock (a SimPy resource) at this thread's current time; returns the request."""
        yield from self.sync()
        req = lock.request()
        yield req
        if self.machine.env.now > self._get_clock():
            self._set_clock(self.machine.env.now)
        self.work(self.machine.config.costs.lock_ns)
        return req

    def release(self, lock: simpy.Resource, req: Any) -> Generator[Any, Any, None]:
        """Release a lock at this thread's current time."""
        self.work(self.machine.config.costs.lock_ns)
        yield from self.sync()
        lock.release(req)

    # -- wider accesses -----------------------------------------------------------------------
    def _store_words_each(self, addr: int, words: Iterable[int]) -> None:
        """``store_words`` one ``store`` at a time (while a read log watches the stores)."""
        st = self.store
        for i, w in enumerate(words):
            st(addr + 8 * i, w)

    def _load_words_each(self, addr: int, n: int) -> list[int]:
        """``load_words`` through ``load_many`` (while a read log watches the loads)."""
        n = _count(n, "load_words: n")
        return self.load_many([addr + 8 * i for i in range(n)])

    def store_bytes(self, addr: int, data: bytes) -> None:
        """Store bytes; partial atoms at either end are merged with the current contents."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ConfigError(f"store_bytes: data must be bytes, got {type(data).__name__} "
                              f"{data!r}; encode text first, e.g. 'abc'.encode()")
        addr = _addr(addr)
        start = addr & ~7
        end = (addr + len(data) + 7) & ~7
        buf = bytearray(self.machine.peek_bytes(start, end - start))
        buf[addr - start: addr - start + len(data)] = data
        self.store_words(start, np.frombuffer(bytes(buf), dtype="<u8").tolist())

    def load_bytes(self, addr: int, n: int) -> bytes:
        n, addr = _count(n, "load_bytes: n"), _addr(addr)
        start = addr & ~7
        end = (addr + n + 7) & ~7
        words = self.load_words(start, (end - start) // 8)
        raw = np.array(words, dtype="<u8").tobytes()
        return raw[addr - start: addr - start + n]

    def flush_range(self, addr: int, n: int, kind: str = "clwb") -> None:
        """Flush every line of ``[addr, addr+n)`` with ``kind`` (clwb, clflushopt, clflush)."""
        if kind not in ("clwb", "clflushopt", "clflush"):
            raise ConfigError(f"flush_range: unknown flush kind {kind!r}; use 'clwb', "
                              "'clflushopt' or 'clflush'")
        n, addr = _count(n, "flush_range: n"), _addr(addr)
        f = getattr(self, kind)
        line = addr & ~(LINE - 1)
        while line < addr + n:
            f(line)
            line += LINE


def _addr(addr: Any) -> int:
    return addr if addr.__class__ is int else as_int(addr, "address", valid=ADDRESS)


def _count(n: Any, what: str) -> int:
    return as_int(n, what, valid="an int >= 0")


class ReadLog:
    """The PM words (indices ``(addr - pm.base) // 8``) a run observed: ``reads`` holds each
    word read before the run wrote it. A word the run wrote first is not an input of the run
    (it reads back its own value), so it is left out."""

    def __init__(self) -> None:
        self.reads: set[int] = set()
        self.written: set[int] = set()

    def read(self, w: int) -> None:
        if w not in self.written:
            self.reads.add(w)

    def read_all(self, words: Iterable[int]) -> None:
        written = self.written
        self.reads.update(w for w in words if w not in written)

    def wrote(self, w: int) -> None:
        self.written.add(w)


class Machine:
    """A configured machine: engine, SimPy environment, CPUs, locks, trace.

    ``config``: a MachineConfig, a preset name (``Machine("optane-adr")``) or None for the
    defaults. ``timed=False`` gives the functional machine (see the module docstring).
    """

    def __init__(self, config: MachineConfig | str | None = None, backend: str | None = None,
                 timed: bool = True) -> None:
        if isinstance(config, str):
            from .presets import preset

            config = preset(config)
        elif config is not None and not isinstance(config, MachineConfig):
            raise ConfigError(f"Machine(config): expected a MachineConfig or a preset name "
                              f"(e.g. 'optane-adr'), got {type(config).__name__} {config!r}")
        if backend is not None and backend not in BACKENDS:
            raise ConfigError(f"unknown backend {backend!r}; use 'c' or 'python'")
        if not isinstance(timed, bool):
            raise ConfigError(f"Machine(timed=...): expected True or False, got {timed!r}")
        self.config = config or MachineConfig()
        self.quantum_ns = self.config.quantum_ns  # read by every Cpu.maybe_yield
        self.schedule: Any = None  # a pmsim.schedule.Schedule steering the interleaving, if any
        self.engine = make_engine(self.config, backend, timed)
        self.backend: str = self.engine.backend
        self.timed = timed
        self.env = simpy.Environment()
        self.siblings = self.config.core.placement(self.config.cores)[1]
        """Each thread's Hyper-Threading sibling (-1: it has its core to itself)."""
        self.cpus = [Cpu(self, t) for t in range(self.config.cores)]
        self.pm: Region = self.config.pm_region
        self.dram: Region | None = self.config.dram_region
        self.rng = np.random.default_rng(self.config.seed)
        # the engine's PM words (never replaced, only modified in place) and their byte view
        self._pm_words: np.ndarray = self.engine.mem.pm
        self._pm_bytes: np.ndarray = self._pm_words.view(np.uint8)
        self._pm_base, self._pm_size = self.pm.base, self.pm.size
        self._log: ReadLog | None = None
        self._trace_base = self.pm_image()

    # -- read log: which PM words a run observed ---------------------------------------------
    def start_read_log(self) -> ReadLog:
        """From now on log which PM words the run observes (:class:`ReadLog`); returns the
        log. Instructions (load, store, CAS, exchange, non-temporal store) and the untimed
        accessors (``peek``, ``pm_words``, ``peek_bytes``, ``pm_image``, ``poke``) are logged;
        code that reads the engine's memory arrays directly must call :meth:`note_reads`. The
        crash fuzzer uses the log to treat crash images that agree on every word recovery
        observed as one (they recover identically)."""
        log = ReadLog()
        self._log = log
        for cpu in self.cpus:
            cpu._track_reads(log)
        return log

    @property
    def reads_logged(self) -> bool:
        """Whether a read log is on (:meth:`start_read_log`)."""
        return self._log is not None

    def stop_read_log(self) -> None:
        """Stop logging (instructions go straight to the engine again)."""
        self._log = None
        for cpu in self.cpus:
            cpu._track_reads(None)

    def note_reads(self, words: range | np.ndarray) -> None:
        """Log PM word indices read by direct access to the engine's arrays."""
        if self._log is not None:
            self._log.read_all(words.tolist() if isinstance(words, np.ndarray) else words)

    def cpu(self, tid: int) -> Cpu:
        if tid.__class__ is not int and isinstance(tid, np.integer):
            tid = int(tid)
        if tid.__class__ is not int or not 0 <= tid < len(self.cpus):
            raise ConfigError(f"thread {tid} does not exist: the machine has "
                              f"{len(self.cpus)} cores (threads 0..{len(self.cpus) - 1})")
        return self.cpus[tid]

    def lock(self) -> simpy.Resource:
        """A new lock (mutual exclusion between simulated threads)."""
        return simpy.Resource(self.env, capacity=1)

    def spawn(self, fn: Callable[..., Generator[Any, Any, Any]], tid: int, *args: Any) -> Any:
        """Start ``fn(cpu, *args)`` (a generator) as the simulated thread on core ``tid``."""
        gen = fn(self.cpu(tid), *args)
        if not inspect.isgenerator(gen):
            raise ConfigError(f"spawn: {getattr(fn, '__name__', fn)!r} returned "
                              f"{type(gen).__name__}, not a generator; a thread body is a "
                              "function with `yield` (e.g. `yield from cpu.sync()`)")
        return self.env.process(gen)

    def run(self, until: float | None = None) -> None:
        """Run every spawned thread to completion (or until simulated time ``until``)."""
        if until is not None:
            ok = isinstance(until, (int, float)) and not isinstance(until, bool)
            if not ok or not math.isfinite(until) or until <= self.env.now:
                raise ConfigError(f"run(until={until!r}): until must be a finite simulated time "
                                  f"in ns after the current time {self.env.now:g}, or None")
        self.env.run(until=until)

    def power_cycle(self, image: np.ndarray | None = None) -> None:
        """Restart the machine: empty caches and WPQ, zero clocks, statistics, trace and DRAM,
        a fresh scheduler; PM keeps its contents, or becomes ``image`` when given.

        The SimPy environment is replaced only when it was used (time moved or events wait):
        an unused one is as good as new and costs tens of microseconds to build.
        """
        self.engine.reset_volatile()
        env = self.env
        if env.now != 0 or env.peek() != float("inf"):
            self.env = simpy.Environment()
        if image is not None:
            self.load_pm_image(image)

    # -- memory contents without timing ----------------------------------------------------------
    def peek(self, addr: int) -> int:
        """An 8-byte word's current value, without simulating an access."""
        if addr.__class__ is int:
            off = addr - self._pm_base
            if 0 <= off < self._pm_size and not off & 7:  # fast path: an aligned PM word
                if self._log is not None:
                    self._log.read(off >> 3)
                return int(self._pm_words[off >> 3])
        if self._log is not None:
            self._note_bytes(_addr(addr), 8)
        r, w = self.engine.mem.locate(addr)
        return int(self.engine.mem.arrays[r][w])

    def poke(self, addr: int, value: int) -> None:
        """Set a word without simulating an access (for setting up initial state)."""
        if addr.__class__ is int and value.__class__ is int and self._log is None:
            off = addr - self._pm_base
            if 0 <= off < self._pm_size and not off & 7 and 0 <= value <= _U64:
                self._pm_words[off >> 3] = value  # fast path: an aligned PM word, a plain int
                return
        r, w = self.engine.mem.locate(addr)
        if self._log is not None and r == self.engine.mem.locate(self._pm_base)[0]:
            self._log.wrote(w)
        self.engine.mem.arrays[r][w] = as_word(value)

    def pm_words(self, addr: int, n: int) -> np.ndarray:
        """A copy of ``n`` consecutive PM words from ``addr`` (untimed; one slice, cheaper than
        ``n`` peeks)."""
        off = _addr(addr) - self._pm_base
        n = _count(n, "pm_words: n")
        if off & 7 or off < 0 or off + 8 * n > self._pm_size:
            raise ConfigError(f"PM words [{addr:#x}, {addr + 8 * n:#x}) are not 8-byte aligned "
                              f"words of the PM region [{self._pm_base:#x}, "
                              f"{self._pm_base + self._pm_size:#x})")
        if self._log is not None:
            self._log.read_all(range(off >> 3, (off >> 3) + n))
        return self._pm_words[off >> 3: (off >> 3) + n].copy()

    def _note_bytes(self, addr: int, n: int) -> None:
        off = addr - self._pm_base
        lo, hi = max(off, 0) >> 3, (min(off + n, self._pm_size) + 7) >> 3
        if lo < hi and self._log is not None:
            self._log.read_all(range(lo, hi))

    def peek_bytes(self, addr: int, n: int) -> bytes:
        addr, n = _addr(addr), _count(n, "peek_bytes: n")
        if self._log is not None:
            self._note_bytes(addr, n)
        r, w = self.engine.mem.locate(addr & ~7)
        arr = self.engine.mem.arrays[r]
        if w * 8 + (addr & 7) + n > arr.size * 8:
            region = self.engine.mem.regions[r]
            raise ConfigError(f"peek_bytes: [{addr:#x}, {addr + n:#x}) runs past the end of "
                              f"region {region.name!r} at {region.end:#x}")
        return arr.view(np.uint8)[w * 8 + (addr & 7): w * 8 + (addr & 7) + n].tobytes()

    def pm_image(self) -> np.ndarray:
        """A copy of the PM region's current contents as bytes (what all caches would write)."""
        if self._log is not None:
            self._log.read_all(range(self._pm_size >> 3))
        return self._pm_bytes.copy()

    def load_pm_image(self, image: np.ndarray) -> None:
        """Replace the PM region's contents (e.g. with a crash image before recovery)."""
        pm = self._pm_bytes
        if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim != 1:
            got = (f"a {image.dtype} array of shape {image.shape}" if isinstance(image, np.ndarray)
                   else f"{type(image).__name__}")
            raise ConfigError(f"a PM image is a 1-D uint8 NumPy array of the PM region's "
                              f"{pm.size} bytes (as Machine.pm_image() returns), got {got}")
        if image.shape != pm.shape:
            raise ConfigError(f"image has {image.size} bytes, the PM region {pm.size}")
        pm[:] = image

    # -- trace and statistics --------------------------------------------------------------------
    def reset_trace(self) -> None:
        """Start a new trace from the current PM contents."""
        self.engine.reset_trace()
        self._trace_base = self.pm_image()

    def trace(self) -> Trace:
        """The persistence trace since the machine started or ``reset_trace``."""
        return Trace(self.engine.trace(), self._trace_base.copy(), self.pm.base,
                     {"domain": self.config.domain})

    def stats(self) -> np.ndarray:
        """Per-thread statistics (a NumPy structured array, STATS_DTYPE)."""
        return self.engine.get_stats()

    def count(self, name: str) -> int:
        """One counter summed over threads (e.g. ``"stores"``), cheaper than ``stats()``."""
        return self.engine.count(name)

    def stats_records(self) -> list[dict[str, Any]]:
        return records(self.stats())

    def stats_table(self, transpose: bool = True) -> str:
        rows = self.stats_records()
        return transpose_table(rows) if transpose else format_table(rows)

    @property
    def now(self) -> float:
        """The latest thread clock (simulated ns)."""
        return max(c.clock for c in self.cpus)


__all__ = ["Machine", "Cpu", "Mark", "BACKENDS", "default_backend"]
