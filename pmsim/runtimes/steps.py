"""Named persist steps: how a runtime issues its persistence protocol, and how a mutation changes it.

Every flush group, fence, persist barrier and ordering-relevant store a runtime issues goes
through one of these calls, with a stable name declared in the runtime's ``STEPS`` table::

    self.pb(cpu, "redo.commit.pb2")
    self.st(cpu, "redo.commit.store-idle", hdr + 8 * H_STATE, IDLE)
    self.flush(cpu, "redo.append.flush", lines)
    with self.step(cpu, "cow.commit.swap") as c:   # a group: c has the Cpu's instructions
        c.store(obj + W_OLD, p); c.clwb(obj)

Recovery decisions that guard against torn or stale state are named too::

    if self.check("undo.recover.checksum") and stored != checksum(words): ...

Without a hook these are the plain instructions (one extra Python call). A :class:`StepHook`
sees every step: it can log where in the trace each step began and ended (failure reports name
the step a crash point falls in) and it applies a mutant's data mutations (:mod:`.mutation`):
drop a step's stores, flushes and fences, or only its cache-line flushes or only its fences,
hold them back until another step has run, or skip a recovery check. Loads inside a dropped or
held step still execute where they are: a mutation moves what a step makes visible or
persistent, never what the runtime reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import ConfigError
from ..machine import Cpu

KINDS = ("pb", "fence", "order", "flush", "store", "group", "edge")
"""What a step issues: a persist barrier, a fence, an ordering point (a fence where the WPQ is in
the persistence domain, a persist barrier in PDOM-0), a flush group, one store, a group, or a
hardware ordering rule the runtime hands the crash-state model as persist-order edges
(``Runtime.edge_providers``; dropping the step drops the edges)."""


@dataclass(frozen=True)
class StepInfo:
    """One declared persist step (or recovery check) of a runtime."""

    name: str
    kind: str
    help: str


# -- step mutations, as data (built by :mod:`.mutation`, applied by StepHook) ---------------------
@dataclass(frozen=True)
class Drop:
    """Discard a step's stores, flushes and fences."""

    step: str

    def __str__(self) -> str:
        return f"drop({self.step})"


@dataclass(frozen=True)
class DropFlush:
    """Discard a step's cache-line flushes (clwb, clflushopt, clflush); its stores stay."""

    step: str

    def __str__(self) -> str:
        return f"drop_flush({self.step})"


@dataclass(frozen=True)
class DropFence:
    """Discard a step's fences and persist barriers (sfence, mfence, pcommit); the rest stays."""

    step: str

    def __str__(self) -> str:
        return f"drop_fence({self.step})"


@dataclass(frozen=True)
class Delay:
    """Issue a step's stores, flushes and fences right after the next ``after`` step."""

    step: str
    after: str

    def __str__(self) -> str:
        return f"delay({self.step}, after={self.after})"


@dataclass(frozen=True)
class SkipCheck:
    """Recovery skips a named check."""

    check: str

    def __str__(self) -> str:
        return f"skip_check({self.check})"


FLUSH_OPS = frozenset({"clwb", "clflushopt", "clflush"})
"""The cache-line flushes (what ``drop_flush`` removes from a step)."""
FENCE_OPS = frozenset({"sfence", "mfence", "pcommit", "persist_barrier"})
"""The fences and persist barriers (what ``drop_fence`` removes from a step); locked
read-modify-writes order too, but they are stores and stay."""


def _nop(*args: Any) -> None:
    return None


class _Without:
    """A Cpu (or a step's recorder) without its cache-line flushes and/or its fences: those are
    no-ops, every other instruction is the Cpu's own. Code tuned for eADR, where caches are in
    the persistence domain, issues no flushes; ``drop_flush``/``drop_fence`` remove them from
    one step."""

    def __init__(self, cpu: Any, flushes: bool = True, fences: bool = False) -> None:
        self._cpu = cpu
        if flushes:
            self.clwb = self.clflushopt = self.clflush = self.flush_range = _nop
            self.clwb_many = _nop
        if fences:
            self.sfence = self.mfence = self.pcommit = self.persist_barrier = _nop

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cpu, name)


