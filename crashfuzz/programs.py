"""Transactional programs as data, a workload that runs them, and Hypothesis strategies.

A program is, per thread, a tuple of transactions; a transaction is ``(ops, end)`` where ``end``
is ``"commit"``, ``"abort"`` or ``"open"`` (the thread stops inside it: a crash while it runs)
and each op is one of

* ``("w", cell, field, value)`` — write a field of a static cell object;
* ``("r", cell, field)`` — read it (exercises read-after-write paths);
* ``("alloc", root, words, value)`` — free the block ``root`` points to (if any), allocate a
  block of ``words`` fields, fill it, point ``root`` at it;
* ``("free", root)`` — free the block ``root`` points to and clear ``root``.

:class:`ProgramWorkload` runs a program on any runtime, with a reference model, so
``fuzz(cfg, workload=ProgramWorkload(program))`` fuzzes it. ``programs()`` generates programs;
a failing property test shrinks to a minimal program, and the report names the crash point.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from pmsim.errors import ConfigError
from pmsim.runtimes.base import Runtime
from pmsim.runtimes.layout import PMSpec, StaticArray
from pmsim.workloads.base import Model, Workload

Op = tuple
Txn = tuple[tuple[Op, ...], str]
Program = tuple[tuple[Txn, ...], ...]
ENDS = ("commit", "abort", "open")


class ProgramModel(Model):
    """The reference: cells and the blocks roots point to."""

    def __init__(self) -> None:
        self.cells: dict[tuple[int, int], int] = {}
        self.roots: dict[int, tuple[int, ...]] = {}

    def apply(self, op: Txn) -> None:
        ops, end = op
        if end != "commit":
            return
        for o in ops:
            if o[0] == "w":
                self.cells[(o[1], o[2])] = o[3]
            elif o[0] == "alloc":
                self.roots[o[1]] = block_words(o[2], o[3])
            elif o[0] == "free":
                self.roots.pop(o[1], None)

    def snapshot(self) -> Hashable:
        cells = tuple(sorted((k, v) for k, v in self.cells.items() if v))
        return cells, tuple(sorted(self.roots.items()))


def block_words(words: int, value: int) -> tuple[int, ...]:
    """A block's contents: its length, then ``value`` repeated."""
    return (words, *([value] * (words - 1)))


class ProgramWorkload(Workload):
    """Runs a fixed :data:`Program` (transactions beyond a thread's program are empty)."""

    name = "program"
    help = "a transactional program given as data (crashfuzz.programs)"

    def __init__(self, program: Program, cells: int = 4, fields: int = 2, roots: int = 2,
                 max_words: int = 4, threads: int | None = None, seed: int = 0,
                 txs: int | None = None, **_ignored: Any) -> None:
        program = tuple(tuple(t) for t in program)
        validate(program, cells, fields, roots, max_words)
        super().__init__(threads=threads or len(program), seed=seed, txs=txs)
        if self.threads != len(program):
            raise ConfigError(f"the program has {len(program)} threads, the run {self.threads}")
        self.program = program
        self.ncells, self.nfields, self.nroots, self.max_words = cells, fields, roots, max_words
        self._pos = [0] * self.threads

    def spec(self) -> PMSpec:
        writes = max((len(ops) * 2 for th in self.program for ops, _ in th), default=1)
        allocs = max((2 * sum(o[0] in ("alloc", "free") for o in ops)
                      for th in self.program for ops, _ in th), default=0)
        return PMSpec(statics=(StaticArray("cells", self.ncells, self.nfields),
                               StaticArray("roots", self.nroots, 1)),
                      heap=((2, self.max_words, self.nroots + max(1, allocs)),),
                      max_tx_writes=max(1, writes), max_tx_words=max(1, writes * self.max_words),
                      max_tx_allocs=max(1, allocs), max_tx_objects=max(1, writes))

    def nlocks(self) -> int:
        return 1

    def next_op(self, tid: int, rng: np.random.Generator) -> Txn:
        i = self._pos[tid]
        self._pos[tid] += 1
        th = self.program[tid]
        return th[i] if i < len(th) else ((), "commit")

    def transaction(self, cpu: Any, rt: Runtime, op: Txn) -> Generator[Any, Any, None]:
        ops, end = op
        tx = yield from rt.begin(cpu, locks=self.held(0))
        self.record(tx, op)
        for o in ops:
            if o[0] == "w":
                tx.write(rt.static("cells", o[1]), o[2], o[3])
            elif o[0] == "r":
                tx.read(rt.static("cells", o[1]), o[2])
            else:
                root = rt.static("roots", o[1])
                old = tx.read(root, 0)
                if old:
                    tx.free(old)
                if o[0] == "alloc":
                    blk = tx.alloc(o[2])
                    tx.write_words(blk, 0, list(block_words(o[2], o[3])))
                    tx.write(root, 0, blk)
                else:
                    tx.write(root, 0, 0)
        if end == "commit":
            yield from rt.commit(tx)
        elif end == "abort":
            yield from rt.abort(tx)
        # "open": the thread stops inside the transaction (thread_body ends the thread)

    def thread_body(self, cpu: Any, rt: Runtime, tid: int, ntx: int) -> Generator[Any, Any, None]:
        rng = self.rng(tid)
        for _ in range(ntx):
            op = self.next_op(tid, rng)
            yield from self.transaction(cpu, rt, op)
            if op[1] == "open":
                return

    def model(self) -> Model:
        return ProgramModel()

    def read_data(self, rt: Runtime) -> Hashable:
        cells = rt.peek_static("cells")
        nz = [((int(i), int(f)), int(cells[i, f])) for i, f in zip(*np.nonzero(cells), strict=True)]
        roots = []
        for r, ptr in enumerate(rt.peek_static("roots")[:, 0].tolist()):
            if ptr:
                w = rt.peek(int(ptr), 0)
                if not 2 <= w <= self.max_words:
                    return ("corrupt", f"root {r} points at a block of {w} words")
                roots.append((r, tuple(rt.peek_words(int(ptr), 0, w))))
        return tuple(sorted(nz)), tuple(roots)

    def live_objects(self, rt: Runtime) -> list[int]:
        return [int(v) for v in rt.peek_static("roots")[:, 0] if v]


