"""DUDETx (Liu et al., ACM TOS 2018; card ``papers/dudetx-decoupled.md``): decoupled durable
transactions, with its variants, its baselines and its card mutants.

* :mod:`.dudetx`: ``dudetx`` (STM Perform, a Persist thread, a Reproduce thread);
* :mod:`.mutants`: the card mutants ``dudetx:M*`` and the patches behind them;
* :mod:`.variants`: ``dudetx-inf``, ``dudetx-sync`` (the paper's two variants of itself);
* :mod:`.htm`: ``dudetx-htm`` (HTM Perform);
* :mod:`.mnemosyne`: ``mnemosyne`` (Mnemosyne-like, the redo-logging baseline);
* :mod:`.nvml`: ``nvml`` (NVML-like, the undo-logging baseline);
* :mod:`.paging`: ``dudetx-paging`` (shadow paging);
* :mod:`.combine`: ``dudetx-combine``, ``dudetx-lz`` (log combination and compression);
* :mod:`.locks`: ``dudetx-locks-1r``, ``dudetx-locks-2r`` (lock-based DUDETx).

Importing the package registers them (``BUILTIN`` in :mod:`pmsim.runtimes.registry`).
"""

from __future__ import annotations

# Each module registers its runtimes when imported, in this order (the order listings use).
from . import dudetx, mutants, variants, htm, mnemosyne, nvml, paging, combine, locks  # isort: skip

__all__ = ["combine", "dudetx", "htm", "locks", "mnemosyne", "mutants", "nvml", "paging", "variants"]