class _Recorder:
    """Stands in for a Cpu inside a dropped or held step: loads run, the rest is recorded."""

    def __init__(self, cpu: Any) -> None:
        self.cpu = cpu
        self.tid = cpu.tid
        self.ops: list[tuple[str, tuple[Any, ...]]] = []
        self.load = cpu.load
        self.mark = cpu.mark
        self.work = cpu.work

    def _rec(self, op: str, *args: Any) -> None:
        self.ops.append((op, args))

    def store(self, addr: int, value: int) -> None:
        self._rec("store", addr, value)

    def store_words(self, addr: int, words: Iterable[int]) -> None:
        for i, w in enumerate(words):
            self._rec("store", addr + 8 * i, w)

    def ntstore(self, addr: int, value: int) -> None:
        self._rec("ntstore", addr, value)

    def clwb(self, line: int) -> None:
        self._rec("clwb", line)

    def clwb_many(self, lines: Iterable[int]) -> None:
        for line in lines:
            self._rec("clwb", line)

    def clflushopt(self, line: int) -> None:
        self._rec("clflushopt", line)

    def clflush(self, line: int) -> None:
        self._rec("clflush", line)

    def sfence(self) -> None:
        self._rec("sfence")

    def mfence(self) -> None:
        self._rec("mfence")

    def persist_barrier(self) -> None:
        self._rec("persist_barrier")

    def cas(self, addr: int, expected: int, new: int) -> int:
        self._rec("cas", addr, expected, new)
        return expected

    def xchg(self, addr: int, value: int) -> int:
        old = self.cpu.load(addr)
        self._rec("xchg", addr, value)
        return old


def replay(cpu: Any, ops: Sequence[tuple[str, tuple[Any, ...]]]) -> None:
    """Issue recorded instructions on ``cpu`` in order."""
    for op, args in ops:
        getattr(cpu, op)(*args)


class StepHook:
    """Sees every named step of one runtime instance: logs it and applies step mutations.

    ``log`` (when not None) receives ``(trace index, thread, step name)`` as each step begins,
    and ``spans`` (when not None) ``(first index, end index, thread, step name)`` as each step
    ends: the thread's events in between are the step's own instructions. ``drop`` names steps
    whose stores, flushes and fences are discarded; ``drop_flush`` and ``drop_fence`` steps
    whose cache-line flushes, or fences and persist barriers, are discarded while the rest
    stays; ``delay`` maps a step to the step after whose next occurrence (on the same thread)
    its instructions are issued instead; held instructions still pending when the runtime ends
    a transaction or a recovery are issued then. ``skip`` names recovery checks that are skipped.
    """

    def __init__(self, mutations: Iterable[object] = (), log: list[tuple[int, int, str]] | None = None,
                 trace_len: Any = None) -> None:
        self.drop: set[str] = set()
        self.drop_flush: set[str] = set()
        self.drop_fence: set[str] = set()
        self.delay: dict[str, str] = {}
        self.skip: set[str] = set()
        for m in mutations:
            if isinstance(m, Drop):
                self.drop.add(m.step)
            elif isinstance(m, DropFlush):
                self.drop_flush.add(m.step)
            elif isinstance(m, DropFence):
                self.drop_fence.add(m.step)
            elif isinstance(m, Delay):
                self.delay[m.step] = m.after
            elif isinstance(m, SkipCheck):
                self.skip.add(m.check)
        self.log = log
        self.spans: list[tuple[int, int, int, str]] | None = None
        self.trace_len = trace_len
        self.held: dict[tuple[int, str], list[tuple[Any, list[tuple[str, tuple[Any, ...]]]]]] = {}

    @property
    def mutates(self) -> bool:
        return bool(self.drop or self.delay or self.drop_flush or self.drop_fence)

    def _begin(self, cpu: Any, name: str) -> int:
        if self.log is None:
            return -1
        i = self.trace_len() if self.trace_len else -1
        self.log.append((i, cpu.tid, name))
        return i

    def _end(self, cpu: Any, name: str, rec: _Recorder | None, start: int = -1) -> None:
        if self.spans is not None and self.trace_len:
            self.spans.append((start, self.trace_len(), cpu.tid, name))
        if rec is not None and name in self.delay:
            self.held.setdefault((cpu.tid, self.delay[name]), []).append((cpu, rec.ops))
        pending = self.held.pop((cpu.tid, name), None) if self.held else None
        if pending:
            for c, ops in pending:
                replay(c, ops)

    @contextmanager
    def step(self, cpu: Any, name: str) -> Iterator[Any]:
        start = self._begin(cpu, name)
        rec = _Recorder(cpu) if (name in self.drop or name in self.delay) else None
        c = rec if rec is not None else cpu
        flushes, fences = name in self.drop_flush, name in self.drop_fence
        yield _Without(c, flushes, fences) if flushes or fences else c
        self._end(cpu, name, rec, start)

    def op(self, cpu: Any, name: str, op: str, *args: Any) -> None:
        """A one-instruction step."""
        start = self._begin(cpu, name)
        rec = _Recorder(cpu) if (name in self.drop or name in self.delay) else None
        if not ((op in FLUSH_OPS and name in self.drop_flush)
                or (op in FENCE_OPS and name in self.drop_fence)):
            getattr(cpu if rec is None else rec, op)(*args)
        self._end(cpu, name, rec, start)

    def release(self, tid: int) -> None:
        """Issue every instruction still held for thread ``tid`` (end of a transaction)."""
        for key in [k for k in self.held if k[0] == tid]:
            for c, ops in self.held.pop(key):
                replay(c, ops)


