"""PM programs: persistent-memory code written against the machine's instructions.

A PM program is a data structure that does its own stores, flushes and fences, the way code
for real persistent memory is written (RECIPE's indexes, PMDK's low-level examples), with its
operations, its recovery and, optionally, a checker of its invariants and a reference model::

    class Counter(PMProgram):
        size = 64                                # bytes of the program's region

        @operation()
        def incr(self, pm: PM) -> int:
            v = pm.load(0) + 1
            pm.store(0, v)
            pm.persist(0, step="incr.persist")   # clwb + sfence, one named step
            return v

        def state(self, pm: PM) -> int:          # the recovered state, in the program's terms
            return pm.load(0)

No runtime class and no registration: ``crashfuzz.fuzz_program(Counter)`` (or the CLI,
``crashfuzz program file.py:Counter``) crash-tests it. Addresses are byte offsets into the
program's region (``0 <= off < size``, then the heap that :meth:`PM.alloc` hands out), so a
pointer stored in PM is an offset, as in PMDK. Every flush and fence is a named persist step:
the name given with ``step=``, else ``<function>.<instruction>@<line>``, so ``crashfuzz
ablate`` and mutations act on user code as on pmsim's runtimes.
"""

from __future__ import annotations

import linecache
import sys
from collections.abc import Callable, Generator, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import ConfigError, PmsimError

LINE = 64
WORD = 8
MASK64 = (1 << 64) - 1


class ProgramError(PmsimError):
    """A PM program used the PM handle wrongly (an address outside its region, a store from
    ``state()``): a bug in the program, reported with what to change."""


class WrongResult(PmsimError):
    """An operation returned something other than what the program's model returns."""


@dataclass(frozen=True)
class OpSpec:
    """How the fuzzer draws one operation: its arguments and its relative weight."""

    args: Callable[[np.random.Generator], Sequence[Any]] | None
    weight: float


