"""Persistency litmus tests: a small text format, an exhaustive TSO interpreter and a checker.

A test (one ``.litmus`` file, or a string)::

    name L12
    mode line                 # order mode(s): line, px86 (several: each must give `expect`)
    domain pdom1              # persistence domain(s): pdom0, pdom1, pdom2
    lines x=0 y=64            # optional byte addresses (8-aligned); default: a line each
    T0: x:=1
    T1: r:=x; if r=1 { clflushopt x; sfence; y:=1 }
    crash anywhere            # or: crash end
    observe x y               # default: every location, in order of appearance
    order x -> y              # optional hardware persist order (several: x -> y, z -> w)
    expect (0,0) (1,0) (1,1)  # the exact set of surviving images of the observed locations
    forbid (0,1)              # optional: images that must not survive (documentation + check)

Numbers are decimal or ``0x`` hex, values 64-bit unsigned (0..2**64-1), addresses below 1 MiB
(a test's images are allocated in full).

Instructions: ``x:=v`` and ``x:=r`` (store a value or a register), ``movnt x:=v``, ``r:=x``
(load), ``clflush x``, ``clflushopt x``, ``clwb x``, ``sfence``, ``mfence``, ``pcommit``,
``xchg x,v`` (locked exchange; ``r:=xchg x,v`` keeps the old value), ``if r=v { ... }`` and
``if r!=v { ... }``. Registers are the names ``r``, ``r0``, ``r1``, ... and those listed on a
``regs`` line; every other name is a PM location. Every location starts at 0.

``order a -> b`` declares a hardware persist-ordering rule of the kind hardware logging designs
add (LOC: a log tag persists only after its data line): every store to ``b`` persists only
after the stores to ``a`` that precede it in the execution. It reaches the crash model as
persist-order edges (:class:`OrderEdges`, an edge provider), from the latest store to ``a``
before each store to ``b`` (in ``line`` mode that covers the earlier stores of ``a``'s line
too, since a line persists in store order). The hardware also keeps a thread's stores to
``b`` behind its own earlier stores to ``a``: a store to ``b`` does not leave the store buffer
or the write-combining buffer while an earlier non-temporal store of its thread to ``a``
waits in the write-combining buffer (as the plain-store self-snoop rule below).

The runner explores every interleaving with x86-TSO store buffers: a per-thread buffer holds
stores, non-temporal stores, flushes, pcommits and sfences, in program order; loads forward
from their own buffer and may run ahead of it; mfence and xchg wait for the buffer to drain. A
buffered item's trace event is emitted when it leaves the buffer, where a flush takes effect:
it covers the stores to its line that are visible then. Items leave oldest first, except that
a ``clflushopt`` or ``clwb`` may leave ahead of older items, unless one of them is

* a store, non-temporal store or flush (of any kind) to the flush's own cache line,
* an ``sfence`` or a ``pcommit``.

Source: Intel SDM vol. 3 8.2.2 ("a write may be reordered with an execution of CLFLUSHOPT that
flushes a line other than the one being written"; CLFLUSHOPTs of different lines, and a
CLFLUSHOPT and a CLFLUSH of different lines, may be reordered; writes and CLFLUSHOPT cannot
pass an earlier SFENCE or MFENCE) and the CLFLUSHOPT / CLWB pages (ordered with older writes
to the same line, fences and locked read-modify-writes; CLWB is ordered like CLFLUSHOPT);
Px86 orders them the same way. ``mfence`` and locked operations are not buffered: they wait
for the buffer, so nothing younger passes them. The current SDM no longer describes the
withdrawn ``pcommit``; a flush stays behind an older one, as behind a fence (row F2p). Two
flushes of one line keep their order (the SDM orders CLFLUSHOPTs of one line). Everything
else stays in order, on purpose and without losing images:

* ``clflush`` is ordered with every write (SDM), so it never passes an older store. It may
  pass an older clflushopt / clwb of another line on hardware; keeping it behind loses
  nothing, because a flush leaving *later* only covers more stores, and the clflushopt can
  always leave just before it instead (its own blockers block the clflush too).
* Younger stores do not pass a flush. The SDM lets a younger store to another line pass a
  clflushopt, but that only delays the flush relative to the store, which again covers more:
  each such execution has one with the flush leaving just before the store, with no fewer
  images. So only *how early* a flush may leave matters, and the rule above is the earliest.
* An older non-temporal store of the same line blocks the flush while in the store buffer,
  not once it sits in the write-combining buffer. The flush cannot cover a store that is not
  yet visible, and the drained store is persistent (PDOM-1) or accepted (PDOM-0) where it
  drains, and every fence that completes the flush waits for that buffer, so the images are
  the same either way.
* Loads are not buffered: a flush enters the buffer after its thread's older loads ran, so a
  flush after a load of its line covers the store that the load read (L12).

Non-temporal stores are weakly ordered (Intel SDM vol. 3 8.2.2), and ``nt`` chooses how:

* ``drain`` (default, exact): a non-temporal store leaves the store buffer into the thread's
  write-combining buffer, which drains in any order (in order per location) and is not
  snooped: the store becomes visible, and its NTSTORE event (``aux`` 1, *drained*) is emitted,
  when it leaves that buffer. A later plain store of the thread to the same line waits for the
  line's non-temporal stores to drain (self-snoop); a fence waits for the whole buffer.
  Under ``order a -> b`` a store to ``b`` waits for the thread's buffered stores to ``a``.
* ``issue``: the store becomes visible and its NTSTORE event (``aux`` 0, *issued*) is emitted
  when it leaves the store buffer, as the simulated machine records it; the crash model then
  lets it persist any time up to its thread's next fence. This over-approximates when another
  thread reads the store's value (reading it proves it drained), so it is for exercising the
  model on machine-like traces.

Each distinct persistence trace then goes through :class:`~crashfuzz.states.CrashModel`, and
the result is the set of observed images over every crash point (``anywhere``) or the final
one (``end``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from pmsim.config import ATOM, DOMAINS, LINE
from pmsim.errors import ConfigError
from pmsim.trace import Ev, Trace

from .model import ORDERS, Edge, TraceIndex
from .states import CrashModel

MAX_STATES = 200_000
"""Most interpreter states (thread positions, registers, buffers, memory, trace) one test may
explore, and most crash states it may check (summed over its traces' crash points): the
built-in suite's largest test needs under a thousand of each, and 200,000 take seconds. A
program past it has too many interleavings, or too many unordered stores, to enumerate:
:class:`LitmusTooLarge` says so (``max_states=`` / ``crashfuzz litmus --max-states`` raise the
bound)."""


class LitmusTooLarge(ConfigError):
    """A litmus program has more interleavings or crash states than the bound allows."""

    def __init__(self, name: str, limit: int, what: str = "interleavings exceed") -> None:
        super().__init__(f"litmus test {name!r} is too large: its {what} {limit:,} states (the "
                         "bound, max_states); use fewer threads, stores or instructions, or "
                         "raise the bound with crashfuzz litmus --max-states N")


Image = tuple[int, ...]
Operand = int | str
_REG = re.compile(r"r\d*$")
_TOKEN = re.compile(r"\s*(?:(:=|!=|[;{}=,])|([A-Za-z_][A-Za-z_0-9]*)|"
                    r"(-?0[xX][0-9a-fA-F]+|-?\d+)(?![A-Za-z_0-9]))")
_BADNUM = re.compile(r"\s*(-?\d[A-Za-z_0-9]*)")
_ORDER = re.compile(r"([A-Za-z_][A-Za-z_0-9]*)\s*->\s*([A-Za-z_][A-Za-z_0-9]*)$")
U64 = (1 << 64) - 1
MAX_ADDRESS = 1 << 20
"""Locations live below 1 MiB: a test's images are allocated in full."""
INSTRUCTIONS = ("x:=v, x:=r, r:=x, movnt x:=v, torn x:=v, clflush x, clflushopt x, clwb x, "
                "sfence, mfence, pcommit, xchg x,v, r:=xchg x,v, if r=v { ... }, if r!=v { ... }")
LOW_HALF = (1 << 32) - 1
"""``torn x:=v`` stores the low 32 bits of ``v`` (into the thread's view of ``x``), then all of
``v``: the two halves a compiler may split a 64-bit store into (see docs/model.md)."""


def _int(text: str, where: str, what: str = "value") -> int:
    """A decimal or 0x-hex number in 0..2**64-1, or a ConfigError naming it."""
    t = text.strip()
    try:
        v = int(t, 16) if re.fullmatch(r"-?0[xX][0-9a-fA-F]+", t) else int(t, 10)
    except ValueError:
        raise ConfigError(f"{where}: {what} {t!r} is not a number; write decimal (42) or hex "
                          "(0x2a)") from None
    if not 0 <= v <= U64:
        raise ConfigError(f"{where}: {what} {t} does not fit 64 bits; use 0..2**64-1 "
                          f"(0..{U64})")
    return v


@dataclass(frozen=True)
class LitmusTest:
    """A parsed litmus test (see the module doc for the text format)."""

    name: str
    threads: tuple[tuple[tuple, ...], ...]
    locations: dict[str, int]
    observe: tuple[str, ...]
    expect: frozenset[Image]
    modes: tuple[str, ...] = ("line",)
    domains: tuple[str, ...] = ("pdom1",)
    crash: str = "anywhere"
    forbid: frozenset[Image] = frozenset()
    order: tuple[tuple[str, str], ...] = ()
    source: str = field(default="", repr=False, compare=False)


@dataclass
class LitmusResult:
    """Observed images per ``(mode, domain)``, plus how much was explored."""

    test: LitmusTest
    images: dict[tuple[str, str], frozenset[Image]]
    traces: int
    states: int

    def mismatches(self) -> list[str]:
        """One readable line per configuration whose image set differs from the expectation."""
        out = []
        for (mode, dom), got in sorted(self.images.items()):
            missing = sorted(self.test.expect - got)
            extra = sorted(got - self.test.expect)
            bad = sorted(got & self.test.forbid)
            if missing or extra or bad:
                out.append(f"{self.test.name} [{mode}, {dom}] over ({', '.join(self.test.observe)}): "
                           f"got {_fmt(got)}; missing {_fmt(missing)}; unexpected {_fmt(extra)}"
                           + (f"; forbidden but present {_fmt(bad)}" if bad else ""))
        return out


def _fmt(images: object) -> str:
    items = sorted(images)  # type: ignore[call-overload]
    return " ".join("(" + ",".join(str(v) for v in im) + ")" for im in items) or "none"


# -- parsing -------------------------------------------------------------------------------------
class _Parser:
    def __init__(self, text: str, where: str, regs: set[str]) -> None:
        self.toks: list[str] = []
        self.where = where
        self.regs = regs
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                bad = _BADNUM.match(text, pos)
                if bad:
                    raise ConfigError(f"{where}: {bad.group(1)!r} is not a number; write decimal "
                                      "(42) or hex (0x2a)")
                raise ConfigError(f"{where}: cannot read {text[pos:pos + 20]!r}; instructions look "
                                  "like `x:=1; clwb x; sfence; if r=1 { y:=r }`")
            self.toks.append(m.group(m.lastindex or 0))
            pos = m.end()
        self.i = 0

    def is_reg(self, name: str) -> bool:
        return name in self.regs or bool(_REG.match(name))

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise ConfigError(f"{self.where}: expected {want or 'more input'!r}, found "
                              f"{tok if tok is not None else 'end of line'!r}")
        self.i += 1
        return tok

    def name(self) -> str:
        tok = self.take()
        if not re.match(r"[A-Za-z_]", tok):
            raise ConfigError(f"{self.where}: expected a name, found {tok!r}")
        return tok

    def operand(self) -> Operand:
        tok = self.take()
        if re.match(r"-?\d", tok):
            return _int(tok, self.where)
        if self.is_reg(tok):
            return tok
        raise ConfigError(f"{self.where}: {tok!r} is a location; a stored value must be a number "
                          "or a register (r, r1, ... or one listed on a `regs` line)")

    def location(self) -> str:
        n = self.name()
        if self.is_reg(n):
            raise ConfigError(f"{self.where}: {n!r} is a register, not a memory location")
        return n

    def block(self, closing: str | None) -> tuple[tuple, ...]:
        out: list[tuple] = []
        while True:
            tok = self.peek()
            if tok is None or tok == closing:
                break
            if tok == ";":
                self.take()
                continue
            ins = self.instr()
            if ins[0] == "torn":  # the compiler's two 32-bit halves, low then high
                out += [("pstore", ins[1], ins[2], LOW_HALF), ("store", ins[1], ins[2])]
            else:
                out.append(ins)
        return tuple(out)

    def instr(self) -> tuple:
        head = self.name()
        if head in ("sfence", "mfence", "pcommit"):
            return (head,)
        if head in ("clflush", "clflushopt", "clwb"):
            return ("flush", head, self.location())
        if head == "movnt":
            loc = self.location()
            self.take(":=")
            return ("ntstore", loc, self.operand())
        if head == "torn":
            loc = self.location()
            self.take(":=")
            return ("torn", loc, self.operand())
        if head == "xchg":
            return self._xchg(None)
        if head == "if":
            reg = self.name()
            if not self.is_reg(reg):
                raise ConfigError(f"{self.where}: `if {reg}...` tests a register (r, r1, ... or "
                                  "one listed on a `regs` line), not a location; load it first "
                                  f"(r:={reg})")
            op = self.take()
            if op not in ("=", "!="):
                raise ConfigError(f"{self.where}: a condition is `if r=v` or `if r!=v`, not {op!r}")
            val = self.operand()
            self.take("{")
            body = self.block("}")
            self.take("}")
            return ("if", reg, op, val, body)
        if self.peek() != ":=":
            nxt = self.peek()
            shown = f"{head} {nxt}" if nxt not in (None, ";") else head
            raise ConfigError(f"{self.where}: unknown instruction {shown!r}; instructions are "
                              f"{INSTRUCTIONS}")
        self.take(":=")
        if self.is_reg(head):
            if self.peek() == "xchg":
                self.take()
                return self._xchg(head)
            return ("load", head, self.location())
        return ("store", head, self.operand())

    def _xchg(self, reg: str | None) -> tuple:
        loc = self.location()
        self.take(",")
        return ("xchg", loc, self.operand(), reg)


def _locations_of(prog: tuple[tuple, ...], out: list[str]) -> None:
    for ins in prog:
        if ins[0] == "if":
            _locations_of(ins[4], out)
            continue
        loc = {"flush": 2, "ntstore": 1, "store": 1, "pstore": 1, "load": 2, "xchg": 1}.get(ins[0])
        if loc is not None and ins[loc] not in out:
            out.append(ins[loc])


def _images(text: str, where: str) -> list[Image]:
    text = text.strip()
    if not text:
        return []
    if "(" not in text and ")" not in text:
        return [(_int(v, where, "image value"),) for v in text.replace(",", " ").split()]
    found = re.findall(r"\(([^()]*)\)", text)
    if re.sub(r"\([^()]*\)", "", text).strip():
        raise ConfigError(f"{where}: images are written (0,1) (1,1) ...; cannot read {text!r}")
    return [tuple(_int(v, where, "image value") for v in f.replace(",", " ").split())
            for f in found]


def parse_litmus(text: str, name: str | None = None) -> LitmusTest:
    """Parse a test from its text (see the module doc)."""
    fields: dict[str, str] = {}
    progs: dict[int, str] = {}
    expect: list[Image] = []
    forbid: list[Image] = []
    orders: list[tuple[str, str]] = []
    label = name or "<litmus>"
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{label}:{no}"
        m = re.match(r"T(\d+)\s*:(.*)$", line)
        if m:
            t = int(m.group(1))
            progs[t] = (progs.get(t, "") + ";" + m.group(2)).strip(";")
            continue
        key, _, rest = line.partition(" ")
        if key == "expect":
            expect += _images(rest, where)
        elif key == "forbid":
            forbid += _images(rest, where)
        elif key == "order":
            orders.append((rest, where))
        elif key in ("name", "mode", "domain", "lines", "crash", "observe", "regs"):
            fields[key] = (fields.get(key, "") + " " + rest).strip()
        else:
            raise ConfigError(f"{where}: unknown line {key!r}; a test has name, mode, domain, lines, "
                              "regs, T0:/T1: programs, crash, observe, order, expect and forbid "
                              "lines")
    label = fields.get("name", label)
    if not progs:
        raise ConfigError(f"{label}: no thread programs (write `T0: x:=1; ...`)")
    if sorted(progs) != list(range(len(progs))):
        raise ConfigError(f"{label}: threads must be numbered T0, T1, ... without gaps")
    regs = set(fields.get("regs", "").split())
    threads = tuple(_Parser(progs[t], f"{label} T{t}", regs).block(None) for t in sorted(progs))
    locs: list[str] = []
    addrs: dict[str, int] = {}
    for item in fields.get("lines", "").split():
        loc, _, a = item.partition("=")
        if not a or not loc:
            raise ConfigError(f"{label}: `lines` entries are name=byte-address with 8-byte aligned "
                              f"addresses, got {item!r}")
        addr = _int(a, f"{label}: `lines` {item!r}", "address")
        if addr % ATOM or addr >= MAX_ADDRESS:
            raise ConfigError(f"{label}: `lines` entries are name=byte-address with 8-byte aligned "
                              f"addresses below {MAX_ADDRESS:#x} (1 MiB), got {item!r}")
        addrs[loc] = addr
        locs.append(loc)
    for prog in threads:
        _locations_of(prog, locs)
    observe = tuple(fields["observe"].split()) if "observe" in fields else tuple(locs)
    for loc in observe:
        if loc not in locs:
            locs.append(loc)
    nxt = max(addrs.values(), default=-LINE) // LINE * LINE + LINE
    for loc in locs:
        if loc not in addrs:
            addrs[loc] = nxt
            nxt += LINE
    if len(set(addrs.values())) != len(addrs):
        raise ConfigError(f"{label}: two locations share an address in `lines`")
    modes = tuple(fields.get("mode", "line").split())
    domains = tuple(fields.get("domain", "pdom1").split())
    for md in modes:
        if md not in ORDERS:
            raise ConfigError(f"{label}: unknown mode {md!r}; use line or px86")
    for d in domains:
        if d not in DOMAINS:
            raise ConfigError(f"{label}: unknown domain {d!r}; use one of {', '.join(DOMAINS)}")
    crash = fields.get("crash", "anywhere")
    if crash not in ("anywhere", "end"):
        raise ConfigError(f"{label}: crash must be 'anywhere' or 'end', got {crash!r}")
    for im in expect + forbid:
        if len(im) != len(observe):
            raise ConfigError(f"{label}: image {im} has {len(im)} values but {len(observe)} "
                              f"locations are observed ({' '.join(observe)})")
    if not expect:
        raise ConfigError(f"{label}: no `expect` line: list the exact set of surviving images")
    pairs = _order_pairs(orders, locs, regs)
    return LitmusTest(label, threads, addrs, observe, frozenset(expect), modes, domains, crash,
                      frozenset(forbid), pairs, text)


def _order_pairs(lines: list[tuple[str, str]], locs: list[str], regs: set[str]
                 ) -> tuple[tuple[str, str], ...]:
    """The ``order a -> b`` pairs of a test, checked against its locations (duplicates once)."""
    out: list[tuple[str, str]] = []
    for text, where in lines:
        items = [t.strip() for t in text.split(",")]
        if not text.strip() or not all(items):
            raise ConfigError(f"{where}: `order` lists pairs `a -> b` separated by commas, got "
                              f"{text.strip()!r}")
        for item in items:
            m = _ORDER.match(item)
            if not m:
                raise ConfigError(f"{where}: cannot read the order pair {item!r}; write `a -> b` "
                                  "(b persists only after the earlier stores to a)")
            a, b = m.groups()
            for n in (a, b):
                if n in regs or _REG.match(n):
                    raise ConfigError(f"{where}: {n!r} in `order {item}` is a register, not a "
                                      "memory location")
                if n not in locs:
                    raise ConfigError(f"{where}: unknown location {n!r} in `order {item}`; the "
                                      f"test's locations are {', '.join(locs)}")
            if a == b:
                raise ConfigError(f"{where}: `order {item}` orders a location after itself (its "
                                  "stores persist in order anyway); name two locations")
            if (a, b) not in out:
                out.append((a, b))
    return tuple(out)


@dataclass(frozen=True)
class OrderEdges:
    """The edge provider of a test's ``order`` pairs, given as byte addresses: for every store
    to ``b`` and each pair ``(a, b)``, an edge from the latest earlier store to ``a`` (when it
    is in another chain; within one chain the store order already holds)."""

    pairs: tuple[tuple[int, int], ...]
    __name__ = "litmus_order"

    def __call__(self, ix: TraceIndex, domain: str) -> list[Edge]:
        out: list[Edge] = []
        word = ix.st_word
        for a, b in self.pairs:
            wa, wb = (a - ix.trace.pm_base) // ATOM, (b - ix.trace.pm_base) // ATOM
            rows_a = np.nonzero(word == wa)[0]
            ev_a = ix.st_event[rows_a]
            for r in np.nonzero(word == wb)[0].tolist():
                before = rows_a[ev_a < ix.st_event[r]]
                if not len(before):
                    continue
                x = int(before[np.argmax(ix.st_event[before])])
                if ix.st_chain[x] != ix.st_chain[r]:
                    out.append(Edge(int(ix.st_chain[x]), int(ix.st_pos[x]) + 1,
                                    int(ix.st_chain[r]), int(ix.st_pos[r]) + 1))
        return out


def order_edges(test: LitmusTest) -> list[OrderEdges]:
    """The edge providers a test's ``order`` pairs need (none without pairs)."""
    if not test.order:
        return []
    return [OrderEdges(tuple((test.locations[a], test.locations[b]) for a, b in test.order))]


def load_litmus(path: str | Path) -> LitmusTest:
    """Parse a ``.litmus`` file (UTF-8 text)."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"litmus file {str(p)!r} does not exist; give the path of a .litmus "
                          "file (or no file for the built-in suite)")
    if p.is_dir():
        found = sorted(q.name for q in p.glob("*.litmus"))[:3]
        hint = (f", e.g. {str(p / found[0])!r}" if found else "")
        raise ConfigError(f"litmus file {str(p)!r} is a directory; give .litmus files{hint} "
                          f"(a shell glob: {str(p / '*.litmus')!r})")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"litmus file {str(p)!r} is not UTF-8 text ({e.reason} at byte "
                          f"{e.start}); save it as UTF-8") from None
    except OSError as e:
        raise ConfigError(f"cannot read litmus file {str(p)!r}: {e.strerror or e}") from None
    return parse_litmus(text, p.stem)


def litmus_suite() -> list[LitmusTest]:
    """The tests shipped with crashfuzz (``crashfuzz/litmus/*.litmus``), by name."""
    root = resources.files("crashfuzz") / "litmus"
    tests = [parse_litmus(f.read_text(), f.name.removesuffix(".litmus"))
             for f in root.iterdir() if f.name.endswith(".litmus")]
    return sorted(tests, key=lambda t: t.name)


# -- the interpreter -----------------------------------------------------------------------------
def _flatten(prog: tuple[tuple, ...], out: list[tuple]) -> None:
    """Instructions with ``if`` turned into a conditional jump past its body."""
    for ins in prog:
        if ins[0] == "if":
            at = len(out)
            out.append(())
            _flatten(ins[4], out)
            out[at] = ("skip_unless", ins[1], ins[2], ins[3], len(out))
        else:
            out.append(ins)


_FLUSH_EV = {"clflush": Ev.CLFLUSH, "clflushopt": Ev.CLFLUSHOPT, "clwb": Ev.CLWB}
NT_MODES = ("drain", "issue")
Row = tuple[int, int, int, int, int]


def _set(tup: tuple, i: int, v: object) -> tuple:
    return tup[:i] + (v,) + tup[i + 1:]


OPT_FLUSHES = ("clflushopt", "clwb")
"""The flushes that may leave the store buffer ahead of older items (see the module doc)."""


def _overtakes(item: tuple, older: tuple[tuple, ...], line: Callable[[str], int]) -> bool:
    """Whether store-buffer ``item`` may leave ahead of every item in ``older``: it is a
    clflushopt / clwb and none of them is a store, non-temporal store or flush to its line, an
    sfence or a pcommit (Intel SDM vol. 3 8.2.2 and the CLFLUSHOPT / CLWB pages)."""
    if item[0] != "flush" or item[1] not in OPT_FLUSHES:
        return False
    own = line(item[2])
    for o in older:
        if o[0] in ("sfence", "pcommit"):
            return False
        if line(o[2] if o[0] == "flush" else o[1]) == own:
            return False
    return True


def executions(test: LitmusTest, nt: str = "drain", max_states: int = MAX_STATES
               ) -> set[tuple[Row, ...]]:
    """Every distinct persistence trace (rows ``(kind, tid, addr, value, aux)``) of the test.

    ``nt``: how non-temporal stores behave, ``drain`` or ``issue`` (see the module doc).
    ``max_states``: :class:`LitmusTooLarge` past this many explored states.
    """
    if nt not in NT_MODES:
        raise ConfigError(f"unknown non-temporal store mode {nt!r}; use 'drain' (write-combining "
                          "buffer, exact) or 'issue' (visible when issued, as the machine traces)")
    drain = nt == "drain"
    after = set(test.order)  # (a, b): a thread's stores to b wait for its buffered ones to a
    progs = []
    for p in test.threads:
        flat: list[tuple] = []
        _flatten(p, flat)
        progs.append(tuple(flat))
    addr = test.locations
    locs = sorted(addr)
    slot = {loc: i for i, loc in enumerate(locs)}
    nthreads = len(progs)
    empty = tuple(() for _ in progs)
    # state: pcs, registers, store buffers, write-combining buffers, memory, trace so far
    start = (tuple(0 for _ in progs), empty, empty, empty, tuple(0 for _ in locs), ())
    traces: set[tuple[Row, ...]] = set()
    seen: set[tuple] = set()
    stack = [start]

    def val(regs: tuple, op: Operand) -> int:
        return op if isinstance(op, int) else dict(regs).get(op, 0)

    def line(loc: str) -> int:
        return addr[loc] // LINE

    def view(t: int, loc: str) -> int:
        """What thread ``t`` reads at ``loc``: its newest buffered store, else memory."""
        v = mem[slot[loc]]
        for w in wcs[t]:
            if w[0] == loc:
                v = w[1]
        for b in bufs[t]:
            if b[0] in ("store", "ntstore") and b[1] == loc:
                v = b[2]
        return v

    while stack:
        st = stack.pop()
        if st in seen:
            continue
        seen.add(st)
        if len(seen) > max_states:
            raise LitmusTooLarge(test.name, max_states, "interleavings exceed")
        pcs, regs, bufs, wcs, mem, tr = st
        done = True
        for t in range(nthreads):
            # a clflushopt / clwb leaves ahead of the older items it is not ordered with
            for i in range(1, len(bufs[t])):
                item = bufs[t][i]
                if _overtakes(item, bufs[t][:i], line):
                    nb = _set(bufs, t, bufs[t][:i] + bufs[t][i + 1:])
                    ev = (int(_FLUSH_EV[item[1]]), t, addr[item[2]] // LINE * LINE, 0, 0)
                    stack.append((pcs, regs, nb, wcs, mem, tr + (ev,)))
            # the oldest store-buffer item of thread t leaves the buffer
            if bufs[t]:
                done = False
                item = bufs[t][0]
                nwc, nmem, ev, blocked = wcs, mem, None, False
                if item[0] == "store":
                    # a plain store waits for its thread's non-temporal stores to its line, and
                    # to the locations ordered before it
                    blocked = any(line(w[0]) == line(item[1]) or (w[0], item[1]) in after
                                  for w in wcs[t])
                    nmem = _set(mem, slot[item[1]], item[2])
                    ev = (int(Ev.STORE), t, addr[item[1]], item[2], 0)
                elif item[0] == "ntstore":
                    if drain:
                        nwc = _set(wcs, t, wcs[t] + (item[1:],))
                    else:
                        nmem = _set(mem, slot[item[1]], item[2])
                        ev = (int(Ev.NTSTORE), t, addr[item[1]], item[2], 0)
                elif item[0] == "flush":
                    ev = (int(_FLUSH_EV[item[1]]), t, addr[item[2]] // LINE * LINE, 0, 0)
                elif item[0] == "sfence":
                    blocked = bool(wcs[t])  # waits for the write-combining buffer
                    ev = (int(Ev.SFENCE), t, 0, 0, 0)
                else:
                    ev = (int(Ev.PCOMMIT), t, 0, 0, 0)
                if not blocked:
                    nb = _set(bufs, t, bufs[t][1:])
                    stack.append((pcs, regs, nb, nwc, nmem, tr + ((ev,) if ev else ())))
            # any write-combining entry that is the oldest for its location drains
            for i, (loc, v) in enumerate(wcs[t]):
                done = False
                if any(w[0] == loc or (w[0], loc) in after for w in wcs[t][:i]):
                    continue
                nwc = _set(wcs, t, wcs[t][:i] + wcs[t][i + 1:])
                ev = (int(Ev.NTSTORE), t, addr[loc], v, 1)
                stack.append((pcs, regs, bufs, nwc, _set(mem, slot[loc], v), tr + (ev,)))
            if pcs[t] >= len(progs[t]):
                continue
            done = False
            ins = progs[t][pcs[t]]
            npcs = _set(pcs, t, pcs[t] + 1)
            op = ins[0]
            if op in ("store", "ntstore"):
                item = (op, ins[1], val(regs[t], ins[2]))
            elif op == "pstore":  # the low half merged into the thread's view of the word
                mask = ins[3]
                item = ("store", ins[1], (view(t, ins[1]) & ~mask) | (val(regs[t], ins[2]) & mask))
            elif op == "flush":
                item = ins
            elif op in ("pcommit", "sfence"):
                item = (op,)
            else:
                item = None
            if item is not None:
                stack.append((npcs, regs, _set(bufs, t, bufs[t] + (item,)), wcs, mem, tr))
            elif op == "load":
                v = view(t, ins[2])
                r = tuple(sorted({**dict(regs[t]), ins[1]: v}.items()))
                stack.append((npcs, _set(regs, t, r), bufs, wcs, mem, tr))
            elif op == "skip_unless":
                rv = dict(regs[t]).get(ins[1], 0)
                holds = (rv == val(regs[t], ins[3])) == (ins[2] == "=")
                jump = pcs[t] + 1 if holds else ins[4]
                stack.append((_set(pcs, t, jump), regs, bufs, wcs, mem, tr))
            elif bufs[t] or wcs[t]:
                continue  # mfence and xchg wait for both buffers to drain
            elif op == "mfence":
                ev = (int(Ev.MFENCE), t, 0, 0, 0)
                stack.append((npcs, regs, bufs, wcs, mem, tr + (ev,)))
            elif op == "xchg":
                i = slot[ins[1]]
                old, new = mem[i], val(regs[t], ins[2])
                r = regs[t] if ins[3] is None else tuple(sorted({**dict(regs[t]), ins[3]: old}.items()))
                ev = (int(Ev.RMW), t, addr[ins[1]], new, 1)
                stack.append((npcs, _set(regs, t, r), bufs, wcs, _set(mem, i, new), tr + (ev,)))
        if done:
            traces.add(tr)
    return traces


def run_litmus(test: LitmusTest | str, backend: str | None = None, points: str = "reduced",
               nt: str = "drain", max_states: int = MAX_STATES) -> LitmusResult:
    """Run a test (a LitmusTest, or its text) on every ``(mode, domain)`` it names.

    ``points``: ``reduced`` or ``every`` (both complete for ``crash anywhere``). ``nt``: how
    non-temporal stores reach the trace, ``drain`` or ``issue`` (see the module doc).
    ``max_states``: see :data:`MAX_STATES`.
    """
    if isinstance(test, str):
        test = parse_litmus(test)
    traces = executions(test, nt, max_states)
    size = (max(test.locations.values()) // LINE + 1) * LINE
    words = [test.locations[loc] // ATOM for loc in test.observe]
    images: dict[tuple[str, str], frozenset[Image]] = {}
    nstates = 0
    for mode in test.modes:
        for dom in test.domains:
            got: set[Image] = set()
            for rows in traces:
                tr = Trace.build(list(rows), size=size)
                model = CrashModel(tr, order=mode, domain=dom, backend=backend,
                                   extra_edge_providers=order_edges(test))
                pts = [model.point(len(tr))] if test.crash == "end" else model.points(points)
                for p in pts:
                    space = model.space(p)
                    nstates += space.count
                    if nstates > max_states:
                        raise LitmusTooLarge(test.name, max_states, "crash images exceed")
                    for _, img in space.hashed_images(distinct=True):
                        got.add(tuple(img.view(np.uint64)[words].tolist()))
            images[(mode, dom)] = frozenset(got)
    return LitmusResult(test, images, len(traces), nstates)


def check(test: LitmusTest | str, backend: str | None = None, points: str = "reduced",
          nt: str = "drain", max_states: int = MAX_STATES) -> LitmusResult:
    """Run a test and raise AssertionError listing missing and unexpected images, if any."""
    res = run_litmus(test, backend, points, nt, max_states)
    bad = res.mismatches()
    if bad:
        raise AssertionError("litmus mismatch:\n  " + "\n  ".join(bad))
    return res
