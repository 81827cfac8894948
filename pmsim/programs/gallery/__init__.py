"""Classic persistent structures written as PM programs, each with deliberately broken variants.

:data:`GALLERY` maps a structure's name to its :class:`Exhibit`: the correct class, its broken
variants and the campaign that tests them. Every correct one fuzzes clean (with its model and
with the robustness oracle, in PDOM-1 and PDOM-2); every broken one is killed by both oracles
in PDOM-1. The bugs are the kinds that published PM bug finders report (Jaaru, PSan, Witcher):
a pointer published before its target is persistent, a commit token persisted together with
its payload, a counter and an entry persisted out of order, a two-flag move that a crash can
lose, an in-place shift whose stores were trusted to persist in line order, a segment split that
is not atomic (the directory published before the new segment persisted), and a lock-free log
whose helping thread does not persist what it read (found only under other interleavings:
schedule exploration).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..api import PMProgram
from .exthash import ExtHash, ExtHashEarlyDirectory
from .fastleaf import FastLeaf, FastLeafBatched
from .lflog import LFLog, LFLogNoHelp
from .plog import PLog, PLogUnorderedLength
from .pstack import PStack, PStackEarlyPublish
from .slothash import SlotHash, SlotHashOneFlush
from .twobins import TwoBins, TwoBinsUnordered


@dataclass(frozen=True)
class Exhibit:
    """One structure: its correct class, its broken variants and the campaign that tests them
    (FuzzConfig fields; a concurrent structure needs threads and schedule exploration)."""

    correct: type[PMProgram]
    broken: tuple[type[PMProgram], ...]
    config: dict[str, Any] = field(default_factory=dict)


GALLERY: dict[str, Exhibit] = {
    "slothash": Exhibit(SlotHash, (SlotHashOneFlush,), {"txs": 20}),
    "pstack": Exhibit(PStack, (PStackEarlyPublish,), {"txs": 20}),
    "plog": Exhibit(PLog, (PLogUnorderedLength,), {"txs": 20}),
    "twobins": Exhibit(TwoBins, (TwoBinsUnordered,), {"txs": 20}),
    "fastleaf": Exhibit(FastLeaf, (FastLeafBatched,), {"txs": 20}),
    "exthash": Exhibit(ExtHash, (ExtHashEarlyDirectory,), {"txs": 20}),
    "lflog": Exhibit(LFLog, (LFLogNoHelp,), {"txs": 6, "threads": 2, "schedules": 8}),
}

__all__ = ["GALLERY", "Exhibit", "ExtHash", "ExtHashEarlyDirectory", "FastLeaf", "FastLeafBatched",
           "LFLog", "LFLogNoHelp", "PLog", "PLogUnorderedLength", "PStack", "PStackEarlyPublish",
           "SlotHash", "SlotHashOneFlush", "TwoBins", "TwoBinsUnordered"]