def operation(args: Callable[[np.random.Generator], Sequence[Any]] | None = None,
              weight: float = 1.0) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a method as an operation the fuzzer runs: ``args(rng)`` draws its arguments (a
    tuple; none when omitted), ``weight`` how often it is drawn relative to the others."""
    if args is not None and not callable(args):
        raise ConfigError(f"operation(args=...) takes a function of a numpy Generator returning "
                          f"the arguments, e.g. lambda rng: (int(rng.integers(8)),), not {args!r}")
    if not (isinstance(weight, int | float) and weight > 0):
        raise ConfigError(f"operation(weight=...) must be a positive number, got {weight!r}")

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn._pm_operation = OpSpec(args, float(weight))  # type: ignore[attr-defined]
        return fn

    return mark


class PMProgram:
    """Base class of a PM program. Override what applies; only the operations are required.

    * ``size``: bytes of the program's region (its roots and fixed structures), zeroed at start;
    * ``heap_per_op``: bytes one operation may allocate at most (:meth:`PM.alloc`); the heap is
      sized from it and from how many operations the campaign runs, recoveries included;
    * ``script``: operations ``(name, *args)`` thread 0 runs first, before random ones;
    * ``model``: a reference model class, or None (then the robustness oracle judges);
    * ``steps``: help text of named steps (``{"insert.publish": "the commit token"}``);
    * ``paths``: names of the interesting paths an operation may take (``"split"``), marked
      with :meth:`PM.path`; the report says how often the crash-free run took each;
    * ``tearable``: ``{step name: bytes}`` for stores the compiler may split into pieces of
      that many bytes (a 64-bit store of a 32-bit target): such a store is issued as its pieces,
      so a crash may persist part of it;
    * ``atomic``: step names of wide or unaligned stores (:meth:`PM.store_bytes`,
      :meth:`PM.store_words`) the program relies on being failure-atomic, which no x86 store
      wider than 8 bytes is: a recovery that reads one partly persisted is a race.
    """

    size: ClassVar[int] = 4096
    heap_per_op: ClassVar[int] = 0
    script: ClassVar[Sequence[tuple[Any, ...]]] = ()
    model: ClassVar[type | None] = None
    steps: ClassVar[dict[str, str]] = {}
    tearable: ClassVar[dict[str, int]] = {}
    atomic: ClassVar[frozenset[str]] = frozenset()
    paths: ClassVar[tuple[str, ...]] = ()

    def init(self, pm: PM) -> None:
        """Write the initial persistent state (untimed, before any crash can happen)."""

    def recover(self, pm: PM) -> None:
        """Repair the structure after a crash (may store, flush and fence: crash-tested too)."""

    def state(self, pm: PM) -> Hashable:
        """The structure's contents in the program's terms (read-only; compared with the
        model's ``state()`` or, without a model, across strict-persistency cuts). Default: the
        raw words of the region."""
        return tuple(pm.load_words(0, self.size // WORD))

    def check(self, pm: PM) -> Iterable[str]:
        """Violations of the structure's invariants after recovery (read-only). Default: none."""
        return ()

    # -- what the adapters read ------------------------------------------------------------
    @classmethod
    def operations(cls) -> dict[str, OpSpec]:
        """The operations, by name, in definition order."""
        out: dict[str, OpSpec] = {}
        for k in reversed(cls.__mro__):
            for name, fn in vars(k).items():
                spec = getattr(fn, "_pm_operation", None)
                if isinstance(spec, OpSpec):
                    out[name] = spec
        return out

    @classmethod
    def region_bytes(cls) -> int:
        """The root region rounded up to whole cache lines."""
        size = cls.size
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise ConfigError(f"{cls.__name__}.size must be a positive number of bytes, got "
                              f"{size!r}")
        return -(-size // LINE) * LINE


Site = tuple[str, int, str]
"""Where an instruction was issued: (function's qualified name, line, file)."""


def site_text(site: Site) -> str:
    """``Class.method line N (<source>)``."""
    qual, line, filename = site
    src = linecache.getline(filename, line).strip() if filename else ""
    return f"{qual} line {line}" + (f" ({src})" if src else "")


class PM:
    """A PM program's view of persistent memory: the machine's instructions at byte offsets of
    the program's region.

    ``mode`` ``run``: timed instructions of one hardware thread (operations and recovery);
    ``view``: untimed reads only (``state`` and ``check``); ``init``: untimed writes (``init``).
    """

    def __init__(self, rt: Any, cpu: Any, mode: str = "run") -> None:
        """``rt``: the program's :class:`~pmsim.programs.adapt.ProgramRuntime`."""
        self._rt = rt
        self._m = rt.m
        self._cpu = cpu
        self._mode = mode
        self._base = rt.region_base
        self._limit = rt.region_limit
        self.size = rt.program.region_bytes()
        """Bytes of the root region; the heap follows it."""
        self.tid: int = cpu.tid if cpu is not None else 0
        self._group: str | None = None
        self._tx: Any = None
        self._on_linearize: Callable[[], None] | None = None

    # -- addresses -------------------------------------------------------------------------
    def _addr(self, off: int, what: str) -> int:
        if off.__class__ is not int or off & 7 or not 0 <= off < self._limit:
            off = self._bad(off, what)
        return self._base + off

    def _bad(self, off: Any, what: str) -> int:
        """``off`` as an int if it is a valid offset of another integer type, else the error."""
        if isinstance(off, bool) or not isinstance(off, int | np.integer):
            raise ProgramError(f"pm.{what}: the offset must be an int, got {off!r}")
        off = int(off)
        if not off & 7 and 0 <= off < self._limit:
            return off
        if off & 7:
            raise ProgramError(f"pm.{what}({off:#x}): offsets are byte offsets of 8-byte words "
                               "and must be multiples of 8")
        raise ProgramError(f"pm.{what}({off:#x}): outside the program's PM [0, {self._limit:#x}) "
                           f"(region {self.size} bytes, heap {self._limit - self.size}); raise "
                           f"{self._rt.program.__name__}.size or heap_per_op")

    def _value(self, v: Any, what: str) -> int:
        if v.__class__ is int and 0 <= v <= MASK64:
            return v
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or not 0 <= int(v) <= MASK64:
            raise ProgramError(f"pm.{what}: a value is a 64-bit unsigned int (0 <= v < 2**64), "
                               f"got {v!r}")
        return int(v)

    def _writable(self, what: str) -> None:
        if self._mode == "view":
            raise ProgramError(f"pm.{what} in state() or check(): those read the structure "
                               "only; write in an operation, init() or recover()")

    # -- loads -----------------------------------------------------------------------------
    def load(self, off: int) -> int:
        """The 8-byte word at ``off``."""
        a = self._addr(off, "load")
        if self._mode == "run":
            return self._cpu.load(a)
        return self._m.peek(a)

    def load_words(self, off: int, n: int) -> list[int]:
        """``n`` consecutive words from ``off``."""
        if n <= 0:
            return []
        self._addr(off + 8 * (n - 1), "load_words")
        a = self._addr(off, "load_words")
        if self._mode == "run":
            return self._cpu.load_words(a, n)
        return [int(x) for x in self._m.pm_words(a, n)]

    # -- stores ----------------------------------------------------------------------------
    def store(self, off: int, value: int, step: str | None = None) -> None:
        """Store a word. ``step`` names it as a persist step (an ordering store)."""
        self._store("store", off, value, step)

    def ntstore(self, off: int, value: int, step: str | None = None) -> None:
        """A non-temporal store (movnt): bypasses the caches, persists at the next fence."""
        self._store("ntstore", off, value, step)

    def _store(self, op: str, off: int, value: int, step: str | None) -> None:
        self._writable(op)
        a = self._addr(off, op)
        v = self._value(value, op)
        if self._mode == "init":
            self._m.poke(a, v)
            return
        rt = self._rt
        site = self._site() if rt.sites is not None or rt.repairs else None
        if rt.repairs:
            self._repair(site, a)
        if step is not None:
            rt.declare(step, op)
        torn = rt.torn.get(step) if step is not None and rt.torn else None
        if torn:
            self._torn(op, a, v, torn, step, site)
            return
        if rt.sites is not None:  # the store's own trace index (after any repair's fence)
            rt.sites.append((rt.trace_len(), self.tid, site))
        if step is None or self._group is not None or rt.hook is None:
            getattr(self._cpu, op)(a, v)
        else:
            rt.hook.op(self._cpu, step, op, a, v)

    def _repair(self, site: Site | None, addr: int) -> None:
        """Apply the runtime's repairs before a store at ``site``: persist the stores any
        thread issued at each earlier site paired with it since they were last persisted so
        (clwb of their lines, then sfence)."""
        pending = self._rt.pending
        lines = [line for early, later in self._rt.repairs if later == site
                 for line in pending.pop(early, {})]
        if lines:
            for line in dict.fromkeys(lines):
                self._cpu.clwb(line)
            self._cpu.sfence()
        if site is not None and any(early == site for early, _ in self._rt.repairs):
            pending.setdefault(site, {})[addr & ~(LINE - 1)] = None

    def _torn(self, op: str, a: int, v: int, atom: int, step: str, site: Site | None) -> None:
        """A store the program declared tearable: issued as its ``atom``-byte pieces, low to
        high (the compiler may split it), so a crash may persist some of them. The partial
        values are recorded: recovery reading one is a race (``kind`` ``torn`` findings)."""
        rt = self._rt
        old = cur = self._m.peek(a)
        nbits = 8 * atom
        mask = (1 << nbits) - 1
        pieces = []
        for i in range(0, 64, nbits):
            cur = (cur & ~(mask << i)) | (v & (mask << i))
            pieces.append((rt.trace_len(), cur, i + nbits))
            if rt.sites is not None:
                rt.sites.append((rt.trace_len(), self.tid, site))
            if rt.hook is None or self._group is not None:
                getattr(self._cpu, op)(a, cur)
            else:
                rt.hook.op(self._cpu, step, op, a, cur)
        rt.torn_stores.append((step, site, a, old, v, tuple(pieces)))

    def store_words(self, off: int, values: Sequence[int], step: str | None = None) -> None:
        """Store consecutive words (a memcpy of whole words): one 8-byte store each, so a crash
        may persist some of them (declare the step in ``atomic`` to have that reported)."""
        self._wide(step, [(off + 8 * i, v) for i, v in enumerate(values)])

    def store_bytes(self, off: int, data: bytes, step: str | None = None) -> None:
        """Store ``data`` at any byte offset (unaligned, or wider than 8 bytes): issued as the
        8-byte words it covers, each merged with the bytes around it, low to high, so a crash
        may persist some of them (declare the step in ``atomic`` to have that reported)."""
        if not isinstance(data, bytes | bytearray) or not data:
            raise ProgramError(f"pm.store_bytes: data must be non-empty bytes, got {data!r}")
        if isinstance(off, bool) or not isinstance(off, int) or off < 0:
            raise ProgramError(f"pm.store_bytes: the offset must be an int >= 0, got {off!r}")
        first, end = off & ~7, (off + len(data) + 7) & ~7
        self._addr(end - 8, "store_bytes")
        buf = bytearray(b"".join(self.load(w).to_bytes(8, "little") if self._mode == "run"
                                 else self._m.peek(self._addr(w, "store_bytes")).to_bytes(
                                     8, "little") for w in range(first, end, 8)))
        buf[off - first: off - first + len(data)] = data
        words = [(first + 8 * i, int.from_bytes(buf[8 * i: 8 * i + 8], "little"))
                 for i in range((end - first) // 8)]
        self._wide(step, words)

    def _wide(self, step: str | None, words: list[tuple[int, int]]) -> None:
        """One logical store of several words; recorded when the program says it is atomic."""
        rt = self._rt
        if step is not None and step in rt.program.atomic and self._mode == "run":
            first = rt.trace_len()
            before = [self._m.peek(self._addr(o, "store_words")) for o, _ in words]
            for o, v in words:
                self._store("store", o, v, step)
            rt.wide_stores.append((step, self._site(), first, rt.trace_len(), tuple(
                (self._base + o, b, v) for (o, v), b in zip(words, before, strict=True))))
            return
        for o, v in words:
            self._store("store", o, v, step)

    def cas(self, off: int, expected: int, new: int, step: str | None = None) -> int:
        """lock cmpxchg: store ``new`` if the word is ``expected``; returns the old value. A
        locked instruction is a full fence."""
        return self._rmw("cas", off, step, self._value(expected, "cas"), self._value(new, "cas"))

    def xchg(self, off: int, value: int, step: str | None = None) -> int:
        """xchg: store ``value``, return the old value (a full fence)."""
        return self._rmw("xchg", off, step, self._value(value, "xchg"))

    def _rmw(self, op: str, off: int, step: str | None, *args: int) -> int:
        self._writable(op)
        a = self._addr(off, op)
        if self._mode == "init":
            old = self._m.peek(a)
            if op == "xchg" or old == args[0]:
                self._m.poke(a, args[-1])
            return old
        rt = self._rt
        site = self._site() if rt.sites is not None or rt.repairs else None
        if rt.sites is not None:
            rt.sites.append((rt.trace_len(), self.tid, site))
        if rt.repairs:
            self._repair(site, a)
        if step is not None and self._group is None and rt.hook is not None:
            old = self._m.peek(a)
            rt.hook.op(self._cpu, step, op, a, *args)
            return old
        return getattr(self._cpu, op)(a, *args)

    # -- flushes and fences ----------------------------------------------------------------
    def clwb(self, off: int, step: str | None = None) -> None:
        """Write back the line holding ``off`` (it stays cached)."""
        self._flush("clwb", off, step)

    def clflushopt(self, off: int, step: str | None = None) -> None:
        """Flush the line holding ``off`` (weakly ordered: needs a fence)."""
        self._flush("clflushopt", off, step)

    def clflush(self, off: int, step: str | None = None) -> None:
        """Flush the line holding ``off`` (ordered with the thread's stores)."""
        self._flush("clflush", off, step)

    def _flush(self, op: str, off: int, step: str | None) -> None:
        a = self._addr(off, op) & ~(LINE - 1)
        if self._mode != "run":
            return
        h = self._rt.hook
        if h is None or self._group is not None:
            getattr(self._cpu, op)(a)
        else:
            h.op(self._cpu, self._named(step, op), op, a)

    def sfence(self, step: str | None = None) -> None:
        """Order earlier flushes and stores before later stores (wait for flushed lines)."""
        self._fence("sfence", step)

    def mfence(self, step: str | None = None) -> None:
        """A full fence."""
        self._fence("mfence", step)

    def _fence(self, op: str, step: str | None) -> None:
        if self._mode != "run":
            return
        h = self._rt.hook
        if h is None or self._group is not None:
            getattr(self._cpu, op)()
        else:
            h.op(self._cpu, self._named(step, op), op)

    def flush(self, off: int, nbytes: int = 8, step: str | None = None,
              kind: str = "clwb") -> None:
        """Flush every line of ``[off, off + nbytes)`` (one named step)."""
        if kind not in ("clwb", "clflushopt", "clflush"):
            raise ProgramError(f"pm.flush: unknown kind {kind!r}; use clwb, clflushopt or clflush")
        lines = self._lines(off, nbytes, "flush")
        if self._mode != "run":
            return
        h = self._rt.hook
        if h is None or self._group is not None:
            f = getattr(self._cpu, kind)
            for line in lines:
                f(line)
            return
        with h.step(self._cpu, self._named(step, "flush")) as c:
            f = getattr(c, kind)
            for line in lines:
                f(line)

    def persist(self, off: int, nbytes: int = 8, step: str | None = None) -> None:
        """clwb every line of ``[off, off + nbytes)``, then sfence: one named step (a
        ``group``), the usual way to make a range durable."""
        lines = self._lines(off, nbytes, "persist")
        if self._mode != "run":
            return
        h = self._rt.hook
        if h is None or self._group is not None:
            c = self._cpu
            for line in lines:
                c.clwb(line)
            c.sfence()
            return
        with h.step(self._cpu, self._named(step, "persist")) as c:
            for line in lines:
                c.clwb(line)
            c.sfence()

    def _lines(self, off: int, nbytes: int, what: str) -> list[int]:
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
            raise ProgramError(f"pm.{what}: nbytes must be a positive int, got {nbytes!r}")
        first = self._addr(off & ~7, what) & ~(LINE - 1)
        last = self._addr((off + nbytes - 1) & ~7, what) & ~(LINE - 1)
        return list(range(first, last + 1, LINE))

    @contextmanager
    def step(self, name: str) -> Iterator[PM]:
        """Issue a group of instructions as one named persist step: the instructions inside
        ``with pm.step("insert.publish"):`` are dropped, delayed or kept together by a
        mutation of that step."""
        if not isinstance(name, str) or not name:
            raise ProgramError(f"pm.step: a step needs a name (a non-empty str), got {name!r}")
        h = self._rt.hook
        if self._mode != "run" or h is None or self._group is not None:
            yield self
            return
        saved = self._cpu
        self._rt.declare(name, "step")
        with h.step(saved, name) as c:
            self._cpu, self._group = c, name
            try:
                yield self
            finally:
                self._cpu, self._group = saved, None

    # -- the rest --------------------------------------------------------------------------
    def alloc(self, nbytes: int, align: int = 8) -> int:
        """A fresh block of ``nbytes`` of the heap (its contents are zero until written).
        Blocks are never reused: a crash may leak some, which is the program's business."""
        return self._rt.alloc(nbytes, align, self._mode)

    def free(self, off: int) -> None:
        """Release a block (a no-op: the heap is sized so that nothing is reused)."""
        self._addr(off, "free")

    def linearize(self) -> None:
        """Mark this operation's linearization point (default: when it returns). The model
        applies operations in this order; call it at the store or CAS that publishes."""
        if self._on_linearize is not None:
            self._on_linearize()
            self._on_linearize = None

    def pause(self) -> Generator[Any, Any, None]:
        """A switch point (``yield from pm.pause()`` in a generator operation). The
        simulator's own schedule switches threads between operations only (each operation
        runs as one step, as it mostly does on hardware: a preemption inside a short window is
        rare); an explored schedule (``FuzzConfig.schedules``) may delay the thread here, so
        other threads run into the window."""
        if self._mode != "run":
            return
        sched = self._m.schedule
        if sched is None:
            return
        self._cpu.work(sched.delay(self.tid))
        yield from self._cpu.sync()
        yield self._m.env.timeout(0)
        yield from self._cpu.sync()

    def path(self, name: str) -> None:
        """Note that the operation took the interesting path ``name`` (a split, a doubling):
        the campaign's report counts them, so a run that never splits says so."""
        if self._mode == "run":
            paths = self._rt.paths
            paths[name] = paths.get(name, 0) + 1

    def work(self, ns: float) -> None:
        """Charge ``ns`` of computation to this thread."""
        if self._mode == "run":
            self._cpu.work(ns)

    # -- names -----------------------------------------------------------------------------
    @staticmethod
    def _site() -> Site:
        f: Any = sys._getframe(1)
        while f is not None and f.f_code.co_filename == __file__:
            f = f.f_back
        if f is None:
            return ("?", 0, "")
        return (f.f_code.co_qualname, f.f_lineno, f.f_code.co_filename)

    def _named(self, step: str | None, op: str) -> str:
        """The step name of a flush or fence: the one given, else the automatic one; declared
        to the runtime's step table either way (a name the source scan could not see)."""
        if step is None:
            qual, line, _ = self._site()
            step = auto_name(qual, op, line)
        self._rt.declare(step, op)
        return step


def auto_name(qual: str, op: str, line: int) -> str:
    """The name of an unnamed flush or fence: ``<function>.<instruction>@<line>``."""
    return f"{qual.rpartition('.')[2]}.{op}@{line}"


__all__ = ["PM", "PMProgram", "ProgramError", "WrongResult", "operation", "site_text"]
