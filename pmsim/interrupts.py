"""Stop requests (Ctrl-C, SIGTERM) that a long run cannot lose.

Python raises a signal's exception in the main thread at the next bytecode, but drops it when
that bytecode belongs to a finalizer or a generator being closed by the garbage collector (it
prints "Exception ignored in ..."). A sweep or a fuzz campaign would then run on to its end.
Inside :func:`catching`, SIGINT (and SIGTERM if asked) still raise at once, and are also
recorded, so that the run's loop can call :func:`raise_pending` between units of work and stop
anyway.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_PENDING: list[int] = []


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C so that a run stops the same way."""


def _handler(signum: int, frame: Any) -> None:
    _PENDING.append(signum)
    raise_pending()


def raise_pending() -> None:
    """Raise :class:`Terminated` or KeyboardInterrupt if a stop was requested inside
    :func:`catching` (whether or not its first exception got through)."""
    if signal.SIGTERM in _PENDING:
        raise Terminated("terminated")
    if _PENDING:
        raise KeyboardInterrupt


@contextmanager
def catching(sigterm: bool = False, force: bool = False) -> Iterator[None]:
    """Record SIGINT (and SIGTERM with ``sigterm``) while the block runs. Only in the main
    thread, and only over Python's default handlers (an ignored SIGINT stays ignored) unless
    ``force`` (a command-line program that owns its process); the previous handlers come back
    afterwards."""
    sigs = [signal.SIGINT] + ([signal.SIGTERM] if sigterm else [])
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in sigs}
    ours = [s for s in sigs if force or old[s] in (signal.default_int_handler, signal.SIG_DFL)]
    _PENDING.clear()
    for s in ours:
        signal.signal(s, _handler)
    try:
        yield
    finally:
        for s in ours:
            signal.signal(s, old[s])
        _PENDING.clear()


def stopped_by_sigterm(e: BaseException) -> bool:
    """Whether ``e``, or an exception in its cause/context chain, is a :class:`Terminated`."""
    seen: BaseException | None = e
    while seen is not None:
        if isinstance(seen, Terminated):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


__all__ = ["Terminated", "catching", "raise_pending", "stopped_by_sigterm"]
