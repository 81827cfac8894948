"""Durable-transaction runtimes: undo logging, redo logging and copy-on-write (Marathe et al.),
with the persistent allocator they share. ``get_runtime(name)`` returns a registered class;
``create_runtime(name, machine, spec)`` plans, builds and formats one.

Layout of the package: :mod:`.base` (the interface), :mod:`.steps` (named persist steps),
:mod:`.mutation` (mutations as data, mutants), :mod:`.alloclog` (allocation log),
:mod:`.alloc` (the allocator), :mod:`.registry`, and one module per protocol.
"""

from __future__ import annotations

from .alloc import Allocator, HeapExhausted
from .base import ABORTED, COMMITTED, IDLE, RUNNING, Runtime, Tx
from .costs import RuntimeCosts
from .cow import CowRuntime
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
from .redo import RedoRuntime
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
from .undo import UndoRuntime

__all__ = [
    "ABORTED", "COMMITTED", "IDLE", "MUTANTS", "RUNNING", "RUNTIMES", "Allocator", "CowRuntime",
    "HeapExhausted", "Layout", "Mutant", "PMSpec", "RedoRuntime", "Runtime", "RuntimeCosts",
    "StaticArray", "StepInfo", "Tx", "UndoRuntime", "all_mutants", "create_runtime", "delay",
    "drop", "drop_fence", "drop_flush", "fit_pm", "get_mutant", "get_runtime", "move_before",
    "patch", "register_mutant", "register_runtime", "skip_check", "swap", "variant",
]
