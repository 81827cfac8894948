"""Thread schedules: delays at a thread's switch points that steer which interleaving a run takes.

A multi-threaded run interleaves its threads by their simulated clocks, so one config gives
one interleaving. A :class:`Schedule` adds a delay at every **switch point** — before each
transaction (``Workload.thread_body``) and at each ``pm.pause()`` of a PM program — chosen
by its kind:

* ``random``: each switch point waits, with probability 1/2, a random 1-16 units;
* ``pct``: probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010): the threads get
  distinct random priorities and a thread waits ``rank x`` a long unit at each switch point
  (so the highest-priority thread runs ahead), and at ``depth - 1`` switch points drawn from
  the run the thread that reaches it drops to the lowest priority. A bug of depth d is found
  with probability at least 1/(n k^(d-1)) per schedule (n threads, k switch points).

Schedule 0 is the simulator's own (no delay); schedules 1, 2, ... are drawn from the seed and
their index, so a finding names its schedule and replays it.
"""

from __future__ import annotations

import numpy as np

from .errors import ConfigError

KINDS = ("pct", "random")
UNIT_NS = 400.0
"""The random schedule's delay unit: a short operation's time on the small fuzzing machine."""
PCT_UNIT_NS = 50_000.0
"""The PCT wait per priority rank: longer than any one operation, so a higher-priority thread
reaches its next switch point (or finishes) first."""


class Schedule:
    """The delays of one schedule (see the module)."""

    def __init__(self, kind: str, index: int, seed: int, threads: int, depth: int = 3,
                 horizon: int = 64) -> None:
        if kind not in KINDS:
            raise ConfigError(f"unknown schedule kind {kind!r}; use {' or '.join(KINDS)}")
        if depth < 1 or horizon < 1:
            raise ConfigError(f"a schedule needs depth >= 1 and horizon >= 1, got {depth}, "
                              f"{horizon}")
        self.kind = kind
        self.index = index
        self.rng = np.random.default_rng([seed, index, 0x5C4ED])
        self.switches = 0
        order = self.rng.permutation(threads)
        self.priority = {int(t): float(threads - i) for i, t in enumerate(order)}
        self.changes = set(int(c) for c in self.rng.integers(1, horizon + 1, depth - 1))
        self._low = 0.0

    def delay(self, tid: int) -> float:
        """Nanoseconds thread ``tid`` waits at this switch point."""
        self.switches += 1
        if self.kind == "random":
            return float(self.rng.integers(1, 17)) * UNIT_NS if self.rng.random() < 0.5 else 0.0
        if self.switches in self.changes:
            self._low -= 1.0
            self.priority[tid] = self._low
        mine = self.priority.setdefault(tid, 0.0)
        rank = sum(1 for p in self.priority.values() if p > mine)
        return rank * PCT_UNIT_NS


__all__ = ["KINDS", "Schedule"]
