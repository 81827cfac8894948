"""The C core's version stamp: a hash of its sources (used by the build and at import)."""

from __future__ import annotations

import hashlib
from pathlib import Path

CSRC = Path(__file__).resolve().parent / "csrc"


def source_stamp(csrc: Path = CSRC) -> str:
    """Hash of ``csrc/*.c`` and ``csrc/*.h``; changes whenever the core must be rebuilt."""
    h = hashlib.sha256()
    for p in sorted(csrc.glob("*.[ch]")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]
