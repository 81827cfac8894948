"""Where a runtime's application data lives: its PM range, and the DRAM copy some runtimes run
transactions on (DUDETx's shadow, NV-HTM's working snapshot)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import PmsimError


class AppData:
    """The application data's homes in PM, ``[_data_lo, _data_hi)`` (static objects and the
    heap): the runtime's constructor sets both."""

    _data_lo: int = 0
    _data_hi: int = 0

    def _is_home(self, addr: int) -> bool:
        """Whether ``addr`` is an aligned word of application data."""
        return not addr & 7 and self._data_lo <= addr < self._data_hi


class DramShadow(AppData):
    """Application data with a DRAM copy at a fixed offset ``_off`` (set by the constructor; 0:
    no copy, the homes themselves) on which transactions run."""

    _off: int = 0
    m: Any
    name: str

    def _shadow(self, addr: int, n: int) -> int:
        """The DRAM address of ``n`` words of application data at ``addr``."""
        if addr & 7 or addr < self._data_lo or addr + 8 * n > self._data_hi:
            raise PmsimError(f"{self.name}: [{addr:#x}, {addr + 8 * n:#x}) is not application "
                             "data of this layout (a static object or a heap block)")
        return addr + self._off

    def _home(self, saddr: int) -> int:
        """The home in PM of the DRAM word at ``saddr`` (the inverse of :meth:`_shadow`)."""
        return saddr - self._off

    def _fill_shadow(self) -> None:
        """The copy after a restart: the data's homes (untimed)."""
        if self._off:
            mem = self.m.engine.mem
            r, w = mem.locate(self._data_lo + self._off)
            n = (self._data_hi - self._data_lo) // 8
            mem.arrays[r][w: w + n] = self.m.pm_words(self._data_lo, n)

    def init_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        """Initial data at its home and in the copy (untimed)."""
        for i, v in enumerate(values):
            a = self.field_addr(obj, field + i)  # type: ignore[attr-defined]
            self.m.poke(a, v)
            self.m.poke(self._shadow(a, 1), v)


__all__ = ["AppData", "DramShadow"]
