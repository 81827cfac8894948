"""One module per paper: its experiments and checkable claims (see ``marathe.py``).

A module defines ``PAPER = Paper(...)`` and ends with ``register_paper(PAPER)``; adding a
paper is that module plus its name in :data:`BUILTIN`.
"""

BUILTIN: tuple[str, ...] = ("marathe", "dudetx", "nvhtm", "loc", "proteus")
"""Paper modules imported (for their registrations) before a paper is looked up."""
