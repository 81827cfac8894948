"""Access to the compiled C core, with its version stamp checked at import.

``native.lib`` / ``native.ffi`` are the cffi objects, or None when the core is not built (the
pure-Python reference is used then). A build whose stamp differs from the sources shipped
beside it raises :class:`~pmsim.errors.BuildError` telling the user to reinstall.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import BuildError
from .stamp import CSRC
from .stamp import source_stamp as _source_stamp


def _load() -> tuple[Any, Any]:
    if os.environ.get("PMSIM_BACKEND") == "python":
        return None, None
    try:
        from . import _pmcore  # type: ignore[attr-defined]
    except ImportError:
        if os.environ.get("PMSIM_BACKEND") == "c":
            raise BuildError(
                "PMSIM_BACKEND=c but the C core is not built. Run `pip install -e .` "
                "(or `make test`) in the pmsim checkout to compile it.") from None
        return None, None
    built = _pmcore.ffi.string(_pmcore.lib.pmcore_stamp()).decode()
    if CSRC.exists() and any(CSRC.glob("*.c")) and built != _source_stamp():
        raise BuildError(
            f"the compiled C core (stamp {built}) is stale: its sources changed "
            f"(now {_source_stamp()}). Reinstall pmsim (`pip install -e .` or `make test`) "
            "to rebuild it, or set PMSIM_BACKEND=python to use the pure-Python reference.")
    return _pmcore.ffi, _pmcore.lib


ffi, lib = _load()


def available() -> bool:
    """True when the C core is built and current."""
    return lib is not None