def validate(program: Program, cells: int, fields: int, roots: int, max_words: int) -> None:
    """Raise ConfigError naming the first malformed transaction or op."""
    if not program:
        raise ConfigError("a program needs at least one thread: ((txn, ...),)")
    for t, th in enumerate(program):
        for i, txn in enumerate(th):
            where = f"thread {t} transaction {i}"
            if len(txn) != 2 or txn[1] not in ENDS:
                raise ConfigError(f"{where}: expected (ops, end) with end in {ENDS}, got {txn!r}")
            for o in txn[0]:
                ok = (o and o[0] == "w" and len(o) == 4 and 0 <= o[1] < cells and 0 <= o[2] < fields
                      and 0 <= o[3] < 1 << 64) or (
                      o and o[0] == "r" and len(o) == 3 and 0 <= o[1] < cells and 0 <= o[2] < fields
                      ) or (o and o[0] == "alloc" and len(o) == 4 and 0 <= o[1] < roots
                            and 2 <= o[2] <= max_words) or (
                      o and o[0] == "free" and len(o) == 2 and 0 <= o[1] < roots)
                if not ok:
                    raise ConfigError(f"{where}: malformed op {o!r}; see crashfuzz.programs for "
                                      "the op forms")
            if txn[1] == "open" and i != len(th) - 1:
                raise ConfigError(f"{where}: an 'open' transaction must be the thread's last")


# -- Hypothesis strategies ---------------------------------------------------------------------
def ops(cells: int = 4, fields: int = 2, roots: int = 2, max_words: int = 4,
        alloc: bool = True) -> st.SearchStrategy[Op]:
    """One op of a transaction."""
    values = st.integers(1, (1 << 64) - 1)
    choices = [st.tuples(st.just("w"), st.integers(0, cells - 1), st.integers(0, fields - 1),
                         values),
               st.tuples(st.just("r"), st.integers(0, cells - 1), st.integers(0, fields - 1))]
    if alloc:
        choices += [st.tuples(st.just("alloc"), st.integers(0, roots - 1),
                              st.integers(2, max_words), values),
                    st.tuples(st.just("free"), st.integers(0, roots - 1))]
    return st.one_of(*choices)


def transactions(max_ops: int = 4, aborts: bool = True, **kw: Any) -> st.SearchStrategy[Txn]:
    ends = st.sampled_from(["commit", "abort"]) if aborts else st.just("commit")
    return st.tuples(st.lists(ops(**kw), max_size=max_ops).map(tuple), ends)


@st.composite
def programs(draw: st.DrawFn, threads: int | st.SearchStrategy[int] = 1, max_txs: int = 4,
             max_ops: int = 4, aborts: bool = True, open_last: bool = True,
             **kw: Any) -> Program:
    """Programs of 1..max_txs transactions per thread; the last may be left open (a crash
    inside it)."""
    n = draw(threads) if isinstance(threads, st.SearchStrategy) else threads
    out = []
    for _ in range(n):
        txs = draw(st.lists(transactions(max_ops, aborts, **kw), min_size=1, max_size=max_txs))
        if open_last and draw(st.booleans()):
            txs[-1] = (txs[-1][0], "open")
        out.append(tuple(txs))
    return tuple(out)


def program_length(program: Program) -> int:
    """Transactions per thread the run must execute to cover the program."""
    return max(len(th) for th in program)


def fuzz_program(program: Program, runtime: Any = "undo", **config: Any) -> Any:
    """Fuzz one program on a runtime (config: FuzzConfig fields); returns the Report."""
    from .campaign import FuzzConfig, fuzz

    cfg = FuzzConfig(runtime=runtime if isinstance(runtime, str) else "undo", workload="program",
                     threads=len(program), txs=program_length(program), **config)
    return fuzz(cfg, runtime=None if isinstance(runtime, str) else runtime,
                workload=lambda **kw: ProgramWorkload(program, **kw))


def format_program(program: Program) -> str:
    """A program as Python source (what a failure report prints)."""
    lines = ["("]
    for th in program:
        lines.append("    (")
        for txn in th:
            lines.append(f"        ({txn[0]!r}, {txn[1]!r}),")
        lines.append("    ),")
    lines.append(")")
    return "\n".join(lines)


__all__ = ["ProgramModel", "ProgramWorkload", "Program", "format_program", "fuzz_program",
           "ops", "program_length", "programs", "transactions", "validate"]
