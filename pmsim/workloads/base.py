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
"""

from __future__ import annotations

from collections.abc import Generator, Hashable, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, get_type_hints

import numpy as np

from ..errors import ConfigError, PmsimError, unknown
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec

MASK64 = (1 << 64) - 1


class Model:
    """A workload's sequential reference model."""

    def apply(self, op: Any) -> None:
        raise NotImplementedError

    def snapshot(self) -> Hashable:
        raise NotImplementedError


@dataclass(frozen=True)
class NoParams:
    """A workload without parameters."""


def make_params(cls: type, values: Mapping[str, Any], workload: str) -> Any:
    """Build a params dataclass, converting CLI strings to the declared field types."""
    hints = get_type_hints(cls)
    names = {f.name for f in fields(cls)}
    kw: dict[str, Any] = {}
    for key, v in values.items():
        if key not in names:
            raise unknown(f"{workload} parameter", key, names)
        tp = hints[key]
        if isinstance(v, str) and tp in (int, float, bool):
            try:
                v = tp(float(v)) if tp is int and "." in v else (v.lower() in ("1", "true", "yes")
                                                                   if tp is bool else tp(v))
            except ValueError:
                raise ConfigError(f"workload {workload!r}: parameter {key}={v!r} is not a valid "
                                  f"{tp.__name__}") from None
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

    def transaction(self, cpu: Any, rt: Runtime, op: Any) -> Generator[Any, Any, None]:
        """Run one transaction; must call ``self.record(tx, op)`` right after begin."""
        raise NotImplementedError

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

    def thread_body(self, cpu: Any, rt: Runtime, tid: int, ntx: int) -> Generator[Any, Any, None]:
        """Run ``ntx`` transactions of thread ``tid`` (a SimPy process body)."""
        rng = self.rng(tid)
        for _ in range(ntx):
            op = self.next_op(tid, rng)
            yield from self.transaction(cpu, rt, op)
            yield from cpu.maybe_yield()

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


WORKLOADS: dict[str, type[Workload]] = {}


def register_workload(cls: type[Workload]) -> type[Workload]:
    """Register a workload class under ``cls.name`` (a decorator)."""
    if not cls.name:
        raise ConfigError(f"{cls.__name__} has no name; set the class attribute `name`")
    WORKLOADS[cls.name] = cls
    return cls


def get_workload(name: str) -> type[Workload]:
    from . import alloc_x, array, bank, kv  # noqa: F401  (registration side effects)

    try:
        return WORKLOADS[name]
    except KeyError:
        raise unknown("workload", name, WORKLOADS) from None
