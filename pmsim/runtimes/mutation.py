"""Mutations as data over named persist steps, and mutants built from them.

A mutation acts on a runtime's named steps without touching its code (the step mutations are
defined in :mod:`.steps`, whose hook applies them; they are built here):

* ``drop(step)``: the step's stores, flushes and fences never happen;
* ``drop_flush(step)``: only its cache-line flushes (clwb, clflushopt, clflush) never happen,
  its stores do; ``drop_fence(step)``: only its fences and persist barriers never happen;
* ``delay(step, after=other)``: they happen right after the next ``other`` step on the same
  thread (``move_before(store, step)`` is ``delay(step, after=store)``; ``swap(a, b)`` runs
  adjacent steps ``a``, ``b`` as ``b``, ``a``);
* ``skip_check(name)``: recovery skips a named check;
* ``patch(attr, fn)``: the escape hatch, for anything else — ``fn(original)`` returns the
  replacement class attribute (usually a method).

A :class:`Mutant` is a runtime, a list of mutations, the persistence domains where it is a
bug, and why. A user mutant takes a few lines::

    from pmsim.runtimes.mutation import Mutant, drop
    m = Mutant("redo:no-pb4", "redo", [drop("redo.commit.pb4")], domains=("pdom0", "pdom1"))
    report = crashfuzz.fuzz(runtime=m.build(), domain="pdom1", reduce=False)

``register_mutant(m)`` adds it to the registry under its name (``pmsim run --runtime``,
``crashfuzz mutants``), which is how the card mutants of every protocol are declared.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import DOMAINS
from ..errors import ConfigError, unknown
from ..usercode import is_file_path, is_import_path
from .steps import Delay, Drop, DropFence, DropFlush, SkipCheck

if TYPE_CHECKING:
    from .base import Runtime


@dataclass(frozen=True)
class Patch:
    """Escape hatch: class attribute ``attr`` becomes ``fn(original attribute)``."""

    attr: str
    fn: Callable[[Any], Any] = field(compare=False)
    label: str = ""

    def __str__(self) -> str:
        return f"patch({self.attr}{': ' + self.label if self.label else ''})"


Mutation = Drop | DropFlush | DropFence | Delay | SkipCheck | Patch

FLUSHING_KINDS = ("group", "flush")
"""Kinds of step that may issue cache-line flushes (what ``drop_flush`` may name)."""
FENCING_KINDS = ("group", "pb", "fence", "order")
"""Kinds of step that may issue fences or persist barriers (what ``drop_fence`` may name)."""


def drop(step: str) -> Drop:
    return Drop(step)


def drop_flush(step: str) -> DropFlush:
    """The step's stores, without its cache-line flushes."""
    return DropFlush(step)


def drop_fence(step: str) -> DropFence:
    """The step without its fences and persist barriers."""
    return DropFence(step)


def delay(step: str, after: str) -> Delay:
    return Delay(step, after)


def move_before(store: str, step: str) -> Delay:
    """Issue ``store`` before ``step`` (which ran first): ``step`` waits for ``store``."""
    return Delay(step, store)


def swap(first: str, second: str) -> Delay:
    """Run two adjacent steps in the other order."""
    return Delay(first, second)


def skip_check(name: str) -> SkipCheck:
    return SkipCheck(name)


def patch(attr: str, fn: Callable[[Any], Any], label: str = "") -> Patch:
    return Patch(attr, fn, label)


def validate(base: type[Runtime], mutations: Iterable[Mutation]) -> None:
    """Raise ConfigError for a mutation naming a step, check or attribute ``base`` lacks."""
    kinds = {s.name: s.kind for s in base.persist_steps()}
    steps = set(kinds)
    checks = {c.name for c in base.recovery_checks()}
    for m in mutations:
        if isinstance(m, Drop):
            names = [m.step]
        elif isinstance(m, DropFlush | DropFence):
            names = [m.step]
            allowed = FLUSHING_KINDS if isinstance(m, DropFlush) else FENCING_KINDS
            what = "cache-line flushes" if isinstance(m, DropFlush) else "fences"
            if m.step in kinds and kinds[m.step] not in allowed:
                raise ConfigError(f"{m}: {m.step} is a {kinds[m.step]} step of "
                                  f"{base.__name__}, which issues no {what}; name a step of "
                                  f"kind {' or '.join(allowed)}, or drop({m.step}) the whole "
                                  "step")
        elif isinstance(m, Delay):
            names = [m.step, m.after]
        elif isinstance(m, SkipCheck):
            if m.check not in checks:
                raise unknown(f"recovery check of {base.__name__}", m.check, checks,
                              f"recovery checks of {base.__name__}")
            continue
        elif isinstance(m, Patch):
            if not hasattr(base, m.attr):
                raise ConfigError(f"patch({m.attr!r}): {base.__name__} has no attribute "
                                  f"{m.attr!r} to patch")
            continue
        else:
            raise ConfigError(f"{m!r} is not a mutation; build one with drop(), drop_flush(), "
                              "drop_fence(), delay(), move_before(), swap(), skip_check() or "
                              "patch()")
        for n in names:
            if n not in steps:
                raise unknown(f"persist step of {base.__name__}", n, steps,
                              f"persist steps of {base.__name__}")


def mutate(base: type[Runtime], mutations: Sequence[Mutation], name: str) -> type[Runtime]:
    """A subclass of ``base`` named ``name`` with ``mutations`` applied."""
    validate(base, mutations)
    attrs: dict[str, Any] = {"name": name,
                             "mutations": tuple(base.mutations) + tuple(mutations)}
    for m in mutations:
        if isinstance(m, Patch):
            attrs[m.attr] = m.fn(attrs.get(m.attr, getattr(base, m.attr)))
    cls_name = base.__name__ + "_" + "".join(ch if ch.isalnum() else "_" for ch in name)
    return type(cls_name, (base,), attrs)


