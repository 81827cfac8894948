"""Names for PM addresses, from a runtime's layout: what failure reports print instead of hex.

:class:`Labeller` maps an address to a :class:`Label` after the :class:`~.layout.Layout`:
``global header epoch``, ``descriptor T1 state``, ``alloc log T0 entry 1``, ``undo log T0
record 3 word 2 (address)``, ``static slots[2] field 1``, ``bitmap class 64B word 0``, ``heap
block 0x280 word 1``. The layout knows where each structure lies; what lies *inside* a log or
an object depends on the protocol, so each runtime family registers hooks where it is defined
(:func:`register_labels`): undo and redo walk their log records (given the memory contents,
with :func:`walk_records`), COW names its write set and wrapper words, redo its writers word.
A runtime of your own gets generic labels (``log T0 word 17``, ``static nodes[3] word 2``)
until it registers hooks for its family::

    def my_log(lab: Labeller, tid: int, word: int) -> Label:
        return Label(f"my log T{tid}", "slot", word // 2)

    register_labels("mine", log=my_log)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..config import LINE
from .descriptor import G_EPOCH, G_FINGERPRINT, G_MAGIC, H_NALLOC, H_NWSET, H_STATE, H_TAIL
from .layout import Layout

GLOBAL_WORDS = {G_MAGIC: "magic", G_FINGERPRINT: "layout fingerprint", G_EPOCH: "epoch"}
DESC_WORDS = {H_TAIL: "tail", H_NALLOC: "alloc count", H_NWSET: "write-set size",
              H_STATE: "state"}
PLURAL = {"entry": "entries"}


@dataclass(frozen=True)
class Label:
    """What an 8-byte word is: ``owner`` (a structure), optionally a numbered ``unit`` in it
    (``word 2``, ``field 0``, ``entry 1``) and a ``role`` (``checksum``, ``state``)."""

    owner: str
    unit: str = ""
    index: int | None = None
    role: str = ""

    def __str__(self) -> str:
        if self.unit and self.index is not None:
            return f"{self.owner} {self.unit} {self.index}" + (f" ({self.role})" if self.role else "")
        return f"{self.owner} {self.role}" if self.role else self.owner


LogHook = Callable[["Labeller", int, int], Label]
"""``(labeller, thread, word index in the thread's log) -> Label``."""
ObjectHook = Callable[["Labeller", str, int, int], Label]
"""``(labeller, owner such as "static slots[2]", word index in the object, object words)``."""

_HOOKS: dict[str, dict[str, Any]] = {}


def register_labels(family: str, log: LogHook | None = None, static: ObjectHook | None = None,
                    heap: ObjectHook | None = None) -> None:
    """Hooks that label the inside of a runtime family's logs, static objects and heap blocks."""
    hooks = _HOOKS.setdefault(family, {})
    for key, fn in (("log", log), ("static", static), ("heap", heap)):
        if fn is not None:
            hooks[key] = fn


class Labeller:
    """Labels addresses of one layout. ``memory(addr)`` (optional) reads a word, which log
    hooks use to find record boundaries; ``runtime`` is the runtime class (hooks read its
    switches, e.g. undo-2pb's records without a checksum)."""

    def __init__(self, layout: Layout, runtime: Any = None,
                 memory: Callable[[int], int | None] | None = None) -> None:
        self.layout = layout
        self.runtime = runtime
        self.memory = memory
        self.hooks = _HOOKS.get(layout.family, {})
        self._alog_bytes = (layout.log[0] - layout.alloc_log[0]) if layout.threads else 0

    @classmethod
    def of(cls, runtime: Any, memory: Callable[[int], int | None] | None = None) -> Labeller:
        """The labeller of a runtime instance's layout."""
        return cls(runtime.layout, type(runtime), memory)

    def read(self, addr: int) -> int | None:
        return self.memory(addr) if self.memory is not None else None

    # -- one word ----------------------------------------------------------------------------
    def label(self, addr: int) -> Label | None:
        """The label of the word at ``addr``; None outside the layout."""
        lay = self.layout
        if not lay.base <= addr < lay.end:
            return None
        a = addr & ~7
        if a < lay.base + LINE:
            w = (a - lay.base) >> 3
            return Label("global header", role=GLOBAL_WORDS.get(w, f"word {w}"))
        for t in range(lay.threads):
            d, al, lg = lay.desc[t], lay.alloc_log[t], lay.log[t]
            if d <= a < d + LINE:
                w = (a - d) >> 3
                return Label(f"descriptor T{t}", role=DESC_WORDS.get(w, f"word {w}"))
            if al <= a < al + self._alog_bytes:
                return Label(f"alloc log T{t}", "entry", (a - al) >> 3)
            if lg <= a < lg + lay.log_bytes:
                hook = self.hooks.get("log")
                return hook(self, t, (a - lg) >> 3) if hook else Label(f"log T{t}", "word",
                                                                        (a - lg) >> 3)
        for s in lay.statics:
            if s.base <= a < s.base + s.count * s.stride:
                i, off = divmod(a - s.base, s.stride)
                owner = f"static {s.name}[{i}]"
                hook = self.hooks.get("static")
                if hook:
                    return hook(self, owner, off >> 3, s.words)
                return Label(owner) if s.words == 1 else Label(owner, "field", off >> 3)
        for c in lay.heap:
            words = (c.nblocks + 63) // 64
            if c.bitmap <= a < c.bitmap + 8 * words:
                return Label(f"bitmap class {c.block}B", "word", (a - c.bitmap) >> 3)
            if c.base <= a < c.end:
                b = c.base + (a - c.base) // c.block * c.block
                owner = f"heap block {b:#x}"
                hook = self.hooks.get("heap")
                if hook:
                    return hook(self, owner, (a - b) >> 3, c.block >> 3)
                return Label(owner, "word", (a - b) >> 3)
        return Label("layout padding", "word", (a - lay.base) >> 3)

    def word(self, addr: int) -> str:
        """``addr`` as text: its label, or hex outside the layout."""
        lab = self.label(addr)
        return str(lab) if lab is not None else f"{addr:#x}"

    def words(self, addrs: Iterable[int], roles: bool = True) -> str:
        """A compact description of several words: ``undo log T0 record 3 words 0-4;
        descriptor T0 tail, state`` (without ``roles``: ``descriptor T0``)."""
        groups: dict[tuple[str, str], list[Any]] = {}
        for a in dict.fromkeys(x & ~7 for x in addrs):
            lab = self.label(a)
            if lab is None:
                groups.setdefault((f"{a:#x}", ""), [])
            elif lab.unit and lab.index is not None:
                groups.setdefault((lab.owner, lab.unit), []).append(lab.index)
            else:
                groups.setdefault((lab.owner, ""), []).append(lab.role)
        out = []
        for (owner, unit), items in groups.items():
            if not items:
                out.append(owner)
            elif unit:
                plural = PLURAL.get(unit, unit + "s") if len(items) > 1 else unit
                out.append(f"{owner} {plural} {_ranges(items)}")
            else:
                named = [r for r in dict.fromkeys(items) if r] if roles else []
                out.append(f"{owner} {', '.join(named)}" if named else owner)
        return "; ".join(out)

    _WORD = re.compile(r"\b(block|blocks|object|objects|address|addr|word|at|to)(\s+)"
                       r"(0x[0-9a-fA-F]+)\b")
    _LINE = re.compile(r"\bline\s+(0x[0-9a-fA-F]+)\b")
    _STORE = re.compile(r"\[(0x[0-9a-fA-F]+)\]")

    def annotate(self, text: str) -> str:
        """``text`` with layout addresses labelled in parentheses: a word after ``block``,
        ``object``, ``address``, ``word``, ``at`` or ``to``, or in brackets (``[0x1c8] :=``,
        as trace events print stores); the words of a cache line after ``line``."""
        def word(m: re.Match[str]) -> str:
            addr = int(m.group(m.lastindex or 0), 16)
            lab = self.label(addr)
            if lab is None or lab.owner == f"heap block {addr:#x}":
                return m.group(0)  # outside the layout, or a block's own address: nothing to add
            return m.group(0) + f" ({lab})"

        def line(m: re.Match[str]) -> str:
            a = int(m.group(1), 16) & ~(LINE - 1)
            if self.label(a) is None:
                return m.group(0)
            return m.group(0) + f" ({self.words(range(a, a + LINE, 8), roles=False)})"

        return self._STORE.sub(word, self._LINE.sub(line, self._WORD.sub(word, text)))


def _ranges(xs: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    runs: list[list[int]] = []
    for x in sorted(set(xs)):
        if runs and x == runs[-1][1] + 1:
            runs[-1][1] = x
        else:
            runs.append([x, x])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


# -- helpers for the families' hooks ----------------------------------------------------------------
def walk_records(lab: Labeller, tid: int, word: int, owner: str,
                 step: Callable[[int, int], tuple[int, str, Callable[[int], str]] | None]) -> Label:
    """Walk a log's records from its head: ``step(first word, words left)`` returns (record
    length, record kind, role of word j) or None where no valid record starts."""
    head = lab.layout.log[tid]
    left = lab.layout.log_bytes >> 3
    pos = rec = 0
    while lab.memory is not None and pos <= word:
        got = step(head + 8 * pos, left - pos)
        if got is None:
            break
        n, kind, role = got
        if word < pos + n:
            return Label(f"{owner} T{tid} record {rec}" + (f" ({kind})" if kind else ""), "word",
                         word - pos, role(word - pos))
        pos += n
        rec += 1
    return Label(f"{owner} T{tid}", "word", word)


__all__ = ["DESC_WORDS", "GLOBAL_WORDS", "Label", "Labeller", "LogHook", "ObjectHook",
           "register_labels", "walk_records"]
