"""Persistent descriptor and global-header layout shared by the runtimes.

Each thread has a descriptor whose header line holds the log tail, the allocation-log count,
the write-set size (COW) and the state. A line need not persist as a prefix of its stores
(px86 order: atoms persist independently), so words that must agree carry a version tag: the
state word is ``tag << 8 | state`` and the allocation-log count ``tag << 20 | n``.
"""

from __future__ import annotations

from ..config import LINE

IDLE, RUNNING, COMMITTED, ABORTED = 0, 1, 2, 3
"""Persistent descriptor states."""

H_TAIL, H_NALLOC, H_NWSET, H_STATE = 1, 2, 3, 4
"""Word offsets in a descriptor's header line (word 0 is unused)."""
COUNT_BITS = 20

G_MAGIC, G_FINGERPRINT, G_EPOCH = 0, 1, 2
"""Word offsets in the global header line."""
MAGIC = 0x706D73696D5F5254  # "pmsim_RT"


def state_of(word: int) -> int:
    return word & 0xFF


def count_of(word: int) -> int:
    return word & ((1 << COUNT_BITS) - 1)


def lines_of(addr: int, nbytes: int) -> range:
    """Line addresses covering ``[addr, addr + nbytes)``."""
    first = addr & ~(LINE - 1)
    return range(first, addr + nbytes, LINE)
