"""Proteus (Shin et al., MICRO-50 2017; card ``papers/proteus.md``): software-supported hardware
undo logging, with the hardware baseline ATOM and the software baselines PMEM. The hardware
is :mod:`pmsim.hw.proteus`.

* :mod:`.pmem`: ``pmem``, ``pmem-pcommit``, ``pmem-nolog`` (the software baselines);
* :mod:`.proteus`: ``proteus`` and its switches (``-nolwr``, ``-pcommit``, ...);
* :mod:`.atom`: ``atom`` (ATOM, hardware undo logging at the memory controller);
* :mod:`.hwundo`: the software side Proteus and ATOM share (not registered itself).

Importing the package registers them (``BUILTIN`` in :mod:`pmsim.runtimes.registry`).
"""

from __future__ import annotations

# Each module registers its runtimes when imported, in this order (the order listings use).
from . import pmem, proteus, atom  # isort: skip

__all__ = ["atom", "pmem", "proteus"]
