"""The volatile references: transactions with no persistence, the upper bounds the durable
protocols are measured against (not crash-fuzzed).

* :mod:`.stm`: ``stm`` (Volatile-STM, the TinySTM-like STM of :mod:`pmsim.tm.stm`);
* :mod:`.htm`: ``htm`` (Volatile-HTM, best-effort hardware transactions with a global-lock
  fallback);
* :mod:`.locks`: ``locks`` (bodies under the workload's locks; also the lock table lock-based
  DUDETx couples).

Importing the package registers them (``BUILTIN`` in :mod:`pmsim.runtimes.registry`).
"""

from __future__ import annotations

# Each module registers its runtimes when imported, in this order (the order listings use).
from . import stm, htm, locks  # isort: skip

__all__ = ["htm", "locks", "stm"]