class PersistSteps:
    """The step API of a runtime (mixed into :class:`~.base.Runtime`)."""

    STEPS: ClassVar[dict[str, tuple[str, str]]] = {}
    """name -> (kind, help) of the steps this class issues (merged along the class hierarchy)."""
    CHECKS: ClassVar[dict[str, str]] = {}
    """name -> help of the recovery checks this class makes."""
    OMIT_STEPS: ClassVar[frozenset[str]] = frozenset()
    """Inherited steps this class never issues (a variant that leaves a step out)."""

    hook: StepHook | None = None
    elide_flushes: ClassVar[bool] = False
    """Skip cache-line flushes when the machine's domain is PDOM-2 (eADR), as code tuned for
    eADR does. False (default) is the papers' code: the same instructions in every domain."""
    _no_flush: dict[int, _Without] | None = None  # per thread, when flushes are elided
    _order_pb = False  # ordering points are persist barriers (PDOM-0)

    def _elide_in(self, domain: str) -> None:
        """Adapt to ``domain``: elide flushes if this runtime elides them in PDOM-2, and make
        ordering points persist barriers in PDOM-0 (fences order no persistence there)."""
        self._no_flush = {} if self.elide_flushes and domain == "pdom2" else None
        self._order_pb = domain == "pdom0"

    def _cpu_for(self, cpu: Any) -> Any:
        nf = self._no_flush
        if nf is None:
            return cpu
        c = nf.get(cpu.tid)
        if c is None or c._cpu is not cpu:
            c = nf[cpu.tid] = _Without(cpu)
        return c

    @classmethod
    def persist_steps(cls) -> list[StepInfo]:
        """Every named persist step this runtime may issue, in protocol order."""
        out: dict[str, StepInfo] = {}
        for k in reversed(cls.__mro__):
            for name, (kind, help) in vars(k).get("STEPS", {}).items():
                if kind not in KINDS:
                    raise ConfigError(f"step {name!r} of {k.__name__} has kind {kind!r}; use one "
                                      f"of {', '.join(KINDS)}")
                out[name] = StepInfo(name, kind, help)
        return [s for s in out.values() if s.name not in cls.OMIT_STEPS]

    @classmethod
    def recovery_checks(cls) -> list[StepInfo]:
        """Every named recovery check this runtime makes."""
        out: dict[str, StepInfo] = {}
        for k in reversed(cls.__mro__):
            for name, help in vars(k).get("CHECKS", {}).items():
                out[name] = StepInfo(name, "check", help)
        return list(out.values())

    # -- issuing steps ---------------------------------------------------------------------------
    def pb(self, cpu: Any, name: str) -> None:
        """A persist barrier."""
        if self.hook is None:
            cpu.persist_barrier()
        else:
            self.hook.op(cpu, name, "persist_barrier")

    def fence(self, cpu: Any, name: str) -> None:
        """An sfence."""
        if self.hook is None:
            cpu.sfence()
        else:
            self.hook.op(cpu, name, "sfence")

    def order(self, cpu: Any, name: str) -> None:
        """Order the persistence of earlier flushed lines before later stores: an sfence where
        the WPQ is in the persistence domain (a flushed line is durable once the fence sees it
        accepted), a persist barrier in PDOM-0 (the WPQ may drain lines in any order)."""
        op = "persist_barrier" if self._order_pb else "sfence"
        if self.hook is None:
            getattr(cpu, op)()
        else:
            self.hook.op(cpu, name, op)

    def st(self, cpu: Any, name: str, addr: int, value: int) -> None:
        """One ordering-relevant store."""
        if self.hook is None:
            cpu.store(addr, value)
        else:
            self.hook.op(cpu, name, "store", addr, value)

    def flush(self, cpu: Any, name: str, lines: Iterable[int]) -> None:
        """clwb of every line in ``lines`` (one step; nothing when flushes are elided)."""
        if self._no_flush is not None:
            return
        if self.hook is None:
            cpu.clwb_many(lines)
            return
        with self.hook.step(cpu, name) as c:
            for line in lines:
                c.clwb(line)

    def step(self, cpu: Any, name: str) -> Any:
        """A group of instructions as one step: ``with self.step(cpu, name) as c: c.store(...)``."""
        if self._no_flush is not None:
            cpu = self._cpu_for(cpu)
        if self.hook is None:
            return cpu if cpu.__class__ is Cpu else nullcontext(cpu)  # a Cpu is its own context
        return self.hook.step(cpu, name)

    def dropped(self, name: str) -> bool:
        """Whether a mutation drops the named step (how an ``edge`` step, which issues no
        instruction, learns it is off)."""
        return self.hook is not None and name in self.hook.drop

    def hw_step(self, tid: int, name: str) -> bool:
        """A step the simulated hardware takes for thread ``tid`` (no Cpu instruction: a
        Proteus LPQ flash clear, an LLT clear): logged like any step, False when a mutation
        drops it (the hardware model then leaves it out)."""
        h = self.hook
        if h is None:
            return True
        if h.log is not None:
            h.log.append((h.trace_len() if h.trace_len else -1, tid, name))
        return name not in h.drop

    def check(self, name: str) -> bool:
        """Whether recovery makes the named check (False when a mutation skips it)."""
        return self.hook is None or name not in self.hook.skip

    def end_steps(self, tid: int) -> None:
        """Issue what a delay still holds for ``tid`` (called when a transaction ends)."""
        if self.hook is not None and self.hook.held:
            self.hook.release(tid)

    def log_steps(self, log: list[tuple[int, int, str]],
                  spans: list[tuple[int, int, int, str]] | None = None) -> None:
        """Record ``(trace index, thread, step)`` of every step from now on into ``log`` as it
        begins, and ``(first index, end index, thread, step)`` into ``spans`` (a list of the
        hook's own unless given) as it ends."""
        hook = self.hook or StepHook(getattr(self, "mutations", ()))
        hook.log = log
        hook.spans = [] if spans is None else spans
        hook.trace_len = self.m.engine.trace_len  # type: ignore[attr-defined]
        self.hook = hook


def step_ops(spans: Iterable[tuple[int, int, int, str]], kinds: Sequence[int],
             tids: Sequence[int]) -> dict[str, set[int]]:
    """The trace event kinds (:class:`~pmsim.trace.Ev` codes) each step issued: ``spans`` from
    :meth:`PersistSteps.log_steps`, ``kinds`` and ``tids`` the trace's event columns."""
    out: dict[str, set[int]] = {}
    for start, end, tid, name in spans:
        got = out.setdefault(name, set())
        if start < 0:
            continue
        got.update(int(kinds[i]) for i in range(start, end) if tids[i] == tid)
    return out


def step_at(log: Sequence[tuple[int, int, str]], index: int, tid: int | None = None) -> str | None:
    """The step a trace event belongs to: the last one begun at or before ``index`` (on ``tid``)."""
    best = None
    for i, t, name in log:
        if i > index:
            break
        if tid is None or t == tid:
            best = name
    return best


__all__ = ["FENCE_OPS", "FLUSH_OPS", "KINDS", "Delay", "Drop", "DropFence", "DropFlush", "PersistSteps",
           "SkipCheck", "StepHook", "StepInfo", "replay", "step_at", "step_ops"]
