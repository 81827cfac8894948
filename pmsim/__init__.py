"""pmsim: model, time and crash-fuzz durable transactions on persistent memory.

The flat public API::

    from pmsim import Machine, MachineConfig, preset
    m = Machine(preset("optane-adr"))

pmsim is protocol-level and timing-approximate: it models caches, the WPQ, persistence
domains and persist barriers well enough to rank protocols and to find crash bugs, not to
predict cycle counts.
"""

from __future__ import annotations

from .cache import native as _native  # noqa: F401  (fails loudly on a stale C core)
from .config import (
    CacheConfig,
    CacheLevel,
    CostConfig,
    DRAMConfig,
    MachineConfig,
    PMConfig,
    Region,
    describe,
)
from .errors import ConfigError, PmsimError, TraceError, UnknownNameError
from .machine import Cpu, Machine
from .presets import PRESETS, preset
from .trace import Ev, Mark, Trace

__version__ = "0.1.0"

__all__ = [
    "CacheConfig", "CacheLevel", "ConfigError", "CostConfig", "Cpu", "DRAMConfig", "Ev",
    "Machine", "MachineConfig", "Mark", "PMConfig", "PRESETS", "PmsimError", "Region", "Trace",
    "TraceError", "UnknownNameError", "describe", "preset", "__version__",
]
