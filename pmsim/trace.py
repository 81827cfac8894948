"""The persistence trace: a compact record of every event the crash-state model needs.

One NumPy structured array, one 32-byte record per event, in global visibility order (the
order in which stores became visible to other threads). Only PM addresses are traced; fences,
pcommit and markers always are.

Fields: ``kind`` (an :class:`Ev` code), ``tid`` (thread), ``aux`` (a sub-code: marker kind,
write-back cause, whether an RMW stored), ``addr`` (byte address; line address for flushes and
write-backs), ``value`` (stored 8-byte value; transaction id for markers; media completion time
in picoseconds for write-backs) and ``time`` (simulated ns when the event took effect).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from .config import LINE
from .errors import TraceError

TRACE_DTYPE = np.dtype(
    [("kind", "u1"), ("pad", "u1"), ("tid", "u2"), ("aux", "u4"),
     ("addr", "u8"), ("value", "u8"), ("time", "f8")]
)


class Ev(IntEnum):
    """Event kinds. The numbers are shared with the C core (``csrc/pmcore.h``)."""

    STORE = 1
    NTSTORE = 2  # aux 0: issued (may persist until the thread's next fence); aux 1: drained
    RMW = 3  # locked read-modify-write: a full fence, and a store when aux == 1
    CLFLUSH = 4
    CLFLUSHOPT = 5
    CLWB = 6
    SFENCE = 7
    MFENCE = 8
    PCOMMIT = 9
    WB = 10  # a dirty PM line reached the WPQ (aux: 0 eviction, 1 flush, 2 movnt)
    MARK = 11


class Mark(IntEnum):
    """Marker codes runtimes emit with ``Cpu.mark`` (``aux`` of a MARK event)."""

    TX_BEGIN = 1
    TX_COMMIT = 2  # the commit point was issued
    TX_DURABLE = 3  # durability acknowledged to the caller
    TX_ABORT = 4
    RECOVERY_BEGIN = 5
    RECOVERY_END = 6
    USER = 16  # first code free for users


FLUSHES = (Ev.CLFLUSH, Ev.CLFLUSHOPT, Ev.CLWB)
FENCES = (Ev.SFENCE, Ev.MFENCE, Ev.RMW)


@dataclass
class Trace:
    """A persistence trace plus the PM image it starts from.

    ``base`` is the PM region's contents (bytes) when the trace started; ``pm_base`` is the
    region's first address, so an event at ``addr`` touches ``base[addr - pm_base]``.
    """

    events: np.ndarray
    base: np.ndarray
    pm_base: int = 0
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.events.dtype != TRACE_DTYPE:
            raise TraceError(f"trace events have dtype {self.events.dtype}, expected TRACE_DTYPE")
        if self.base.dtype != np.uint8 or self.base.ndim != 1:
            raise TraceError("trace base image must be a 1-D uint8 array")
        if len(self.base) % LINE:
            raise TraceError(f"base image length {len(self.base)} is not a multiple of {LINE}")

    def __len__(self) -> int:
        return len(self.events)

    @property
    def size(self) -> int:
        """Bytes in the PM region."""
        return len(self.base)

    @classmethod
    def build(cls, rows: list[tuple], size: int = 4096, pm_base: int = 0,
              base: np.ndarray | None = None) -> Trace:
        """A trace from ``(kind, tid, addr, value[, aux])`` tuples (handy in tests)."""
        ev = np.zeros(len(rows), dtype=TRACE_DTYPE)
        for i, r in enumerate(rows):
            kind, tid, addr, value = r[:4]
            ev[i] = (int(kind), 0, tid, r[4] if len(r) > 4 else (1 if kind == Ev.RMW else 0),
                     addr, value, float(i))
        img = np.zeros(size, np.uint8) if base is None else base
        return cls(ev, img, pm_base)

    def describe(self, i: int) -> str:
        """One event as a line of text."""
        e = self.events[i]
        k = Ev(int(e["kind"]))
        s = f"#{i} t={e['time']:.1f}ns T{int(e['tid'])} {k.name}"
        if k in (Ev.STORE, Ev.NTSTORE, Ev.RMW):
            s += f" [{int(e['addr']):#x}] := {int(e['value']):#x}"
        elif k in FLUSHES or k == Ev.WB:
            s += f" line {int(e['addr']):#x}"
        elif k == Ev.MARK:
            code = int(e["aux"])
            name = Mark(code).name if code in Mark._value2member_map_ else f"USER+{code - 16}"
            s += f" {name} tx={int(e['value'])}"
        return s

    def to_text(self, start: int = 0, stop: int | None = None) -> str:
        stop = len(self) if stop is None else stop
        return "\n".join(self.describe(i) for i in range(start, stop))
