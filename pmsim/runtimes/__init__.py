"""Durable-transaction runtimes: undo logging, redo logging and copy-on-write (Marathe et al.),
with the persistent allocator they share. ``get_runtime(name)`` returns a registered class;
``create_runtime(name, machine, spec)`` plans, builds and formats one.
"""

from __future__ import annotations

from .alloc import Allocator, HeapExhausted
from .base import (
    ABORTED,
    COMMITTED,
    IDLE,
    MUTANTS,
    RUNNING,
    RUNTIMES,
    Mutant,
    Runtime,
    RuntimeCosts,
    Tx,
    create_runtime,
    fit_pm,
    get_mutant,
    get_runtime,
    register_mutant,
    register_runtime,
    variant,
)
from .cow import CowRuntime
from .layout import Layout, PMSpec, StaticArray
from .redo import RedoRuntime
from .undo import UndoRuntime

__all__ = [
    "ABORTED", "COMMITTED", "IDLE", "MUTANTS", "RUNNING", "RUNTIMES", "Allocator", "CowRuntime",
    "HeapExhausted", "Layout", "Mutant", "PMSpec", "RedoRuntime", "Runtime", "RuntimeCosts",
    "StaticArray", "Tx", "UndoRuntime", "create_runtime", "fit_pm", "get_mutant", "get_runtime",
    "register_mutant", "register_runtime", "variant",
]
