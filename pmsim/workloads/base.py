"""The workload interface and registry.

A workload is written once against the runtime object API and runs on every runtime. It is
deterministic from its seed: thread ``t`` draws its transactions from
``numpy.random.default_rng([seed, t])``. Every executed transaction's parameters are recorded
by txid, so the reference model can replay exactly the transactions a crash left committed::

    wl = get_workload("bank")(threads=2, seed=1)
    rt = create_runtime("undo", machine, wl.spec())
    wl.setup(rt)
    machine.spawn(wl.thread_body, 0, rt, 0, 100); machine.run()
    assert wl.app_data(rt) == wl.expected(rt.commit_order)

Parameters are a frozen dataclass per workload (``Params``) declared with
:func:`pmsim.config.param`; bad names or values raise :class:`~pmsim.errors.ConfigError`.

Every entry point (``Session.create``, ``run_experiment``, ``crashfuzz.fuzz``, the CLIs) takes
a workload as a registered name, an import path (``"my_list.py:LinkedList"``,
``"pkg.mod:LinkedList"``), a Workload subclass or an instance (:func:`build_workload`). A name
or class is built with the run's threads, seed and parameters; an instance is used as built,
and parameters given beside it must name its fields and agree with its values. The contract
a workload implements is documented in docs/workloads.md.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Generator, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, get_type_hints

import numpy as np

from ..errors import ConfigError, PmsimError, unknown
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec
from ..usercode import (
    UserCodeError,
    candidates,
    import_path,
    is_file_path,
    is_import_path,
    load_attr,
    reraise,
)

MASK64 = (1 << 64) - 1


class _Finished:
    def __repr__(self) -> str:
        return "FINISHED"


FINISHED: Any = _Finished()
"""What :meth:`Workload.next_op` returns when the thread's work is done (a workload of fixed
work, as STAMP's Genome): the thread ends without running its remaining transactions."""


class Model:
    """A workload's sequential reference model."""

    def apply(self, op: Any) -> None:
        raise NotImplementedError

    def snapshot(self) -> Hashable:
        raise NotImplementedError


@dataclass(frozen=True)
class NoParams:
    """A workload without parameters."""


def _from_text(text: str, tp: type, what: str) -> Any:
    """A CLI string as an int (exactly: '8', '8.0', '1e3'; never '2.7'), float or bool."""
    t = text.strip()
    if tp is bool:
        if t.lower() in ("1", "true", "yes"):
            return True
        if t.lower() in ("0", "false", "no"):
            return False
        raise ConfigError(f"{what} is not a boolean; use true or false")
    try:
        return int(t) if tp is int else float(t)
    except ValueError:
        pass
    try:
        f = float(t)
    except ValueError:
        raise ConfigError(f"{what} is not a valid {tp.__name__}") from None
    if not f.is_integer():
        raise ConfigError(f"{what} is not an integer; use a whole number")
    return int(f)


def make_params(cls: type, values: Mapping[str, Any], workload: str) -> Any:
    """Build a params dataclass, converting CLI strings to the declared field types."""
    hints = get_type_hints(cls)
    names = {f.name for f in fields(cls)}
    kw: dict[str, Any] = {}
    for key, v in values.items():
        if key not in names:
            if not names:
                raise ConfigError(f"workload {workload!r} takes no parameters, got {key}={v!r}")
            raise unknown(f"{workload} parameter", key, names)
        tp = hints[key]
        if isinstance(v, str) and tp in (int, float, bool):
            v = _from_text(v, tp, f"workload {workload!r}: parameter {key}={v!r}")
        if tp is float and isinstance(v, int):
            v = float(v)
        if tp is int and (not isinstance(v, int) or isinstance(v, bool)):
            raise ConfigError(f"workload {workload!r}: parameter {key} must be an integer, got {v!r}")
        kw[key] = v
    return cls(**kw)


def check_range(workload: str, name: str, value: float, lo: float, hi: float | None = None) -> None:
    """Raise a ConfigError unless ``lo <= value (<= hi)``."""
    if value < lo or (hi is not None and value > hi):
        bound = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ConfigError(f"workload {workload!r}: parameter {name}={value!r} must be {bound}")


