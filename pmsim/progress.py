"""The one progress display of the long-running commands (sweeps, paper reproduction, crash
fuzzing, the kill matrix, ablation).

On a terminal it is a tqdm bar with a fixed total and an ETA. When the output is not a terminal
(a CI log, a pipe) or the terminal reports zero columns, it prints plain lines instead, at most
one every ``interval`` seconds, so a long run still shows that it advances without flooding a
log. ``enabled=False`` (the commands' ``--no-progress``) shows nothing; ``enabled=True`` also
prints a last line on closing when the output is no terminal.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from types import TracebackType
from typing import Any, TextIO

from .interrupts import raise_pending

LINE_INTERVAL_S = 30.0
"""Least time between two plain progress lines (the fallback when the output is no terminal)."""


def terminal_width(stream: TextIO) -> int:
    """Columns of the terminal ``stream`` writes to; 0 if it is not a terminal or reports none."""
    try:
        if not stream.isatty():
            return 0
    except (AttributeError, ValueError):
        return 0
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):  # a terminal-like stream with no descriptor
        return shutil.get_terminal_size().columns


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    """A progress display of ``total`` units (``mode``: "bar", "lines" or "off").

    ``update(n)`` adds finished units; ``set(done, total)`` sets them (the form the fuzz
    campaign's callback takes, also as ``progress(done, total)``). With ``check_stop`` either
    also raises a stop request that Python dropped (:func:`pmsim.interrupts.raise_pending`), so
    a run's loop stops at its next unit. Use it as a context manager, or call :meth:`close`."""

    def __init__(self, total: int | None, label: str, unit: str = "unit",
                 enabled: bool | None = None, stream: TextIO | None = None,
                 interval: float = LINE_INTERVAL_S, check_stop: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.label, self.unit, self.interval = label, unit, interval
        self.check_stop = check_stop
        self.total = total
        self.done = 0
        self.note = ""
        self.t0 = time.monotonic()
        self._last_line = self.t0
        self._lines = 0
        self._bar: Any = None
        self._forced = enabled is True
        if enabled is False:
            self.mode = "off"
        elif terminal_width(self.stream) > 0:
            self.mode = "bar"
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=label, unit=unit, file=self.stream,
                             dynamic_ncols=True, leave=True)
        else:
            self.mode = "lines"

    def update(self, n: int = 1, note: str = "") -> None:
        """``n`` more units finished; ``note`` (e.g. the last unit's name) is shown beside."""
        self.set(self.done + n, None, note)

    def set(self, done: int, total: int | None = None, note: str = "") -> None:
        """``done`` units of ``total`` (unchanged if None) are finished."""
        if self.check_stop:
            raise_pending()
        if total is not None and total != self.total:
            self.total = total
            if self._bar is not None:
                self._bar.total = total
        step, self.done = done - self.done, done
        if note:
            self.note = note
        if self._bar is not None:
            if note:
                self._bar.set_postfix_str(note, refresh=False)
            self._bar.update(step)
        elif self.mode == "lines":
            now = time.monotonic()
            if now - self._last_line >= self.interval:
                self._line(now)

    __call__ = set

    def write(self, message: str) -> None:
        """Print ``message`` on its own line without breaking the bar."""
        if self._bar is not None:
            self._bar.write(message, file=self.stream)
        else:
            self.stream.write(message + "\n")
            self.stream.flush()

    def line(self, now: float | None = None) -> str:
        """The plain progress line: label, done/total with percent, elapsed, ETA, note."""
        now = time.monotonic() if now is None else now
        el = now - self.t0
        if self.total:
            frac = min(self.done / self.total, 1.0)
            eta = el * (1 - frac) / frac if frac > 0 else None
            text = (f"{self.label}: {self.done}/{self.total} {self.unit}s ({100 * frac:.0f}%), "
                    f"{_duration(el)} elapsed, ETA {_duration(eta) if eta is not None else '?'}")
        else:
            text = f"{self.label}: {self.done} {self.unit}s, {_duration(el)} elapsed"
        return f"{text}; {self.note}" if self.note else text

    def _line(self, now: float) -> None:
        self._last_line = now
        self._lines += 1
        self.stream.write(self.line(now) + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the display: close the bar, or print a last line if plain lines were printed."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.mode == "lines" and (self._lines or self._forced):
            self._line(time.monotonic())
        self.mode = "off"

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, tp: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def add_progress_arg(p: Any) -> None:
    """The ``--no-progress`` option of a long-running command."""
    p.add_argument("--no-progress", action="store_true",
                   help="no progress display (a bar with an ETA on a terminal, else a plain "
                        f"line at most every {LINE_INTERVAL_S:g} s)")


def progress_enabled(args: Any) -> bool | None:
    """``enabled`` for :class:`Progress` from ``--no-progress``: False, or None (automatic)."""
    return False if getattr(args, "no_progress", False) else None


__all__ = ["LINE_INTERVAL_S", "Progress", "add_progress_arg", "progress_enabled",
           "terminal_width"]
