"""The registries of runtimes and mutants, and the helpers that build a runtime on a machine.

The registry knows runtimes by name only: each protocol family (a subpackage of
:mod:`pmsim.runtimes`) registers its classes where it defines them, with ``@register_runtime``,
its switches with ``variant(...)`` and its card mutants with ``register_mutant(Mutant(...))``.
:data:`BUILTIN` names the families imported before a name is looked up; adding a family is one
entry there. ``get_runtime("redo:R2")`` returns any of them by name.

Every lookup also takes user code by import path (:mod:`pmsim.usercode`):
``get_runtime("my_rt.py:MyRuntime")`` loads a Runtime subclass (or a module-level
:class:`Mutant`, which it builds) from a file, ``get_runtime("pkg.mod:MyRuntime")`` from a
module; ``get_mutant("my_mutants.py:m")`` loads a Mutant. Registered names win over paths.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, unknown
from ..usercode import candidates, import_path, is_file_path, is_import_path, load_attr, remember
from . import options
from .costs import RuntimeCosts
from .layout import PMSpec
from .mutation import Mutant

if TYPE_CHECKING:
    from .base import Runtime

RUNTIMES: dict[str, type[Runtime]] = {}
"""Registered runtimes by name (base protocols, switches like ``undo-2pb``, and mutants)."""

MUTANTS: dict[str, Mutant] = {}
"""Registered mutants by name (``undo:U1`` ...); each is also in RUNTIMES."""

BUILTIN: tuple[str, ...] = ("marathe", "volatile", "dudetx", "nvhtm", "loc", "proteus")
"""The protocol families, subpackages of pmsim.runtimes imported (for their registrations, in
this order) before a name is looked up."""


def register_runtime(cls: type[Runtime], name: str | None = None) -> type[Runtime]:
    """Register a runtime class under ``name`` (default ``cls.name``); usable as a decorator."""
    key = name or cls.name
    if not key:
        raise ConfigError(f"{cls.__name__} has no name; set the class attribute `name`")
    RUNTIMES[key] = cls
    return cls


_SWITCHES: weakref.WeakSet[type] = weakref.WeakSet()
"""Classes built by :func:`variant`: the same protocol with a switch flipped."""


def variant(base: type[Runtime], name: str, **attrs: Any) -> type[Runtime]:
    """Register a subclass of ``base`` with class attributes changed (a protocol switch)."""
    cls = type(base.__name__ + "_" + name.replace(":", "_").replace("-", "_"), (base,),
               {"name": name, **attrs})
    _SWITCHES.add(cls)
    return register_runtime(cls)


FUZZ_SUFFIXES = ("-fine", "-tiny")
"""Names of fuzzing variants: the same protocol with sizes shrunk so that every crash state can
be enumerated (``dudetx-fine``). Comparisons leave them out; so does a class that sets
``fuzz_variant = True`` (e.g. one that forces a race)."""


def is_fuzz_variant(name: str) -> bool:
    """Whether the registered runtime ``name`` exists for fuzzing only (see FUZZ_SUFFIXES)."""
    cls = RUNTIMES.get(name)
    return name.endswith(FUZZ_SUFFIXES) or bool(getattr(cls, "fuzz_variant", False))


def register_mutant(mutant: Mutant) -> Mutant:
    """Build ``mutant`` and register it as a runtime and as a mutant under its name."""
    register_runtime(mutant.build(), mutant.name)
    MUTANTS[mutant.name] = mutant
    return mutant


def _load_builtin() -> None:
    import importlib

    for family in BUILTIN:
        importlib.import_module(f"pmsim.runtimes.{family}")


_BUILT: dict[str, type[Runtime]] = {}
"""Runtimes built from Mutants loaded by import path, once per path and process."""


def _is_runtime_class(obj: Any) -> bool:
    from .base import Runtime

    return isinstance(obj, type) and issubclass(obj, Runtime) and obj is not Runtime


def _kind_of(obj: Any) -> str:
    if isinstance(obj, type):
        return f"the class {obj.__name__} (bases: {', '.join(b.__name__ for b in obj.__bases__)})"
    return f"a {type(obj).__name__} object"


def get_runtime(name: str | type[Runtime] | Mutant) -> type[Runtime]:
    """The runtime class registered as ``name`` (e.g. ``"undo"``, ``"redo:R2"``), loaded from
    an import path (``"file.py:MyRuntime"``, ``"pkg.mod:MyRuntime"``; a module-level Mutant
    there is built), or given: a Runtime subclass is returned, a Mutant built."""
    if isinstance(name, Mutant):
        return name.build()
    if _is_runtime_class(name):
        return name  # type: ignore[return-value]
    program = _program_runtime(name)
    if program is not None:
        return program
    if not isinstance(name, str):
        raise ConfigError(f"a runtime is a registered name, an import path 'file.py:Class', a "
                          f"Runtime subclass or a Mutant, not {_kind_of(name)}")
    _load_builtin()
    cls = RUNTIMES.get(name) or _BUILT.get(name)
    if cls is not None:
        return cls
    if options.split(name) is not None:
        return _with_options(name)
    if not is_import_path(name):
        raise _unknown_or_file("runtime", name, RUNTIMES, _is_runtime_class)
    obj = load_attr(name, "runtime", RUNTIMES)
    if isinstance(obj, Mutant):
        cls = _BUILT[name] = remember(obj.build(), name)
        return cls
    program = _program_runtime(obj)
    if program is not None:
        return program
    if not _is_runtime_class(obj):
        raise ConfigError(f"{name} is {_kind_of(obj)}, not a runtime: name a subclass of "
                          "pmsim.runtimes.Runtime, a Mutant or a PM program (pmsim.programs."
                          "PMProgram)")
    return obj  # type: ignore[no-any-return]


def _program_runtime(obj: Any) -> type[Runtime] | None:
    """The runtime of a PM program class (:mod:`pmsim.programs`), None for anything else."""
    from ..programs.adapt import is_program_class, program_runtime  # lazy: it imports us

    return program_runtime(obj) if is_program_class(obj) else None


_OPTIONED: dict[str, type[Runtime]] = {}
"""Runtimes named with options (``dudetx[persist_bw=4]``), by every spelling seen; kept apart
from RUNTIMES so listings show protocols, not every option set a sweep used."""


def _with_options(name: str) -> type[Runtime]:
    """The runtime ``base[k=v,...]``: a protocol switch of ``base`` with those settings."""
    if name in _OPTIONED:
        return _OPTIONED[name]
    base, opts = options.split(name)  # type: ignore[misc]
    parent = get_runtime(base)
    values = options.parse(base, opts, parent)
    key = options.canonical(base, values)
    cls = _OPTIONED.get(key)
    if cls is None:
        cls = type(parent.__name__ + "_opts", (parent,),
                   {"name": key, **options.class_attrs(parent, values)})
        _SWITCHES.add(cls)
        _OPTIONED[key] = cls
    _OPTIONED[name] = cls
    return cls


def get_mutant(name: str | Mutant) -> Mutant:
    """The mutant registered as ``name`` (``"undo:U1"``) or the module-level Mutant an import
    path names (``"my_mutants.py:idle_first"``)."""
    if isinstance(name, Mutant):
        return name
    _load_builtin()
    m = MUTANTS.get(name)
    if m is not None:
        return m
    if not is_import_path(name):
        raise _unknown_or_file("mutant", name, MUTANTS, lambda o: isinstance(o, Mutant))
    obj = load_attr(name, "mutant", MUTANTS)
    if not isinstance(obj, Mutant):
        raise ConfigError(f"{name} is {_kind_of(obj)}, not a mutant: name a module-level "
                          "pmsim.runtimes.Mutant(...)")
    return remember(obj, name)


def _unknown_or_file(kind: str, name: str, known: Any, test: Any) -> Exception:
    """The error for a name that is neither registered nor an import path; a bare file name
    gets the list of what the file defines."""
    if name.endswith(".py") and is_file_path(name):
        found = candidates(name, test)
        return ConfigError(f"{name}: name the {kind} after a colon, e.g. '{name}:"
                           f"{found[0] if found else 'Name'}'"
                           + (f" (it defines {', '.join(found)})" if found else
                              f" (it defines no {kind})"))
    return unknown(kind, name, known)


def reference(cls: type[Runtime]) -> tuple[str | None, str]:
    """``(string, "")`` with which :func:`get_runtime` finds ``cls`` again in a fresh process
    (its registered name for pmsim's own runtimes, else its import path), or ``(None, why)``."""
    name = getattr(cls, "name", "")
    if name and RUNTIMES.get(name) is cls and cls.__module__.startswith("pmsim."):
        return name, ""
    if name and _OPTIONED.get(name) is cls and cls.__module__.startswith("pmsim."):
        return name, ""
    path, why = import_path(cls)
    if path is None and name and RUNTIMES.get(name) is cls:
        return name, ""  # registered by user code: the name works once that code is imported
    return path, why


def declares_crash_irrelevant(cls: type[Runtime]) -> bool:
    """Whether ``cls.crash_irrelevant()`` was declared for ``cls``: defined by the class itself,
    or inherited only through protocol switches (:func:`variant`) and mutants
    (:meth:`Mutant.build`). Any other subclass may change what recovery reads, so it must
    define ``crash_irrelevant`` itself (``return super().crash_irrelevant()`` keeps its
    parent's declaration); until it does, campaigns leave no stores out for it."""
    for c in cls.__mro__:
        if "crash_irrelevant" in c.__dict__:
            return True
        if not (c in _SWITCHES or "mutations" in c.__dict__):
            return False
    return False


def all_mutants() -> dict[str, Mutant]:
    """Every registered mutant (the built-in ones loaded)."""
    _load_builtin()
    return dict(MUTANTS)


def create_runtime(name: str | type[Runtime] | Mutant, machine: Any, spec: PMSpec, threads: int | None = None,
                   costs: RuntimeCosts | None = None, base: int | None = None,
                   format: bool = True) -> Runtime:
    """Plan a layout for ``spec`` at the start of the machine's PM, build and format the runtime."""
    cls = get_runtime(name)
    threads = machine.config.cores if threads is None else threads
    layout = cls.plan(spec, threads, machine.pm.base if base is None else base)
    rt = cls(machine, layout, costs)
    if format:
        rt.format()
    return rt


def fit_pm(cfg: Any, nbytes: int, shrink: bool = False) -> Any:
    """``cfg`` with its PM region grown (if needed) to hold ``nbytes`` from its base; regions
    the larger PM would overlap move above it. ``shrink`` also cuts a larger PM region down to
    ``nbytes`` rounded up to 4 KiB (small crash images are cheap to copy)."""
    pm = cfg.pm_region
    if shrink:
        size = (nbytes + 4095) >> 12 << 12
        if size < pm.size:
            regions = tuple(dataclasses.replace(r, size=size) if r is pm else r for r in cfg.regions)
            return dataclasses.replace(cfg, regions=regions)
    if pm.size >= nbytes:
        return cfg
    size = (nbytes + (1 << 20) - 1) >> 20 << 20
    end = pm.base + size
    regions = []
    for r in cfg.regions:
        if r is pm:
            r = dataclasses.replace(r, size=size)
        elif r.base < end and r.end > pm.base:
            end = ((end + (1 << 30) - 1) >> 30) << 30
            r = dataclasses.replace(r, base=end)
            end += r.size
        regions.append(r)
    return dataclasses.replace(cfg, regions=tuple(regions))


__all__ = ["BUILTIN", "MUTANTS", "RUNTIMES", "all_mutants", "create_runtime",
           "declares_crash_irrelevant", "fit_pm", "get_mutant", "get_runtime",
           "is_fuzz_variant", "reference",
           "register_mutant", "register_runtime", "variant"]