class Workload:
    """Base class: parameters, per-thread random streams, recorded transactions."""

    name: ClassVar[str] = ""
    Params: ClassVar[type] = NoParams
    help: ClassVar[str] = ""
    fuzz_params: ClassVar[Mapping[str, Any]] = {}
    """Small parameters the crash fuzzer uses unless FuzzConfig.params says otherwise (small
    transactions keep every crash point's state space enumerable); inherited by subclasses."""
    gated: ClassVar[bool] = False
    """True if threads wait at points between transactions (barriers between phases): the
    thread body then calls :meth:`gate` before drawing each transaction and :meth:`leave` when
    the thread stops."""
    body_locks: ClassVar[bool] = False
    """True if the body takes its own locks (``yield from tx.lock(i)`` / ``tx.unlock(i)``, e.g.
    hand over hand). On a runtime with ``lock_coupling`` they are then the only locks; on the
    others ``locks_of(op)`` is the fallback taken up front (a coarse lock, or none)."""

    def __init__(self, threads: int = 1, seed: int = 0, txs: int | None = None,
                 **params: Any) -> None:
        """``txs``: transactions per thread the run will execute, if known (sizes the PM)."""
        if threads < 1:
            raise ConfigError(f"workload {self.name!r}: threads must be >= 1, got {threads}")
        self.threads = threads
        self.seed = seed
        self.txs = txs
        self.p = make_params(self.Params, params, self.name)
        self.executed: dict[int, Any] = {}
        self._rngs: dict[int, np.random.Generator] = {}
        self.locks: list[Any] = []

    def rng(self, tid: int) -> np.random.Generator:
        """Thread ``tid``'s random stream (continues across calls of thread_body)."""
        if tid not in self._rngs:
            self._rngs[tid] = np.random.default_rng([self.seed, tid])
        return self._rngs[tid]

    # -- what a workload defines -----------------------------------------------------------------
    def spec(self) -> PMSpec:
        """The PM layout this workload needs."""
        raise NotImplementedError

    def init_data(self, rt: Runtime) -> None:
        """Write the initial application data (untimed, before tracing)."""

    def nlocks(self) -> int:
        """How many application locks to create."""
        return 0

    def next_op(self, tid: int, rng: np.random.Generator) -> Any:
        """The parameters of thread ``tid``'s next transaction (a hashable tuple)."""
        raise NotImplementedError

    def gate(self, cpu: Any, rt: Runtime, tid: int) -> Generator[Any, Any, None]:
        """Wait, if the workload must, before thread ``tid`` draws its next transaction (only
        called when ``gated``)."""
        yield from ()

    def leave(self, tid: int) -> None:
        """Thread ``tid`` stopped (only called when ``gated``)."""

    def locks_of(self, op: Any) -> Iterable[int]:
        """The indices of the application locks a lock-based runtime takes for ``op``."""
        return ()

    def body(self, tx: Any, op: Any) -> Generator[Any, Any, bool | None] | bool | None:
        """One transaction's reads and writes through ``tx`` (see :data:`pmsim.runtimes.base.
        Body`): return False to abort. It may be re-executed, so it acts only through ``tx``."""
        raise NotImplementedError(f"workload {self.name or type(self).__name__!r} defines "
                                  "neither body() nor transaction()")

    def transaction(self, cpu: Any, rt: Runtime, op: Any) -> Generator[Any, Any, None]:
        """Run one transaction: the runtime runs :meth:`body` under the locks of
        :meth:`locks_of`. A workload may override this instead (the older, lock-only form:
        it must call ``self.record(tx, op)`` right after begin); optimistic runtimes then
        refuse it, since they cannot re-execute it."""
        if type(self).body is Workload.body:
            raise NotImplementedError(f"workload {self.name or type(self).__name__!r} defines "
                                      "neither body() nor transaction()")
        coupled = self.body_locks and rt.lock_coupling
        locks = [] if coupled else self.held(*self.locks_of(op))
        table = self.locks if self.threads > 1 else []

        def on_begin(tx: Any) -> None:
            tx.lock_table = table
            self.record(tx, op)

        yield from rt.run(cpu, lambda tx: self._run_body(tx, op), locks, on_begin)

    def _run_body(self, tx: Any, op: Any) -> Generator[Any, Any, bool | None] | bool | None:
        """``body(tx, op)``, refused unless it is a generator (a body with ``yield``) or a plain
        function returning True, False or None: anything else (a coroutine of an ``async def``
        body, a list, an iterator) would commit without running what the body meant."""
        res = self.body(tx, op)
        if res is None or isinstance(res, bool | Generator):
            return res
        if isinstance(res, np.bool_):
            return bool(res)  # `res is False` must hold for numpy's False too
        what = f"a {type(res).__name__}"
        close = getattr(res, "close", None)
        if isinstance(res, Coroutine):
            what = "a coroutine (it is defined with `async def`)"
            res.close()  # never run: no "was never awaited" warning
        elif callable(close) and isinstance(res, Iterator):
            close()
        raise UserCodeError(
            f"{type(self).__name__}.body returned {what}, not a transaction's outcome: a body "
            "is a generator function (`def body(self, tx, op):` with `yield from tx.pause()` "
            "inside, returning False to abort) or a plain function returning True or None to "
            "commit and False to abort (see docs/workloads.md, Transactions and handles)")

    def model(self) -> Model:
        """A fresh reference model in the initial state."""
        raise NotImplementedError

    def read_data(self, rt: Runtime) -> Hashable:
        """The application data as ``rt`` sees it (untimed)."""
        raise NotImplementedError

    def live_objects(self, rt: Runtime) -> list[int]:
        """The heap objects reachable from the application's roots."""
        return []

    # -- shared machinery --------------------------------------------------------------------------
    def setup(self, rt: Runtime, cpu: Any = None) -> None:
        """Create the locks and initial data on a formatted runtime."""
        self.locks = [rt.m.lock() for _ in range(self.nlocks())]
        self.init_data(rt)

    def record(self, tx: Any, op: Any) -> None:
        self.executed[tx.txid] = op

    def resume(self, order: Iterable[int] | None) -> None:
        """Called on a copy of the workload that runs new transactions on a recovered image
        whose outcome is the committed transactions ``order`` (None: unknown, as under the
        robustness oracle): a workload that checks results as it runs starts its model there,
        or checks none. Default: nothing."""

    def thread_body(self, cpu: Any, rt: Runtime, tid: int, ntx: int) -> Generator[Any, Any, None]:
        """Run ``ntx`` transactions of thread ``tid`` (a SimPy process body)."""
        rng = self.rng(tid)
        work = rt.m.config.costs.tx_work_ns
        sched = rt.m.schedule
        gated = self.gated
        try:
            for i in range(ntx):
                try:
                    if gated:
                        yield from self.gate(cpu, rt, tid)
                    op = self.next_op(tid, rng)
                except BaseException as e:
                    reraise(e, f"drawing thread {tid}'s transaction {i + 1} of {ntx}")
                if op is FINISHED:
                    return
                if work:
                    cpu.work(work)
                if sched is not None:  # a switch point of an explored schedule (pmsim.schedule)
                    cpu.work(sched.delay(tid))
                try:
                    yield from self.transaction(cpu, rt, op)
                except BaseException as e:
                    reraise(e, f"in thread {tid}'s transaction {i + 1} of {ntx} "
                               f"(op {_brief(op)})")
                yield from cpu.maybe_yield()
        finally:
            if gated:
                self.leave(tid)

    def expected(self, txids: Iterable[int]) -> Hashable:
        """The reference snapshot after applying the recorded transactions ``txids`` in order."""
        m = self.model()
        for t in txids:
            try:
                op = self.executed[t]
            except KeyError:
                raise PmsimError(f"transaction {t:#x} was not executed by this workload "
                                 "instance") from None
            m.apply(op)
        return m.snapshot()

    def app_data(self, rt: Runtime) -> Hashable:
        """The recovered application data; ``("corrupt", reason)`` when it cannot be read."""
        try:
            return self.read_data(rt)
        except (PmsimError, IndexError) as e:
            return ("corrupt", str(e))

    def held(self, *indices: int) -> list[Any]:
        """The locks with these indices, deduplicated, in a global order (no deadlock)."""
        return [self.locks[i] for i in sorted(set(indices))] if self.threads > 1 else []


