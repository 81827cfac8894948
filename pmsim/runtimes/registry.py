"""The registries of runtimes and mutants, and the helpers that build a runtime on a machine.

A protocol module registers its class with ``@register_runtime``, its switches with
``variant(...)`` and its card mutants with ``register_mutant(Mutant(...))``; nothing else needs
editing. ``get_runtime("redo:R2")`` returns any of them by name.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, unknown
from .costs import RuntimeCosts
from .layout import PMSpec
from .mutation import Mutant

if TYPE_CHECKING:
    from .base import Runtime

RUNTIMES: dict[str, type[Runtime]] = {}
"""Registered runtimes by name (base protocols, switches like ``undo-2pb``, and mutants)."""

MUTANTS: dict[str, Mutant] = {}
"""Registered mutants by name (``undo:U1`` ...); each is also in RUNTIMES."""

BUILTIN = ("undo", "redo", "cow")
"""Modules of pmsim.runtimes imported (for their registrations) before a name is looked up."""


def register_runtime(cls: type[Runtime], name: str | None = None) -> type[Runtime]:
    """Register a runtime class under ``name`` (default ``cls.name``); usable as a decorator."""
    key = name or cls.name
    if not key:
        raise ConfigError(f"{cls.__name__} has no name; set the class attribute `name`")
    RUNTIMES[key] = cls
    return cls


def variant(base: type[Runtime], name: str, **attrs: Any) -> type[Runtime]:
    """Register a subclass of ``base`` with class attributes changed (a protocol switch)."""
    cls = type(base.__name__ + "_" + name.replace(":", "_").replace("-", "_"), (base,),
               {"name": name, **attrs})
    return register_runtime(cls)


def register_mutant(mutant: Mutant) -> Mutant:
    """Build ``mutant`` and register it as a runtime and as a mutant under its name."""
    register_runtime(mutant.build(), mutant.name)
    MUTANTS[mutant.name] = mutant
    return mutant


def _load_builtin() -> None:
    import importlib

    for mod in BUILTIN:
        importlib.import_module(f"pmsim.runtimes.{mod}")


def get_runtime(name: str) -> type[Runtime]:
    """The runtime class registered as ``name`` (e.g. ``"undo"``, ``"redo:R2"``)."""
    _load_builtin()
    try:
        return RUNTIMES[name]
    except KeyError:
        raise unknown("runtime", name, RUNTIMES) from None


def get_mutant(name: str) -> Mutant:
    _load_builtin()
    try:
        return MUTANTS[name]
    except KeyError:
        raise unknown("mutant", name, MUTANTS) from None


def all_mutants() -> dict[str, Mutant]:
    """Every registered mutant (the built-in ones loaded)."""
    _load_builtin()
    return dict(MUTANTS)


def create_runtime(name: str, machine: Any, spec: PMSpec, threads: int | None = None,
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


__all__ = ["BUILTIN", "MUTANTS", "RUNTIMES", "all_mutants", "create_runtime", "fit_pm",
           "get_mutant", "get_runtime", "register_mutant", "register_runtime", "variant"]