@dataclass(frozen=True)
class Mutant:
    """A deliberately broken runtime: a base runtime plus mutations, and where it is a bug."""

    name: str
    runtime: str | type[Runtime]
    mutations: tuple[Mutation, ...]
    domains: tuple[str, ...] = DOMAINS
    """Persistence domains in which the mutation is a bug (drop-PB mutants are harmless in pdom2)."""
    why: str = ""
    needs: str = ""
    """What a workload must do for the bug to show (allocate, read after write, a second crash)."""
    threads: int = 1
    """Worker threads a campaign needs for the bug to show (two for a cross-thread race)."""
    workload: str = ""
    """A workload (name or import path) whose transactions show the bug, tried first by the
    kill matrix; empty: only the matrix's own workloads."""
    txs: int = 0
    """Transactions per thread that show the bug on :attr:`workload`; the kill matrix runs that
    many there (fewer crash points for a bug at the end of a run); 0: the matrix's own."""
    params: tuple[tuple[str, Any], ...] = ()
    """Parameters of :attr:`workload` (``(name, value)`` pairs) the kill matrix runs it with;
    empty: the workload's small fuzzing defaults."""
    origin: str | None = field(default=None, compare=False, repr=False)
    """The file that defines the mutant, from which a relative :attr:`workload` file path is
    taken; None (default): the file of the code that builds it; "": none (a notebook, a REPL:
    the path is taken from the current directory)."""

    def __post_init__(self) -> None:
        if self.origin is None:
            object.__setattr__(self, "origin", _caller_file())
        object.__setattr__(self, "mutations", tuple(self.mutations))
        object.__setattr__(self, "domains", tuple(self.domains))
        object.__setattr__(self, "params", tuple(tuple(kv) for kv in self.params))
        bad = [d for d in self.domains if d not in DOMAINS]
        if bad:
            raise ConfigError(f"mutant {self.name}: unknown domains {bad}; use {', '.join(DOMAINS)}")
        if not self.mutations:
            raise ConfigError(f"mutant {self.name} has no mutations")
        if not isinstance(self.threads, int) or isinstance(self.threads, bool) or self.threads < 1:
            raise ConfigError(f"mutant {self.name}: threads must be an integer >= 1")
        if not isinstance(self.txs, int) or isinstance(self.txs, bool) or self.txs < 0:
            raise ConfigError(f"mutant {self.name}: txs must be an integer >= 0 (0: the "
                              "campaign's own)")
        self._locate_workload()

    def _locate_workload(self) -> None:
        """Resolve a workload given as ``file.py:Class`` with a relative path: from the folder
        of the file that defines the mutant (so the mutant works from any directory), else,
        with a warning, from the current directory; a file found in neither is an error."""
        wl = self.workload
        if not isinstance(wl, str) or not is_import_path(wl):
            return
        where, _, attr = wl.rpartition(":")
        if not is_file_path(where):
            return
        path = Path(where).expanduser()
        fix = ("give the workload's path relative to the file that defines the mutant, or an "
               "absolute path")
        if path.is_absolute():
            if not path.is_file():
                raise ConfigError(f"mutant {self.name}: workload file {where} does not exist; "
                                  f"{fix}")
            return
        tried = []
        cwd = Path.cwd() / path
        if self.origin:
            here = Path(self.origin).parent / path
            if here.is_file():
                if not (cwd.is_file() and cwd.resolve() == here.resolve()):
                    object.__setattr__(self, "workload", f"{here.resolve()}:{attr}")
                return
            tried.append(f"{here} (next to {self.origin}, which defines the mutant)")
        if cwd.is_file():
            if self.origin:
                warnings.warn(f"mutant {self.name}: workload file {where} is not next to "
                              f"{self.origin}, which defines the mutant; using {cwd.resolve()} "
                              f"(from the current directory) instead: {fix} to silence this",
                              UserWarning, stacklevel=4)
                object.__setattr__(self, "workload", f"{cwd.resolve()}:{attr}")
            return
        tried.append(f"{cwd} (from the current directory)")
        raise ConfigError(f"mutant {self.name}: workload file {where} not found: tried "
                          f"{' and '.join(tried)}; {fix}")

    @property
    def base(self) -> type[Runtime]:
        from .registry import get_runtime  # lazy: the registry imports this module

        return self.runtime if isinstance(self.runtime, type) else get_runtime(self.runtime)

    @property
    def base_name(self) -> str:
        return self.runtime if isinstance(self.runtime, str) else self.runtime.name

    @property
    def mutation(self) -> str:
        """The short id after the colon (``R2`` of ``redo:R2``)."""
        return self.name.rpartition(":")[2]

    @property
    def description(self) -> str:
        return self.why

    def build(self) -> type[Runtime]:
        """The mutated runtime class."""
        return mutate(self.base, self.mutations, self.name)

    def describe(self) -> str:
        return f"{self.name}: {', '.join(str(m) for m in self.mutations)}" + (
            f" — {self.why}" if self.why else "")


def _caller_file() -> str:
    """The file of the code that builds a Mutant ("" for code run without one)."""
    f = sys._getframe(1)
    while f is not None and f.f_globals.get("__name__") in (__name__, "dataclasses"):
        f = f.f_back  # type: ignore[assignment]
    return str(f.f_globals.get("__file__") or "") if f is not None else ""


__all__ = ["Delay", "Drop", "DropFence", "DropFlush", "FENCING_KINDS", "FLUSHING_KINDS", "Mutant",
           "Mutation", "Patch", "SkipCheck", "delay", "drop", "drop_fence", "drop_flush",
           "move_before", "mutate", "patch", "skip_check", "swap", "validate"]