def _brief(op: Any, limit: int = 80) -> str:
    text = repr(op)
    return text if len(text) <= limit else text[:limit] + "..."


WORKLOADS: dict[str, type[Workload]] = {}

BUILTIN: tuple[str, ...] = (
    "alloc_x",
    "array",
    "avl",
    "bank",
    "bigtx",
    "btree",
    "empty",
    "genome",
    "hashmap",
    "hashtable",
    "intruder",
    "kmeans",
    "kv",
    "labyrinth",
    "list",
    "rbtree",
    "queue",
    "script",
    "ssca2",
    "swap",
    "tatp",
    "tpcc",
    "vacation",
    "yada",
    "ycsb",
)
"""Modules of pmsim.workloads imported (for their registrations) before a name is looked up:
adding a workload is a module and a line here."""


def _load_builtin() -> None:
    import importlib

    for mod in BUILTIN:
        importlib.import_module(f"pmsim.workloads.{mod}")


def register_workload(cls: type[Workload]) -> type[Workload]:
    """Register a workload class under ``cls.name`` (a decorator)."""
    if not cls.name:
        raise ConfigError(f"{cls.__name__} has no name; set the class attribute `name`")
    WORKLOADS[cls.name] = cls
    return cls


def _is_workload_class(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, Workload) and obj is not Workload


