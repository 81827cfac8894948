"""LOC (Lu, Shu, Sun, Mutlu, ICCD 2014; card ``papers/loc.md``): hardware redo logging with
loose ordering, its strict-ordering variants and its software baseline. The hardware (the
Commit/Recovery Logic) is :mod:`pmsim.hw.loc`.

* :mod:`.swal`: ``swal`` (S-WAL, the software write-ahead-logging baseline);
* :mod:`.loc`: ``loc`` (LOC-WAL), ``loc-ec`` (EC-WAL), ``hwal`` (H-WAL) and their mutants.

Importing the package registers them (``BUILTIN`` in :mod:`pmsim.runtimes.registry`).
"""

from __future__ import annotations

# Each module registers its runtimes when imported, in this order (the order listings use).
from . import swal, loc  # isort: skip

__all__ = ["loc", "swal"]
