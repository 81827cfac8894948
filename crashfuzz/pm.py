"""Crash-testing PM programs (:mod:`pmsim.programs`): campaigns, repairs and Hypothesis scripts.

``fuzz_program(SlotHash)`` runs a campaign on a program class (or its import path): its
operations are the run's "transactions", its recovery and checker run on every distinct crash
image, and its model (or, without one, the robustness oracle of :mod:`crashfuzz.robust`) judges
the recovered state. ``repair_program(Broken)`` applies the robustness oracle's suggested fixes
one at a time and re-fuzzes until the program is clean: the proof that each suggestion is
right. ``scripts(Program)`` draws operation sequences for a Hypothesis property, and
:class:`ProgramCrashMachine` is a state machine over the operations that crashes the script
anywhere; either shrinks a failure to a minimal script.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from pmsim.errors import ConfigError
from pmsim.programs import PMProgram, is_program_class, program_of, program_runtime
from pmsim.programs.api import Site, site_text

from .campaign import FuzzConfig, Report, fuzz


def _program(target: Any) -> type[PMProgram]:
    """The program class of ``target``: a PMProgram subclass or an import path to one."""
    if is_program_class(target):
        return target  # type: ignore[no-any-return]
    if isinstance(target, str):
        from pmsim.runtimes.registry import get_runtime

        prog = program_of(get_runtime(target))
        if prog is not None:
            return prog  # type: ignore[no-any-return]
        raise ConfigError(f"{target} is not a PM program: name a subclass of "
                          "pmsim.programs.PMProgram ('file.py:Class'); fuzz runtimes with "
                          "crashfuzz.fuzz(FuzzConfig(runtime=...))")
    raise ConfigError(f"a PM program is a PMProgram subclass or its import path "
                      f"'file.py:Class', not {target!r}")


def fuzz_program(target: Any, script: Any = None, **config: Any) -> Report:
    """Fuzz a PM program; ``config``: FuzzConfig fields (order px86 and the oracle of the
    program's choice unless given). ``script``: operations ``(name, *args)`` for thread 0,
    replacing the class's own; the run then has that many operations unless ``txs`` is given."""
    prog = _program(target)
    if script is not None:
        prog = with_script(prog, script)
    if "txs" not in config and prog.script:
        config["txs"] = len(prog.script)
    if isinstance(target, str) and script is None:
        cfg = FuzzConfig(runtime=target, workload=target, **config)
        return fuzz(cfg)
    return fuzz(FuzzConfig(**config), runtime=prog)


def with_script(prog: type[PMProgram], script: Any) -> type[PMProgram]:
    """A subclass of ``prog`` whose thread 0 runs ``script`` first."""
    ops = tuple(tuple(op) for op in script)
    return type(prog.__name__, (prog,), {"script": ops, "__module__": prog.__module__,
                                         "__qualname__": f"{prog.__qualname__}[script]"})


@dataclass
class Repair:
    """The fixes applied to a program, in order, and the campaign after each."""

    program: type[PMProgram]
    fixes: list[tuple[Site, Site]] = field(default_factory=list)
    reports: list[Report] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the program with every fix applied fuzzed clean."""
        return bool(self.reports) and self.reports[-1].ok

    def summary(self) -> str:
        name = self.program.__name__
        lines = []
        for i, rep in enumerate(self.reports):
            head = "as written" if i == 0 else f"with fixes 1-{i}"
            if rep.ok:
                lines.append(f"{name} {head}: clean ({rep.states_checked + rep.deep_states} "
                             "states, exhaustive)" if rep.exhaustive else f"{name} {head}: clean")
            else:
                lines.append(f"{name} {head}: {rep.failures[0].summary()}")
            if i < len(self.fixes):
                early, later = self.fixes[i]
                lines.append(f"  fix {i + 1}: before the store at {site_text(later)}, persist "
                             f"the stores at {site_text(early)} (clwb their lines, sfence)")
        return "\n".join(lines + [self._verdict()])

    def _verdict(self) -> str:
        if self.ok:
            return "the fixes make it robust" if self.fixes else "robust as written"
        last = self.reports[-1] if self.reports else None
        fix = next((f.fix for f in last.failures if f.fix is not None), None) if last else None
        if fix is None:
            return "not repaired: the violation has no store-pair fix (see the finding)"
        if fix in self.fixes:
            return "not repaired: the same fix is suggested again (it does not remove the bug)"
        return f"not repaired within {len(self.fixes)} fixes (raise max_fixes)"


def repair_program(target: Any, max_fixes: int = 8, **config: Any) -> Repair:
    """Fuzz ``target`` under the robustness oracle; while it finds a violation with a
    suggested fix, apply the fix (before the later store, a clwb of the earlier store's line
    and an sfence; the program is not edited) and fuzz again. The last campaign of a repaired program is a
    complete one that found nothing."""
    prog = _program(target)
    out = Repair(prog)
    for _ in range(max_fixes + 1):
        rt = program_runtime(prog, frozenset(out.fixes))
        rep = fuzz(FuzzConfig(**{"oracle": "robust", "stop_at_first": True, **config}),
                   runtime=rt)
        out.reports.append(rep)
        if rep.ok:
            break
        fix = next((f.fix for f in rep.failures if f.fix is not None), None)
        if fix is None or fix in out.fixes or len(out.fixes) == max_fixes:
            break
        out.fixes.append(fix)
    return out


def operations(prog: type[PMProgram]) -> st.SearchStrategy[tuple[Any, ...]]:
    """One operation ``(name, *args)`` of ``prog``: the name drawn by Hypothesis, the arguments
    by the operation's own ``args`` from a seed Hypothesis chooses (so a failure shrinks)."""
    ops = prog.operations()
    if not ops:
        raise ConfigError(f"{prog.__name__} has no operations: mark them with @operation()")

    def one(name: str, seed: int) -> tuple[Any, ...]:
        spec = ops[name]
        args = tuple(spec.args(np.random.default_rng(seed))) if spec.args else ()
        return (name, *(int(a) if isinstance(a, np.integer) else a for a in args))

    return st.builds(one, st.sampled_from(list(ops)), st.integers(0, 2**32 - 1))


def scripts(prog: type[PMProgram], max_ops: int = 12) -> st.SearchStrategy[tuple[tuple[Any, ...], ...]]:
    """Operation sequences of ``prog`` (:func:`operations`), 1 to ``max_ops`` long."""
    return st.lists(operations(prog), min_size=1, max_size=max_ops).map(tuple)


class ProgramCrashMachine(RuleBasedStateMachine):
    """A Hypothesis state machine over a PM program's operations: subclass it, set
    ``program`` (and ``config``, FuzzConfig fields), expose ``MyMachine.TestCase`` to pytest.
    The rule ``operation`` appends one operation to the script; ``crash_here`` fuzzes the
    script so far (every crash point, every image). A failure shrinks to a short script."""

    program: ClassVar[type[PMProgram] | None] = None
    config: ClassVar[dict[str, Any]] = {}
    max_ops: ClassVar[int] = 8

    def __init__(self) -> None:
        super().__init__()
        if not is_program_class(self.program):
            raise ConfigError(f"{type(self).__name__}.program must be a PMProgram subclass, "
                              f"got {self.program!r}")
        self.script: list[tuple[Any, ...]] = []

    @precondition(lambda self: len(self.script) < self.max_ops)
    @rule(data=st.data())
    def operation(self, data: st.DataObject) -> None:
        self.script.append(data.draw(operations(self.program)))  # type: ignore[arg-type]

    @precondition(lambda self: bool(self.script))
    @rule()
    def crash_here(self) -> None:
        from .report import format_report

        rep = fuzz_program(self.program, script=self.script, **{"depth": 1, **self.config})
        assert rep.ok, f"script: {self.script!r}\n\n{format_report(rep, show=1)}"


__all__ = ["ProgramCrashMachine", "Repair", "fuzz_program", "operations", "repair_program",
           "scripts", "with_script"]
