"""Pure-Python set-associative LRU cache array (the reference for the C core's caches).

A cache holds line numbers (address >> 6) with a dirty bit and an LRU stamp. Stamps come from
a per-cache counter bumped on every touch and every insert, so the victim (smallest stamp) is
unique and the C core can reproduce every decision bit for bit.
"""

from __future__ import annotations


class CacheArray:
    """One cache level: ``sets`` sets of ``ways`` lines each."""

    __slots__ = ("sets", "ways", "mask", "data", "clock")

    def __init__(self, sets: int, ways: int) -> None:
        self.sets = sets
        self.ways = ways
        self.mask = sets - 1
        self.data: list[dict[int, list[int]]] = [{} for _ in range(sets)]  # line -> [dirty, stamp]
        self.clock = 0

    def lookup(self, line: int) -> list[int] | None:
        """The entry of ``line`` (without touching LRU), or None."""
        return self.data[line & self.mask].get(line)

    def touch(self, entry: list[int]) -> None:
        self.clock += 1
        entry[1] = self.clock

    def insert(self, line: int, dirty: bool) -> tuple[int, int] | None:
        """Insert a line that is not present; return the evicted ``(line, dirty)`` if any."""
        s = self.data[line & self.mask]
        victim = None
        if len(s) >= self.ways:
            vline = min(s, key=lambda k: s[k][1])
            victim = (vline, s.pop(vline)[0])
        self.clock += 1
        s[line] = [1 if dirty else 0, self.clock]
        return victim

    def remove(self, line: int) -> list[int] | None:
        return self.data[line & self.mask].pop(line, None)
