"""Exceptions that carry a message a user can act on."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class PmsimError(Exception):
    """Base class of every error pmsim raises on purpose."""


class ConfigError(PmsimError, ValueError):
    """A configuration value, preset name or config file is invalid."""


class UnknownNameError(ConfigError, KeyError):
    """A name (preset, runtime, workload, mutant...) is not registered."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class UnsupportedDomainError(ConfigError):
    """A runtime was asked to run in a persistence domain its protocol is not defined for
    (:attr:`pmsim.runtimes.Runtime.supported_domains`); the message says why and what to use."""

    def __init__(self, message: str, runtime: str = "", domain: str = "") -> None:
        super().__init__(message)
        self.runtime = runtime
        self.domain = domain


class TraceError(PmsimError, ValueError):
    """A persistence trace or PM image is malformed."""


class BuildError(PmsimError, ImportError):
    """The C core is missing or stale."""


def unknown(kind: str, name: str, known: Iterable[str], plural: str | None = None
            ) -> UnknownNameError:
    """Build an error for an unknown name, suggesting the closest registered ones; ``plural``
    names the known ones when ``kind + 's'`` would not (``"persist steps of undo"``)."""
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=3)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return UnknownNameError(
        f"unknown {kind} {name!r}.{hint} Known {plural or kind + 's'}: {', '.join(known)}."
    )


class StallError(PmsimError):
    """A thread waited longer than its runtime's stall bound (``stall_ns``) for progress that
    never came: a liveness failure (e.g. a mutant without the step that wakes it), not a wrong
    crash state."""
