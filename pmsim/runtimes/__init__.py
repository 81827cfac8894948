"""Durable-transaction runtimes: the frame every protocol is written in, and the protocol families.

The frame is this package's top level: :mod:`.base` (the runtime interface and the transaction
object), :mod:`.steps` (named persist steps), :mod:`.mutation` (mutations as data, mutants),
:mod:`.registry` (runtimes and mutants by name), :mod:`.options` (options in a name),
:mod:`.layout`, :mod:`.labels`, :mod:`.alloc` (the persistent allocator), :mod:`.alloclog`
(the allocation log), :mod:`.allocmutants`, :mod:`.descriptor`, :mod:`.appdata`, :mod:`.costs`
and :mod:`.background` (background threads). It imports no protocol.

Each protocol family is a subpackage with its variants, baselines and mutants beside it, and
registers itself when imported (:data:`~.registry.BUILTIN` lists them): :mod:`.marathe` (undo,
redo, copy-on-write), :mod:`.volatile` (stm, htm, locks), :mod:`.dudetx`, :mod:`.nvhtm`,
:mod:`.loc` and :mod:`.proteus`. ``get_runtime(name)`` returns a registered class;
``create_runtime(name, machine, spec)`` plans, builds and formats one. ``UndoRuntime``,
``RedoRuntime`` and ``CowRuntime`` are importable from here too (loaded on first use).
"""

from __future__ import annotations

from typing import Any

from .alloc import Allocator, HeapExhausted
from .base import ABORTED, COMMITTED, IDLE, RUNNING, Runtime, Tx
from .costs import RuntimeCosts
from .layout import Layout, PMSpec, StaticArray
from .mutation import (
    Mutant,
    delay,
    drop,
    drop_fence,
    drop_flush,
    move_before,
    patch,
    skip_check,
    swap,
)
from .registry import (
    MUTANTS,
    RUNTIMES,
    all_mutants,
    create_runtime,
    fit_pm,
    get_mutant,
    get_runtime,
    register_mutant,
    register_runtime,
    variant,
)
from .steps import StepInfo

__all__ = [
    "ABORTED", "COMMITTED", "IDLE", "MUTANTS", "RUNNING", "RUNTIMES", "Allocator", "CowRuntime",
    "HeapExhausted", "Layout", "Mutant", "PMSpec", "RedoRuntime", "Runtime", "RuntimeCosts",
    "StaticArray", "StepInfo", "Tx", "UndoRuntime", "all_mutants", "create_runtime", "delay",
    "drop", "drop_fence", "drop_flush", "fit_pm", "get_mutant", "get_runtime", "move_before",
    "patch", "register_mutant", "register_runtime", "skip_check", "swap", "variant",
]

_PROTOCOLS = {"UndoRuntime": "pmsim.runtimes.marathe.undo", "RedoRuntime": "pmsim.runtimes.marathe.redo",
              "CowRuntime": "pmsim.runtimes.marathe.cow"}
"""Protocol classes importable from this package, by the module that defines them."""


def __getattr__(name: str) -> Any:
    """Resolve a protocol class on first use: the frame imports no protocol family."""
    if name in _PROTOCOLS:
        import importlib

        return getattr(importlib.import_module(_PROTOCOLS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