def get_workload(name: str | type[Workload]) -> type[Workload]:
    """The workload class registered as ``name``, loaded from an import path
    (``"my_list.py:LinkedList"``, ``"pkg.mod:LinkedList"``), or given (a Workload subclass)."""
    _load_builtin()
    if _is_workload_class(name):
        return name  # type: ignore[return-value]
    program = _program_workload(name)
    if program is not None:
        return program
    if not isinstance(name, str):
        what = f"a {type(name).__name__} instance" if isinstance(name, Workload) else repr(name)
        raise ConfigError(f"get_workload takes a registered name, an import path "
                          f"'file.py:Class' or a Workload subclass, not {what}")
    cls = WORKLOADS.get(name)
    if cls is not None:
        return cls
    if not is_import_path(name):
        if name.endswith(".py") and is_file_path(name):
            found = candidates(name, _is_workload_class)
            raise ConfigError(f"{name}: name the workload after a colon, e.g. '{name}:"
                              f"{found[0] if found else 'Name'}'"
                              + (f" (it defines {', '.join(found)})" if found else
                                 " (it defines no Workload subclass)"))
        raise unknown("workload", name, WORKLOADS)
    obj = load_attr(name, "workload", WORKLOADS)
    if isinstance(obj, Workload):
        raise ConfigError(f"{name} is a {type(obj).__name__} instance; name its class "
                          f"({type(obj).__name__}) and pass parameters separately")
    program = _program_workload(obj)
    if program is not None:
        return program
    if not _is_workload_class(obj):
        raise ConfigError(f"{name} is {obj!r}, not a workload: name a subclass of "
                          "pmsim.workloads.Workload or a PM program (pmsim.programs.PMProgram)")
    return obj  # type: ignore[no-any-return]


def _program_workload(obj: Any) -> type[Workload] | None:
    """The workload of a PM program class (:mod:`pmsim.programs`), None for anything else."""
    from ..programs.adapt import is_program_class, program_workload  # lazy: it imports us

    return program_workload(obj) if is_program_class(obj) else None


WorkloadArg = str | type[Workload] | Workload | Callable[..., Workload]
"""A workload as the entry points take it: a name, an import path, a class, an instance or a
factory called with ``threads=, seed=, txs=, **params``."""


