"""A PM program as a runtime and a workload, so every campaign, mutation and ablation applies.

:func:`program_runtime` wraps a :class:`~.api.PMProgram` class in a :class:`ProgramRuntime`
subclass (an operation is a "transaction": TX_BEGIN when it starts, TX_COMMIT at its
linearization point, TX_DURABLE when it returns; recovery is the program's ``recover``; the
invariants its ``check``), :func:`program_workload` in a :class:`ProgramWorkload` (the
scripted and random operations, the results checked against the model as they return). Both
are built once per program class and remember its import path, so a finding names the file.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Generator, Hashable, Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import ConfigError
from ..runtimes.alloc import HeapExhausted
from ..runtimes.alloclog import ALLOC_STEPS, EAGER_STEPS
from ..runtimes.base import Runtime, Tx
from ..runtimes.labels import Label, Labeller, register_labels
from ..runtimes.layout import PMSpec, StaticArray
from ..trace import Mark
from ..usercode import import_path, remember
from ..workloads.base import Model, Workload
from .api import LINE, PM, PMProgram, ProgramError, Site, WrongResult, auto_name

FLUSH_KINDS = {"clwb": "flush", "clflushopt": "flush", "clflush": "flush", "flush": "flush",
               "sfence": "fence", "mfence": "fence", "persist": "flush"}
"""Instructions that are always persist steps (named by the program or automatically)."""
STORE_KINDS = {"store": "store", "ntstore": "store", "store_words": "group", "cas": "store",
               "xchg": "store"}
"""Instructions that are persist steps when the program names them (``step=``)."""
SLACK_OPS = 8
"""Operations' worth of heap beyond what the campaign plans (a recovery that allocates)."""


def is_program_class(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, PMProgram) and obj is not PMProgram


def program_of(obj: Any) -> type[PMProgram] | None:
    """The PM program a runtime or workload (class or instance) runs, None for any other."""
    cls = obj if isinstance(obj, type) else type(obj)
    if isinstance(cls, type) and issubclass(cls, ProgramRuntime | ProgramWorkload):
        return cls.program if is_program_class(cls.program) else None
    return None


class ProgramTx(Tx):
    """One operation of a PM program."""

    linearized = False


