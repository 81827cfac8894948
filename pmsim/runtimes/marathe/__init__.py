"""Marathe et al.'s three protocols ("Persistent Memory Transactions"; card
``papers/marathe-undo-redo-cow.md``): undo logging, redo logging and copy-on-write, each with
its switches (``-eager``, ``-eadr``, ``undo-2pb``) and its card mutants.

* :mod:`.cow`: ``cow`` (copy-on-write objects with old/new/old_backup wrappers);
* :mod:`.redo`: ``redo`` (writes go to a log, home locations change after commit);
* :mod:`.undo`: ``undo`` (one persist barrier per log append, checksummed records).

Importing the package registers them (``BUILTIN`` in :mod:`pmsim.runtimes.registry`).
"""

from __future__ import annotations

from . import cow, redo, undo

__all__ = ["cow", "redo", "undo"]