def registered_name(cls: type[Workload]) -> str | None:
    """The name ``cls`` is registered under, if it is registered under its ``name``."""
    get_workload("array")  # the built-in registrations
    return cls.name if cls.name and WORKLOADS.get(cls.name) is cls else None


def fuzz_defaults(cls: type[Workload], table: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The small fuzzing parameters of ``cls``, restricted to the parameters it takes: along
    its MRO, the first class that sets ``fuzz_params`` gives them, or the first registered
    under its name gives ``table[name]`` (crashfuzz.FUZZ_PARAMS; none if absent). So a class
    gets what its registered name gets, and an unregistered subclass what its parent gets."""
    own = {f.name for f in fields(cls.Params)}
    for c in cls.__mro__:
        if not (isinstance(c, type) and issubclass(c, Workload)) or c is Workload:
            break
        if "fuzz_params" in c.__dict__:
            found: Mapping[str, Any] = c.fuzz_params
        elif registered_name(c):
            found = table.get(c.name, {})
        else:
            continue
        return {k: v for k, v in found.items() if k in own}
    return {}


def build_workload(workload: WorkloadArg, threads: int = 1, seed: int = 0,
                   txs: int | None = None, params: Mapping[str, Any] | None = None,
                   defaults: Mapping[str, Any] | None = None) -> Workload:
    """A workload instance from any form the entry points accept.

    A name, import path or class is built with ``threads``, ``seed``, ``txs`` and ``defaults``
    overridden by ``params``; an unknown parameter is a ConfigError listing the known ones. An
    instance is returned as built (``defaults`` do not apply): ``params`` given beside it must
    name its fields and equal its values, and its threads must equal ``threads``. A factory
    (any other callable) is called like a class and must return a Workload.
    """
    params = dict(params or {})
    if isinstance(workload, Workload):
        _check_instance(workload, threads, params)
        return workload
    if isinstance(workload, str) or isinstance(workload, type):
        cls = get_workload(workload)
        return cls(threads=threads, seed=seed, txs=txs, **{**dict(defaults or {}), **params})
    if callable(workload):
        wl = workload(threads=threads, seed=seed, txs=txs, **params)
        if not isinstance(wl, Workload):
            raise ConfigError(f"the workload factory {workload!r} returned {wl!r}, not a Workload")
        return wl
    raise ConfigError(f"a workload is a registered name, an import path 'file.py:Class', a "
                      f"Workload subclass or instance, not {workload!r}")


def _check_instance(wl: Workload, threads: int, params: Mapping[str, Any]) -> None:
    label = wl.name or type(wl).__name__
    if wl.threads != threads:
        raise ConfigError(f"the {label} workload instance was built for {wl.threads} thread(s) "
                          f"but the run has {threads}; build it with threads={threads} or pass "
                          "its class or name instead")
    if not params:
        return
    current = {f.name: getattr(wl.p, f.name) for f in fields(wl.p)}
    given = make_params(type(wl.p), {**current, **params}, label)
    bad = {k: (getattr(wl.p, k), getattr(given, k)) for k in params
           if getattr(wl.p, k) != getattr(given, k)}
    if bad:
        detail = ", ".join(f"{k}={new!r} (the instance has {old!r})" for k, (old, new) in bad.items())
        raise ConfigError(f"parameters {detail} disagree with the {label} workload instance; "
                          "parameters apply when the workload is built: pass its class or name "
                          "with the parameters, or build the instance with them")


def non_default_params(wl: Workload) -> dict[str, Any]:
    """The parameters of ``wl`` that differ from its Params defaults."""
    default = type(wl.p)()
    return {f.name: getattr(wl.p, f.name) for f in fields(wl.p)
            if getattr(wl.p, f.name) != getattr(default, f.name)}


def reference(cls: type[Workload]) -> tuple[str | None, str]:
    """``(string, "")`` with which :func:`get_workload` finds ``cls`` in a fresh process (its
    registered name for pmsim's own workloads, else its import path), or ``(None, why)``."""
    name = registered_name(cls)
    if name and cls.__module__.startswith("pmsim."):
        return name, ""
    path, why = import_path(cls)
    if path is None and name:
        return name, ""
    return path, why
