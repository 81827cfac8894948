"""Litmus rows for Proteus's and ATOM's hardware ordering (docs/litmus-proteus.md), at three levels.

1. The rows themselves (``crashfuzz/litmus/PRO*.litmus``, ``ATOM*.litmus``) run in
   ``test_litmus.py`` (both backends, both point sets, both non-temporal modes) and are
   confirmed in ``test_litmus_brute.py`` (the brute-force machine); here their data is pinned.
2. The same rows as Proteus writes them into a trace (:mod:`pmsim.hw.proteus.proteus`): an entry's
   payload words as drained non-temporal stores, its checksum word as an issued one, the
   acknowledgement as a drained re-write of that word, the data as cached stores, the flash
   clear as drained writes restoring the slot, and O1 as the runtime's edge provider
   (:class:`~pmsim.hw.proteus.proteus.LogBeforeData`). The crash model must give each row's image set on
   both backends.
3. Tiny transaction programs on the real ``proteus`` runtimes, crashed anywhere and recovered
   (as ``test_litmus_loc.py`` does for LOC): the outcomes are pinned per row, and an
   independent enumeration (per-chain prefixes between the flush/fence bounds, filtered by O1
   pairs derived from the log layout, not from ``LogBeforeData``) must give the model's image
   set exactly. Mutants ``proteus:X1`` and ``proteus:X2`` recover a torn transaction.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

from crashfuzz.litmus import litmus_suite
from crashfuzz.model import Edge, EdgeProvider, TraceIndex
from crashfuzz.states import CrashModel
from pmsim.hw.proteus.proteus import END, EntryFormat, LogBeforeData
from pmsim.runtimes.mutation import Mutant
from pmsim.trace import Ev, Trace
from tests.crashfuzz.test_litmus_loc import (
    Outcome,
    Row,
    Run,
    Tx,
    X,
    Y,
    Z,
    _is_store,
    _rows,
    guaranteed,
    model_images,
)

SUITE = {t.name: t for t in litmus_suite()}
BOTH = ("line", "px86")
ADR = ("pdom1", "pdom2")
A3 = {(0, 0), (1, 0), (1, 1)}
A4 = {(0, 0), (1, 0), (0, 1), (1, 1)}
O2 = (("L1", "A1"), ("L2", "A2"))
ATOM2_IMAGES = {(0, 0, 0, 0), (1, 0, 0, 0), (1, 0, 1, 0), (1, 1, 0, 0), (1, 1, 1, 0), (1, 1, 0, 1),
                (1, 1, 1, 1)}
PRO3O_IMAGES = {(0, 0, 0, 0), (1, 0, 0, 0), (0, 1, 0, 0), (1, 1, 0, 0), (1, 0, 1, 0), (1, 1, 1, 0),
                (0, 1, 0, 1), (1, 1, 0, 1), (1, 1, 1, 1)}

# (modes, domains, order pairs, images): kept here as well as in the .litmus files so that an
# edit of a data file cannot silently change a row.
ROWS = {
    "PRO1": (BOTH, ADR, (("L", "A"),), A3),
    "PRO1x": (BOTH, ADR, (), A4),
    "PRO2": (BOTH, ADR, (), A3),
    "PRO2d": (BOTH, ("pdom1",), (("L", "A1"),),
              {(0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 0, 1), (1, 1, 1)}),
    "PRO2de": (BOTH, ("pdom2",), (("L", "A1"),), {(0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 1, 1)}),
    "PRO2t": (BOTH, ADR, (), {(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0), (0, 1, 1), (1, 1, 1)}),
    "PRO3": (BOTH, ADR, (), A4),
    "PRO3o": (BOTH, ("pdom1",), O2, PRO3O_IMAGES),
    "PRO3oe": (BOTH, ("pdom2",), O2, {(0, 0, 0, 0), (1, 0, 0, 0), (0, 1, 0, 0), (1, 1, 0, 0),
                                      (1, 0, 1, 0), (1, 1, 1, 0), (1, 1, 1, 1)}),
    "PRO4": (BOTH, ADR, (), A3),
    "PRO4z": (("px86",), ("pdom0",), (), A4),
    "PRO5": (BOTH, ADR, (), {(0, 0), (1, 0), (1, 1), (1, 2), (0, 2)}),
    "PRO5n": (BOTH, ADR, (), {(0, 0), (1, 0), (1, 1), (0, 1), (0, 2)}),
    "PRO6": (BOTH, ("pdom0",), (), A3),
    "PRO6x": (BOTH, ("pdom0",), (), A4),
    "ATOM1": (BOTH, ("pdom0",), (("L", "A"),), A3),
    "ATOM1n": (BOTH, ("pdom0",), (), A4),
    "ATOM2": (BOTH, ("pdom1",), O2, ATOM2_IMAGES),
    "ATOM2e": (BOTH, ("pdom2",), O2, {(0, 0, 0, 0), (1, 0, 0, 0), (1, 0, 1, 0), (1, 1, 1, 0),
                                      (1, 1, 1, 1)}),
    "ATOM2z": (BOTH, ("pdom0",), O2, PRO3O_IMAGES),
}


def test_every_proteus_and_atom_row_has_a_data_file() -> None:
    assert {n for n in SUITE if n.startswith(("PRO", "ATOM"))} == set(ROWS)
    for name, (modes, domains, order, images) in ROWS.items():
        t = SUITE[name]
        assert (t.modes, t.domains, t.order, set(t.expect)) == (modes, domains, order, images), name
        assert not t.forbid & t.expect, name


# -- level 2: the rows as Proteus writes them into a trace -----------------------------------------
PROTEUS = EntryFormat(4)
ATOM = EntryFormat(8)
DATA = 0x1000
"""Byte address of the data area (a line per block); the log (slot i at i * entry size) is below."""


def block(i: int) -> int:
    return DATA + 64 * i


class Encoded:
    """A trace written the way :class:`~pmsim.hw.proteus.proteus.ProteusUnit` writes one (thread 0)."""

    def __init__(self, fmt: EntryFormat) -> None:
        self.fmt = fmt
        self.rows: list[tuple[int, int, int, int, int]] = []
        self.entries: dict[int, list[int]] = {}

    def at(self, slot: int, word: int) -> int:
        return slot * self.fmt.nbytes + 8 * word

    def issue(self, slot: int, blk: int, payload: int = 1) -> Encoded:
        """A log-flush: the payload words drained (``payload`` 2: persisted, volatile queues),
        the checksum word issued."""
        fmt = self.fmt
        data = [0x100 * (slot + 1) + j for j in range(fmt.data_words)]
        words = self.entries[slot] = fmt.pack(data, block(blk), 1, slot, 0)
        k = fmt.end_word(words)
        self.rows += [(Ev.NTSTORE, 0, self.at(slot, i), w, payload)
                      for i, w in enumerate(words) if i != k]
        self.rows.append((Ev.NTSTORE, 0, self.at(slot, k), words[k], 0))
        return self

    def _drained(self, slot: int, word: int, value: int) -> Encoded:
        self.rows.append((Ev.NTSTORE, 0, self.at(slot, word), value, 1))
        return self

    def ack(self, slot: int) -> Encoded:
        k = self.fmt.end_word([])
        return self._drained(slot, k, self.entries[slot][k])

    def ack_nvm(self, slot: int) -> Encoded:
        """The acknowledgement from NVM (volatile queues): the checksum word re-written as
        persisted (aux 2)."""
        k = self.fmt.end_word([])
        self.rows.append((Ev.NTSTORE, 0, self.at(slot, k), self.entries[slot][k], 2))
        return self

    def end(self, slot: int) -> Encoded:
        """TX_END: the MC sets END on the entry (a drained re-write)."""
        k = self.fmt.end_word([])
        self.entries[slot][k] |= END
        return self._drained(slot, k, self.entries[slot][k])

    def clear(self, slot: int) -> Encoded:
        """Flash clear: the slot's old words (zeros) restored, the checksum word first."""
        k = self.fmt.end_word([])
        for i in [k] + [i for i in range(self.fmt.words) if i != k]:
            if self.entries[slot][i]:
                self._drained(slot, i, 0)
        return self

    def store(self, blk: int, value: int = 1) -> Encoded:
        self.rows.append((Ev.STORE, 0, block(blk), value, 0))
        return self

    # observations of an image (as 8-byte words)
    def entry(self, w: np.ndarray, slot: int) -> int:
        """2: the entry with END, 1: the entry, 0: no whole entry (its checksum word)."""
        k = self.fmt.end_word([])
        got, whole = int(w[self.at(slot, k) // 8]), self.entries[slot][k] & ~END
        return 2 if got == whole | END else int(got == whole)

    def payload(self, w: np.ndarray, slot: int) -> int:
        return int(int(w[self.at(slot, 0) // 8]) == self.entries[slot][0])

    def data(self, w: np.ndarray, blk: int) -> int:
        return int(w[block(blk) // 8])


Observe = Callable[[Encoded, np.ndarray], tuple[int, ...]]

# row -> (entry format, the trace, its observation in the row's locations, O1 edges or none)
TRACE_ROWS: dict[str, tuple[EntryFormat, Callable[[Encoded], Encoded], Observe, bool]] = {
    "PRO1": (PROTEUS, lambda e: e.issue(0, 0).store(0), lambda e, w: (e.entry(w, 0), e.data(w, 0)),
             True),
    "PRO1x": (PROTEUS, lambda e: e.issue(0, 0).store(0), lambda e, w: (e.entry(w, 0), e.data(w, 0)),
              False),
    "PRO2": (PROTEUS, lambda e: e.issue(0, 0).ack(0).store(1),
             lambda e, w: (e.entry(w, 0), e.data(w, 1)), True),
    "PRO2d": (PROTEUS, lambda e: e.issue(0, 0).store(0).ack(0).store(1),
              lambda e, w: (e.entry(w, 0), e.data(w, 0), e.data(w, 1)), True),
    "PRO2de": (PROTEUS, lambda e: e.issue(0, 0).store(0).ack(0).store(1),
               lambda e, w: (e.entry(w, 0), e.data(w, 0), e.data(w, 1)), True),
    "PRO2t": (PROTEUS, lambda e: e.issue(0, 0).issue(1, 1).ack(1).store(1),
              lambda e, w: (e.entry(w, 0), e.entry(w, 1), e.data(w, 1)), True),
    "PRO3": (PROTEUS, lambda e: e.issue(0, 0).issue(1, 1),
             lambda e, w: (e.entry(w, 0), e.entry(w, 1)), True),
    # the data stores are cached here: the edges hold each one alone (see PRO3o's comment)
    "PRO3o": (PROTEUS, lambda e: e.issue(0, 0).issue(1, 1).store(0).store(1),
              lambda e, w: (e.entry(w, 0), e.entry(w, 1), e.data(w, 0), e.data(w, 1)), True),
    "PRO3oe": (PROTEUS, lambda e: e.issue(0, 0).issue(1, 1).store(0).store(1),
               lambda e, w: (e.entry(w, 0), e.entry(w, 1), e.data(w, 0), e.data(w, 1)), True),
    "PRO4": (PROTEUS, lambda e: e.issue(0, 0).ack(0).clear(0),
             lambda e, w: (e.payload(w, 0), e.entry(w, 0)), True),
    "PRO5": (PROTEUS, lambda e: e.issue(0, 0).ack(0).issue(1, 1).ack(1).end(1).clear(0),
             lambda e, w: (e.entry(w, 0), e.entry(w, 1)), True),
    "PRO6": (PROTEUS, lambda e: e.issue(0, 0, 2).ack_nvm(0).store(1),
             lambda e, w: (e.entry(w, 0), e.data(w, 1)), True),
    "PRO6x": (PROTEUS, lambda e: e.issue(0, 0, 2).ack(0).store(1),
              lambda e, w: (e.entry(w, 0), e.data(w, 1)), True),
    # ATOM: 64-byte blocks, an entry of two lines; a store retires after its entry's acknowledgement
    "ATOM2": (ATOM, lambda e: e.issue(0, 0).ack(0).store(0).issue(1, 1).ack(1).store(1),
              lambda e, w: (e.entry(w, 0), e.entry(w, 1), e.data(w, 0), e.data(w, 1)), True),
    "ATOM2e": (ATOM, lambda e: e.issue(0, 0).ack(0).store(0).issue(1, 1).ack(1).store(1),
               lambda e, w: (e.entry(w, 0), e.entry(w, 1), e.data(w, 0), e.data(w, 1)), True),
}


def encoded_images(spec: tuple[EntryFormat, Callable[[Encoded], Encoded], Observe, bool], order: str,
                   domain: str, backend: str | None = None,
                   providers: list[EdgeProvider] | None = None) -> set[tuple[int, ...]]:
    """The observed images of a trace row over every crash point (``providers``: default O1's
    edges when the row has them)."""
    fmt, build, observe, edges = spec
    enc = build(Encoded(fmt))
    tr = Trace.build(list(enc.rows), size=block(4))
    if providers is None:
        providers = [LogBeforeData((0,), DATA, fmt)] if edges else []
    model = CrashModel(tr, order, domain, backend, extra_edge_providers=providers)
    return {observe(enc, img.view(np.uint64)) for p in model.points("reduced")
            for _, img in model.space(p).hashed_images(distinct=True)}


@pytest.mark.parametrize("row", sorted(TRACE_ROWS))
def test_row_as_proteus_writes_it(row: str, backend: str) -> None:
    t = SUITE[row]
    for order, domain in itertools.product(t.modes, t.domains):
        got = encoded_images(TRACE_ROWS[row], order, domain, backend)
        assert got == set(t.expect), f"{row} [{order}, {domain}]: {sorted(got)}"


def test_o1_edges_are_found_in_the_trace() -> None:
    enc = Encoded(PROTEUS).issue(0, 0).store(0)
    ix = TraceIndex(Trace.build(list(enc.rows), size=block(4)), "line")
    (edge,) = LogBeforeData((0,), DATA, PROTEUS)(ix, "pdom1")
    assert edge.until == len(enc.rows) + 1  # never acknowledged: live to the end
    # without the edge provider PRO1's trace gives PRO1x
    assert encoded_images(TRACE_ROWS["PRO1"], "line", "pdom1", providers=[]) == set(SUITE["PRO1x"].expect)


def test_atom_pdom0_needs_its_line_lock_past_the_acknowledgement() -> None:
    # In PDOM-0 an acknowledgement is an acceptance by a volatile queue. O1's edges end at the
    # acknowledgement (Proteus refuses PDOM-0), so on ATOM's PDOM-0 trace they give ATOM1n; the
    # MC's line lock is an edge that stays live: here from the entry to the store after its
    # acknowledgement.
    def build(e: Encoded) -> Encoded:
        return e.issue(0, 0).ack(0).store(0)

    spec = (ATOM, build, lambda e, w: (e.entry(w, 0), e.data(w, 0)), True)
    assert encoded_images(spec, "line", "pdom0") == set(SUITE["ATOM1n"].expect)
    enc = build(Encoded(ATOM))
    issued = len(enc.rows) - 3  # the checksum word, then its acknowledgement and the store

    def lock(ix: TraceIndex, domain: str) -> list[Edge]:
        row = {int(e): i for i, e in enumerate(ix.st_event.tolist())}
        x, y = row[issued], row[len(enc.rows) - 1]
        return [Edge(int(ix.st_chain[x]), int(ix.st_pos[x]) + 1, int(ix.st_chain[y]),
                     int(ix.st_pos[y]) + 1)]

    assert enc.rows[issued][2] == enc.at(0, ATOM.end_word([])) and enc.rows[issued][4] == 0
    for order in BOTH:
        assert encoded_images(spec, order, "pdom0", providers=[lock]) == set(SUITE["ATOM1"].expect)


# -- level 3: programs on the runtime --------------------------------------------------------------
def o1_pairs(run: Run, rows: list[Row]) -> list[tuple[int, int]]:
    """``(a, b)`` event pairs of rule O1, from the log layout: a is an issued store of a slot's
    checksum word, b a cached store of the same thread to the 32-byte block named by the
    slot's from-address word, after a and before a's acknowledgement (the checksum word drained)."""
    rt = run.session.runtime
    fmt = rt.unit_format  # type: ignore[attr-defined]
    lay = rt.layout
    base = run.trace.pm_base
    n, k, src_word = fmt.words, fmt.data_words + 3, fmt.data_words
    areas = [(b - base, b - base + lay.log_bytes) for b in lay.log]
    out = []
    for a, ra in enumerate(rows):
        if ra[0] != Ev.NTSTORE or ra[4] != 0:
            continue
        lo = next((lo for lo, hi in areas if lo <= ra[2] < hi), None)
        if lo is None or (ra[2] - lo) % (8 * n) != 8 * k:
            continue
        slot = ra[2] - 8 * k
        src = next(r[3] for r in reversed(rows[:a]) if r[0] == Ev.NTSTORE and r[2] == slot + 8 * src_word)
        src -= base
        ack = next((j for j in range(a + 1, len(rows)) if rows[j][0] == Ev.NTSTORE
                    and rows[j][4] == 1 and rows[j][2] == ra[2]), len(rows))
        out += [(a, b) for b in range(a + 1, ack) if rows[b][0] == Ev.STORE and rows[b][1] == ra[1]
                and src <= rows[b][2] < src + fmt.block]
    return out


def brute_images(run: Run, order: str, edges: bool = True) -> set[bytes]:
    """Every image of every crash point: per chain (a line, or an 8-byte word in px86 mode) a
    prefix of its stores from the guaranteed ones to the visible ones, every combination that
    respects the O1 pairs (none when ``edges`` is False). Prefixes that leave a chain with the
    same contents are collapsed as in ``test_litmus_loc.brute_images``."""
    rows = _rows(run)
    pairs = o1_pairs(run, rows) if edges else []
    unit = 64 if order == "line" else 8
    chains: dict[int, list[int]] = {}
    for i, r in enumerate(rows):
        if _is_store(r):
            chains.setdefault(r[2] // unit, []).append(i)
    keys = sorted(chains)
    pos = {s: (c, n + 1) for c, key in enumerate(keys) for n, s in enumerate(chains[key])}
    base = run.trace.base.view(np.uint64)
    contents = []
    for key in keys:
        cur = {w: int(base[w]) for w in sorted({rows[s][2] // 8 for s in chains[key]})}
        seq = [tuple(cur.items())]
        for s in chains[key]:
            cur[rows[s][2] // 8] = rows[s][3]
            seq.append(tuple(cur.items()))
        contents.append(seq)
    states: set[tuple] = set()
    for k in range(len(rows) + 1):
        hi = [sum(1 for s in chains[key] if s < k) for key in keys]
        lo = [0] * len(keys)
        for s in guaranteed(rows, k, run.domain):
            c, n = pos[s]
            lo[c] = max(lo[c], n)
        live = [(*pos[a], *pos[b]) for a, b in pairs if b < k]
        early, late = {e[0] for e in live}, {e[2] for e in live}
        options = []
        for c in range(len(keys)):
            same: dict[tuple, list[int]] = {}
            for n in range(lo[c], hi[c] + 1):
                same.setdefault(contents[c][n], []).append(n)
            if c in early and c in late:
                options.append([n for ns in same.values() for n in ns])
            else:
                options.append([max(ns) if c in early else min(ns) for ns in same.values()])
        for counts in itertools.product(*options):
            if all(counts[xc] >= xn for xc, xn, yc, yn in live if counts[yc] >= yn):
                states.add(tuple(contents[c][n] for c, n in enumerate(counts)))
    out = set()
    for st in states:
        img = run.trace.base.copy()
        words = img.view(np.uint64)
        for chain in st:
            for w, v in chain:
                words[w] = v
        out.add(img.tobytes())
    return out


W = 3  # a fourth cell
R1: tuple[Tx, ...] = (((X, 1), (Y, 1)),)
R2: tuple[Tx, ...] = (((X, 1),), ((X, 2), (Y, 2)))
R3: tuple[Tx, ...] = (((X, 1), (Y, 1), (X, 3)),)
R4: tuple[Tx, ...] = (((X, 1), (Y, 1), (Z, 1), (W, 1)), ((X, 2),))

PROGRAM_ROWS: dict[str, tuple[str, tuple[Tx, ...], set[Outcome]]] = {
    # atomicity: all of T1 or nothing
    "P1": ("proteus", R1, {(0, 0), (1, 1)}),
    # every prefix: T1's END entry is kept until T2's first entry arrives
    "P2": ("proteus", R2, {(0, 0), (1, 0), (2, 2)}),
    # x's block logged once (the LLT), its second store after the acknowledgement
    "P3": ("proteus", R3, {(0, 0), (3, 1)}),
    # Proteus+NoLWR: every entry drains to NVM, nothing is cleared
    "P1n": ("proteus-nolwr", R1, {(0, 0), (1, 1)}),
    # proteus-tiny: an LPQ of 3, so T1's fourth entry spills the oldest to NVM
    "P4": ("proteus-tiny", R4, {(0, 0, 0, 0), (1, 1, 1, 1), (2, 1, 1, 1)}),
}

MUTANT_ROWS: dict[str, tuple[str, tuple[Tx, ...], set[Outcome]]] = {
    # the data persists before its entry: nothing to undo, the transaction is torn
    "P1-X1": ("proteus:X1", R1, {(0, 0), (1, 0), (0, 1), (1, 1)}),
    # acknowledged when sent: the same in the persist order
    "P1-X2": ("proteus:X2", R1, {(0, 0), (1, 0), (0, 1), (1, 1)}),
}

_RUNS: dict[tuple[str | Mutant, tuple[Tx, ...], str], Run] = {}
_BRUTE: dict[tuple[str | Mutant, tuple[Tx, ...], str, str], set[bytes]] = {}


def _run(runtime: str | Mutant, prog: tuple[Tx, ...], domain: str) -> Run:
    key = (runtime, prog, domain)
    if key not in _RUNS:
        _RUNS[key] = Run(runtime, prog, domain)
    return _RUNS[key]


def _brute(runtime: str | Mutant, prog: tuple[Tx, ...], domain: str, order: str) -> set[bytes]:
    key = (runtime, prog, domain, order)
    if key not in _BRUTE:
        run = _run(runtime, prog, domain)
        _BRUTE[key] = brute_images(run, order, edges=bool(run.session.runtime.edge_providers()))
    return _BRUTE[key]


@pytest.mark.parametrize("order", BOTH)
@pytest.mark.parametrize("domain", ADR)
@pytest.mark.parametrize("row", sorted(PROGRAM_ROWS))
def test_proteus_row(row: str, domain: str, order: str, backend: str) -> None:
    runtime, prog, want = PROGRAM_ROWS[row]
    run = _run(runtime, prog, domain)
    images = model_images(run, order, backend)
    assert images == _brute(runtime, prog, domain, order), "the model and the brute force differ"
    got = run.outcomes(images)
    assert got == want, f"{row} on {runtime} [{order}, {domain}]: outcomes {sorted(got)}"
    assert got <= run.workload.prefixes()
    assert not run.errors(images)


@pytest.mark.parametrize("row", sorted(MUTANT_ROWS))
def test_proteus_mutant_recovers_a_torn_transaction(row: str, backend: str) -> None:
    runtime, prog, want = MUTANT_ROWS[row]
    for domain, order in itertools.product(ADR, BOTH):
        run = _run(runtime, prog, domain)
        images = model_images(run, order, backend)
        assert images == _brute(runtime, prog, domain, order)
        got = run.outcomes(images)
        assert got == want, f"{row} [{order}, {domain}]: outcomes {sorted(got)}"
        assert got - run.workload.prefixes(), f"{runtime} recovers only prefixes on {row}"


def test_the_o1_pairs_are_the_runtimes_edges() -> None:
    # X1 is the same trace without the edges: the model must then let the data persist alone
    run = _run("proteus", R1, "pdom1")
    assert len(o1_pairs(run, _rows(run))) == 2, "R1 stores once to each of two logged blocks"
    with_edges = model_images(run, "line")
    model = CrashModel(run.trace, "line", "pdom1")
    without = {img.tobytes() for p in model.points("reduced")
               for _, img in model.space(p).hashed_images(distinct=True)}
    assert with_edges < without
    assert without == brute_images(run, "line", edges=False)
