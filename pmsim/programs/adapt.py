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
STORE_KINDS = {"store": "store", "ntstore": "store", "store_words": "store",
               "store_bytes": "store", "cas": "store", "xchg": "store", "step": "group"}
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
        self.torn_stores: list[tuple[str, Site | None, int, int, int,
                                     tuple[tuple[int, int, int], ...]]] = []
        """This runtime's torn stores: (step, site, address, old value, new value, pieces as
        (trace index, value after it, bits written))."""
        self.wide_stores: list[tuple[str, Site | None, int, int,
                                     tuple[tuple[int, int, int], ...]]] = []
        """This runtime's stores declared atomic but wider than a word: (step, site, first and
        end trace index, (address, old, new) per word)."""
        self.trace_len = machine.engine.trace_len
        self._handles: dict[int, PM] = {}

    DISCOVERY_OPS: ClassVar[int] = 32
    """Operations of the run that finds the steps the source scan cannot see (issued from a
    helper function outside the class, or named at run time)."""

    @classmethod
    def persist_steps(cls) -> list[Any]:
        """The steps found in the program's source, plus those a short run of its operations
        issues (once per class): the same list in a fresh process as after any campaign."""
        if "_discovered" not in cls.__dict__:
            cls._discovered = True
            cls._discover()
        return super().persist_steps()

    @classmethod
    def _discover(cls) -> None:
        from ..workloads.session import Session  # lazy: the session imports the runtimes

        try:
            s = Session.create(cls, program_workload(cls.program), txs=cls.DISCOVERY_OPS)
            s.runtime.log_steps([])  # a hook: every step issued is declared as it runs
            s.run(cls.DISCOVERY_OPS)
        except Exception:  # noqa: BLE001 - a program that fails says so when it is fuzzed
            return

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
        if align not in (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096):
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
        if isinstance(self.prog.recover(self.handle(cpu)), Generator):
            raise ConfigError(f"{self.program.__name__}.recover is a generator (it has `yield`): "
                              "recovery runs alone, so it cannot pause; remove the yield")

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
        _check_program(prog)
        self._script = [_script_op(prog, op, i) for i, op in enumerate(prog.script)]
        self._pos: dict[int, int] = {}
        self._live: Any = None
        self._resumed = False
        self._rt: ProgramRuntime | None = None
        self.results: dict[int, Any] = {}
        self.mismatch = ""
        """The first result of the crash-free run that disagreed with the model (a bug without
        a crash: the campaign reports it as a ``crash-free`` finding)."""

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
        self._resumed = True
        self.results = {}  # this copy's own
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
        name = self._names[k]
        try:
            args = tuple(spec.args(rng)) if spec.args is not None else ()
        except TypeError as e:
            raise ConfigError(f"{self.program.__name__}.{name}: operation(args=...) must return "
                              f"the arguments as a tuple, e.g. (int(rng.integers(8)),): {e}") from e
        args = tuple(int(a) if isinstance(a, np.integer) else a for a in args)
        _check_arity(self.program, name, args, "operation(args=...) returned")
        return name, args

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
            msg = (f"{name}{_args(args)} returned {res!r}; the model {type(live.m).__name__} "
                   f"returns {want[0]!r}")
            if self._resumed:
                raise WrongResult(msg)  # after a recovery: the campaign reports a finding
            self.mismatch = self.mismatch or msg  # the crash-free run: a crash-free finding

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
    _check_arity(prog, op[0], tuple(op[1:]), f"script[{i}] gives")
    return op[0], tuple(op[1:])


def _check_arity(prog: type[PMProgram], name: str, args: tuple[Any, ...], what: str) -> None:
    """A ConfigError unless operation ``name`` takes ``args`` (after self and pm)."""
    try:
        inspect.signature(getattr(prog, name)).bind(None, None, *args)
    except TypeError:
        sig = inspect.signature(getattr(prog, name))
        params = list(sig.parameters)[2:]
        raise ConfigError(f"{prog.__name__}.{name} takes ({', '.join(params)}) after pm, but "
                          f"{what} {len(args)} argument(s): {args!r}") from None
    except ValueError:
        pass  # no signature to check (a builtin or C function)


def _check_program(prog: type[PMProgram]) -> None:
    """ConfigErrors for class attributes of the wrong kind."""
    name = prog.__name__
    hp = prog.heap_per_op
    if isinstance(hp, bool) or not isinstance(hp, int) or hp < 0:
        raise ConfigError(f"{name}.heap_per_op must be a number of bytes >= 0, got {hp!r}")
    if not isinstance(prog.tearable, dict) or any(
            not isinstance(k, str) or v not in (1, 2, 4) for k, v in prog.tearable.items()):
        raise ConfigError(f"{name}.tearable must map step names to the bytes of each piece "
                          f"(1, 2 or 4), e.g. {{'bump.store': 4}}; got {prog.tearable!r}")
    if not all(isinstance(k, str) for k in prog.atomic):
        raise ConfigError(f"{name}.atomic must be a set of step names, got {prog.atomic!r}")


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