class ProgramRuntime(Runtime):
    """The runtime side of a PM program (built per program by :func:`program_runtime`)."""

    family = "pmprogram"
    program: ClassVar[type[PMProgram]] = PMProgram
    repairs: ClassVar[frozenset[tuple[Site, Site]]] = frozenset()
    """``(earlier, later)`` store sites: before a store at ``later`` the thread persists its
    last store at ``earlier`` (clwb of its line, sfence). A fix the robustness oracle suggested,
    applied without editing the program."""
    default_order: ClassVar[str] = "px86"
    """x86 guarantees 8-byte failure atomicity, not line atomicity."""
    STEPS: ClassVar[dict[str, tuple[str, str]]] = {}
    OMIT_STEPS = frozenset(ALLOC_STEPS) | frozenset(EAGER_STEPS)  # pm.alloc logs nothing

    def __init__(self, machine: Any, layout: Any, costs: Any = None) -> None:
        super().__init__(machine, layout, costs)
        place = layout.static("region")
        self.region_base: int = place.base
        self.region_limit: int = place.words * 8
        self.prog = self.program()
        self.brk = self.program.region_bytes()
        self.sites: list[tuple[int, int, Site]] | None = []
        self.pending: dict[Site, dict[int, None]] = {}  # repairs: lines stored at a site
        self.paths: dict[str, int] = {}
        self.torn = dict(self.program.tearable)
        self.torn_values: dict[int, dict[int, tuple[str, Site | None, int]]] = {}
        """Partial values of torn stores, by address: value -> (step, site, bits written)."""
        self.wide_stores: list[tuple[str, Site | None, tuple[tuple[int, int, int], ...]]] = []
        """Stores the program declared atomic but wider than a word: (step, site, (address,
        old, new) per word)."""
        self.trace_len = machine.engine.trace_len
        self._handles: dict[int, PM] = {}

    @classmethod
    def declare(cls, name: str, op: str) -> None:
        """Add a step met while running that the source scan did not find."""
        if name not in cls.STEPS:
            kind = FLUSH_KINDS.get(op) or STORE_KINDS.get(op, "group")
            cls.STEPS[name] = (kind, cls.program.steps.get(name, f"{op} (found while running)"))

    def handle(self, cpu: Any) -> PM:
        """The PM handle of ``cpu``'s thread."""
        h = self._handles.get(cpu.tid)
        if h is None or h._cpu is not cpu:
            h = self._handles[cpu.tid] = PM(self, cpu)
        return h

    def view(self) -> PM:
        return PM(self, None, "view")

    def alloc(self, nbytes: int, align: int, mode: str) -> int:
        if mode == "view":
            raise ProgramError("pm.alloc in state() or check(): those read the structure only")
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
            raise ProgramError(f"pm.alloc: nbytes must be a positive int, got {nbytes!r}")
        if align not in (8, 16, 32, 64, 128, 256, 4096):
            raise ProgramError(f"pm.alloc: align must be a power of two from 8 to 4096, got "
                               f"{align!r}")
        off = -(-self.brk // align) * align
        end = off + -(-nbytes // 8) * 8
        if end > self.region_limit:
            prog = self.program
            raise HeapExhausted(
                f"{prog.__name__}: the heap ({self.region_limit - prog.region_bytes()} bytes) is "
                f"full; it holds heap_per_op={prog.heap_per_op} bytes per operation the campaign "
                f"plans: raise {prog.__name__}.heap_per_op")
        self.brk = end
        return off

    def reattach(self, machine: Any) -> Runtime:
        rt = super().reattach(machine)
        assert isinstance(rt, ProgramRuntime)
        rt.brk = self.brk  # beyond every block the run allocated: a recovery reuses none
        rt.torn_values = self.torn_values
        rt.wide_stores = self.wide_stores
        return rt

    def init_program(self) -> None:
        self.prog.init(PM(self, None, "init"))

    def path_counts(self) -> dict[str, int]:
        """How often the run took each interesting path (declared ones first, 0 if never)."""
        return {**{p: 0 for p in self.program.paths}, **self.paths}

    def program_state(self) -> Hashable:
        return self.prog.state(self.view())

    # -- operations as transactions -----------------------------------------------------------
    def _new_tx(self, cpu: Any, txid: int) -> Tx:
        return ProgramTx(self, cpu, txid)

    def _begin(self, tx: Tx) -> None:
        pass

    def linearize(self, tx: Tx) -> None:
        """The operation's linearization point: the order the model applies operations in."""
        if not getattr(tx, "linearized", False):
            tx.linearized = True  # type: ignore[attr-defined]
            tx.cpu.mark(Mark.TX_COMMIT, tx.txid)
            self.commit_order.append(tx.txid)

    def commit(self, tx: Tx) -> Generator[Any, Any, None]:
        """The operation returned: it is complete (durable, for a durably linearizable
        structure)."""
        self._check_live(tx)
        self.linearize(tx)
        self.end_steps(tx.tid)
        self.commits += 1
        tx.cpu.mark(Mark.TX_DURABLE, tx.txid)
        yield from self._finish(tx)

    def _commit(self, tx: Tx) -> None:
        pass

    def _abort(self, tx: Tx) -> None:
        pass

    def _recover(self, cpu: Any) -> None:
        self.prog.recover(self.handle(cpu))

    def check_invariants(self, live: Any = ()) -> list[str]:
        errs = super().check_invariants(live)
        got = self.prog.check(self.view())
        errs.extend(str(e) for e in (got or ()))
        return errs


class _ProgramModel(Model):
    """A program's model behind the workload Model interface."""

    def __init__(self, model: Any) -> None:
        self.m = model

    def apply(self, op: Any) -> Any:
        name, args = op
        fn = getattr(self.m, name, None)
        if fn is None:
            raise ConfigError(f"the model {type(self.m).__name__} has no method {name!r}: give "
                              "it one method per operation, returning what the operation returns")
        return fn(*args)

    def snapshot(self) -> Hashable:
        return self.m.state()


class ProgramWorkload(Workload):
    """The workload side of a PM program (built per program by :func:`program_workload`)."""

    program: ClassVar[type[PMProgram]] = PMProgram

    def __init__(self, threads: int = 1, seed: int = 0, txs: int | None = None,
                 **params: Any) -> None:
        super().__init__(threads=threads, seed=seed, txs=txs, **params)
        prog = self.program
        ops = prog.operations()
        if not ops:
            raise ConfigError(f"{prog.__name__} has no operations: mark its operation methods "
                              "with @operation() (from pmsim.programs)")
        self._names = list(ops)
        self._specs = [ops[n] for n in self._names]
        w = np.array([s.weight for s in self._specs], float)
        self._cum = np.cumsum(w / w.sum())
        self._script = [_script_op(prog, op, i) for i, op in enumerate(prog.script)]
        self._pos: dict[int, int] = {}
        self._live: Any = None
        self._rt: ProgramRuntime | None = None
        self.results: dict[int, Any] = {}

    def spec(self) -> PMSpec:
        prog = self.program
        ops = (self.txs or 64) + len(self._script) + SLACK_OPS
        heap = -(-prog.heap_per_op * ops * self.threads // LINE) * LINE
        words = (prog.region_bytes() + heap) // 8
        return PMSpec(statics=(StaticArray("region", 1, words),), max_tx_writes=1,
                      max_tx_words=1, max_tx_allocs=1, max_tx_objects=1)

    def init_data(self, rt: Runtime) -> None:
        assert isinstance(rt, ProgramRuntime)
        self._rt = rt
        rt.init_program()
        self._live = self.model() if self.program.model is not None else None

    def resume(self, order: Sequence[int] | None) -> None:
        """Continue after a recovery whose outcome is the operations ``order``: the model that
        checks results starts there (no model, or an unknown outcome: nothing to check)."""
        if self.program.model is None or order is None:
            self._live = None
            return
        m = self.model()
        for t in order:
            m.apply(self.executed[t])
        self._live = m

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[str, tuple[Any, ...]]:
        i = self._pos.get(tid, 0)
        self._pos = {**self._pos, tid: i + 1}  # rebound, never shared with a copy
        if tid == 0 and i < len(self._script):
            return self._script[i]
        k = int(np.searchsorted(self._cum, rng.random(), side="right"))
        k = min(k, len(self._names) - 1)
        spec = self._specs[k]
        args = tuple(spec.args(rng)) if spec.args is not None else ()
        return self._names[k], tuple(int(a) if isinstance(a, np.integer) else a for a in args)

    def transaction(self, cpu: Any, rt: Runtime, op: Any) -> Generator[Any, Any, None]:
        assert isinstance(rt, ProgramRuntime)
        self._rt = rt
        name, args = op
        tx = yield from rt.begin(cpu)
        self.record(tx, op)
        pm = rt.handle(cpu)
        want: list[Any] = []
        live = self._live

        def linearize() -> None:
            rt.linearize(tx)
            if live is not None:
                want.append(live.apply(op))

        pm._on_linearize = linearize
        try:
            res = getattr(rt.prog, name)(pm, *args)
            if isinstance(res, Generator):
                res = yield from res
        finally:
            pm._on_linearize = None
        if not tx.linearized:  # type: ignore[attr-defined]
            linearize()
        yield from rt.commit(tx)
        self.results[tx.txid] = res
        if want and want[0] != res:
            raise WrongResult(f"{name}{_args(args)} returned {res!r}; the model "
                              f"{type(live.m).__name__} returns {want[0]!r}")

    def model(self) -> Model:
        if self.program.model is None:
            raise ConfigError(f"{self.program.__name__} has no model; its campaigns use the "
                              "robustness oracle")
        return _ProgramModel(self.program.model())

    def expected(self, txids: Any) -> Hashable:
        if self.program.model is None:  # no reference: the state the run itself left
            return self.read_data(self._rt) if self._rt is not None else None
        return super().expected(txids)

    def read_data(self, rt: Runtime) -> Hashable:
        assert isinstance(rt, ProgramRuntime)
        return rt.program_state()

    def app_data(self, rt: Runtime) -> Hashable:
        """The program's ``state()``; what it raises is passed on (a finding when it reads a
        recovered image: e.g. a pointer out of the region)."""
        return self.read_data(rt)


def _args(args: Sequence[Any]) -> str:
    return "(" + ", ".join(repr(a) for a in args) + ")"


def _script_op(prog: type[PMProgram], op: Any, i: int) -> tuple[str, tuple[Any, ...]]:
    ops = prog.operations()
    if not isinstance(op, tuple | list) or not op or not isinstance(op[0], str):
        raise ConfigError(f"{prog.__name__}.script[{i}] is {op!r}; a scripted operation is "
                          "(name, *args), e.g. ('insert', 3, 7)")
    if op[0] not in ops:
        raise ConfigError(f"{prog.__name__}.script[{i}]: unknown operation {op[0]!r}; the "
                          f"operations are {', '.join(ops)}")
    return op[0], tuple(op[1:])


def _offset_label(labeller: Labeller, owner: str, word: int, words: int) -> Label:
    """A PM program's words are named by their offset in its region (what its code uses)."""
    return Label(f"offset {8 * word:#x}")


register_labels(ProgramRuntime.family, static=_offset_label)


# -- building the adapters -------------------------------------------------------------------
_RUNTIMES: dict[tuple[type, frozenset[tuple[Site, Site]]], type[ProgramRuntime]] = {}
_WORKLOADS: dict[type, type[ProgramWorkload]] = {}


def program_runtime(prog: type[PMProgram],
                    repairs: frozenset[tuple[Site, Site]] = frozenset()) -> type[ProgramRuntime]:
    """The runtime class of ``prog`` (one per program and set of repairs)."""
    key = (prog, frozenset(repairs))
    cls = _RUNTIMES.get(key)
    if cls is None:
        prog.region_bytes()  # a bad size is a clear error here
        cls = type(f"{prog.__name__}Runtime", (ProgramRuntime,), {
            "name": prog.__name__ + ("+fixes" if repairs else ""), "program": prog,
            "repairs": frozenset(repairs), "STEPS": declared_steps(prog),
            "__module__": ProgramRuntime.__module__})
        path, _ = import_path(prog)
        if path is not None and not repairs:
            remember(cls, path)
        _RUNTIMES[key] = cls
    return cls


def program_workload(prog: type[PMProgram]) -> type[ProgramWorkload]:
    """The workload class of ``prog``."""
    cls = _WORKLOADS.get(prog)
    if cls is None:
        cls = type(f"{prog.__name__}Workload", (ProgramWorkload,), {
            "name": prog.__name__, "program": prog, "help": (prog.__doc__ or "").strip(),
            "__module__": ProgramWorkload.__module__})
        path, _ = import_path(prog)
        if path is not None:
            remember(cls, path)
        _WORKLOADS[prog] = cls
    return cls


def declared_steps(prog: type[PMProgram]) -> dict[str, tuple[str, str]]:
    """The persist steps in ``prog``'s source: every flush, fence and persist (named with
    ``step=`` or automatically) and every named store or ``pm.step`` group. Steps issued from
    code the scan cannot see are added as they run."""
    out: dict[str, tuple[str, str]] = {}
    for k in reversed(prog.__mro__):
        if not is_program_class(k):
            continue
        try:
            lines, first = inspect.getsourcelines(k)
            tree = ast.parse(textwrap.dedent("".join(lines)))
        except (OSError, TypeError, SyntaxError):
            continue
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            for node in ast.walk(fn):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                    continue
                op = node.func.attr
                named = next((kw.value.value for kw in node.keywords if kw.arg == "step"
                              and isinstance(kw.value, ast.Constant)
                              and isinstance(kw.value.value, str)), None)
                if op == "step" and node.args and isinstance(node.args[0], ast.Constant) \
                        and isinstance(node.args[0].value, str):
                    named, kind = node.args[0].value, "group"
                elif op in FLUSH_KINDS:
                    kind = FLUSH_KINDS[op]
                    named = named or auto_name(fn.name, op, node.lineno + first - 1)
                elif op in STORE_KINDS and named:
                    kind = STORE_KINDS[op]
                else:
                    continue
                out.setdefault(named, (kind, prog.steps.get(named, f"{op} in {fn.name}")))
    return out


__all__ = ["ProgramRuntime", "ProgramWorkload", "is_program_class", "program_of",
           "program_runtime", "program_workload"]
