"""Classic persistent structures written as PM programs, each with deliberately broken variants.

:data:`GALLERY` maps a structure's name to its correct class and its broken variants. Every
correct one fuzzes clean (with its model and with the robustness oracle, in every domain the
test suite runs); every broken one is killed by both oracles. The bugs are the kinds that
published PM bug finders report (Jaaru, PSan, Witcher): a pointer published before its target
is persistent, a commit token persisted together with its payload, a counter and an entry
persisted out of order, a two-flag move that a crash can lose.
"""

from __future__ import annotations

from ..api import PMProgram
from .plog import PLog, PLogUnorderedLength
from .pstack import PStack, PStackEarlyPublish
from .slothash import SlotHash, SlotHashOneFlush
from .twobins import TwoBins, TwoBinsUnordered

GALLERY: dict[str, tuple[type[PMProgram], tuple[type[PMProgram], ...]]] = {
    "slothash": (SlotHash, (SlotHashOneFlush,)),
    "pstack": (PStack, (PStackEarlyPublish,)),
    "plog": (PLog, (PLogUnorderedLength,)),
    "twobins": (TwoBins, (TwoBinsUnordered,)),
}

__all__ = ["GALLERY", "PLog", "PLogUnorderedLength", "PStack", "PStackEarlyPublish", "SlotHash",
           "SlotHashOneFlush", "TwoBins", "TwoBinsUnordered"]
