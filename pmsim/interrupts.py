"""Stop requests (Ctrl-C, SIGTERM) that a long run cannot lose.

Python raises a signal's exception in the main thread at the next bytecode, but drops it when
that bytecode belongs to a finalizer or a generator being closed by the garbage collector (it
prints "Exception ignored in ..."), and user code may swallow it (``except BaseException``). A
sweep or a fuzz campaign would then run on to its end. Inside :func:`catching`, SIGINT (and
SIGTERM if asked) still raise at once, and are also recorded, so that the run's loops can call
:func:`raise_pending` (cheap: a list test) at every unit of work and stop anyway.

Only the first signal raises: a second Ctrl-C (pressed again, 50 ms later) is recorded but not
raised, so it cannot interrupt the code that saves what the first one stopped. A recorded
signal also tells a real stop request apart from a KeyboardInterrupt that user code raised
itself (:func:`requested`).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_PENDING: list[int] = []
_DEPTH = [0]  # nesting of catching() blocks in the main thread


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C so that a run stops the same way."""


def _handler(signum: int, frame: Any) -> None:
    first = not _PENDING
    _PENDING.append(signum)
    if first:  # later signals must not interrupt the saving of what the first one stopped
        raise_pending()


def raise_pending() -> None:
    """Raise :class:`Terminated` or KeyboardInterrupt if a stop was requested inside
    :func:`catching` (whether or not its first exception got through)."""
    if _PENDING:
        if signal.SIGTERM in _PENDING:
            raise Terminated("terminated")
        raise KeyboardInterrupt


def requested() -> bool:
    """Whether a stop was requested (a signal recorded) inside :func:`catching`."""
    return bool(_PENDING)


def active() -> bool:
    """Whether signals are being recorded (a :func:`catching` block runs in the main thread):
    only then can a KeyboardInterrupt be told apart from a real Ctrl-C."""
    return _DEPTH[0] > 0


@contextmanager
def catching(sigterm: bool = False, force: bool = False) -> Iterator[None]:
    """Record SIGINT (and SIGTERM with ``sigterm``) while the block runs. Only in the main
    thread, and only over Python's default handlers (an ignored SIGINT stays ignored) unless
    ``force`` (a command-line program that owns its process); the previous handlers come back
    afterwards. Nested blocks share the outer one's record."""
    sigs = [signal.SIGINT] + ([signal.SIGTERM] if sigterm else [])
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in sigs}
    ours = [s for s in sigs if old[s] is not _handler and (
        force or old[s] in (signal.default_int_handler, signal.SIG_DFL))]
    outer = _DEPTH[0] > 0
    if not outer:
        _PENDING.clear()
    for s in ours:
        signal.signal(s, _handler)
    counted = bool(ours or outer)
    _DEPTH[0] += counted
    try:
        yield
    finally:
        if counted:
            _DEPTH[0] -= 1
        for s in ours:
            signal.signal(s, old[s])
        if not outer:
            _PENDING.clear()


def ignore_further() -> None:
    """A process that was told to stop and is exiting ignores SIGINT and SIGTERM from now on:
    at exit Python puts back the default action, and a second Ctrl-C then would kill it while
    it flushes what the first one saved (exit status -2 instead of 130). Main thread only."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def stopped_by_sigterm(e: BaseException) -> bool:
    """Whether ``e``, or an exception in its cause/context chain, is a :class:`Terminated`."""
    seen: BaseException | None = e
    while seen is not None:
        if isinstance(seen, Terminated):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


__all__ = ["Terminated", "active", "catching", "ignore_further", "raise_pending", "requested",
           "stopped_by_sigterm"]
