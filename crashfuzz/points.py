"""Crash-point selection: where to stop the machine, and what the oracle knew there.

A :class:`CrashPoint` ``k`` means "the crash happens after trace events ``[0, k)``". It carries
``since = j``: its state space is the union of the states of every point in ``(j, k]``, so a
few points can stand for all of them.

Choices:

* ``reduced`` (default, complete): a point just before each fence-like event (SFENCE, MFENCE,
  RMW), just before each CLFLUSH and each drained non-temporal store (PDOM-1: they raise lower
  bounds where they sit), just before each persisted non-temporal store (``aux`` 2, PDOM-0/1),
  just before and just after each MARK, and at the end; ``since`` is the previous point. Lower
  bounds only rise where a fence completes or a CLFLUSH / drained / persisted NTSTORE takes
  effect, so in PDOM-0/1 the union over an interval equals the states at its last
  point. In PDOM-2 the union over an interval is a range of prefixes of the global store order,
  except inside an *NT window* (points where an issued non-temporal store is not yet fenced by
  its thread, see :func:`nt_window`): there the states at one point are a per-chain box, and
  the union of boxes is no single space, so inside a window there is also a point just before
  each store (and before each issued NTSTORE, where a window opens), which makes every interval
  there one box. The point just *before* a MARK (a deviation from "only after") keeps the
  oracle exact: inside an interval the marker counts are constant, so every state of the
  interval is checked against the counts that held when it was reachable.
* ``every``: every index ``0..n``, ``since = k - 1``.
* ``sampled``: ``n`` distinct indices drawn uniformly, ``since = k - 1``.

The reduced points depend on the domain; without one they suit every domain.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from pmsim.errors import ConfigError, unknown
from pmsim.trace import Ev, Mark, Trace

POINT_KINDS = ("reduced", "every", "sampled")
_FENCES = (int(Ev.SFENCE), int(Ev.MFENCE), int(Ev.RMW))


def store_mask(trace: Trace) -> np.ndarray:
    """Per event: True for a store (STORE, NTSTORE, or an RMW that stored)."""
    ev = trace.events
    k = ev["kind"]
    return (k == Ev.STORE) | (k == Ev.NTSTORE) | ((k == Ev.RMW) & (ev["aux"] == 1))


def issued_nt_mask(trace: Trace) -> np.ndarray:
    """Per event: True for an issued (neither drained, ``aux`` 1, nor persisted, ``aux`` 2)
    non-temporal store."""
    ev = trace.events
    return (ev["kind"] == Ev.NTSTORE) & (ev["aux"] != 1) & (ev["aux"] != 2)


def nt_window(trace: Trace) -> np.ndarray:
    """Per crash point ``0..n``: True where some issued NTSTORE before it is not yet fenced.

    An issued NTSTORE at ``p`` by thread ``T`` may still sit in the write-combining buffer at
    the points ``p + 1 .. g`` (``g``: ``T``'s next fence, or ``n`` without one).
    """
    ev = trace.events
    n = len(ev)
    diff = np.zeros(n + 2, np.int64)
    nts = np.nonzero(issued_nt_mask(trace))[0]
    if len(nts):
        fence = np.isin(ev["kind"], _FENCES)
        tids = ev["tid"]
        for t in np.unique(tids[nts]).tolist():
            f_t = np.nonzero(fence & (tids == t))[0]
            p = nts[tids[nts] == t]
            nxt = np.searchsorted(f_t, p, side="right")
            g = np.full(len(p), n, np.int64)
            has = nxt < len(f_t)
            g[has] = f_t[nxt[has]]
            np.add.at(diff, p + 1, 1)
            np.add.at(diff, g + 1, -1)
    return np.cumsum(diff)[:n + 1] > 0


class MarkLog:
    """The trace's MARK events by code: event index, thread and transaction id, in trace order."""

    def __init__(self, trace: Trace) -> None:
        ev = trace.events
        pos = np.nonzero(ev["kind"] == Ev.MARK)[0]
        self.index = pos.astype(np.int64)
        self.code = ev["aux"][pos].astype(np.int64)
        self.tid = ev["tid"][pos].astype(np.int64)
        self.txid = ev["value"][pos].astype(np.int64)
        self._at: dict[int, list[int]] = {}  # code -> its event indices, ascending
        for i, c in zip(self.index.tolist(), self.code.tolist(), strict=True):
            self._at.setdefault(c, []).append(i)

    def _upto(self, code: int, k: int) -> np.ndarray:
        return (self.code == code) & (self.index < k)

    def count(self, code: int, k: int) -> int:
        """Markers of ``code`` among events ``[0, k)``."""
        return bisect.bisect_left(self._at.get(int(code), ()), k)

    def ids(self, code: int, k: int) -> tuple[int, ...]:
        """Transaction ids of the ``code`` markers before ``k``, in trace order."""
        return tuple(self.txid[self._upto(code, k)].tolist())

    def per_thread(self, code: int, k: int) -> dict[int, int]:
        """Count of ``code`` markers before ``k`` per thread."""
        t, c = np.unique(self.tid[self._upto(code, k)], return_counts=True)
        return dict(zip(t.tolist(), c.tolist(), strict=True))


@dataclass(frozen=True)
class CrashPoint:
    """A crash after events ``[0, index)``, standing for every point in ``(since, index]``.

    ``begun``, ``committed`` (commit point issued) and ``durable`` (durability acknowledged)
    count TX_BEGIN / TX_COMMIT / TX_DURABLE markers before ``index``; ``*_ids`` give their
    transaction ids in trace order and ``marks`` the full log (per-thread counts, user codes).
    """

    index: int
    since: int
    reason: str
    begun: int
    committed: int
    durable: int
    aborted: int
    marks: MarkLog = field(repr=False, compare=False)

    @property
    def begun_ids(self) -> tuple[int, ...]:
        return self.marks.ids(Mark.TX_BEGIN, self.index)

    @property
    def committed_ids(self) -> tuple[int, ...]:
        return self.marks.ids(Mark.TX_COMMIT, self.index)

    @property
    def durable_ids(self) -> tuple[int, ...]:
        return self.marks.ids(Mark.TX_DURABLE, self.index)


def make_point(trace: Trace, index: int, since: int | None = None, reason: str = "user",
               marks: MarkLog | None = None) -> CrashPoint:
    """A single crash point (``since`` defaults to ``index - 1``: the point alone)."""
    n = len(trace)
    since = index - 1 if since is None else since
    if not 0 <= index <= n:
        raise ConfigError(f"crash point {index} is outside the trace: use 0..{n}")
    if not -1 <= since < index:
        raise ConfigError(f"crash point {index}: since={since} must be in -1..{index - 1} "
                          "(the interval (since, index] must be non-empty)")
    m = marks or MarkLog(trace)
    return CrashPoint(index, since, reason, m.count(_BEGIN, index), m.count(_COMMIT, index),
                      m.count(_DURABLE, index), m.count(_ABORT, index), m)


_BEGIN, _COMMIT, _DURABLE, _ABORT = (int(x) for x in (Mark.TX_BEGIN, Mark.TX_COMMIT,
                                                       Mark.TX_DURABLE, Mark.TX_ABORT))


def _chain(trace: Trace, picks: dict[int, str], marks: MarkLog) -> list[CrashPoint]:
    out: list[CrashPoint] = []
    prev = -1
    for k in sorted(picks):
        out.append(make_point(trace, k, prev, picks[k], marks))
        prev = k
    return out


def reduced_points(trace: Trace, domain: str | None = None) -> list[CrashPoint]:
    """Before each fence, around each marker, at the end, plus what ``domain`` needs (see
    module doc; ``None``: what any domain needs); complete."""
    if domain not in (None, "pdom0", "pdom1", "pdom2"):
        raise unknown("persistence domain", str(domain), ("pdom0", "pdom1", "pdom2"))
    ev = trace.events
    kinds = ev["kind"]
    picks: dict[int, str] = {}

    def add(k: int, why: str) -> None:
        picks[k] = why if k not in picks else f"{picks[k]}+{why}"

    for g in np.nonzero(np.isin(kinds, _FENCES))[0].tolist():
        add(g, "fence")
    if domain in (None, "pdom1"):
        for f in np.nonzero(kinds == Ev.CLFLUSH)[0].tolist():
            add(f, "clflush")
        for f in np.nonzero((kinds == Ev.NTSTORE) & (ev["aux"] == 1))[0].tolist():
            add(f, "movnt")
    if domain in (None, "pdom0", "pdom1"):
        for f in np.nonzero((kinds == Ev.NTSTORE) & (ev["aux"] == 2))[0].tolist():
            add(f, "persisted")
    if domain in (None, "pdom2"):
        issued = issued_nt_mask(trace)
        if issued.any():
            inside = nt_window(trace)[:-1]
            for s in np.nonzero(store_mask(trace) & (inside | issued))[0].tolist():
                add(s, "nt-window")
    for m in np.nonzero(kinds == Ev.MARK)[0].tolist():
        add(m, "pre-mark")
        add(m + 1, "mark")
    add(len(trace), "end")
    return _chain(trace, picks, MarkLog(trace))


def every_points(trace: Trace) -> list[CrashPoint]:
    """Every index ``0..n`` on its own."""
    marks = MarkLog(trace)
    return [make_point(trace, k, k - 1, "every", marks) for k in range(len(trace) + 1)]


def sampled_points(trace: Trace, n: int, rng: np.random.Generator) -> list[CrashPoint]:
    """``n`` distinct points drawn uniformly from ``0..len(trace)`` (all of them if fewer)."""
    if n < 0:
        raise ConfigError(f"cannot sample {n} crash points; use n >= 0")
    total = len(trace) + 1
    ks = sorted(rng.choice(total, size=min(n, total), replace=False).tolist())
    marks = MarkLog(trace)
    return [make_point(trace, k, k - 1, "sampled", marks) for k in ks]


def select_points(trace: Trace, kind: str = "reduced", n: int | None = None,
                  rng: np.random.Generator | None = None, domain: str | None = None
                  ) -> list[CrashPoint]:
    """Points of one of :data:`POINT_KINDS` (``sampled`` needs ``n``; ``rng`` defaults to seed 0;
    ``domain`` tailors the reduced points)."""
    if kind == "reduced":
        return reduced_points(trace, domain)
    if kind == "every":
        return every_points(trace)
    if kind == "sampled":
        if n is None:
            raise ConfigError("sampled crash points need n (how many points to draw)")
        return sampled_points(trace, n, rng if rng is not None else np.random.default_rng(0))
    raise unknown("crash-point kind", kind, POINT_KINDS)
