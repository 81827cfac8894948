"""A Hypothesis state machine that builds a transactional program and crashes it anywhere.

Subclass :class:`CrashMachine`, set ``runtime`` (a name or a Runtime class) and ``domain``, and
expose ``MyMachine.TestCase`` to pytest. Rules add writes, reads, allocations and frees to the
open transaction, commit or abort it, and ``crash_here`` fuzzes the program so far with the open
transaction left running: every crash point of the run, every surviving image. A failure
shrinks to a short rule sequence, and the assertion message prints the program and the report.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from .programs import Op, Txn, format_program, fuzz_program

VALUES = st.integers(1, (1 << 64) - 1)


class CrashMachine(RuleBasedStateMachine):
    """Rules over one thread's transactions; ``crash_here`` checks every crash state so far."""

    runtime: ClassVar[Any] = "undo"
    domain: ClassVar[str] = "pdom1"
    order: ClassVar[str] = "line"
    cells: ClassVar[int] = 4
    fields: ClassVar[int] = 2
    roots: ClassVar[int] = 2
    max_ops: ClassVar[int] = 6

    def __init__(self) -> None:
        super().__init__()
        self.done: list[Txn] = []
        self.ops: list[Op] = []

    def _room(self) -> bool:
        return len(self.ops) < self.max_ops

    @precondition(_room)
    @rule(cell=st.integers(0, 3), field=st.integers(0, 1), value=VALUES)
    def write(self, cell: int, field: int, value: int) -> None:
        self.ops.append(("w", cell % self.cells, field % self.fields, value))

    @precondition(_room)
    @rule(cell=st.integers(0, 3), field=st.integers(0, 1))
    def read(self, cell: int, field: int) -> None:
        self.ops.append(("r", cell % self.cells, field % self.fields))

    @precondition(_room)
    @rule(root=st.integers(0, 1), words=st.integers(2, 4), value=VALUES)
    def alloc(self, root: int, words: int, value: int) -> None:
        self.ops.append(("alloc", root % self.roots, words, value))

    @precondition(_room)
    @rule(root=st.integers(0, 1))
    def free(self, root: int) -> None:
        self.ops.append(("free", root % self.roots))

    @rule()
    def commit(self) -> None:
        self.done.append((tuple(self.ops), "commit"))
        self.ops = []

    @rule()
    def abort(self) -> None:
        self.done.append((tuple(self.ops), "abort"))
        self.ops = []

    @rule()
    def crash_here(self) -> None:
        from .report import format_report

        program = ((*self.done, (tuple(self.ops), "open")),)
        rep = fuzz_program(program, self.runtime, domain=self.domain, order=self.order,
                           idempotence=1, budget=1 << 14)
        assert rep.ok, f"program:\n{format_program(program)}\n\n{format_report(rep, show=1)}"
