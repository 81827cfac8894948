"""NV-HTM (Castro, Romano, Barreto, JPDC 2019; card ``papers/nv-htm.md``): durable transactions
on best-effort HTM, with its baselines and its card mutants.

* :mod:`.nvhtm`: ``nvhtm`` and its switches (``-lc``, ``-nlp``, ``-emul``, ``-fff``, ...);
* :mod:`.mutants`: the card mutants ``nvhtm:M*`` and the patches behind them;
* :mod:`.phtm`: ``phtm`` (PHTM-like, the hardware baseline);
* :mod:`.pstm`: ``pstm`` (PSTM-like, the software baseline).

Importing the package registers them (``BUILTIN`` in :mod:`pmsim.runtimes.registry`).
"""

from __future__ import annotations

# Each module registers its runtimes when imported, in this order (the order listings use).
from . import nvhtm, mutants, phtm, pstm  # isort: skip

__all__ = ["mutants", "nvhtm", "phtm", "pstm"]
