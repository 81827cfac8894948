"""Program-level litmus rows over the LOC runtime: recovered outcomes, confirmed by brute force.

A row is a tiny transaction program (a few one-word writes to cells on lines of their own) run on
the real LOC runtime (``loc``, ``loc-ec``, ``hwal``). Every image the crash model lets survive,
at every crash point, is recovered, and the recovered home values of the cells form the row's
outcome set, pinned exactly per row. On the correct runtimes every outcome is a prefix of the
commit order (not every prefix need occur: a transaction whose lines were all coalesced into a
successor of its window never recovers alone).

An independent enumeration confirms each set: it reads the trace itself, computes every crash
point's guaranteed stores from the flush, fence and pcommit rules, derives the META-after-data
pairs from the log layout, and tries every combination of per-chain store prefixes between
those bounds that respects the pairs. It shares no code with :mod:`crashfuzz.model` or
:mod:`crashfuzz.states`, and must give the same images, hence the same outcomes. In px86 mode
(too many states for the model to enumerate one by one) it gives the outcomes alone.

Mutants ``loc:M4`` (no META-after-data edge) and ``loc:M19`` (the recovery cut not closed under
pair successors) must produce an outcome that is not a prefix on the row that exposes them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import Any

import numpy as np
import pytest

from crashfuzz.campaign import fuzz_machine
from crashfuzz.states import CrashModel
from pmsim.hw.loc import SLOTS, TAG_STUB, TAG_VALID
from pmsim.machine import Machine
from pmsim.runtimes.layout import PMSpec, StaticArray
from pmsim.runtimes.mutation import Mutant, skip_check
from pmsim.runtimes.registry import get_runtime
from pmsim.trace import Ev
from pmsim.workloads.base import Model, Workload
from pmsim.workloads.session import Session

Outcome = tuple[int, ...]
Tx = tuple[tuple[int, int], ...]
X, Y, Z = 0, 1, 2


# -- a fixed transaction program as a workload ------------------------------------------------------
def _apply(prog: tuple[Tx, ...], k: int, cells: int) -> Outcome:
    vals = [0] * cells
    for tx in prog[:k]:
        for cell, v in tx:
            vals[cell] = v
    return tuple(vals)


class _Cells(Model):
    def __init__(self, prog: tuple[Tx, ...], cells: int) -> None:
        self.prog = prog
        self.vals = [0] * cells

    def apply(self, op: int) -> None:
        for cell, v in self.prog[op]:
            self.vals[cell] = v

    def snapshot(self) -> Hashable:
        return tuple(self.vals)


class Program(Workload):
    """Transactions in a fixed order, each a tuple of ``(cell, value)`` writes; cell ``i`` is
    word 0 of line ``i`` of a static array (a line per cell, like litmus locations)."""

    name = "litmus-program"

    def __init__(self, prog: tuple[Tx, ...]) -> None:
        super().__init__(threads=1, seed=0, txs=len(prog))
        self.prog = prog
        self.cells = 1 + max(cell for tx in prog for cell, _ in tx)
        self.drawn = 0

    def spec(self) -> PMSpec:
        n = max(len(tx) for tx in self.prog)
        return PMSpec(statics=(StaticArray("cells", self.cells, 8),), max_tx_writes=n,
                      max_tx_words=n, max_tx_allocs=0, max_tx_objects=n)

    def next_op(self, tid: int, rng: np.random.Generator) -> int:
        self.drawn += 1
        return self.drawn - 1

    def body(self, tx: Any, op: int) -> None:
        for cell, v in self.prog[op]:
            tx.write_words(tx.rt.static("cells", cell), 0, [v])

    def model(self) -> Model:
        return _Cells(self.prog, self.cells)

    def read_data(self, rt: Any) -> Hashable:
        return tuple(int(v) for v in rt.peek_static("cells")[:, 0])

    def prefixes(self) -> set[Outcome]:
        """The outcomes of committing the first k transactions, for every k."""
        return {_apply(self.prog, k, self.cells) for k in range(len(self.prog) + 1)}


class Run:
    """A crash-free run of a program on a runtime (the machine in ``domain``), and recovery of
    its crash images (cached: rows recover the same images from the model and the brute force)."""

    def __init__(self, runtime: str | Mutant, prog: tuple[Tx, ...], domain: str) -> None:
        self.domain = domain
        self.workload = wl = Program(prog)
        self.session = s = Session.create(get_runtime(runtime), wl, fuzz_machine(domain, 1, 0),
                                          compact=True)
        s.run(len(prog))
        assert wl.read_data(s.runtime) == wl.expected(s.runtime.commit_order)
        self.trace = s.machine.trace()
        self.scratch = Machine(s.machine.config, timed=False)
        self.recovered: dict[bytes, tuple[Outcome, tuple[str, ...]]] = {}

    def recover(self, image: bytes) -> tuple[Outcome, tuple[str, ...]]:
        """The recovered cells of an image, and recovery's invariant errors."""
        if image not in self.recovered:
            rec = self.session.recover(np.frombuffer(image, np.uint8).copy(), self.scratch)
            self.recovered[image] = (rec.data, tuple(rec.errors))  # type: ignore[assignment]
        return self.recovered[image]

    def outcomes(self, images: Iterable[bytes]) -> set[Outcome]:
        return {self.recover(img)[0] for img in images}

    def errors(self, images: Iterable[bytes]) -> set[str]:
        return {e for img in images for e in self.recover(img)[1]}


# -- the crash model's images ----------------------------------------------------------------------
def model_images(run: Run, order: str, backend: str | None = None) -> set[bytes]:
    """Every image the crash model lets survive at some crash point, with the runtime's edges."""
    edges = run.session.runtime.edge_providers()
    model = CrashModel(run.trace, order, run.domain, backend, extra_edge_providers=edges)
    out: set[bytes] = set()
    for p in model.points("reduced"):
        for _, img in model.space(p).hashed_images(distinct=True):
            out.add(img.tobytes())
    return out


# -- the independent enumeration -------------------------------------------------------------------
Row = tuple[int, int, int, int, int]
FENCES = (Ev.SFENCE, Ev.MFENCE, Ev.RMW)
FLUSHES = (Ev.CLFLUSH, Ev.CLFLUSHOPT, Ev.CLWB)


def _rows(run: Run) -> list[Row]:
    """``(kind, tid, PM offset, value, aux)`` per trace event."""
    base = run.trace.pm_base
    return [(int(e["kind"]), int(e["tid"]), int(e["addr"]) - base, int(e["value"]), int(e["aux"]))
            for e in run.trace.events]


def _is_store(r: Row) -> bool:
    return r[0] in (Ev.STORE, Ev.NTSTORE) or (r[0] == Ev.RMW and r[4] == 1)


def meta_pairs(run: Run, rows: list[Row]) -> list[tuple[int, int]]:
    """``(a, b)`` event pairs: store b writes a valid data tag to slot j of a META line, and the
    earlier store a writes the data line of slot j of that group (the LOC hardware's order)."""
    lay = run.session.runtime.lay  # type: ignore[attr-defined]
    base = run.trace.pm_base
    tag_slot = {lay.tag(g, j) - base: lay.slot(g, j) - base
                for g in range(lay.groups) for j in range(SLOTS)}
    out = []
    for b, rb in enumerate(rows):
        data = tag_slot.get(rb[2])
        if not _is_store(rb) or data is None or not rb[3] & TAG_VALID or rb[3] & TAG_STUB:
            continue
        out += [(a, b) for a in range(b) if _is_store(rows[a]) and rows[a][2] // 64 == data // 64]
    return out


def burst_pairs(run: Run, rows: list[Row]) -> list[tuple[int, int]]:
    """``(a, b)`` event pairs of px86's line bursts: non-temporal stores to the log, one right
    after the other by one thread, b to the next word of a's line."""
    lay = run.session.runtime.lay  # type: ignore[attr-defined]
    lo, hi = lay.ring - run.trace.pm_base, lay.base + lay.nbytes - run.trace.pm_base
    stores = [i for i, r in enumerate(rows) if _is_store(r)]
    return [(a, b) for a, b in zip(stores, stores[1:], strict=False)
            if rows[a][0] == rows[b][0] == Ev.NTSTORE and rows[a][1] == rows[b][1]
            and lo <= rows[a][2] < hi and rows[b][2] == rows[a][2] + 8 and rows[b][2] % 64]


def guaranteed(rows: list[Row], k: int, domain: str) -> set[int]:
    """The stores before point k that must have persisted (the flush, fence and pcommit rules
    of litmus.md; a machine trace's non-temporal stores are issued, persistent once fenced)."""
    def fence_after(t: int, a: int) -> int | None:
        return next((g for g in range(a + 1, k) if rows[g][0] in FENCES and rows[g][1] == t), None)

    def covered(s: int) -> int | None:
        """The event whose completion makes s persistent (PDOM-1) or accepted (PDOM-0)."""
        times = []
        if rows[s][0] == Ev.NTSTORE:
            times.append(s if rows[s][4] == 1 else fence_after(rows[s][1], s))
        for f in range(s + 1, k):
            if rows[f][0] in FLUSHES and rows[f][2] // 64 == rows[s][2] // 64:
                times.append(f if rows[f][0] == Ev.CLFLUSH else fence_after(rows[f][1], f))
        return min((x for x in times if x is not None), default=None)

    stores = [s for s in range(k) if _is_store(rows[s])]
    if domain == "pdom2":
        return {s for s in stores if rows[s][0] != Ev.NTSTORE or rows[s][4] == 1
                or fence_after(rows[s][1], s) is not None}
    if domain == "pdom1":
        return {s for s in stores if covered(s) is not None}
    out = set()
    for s in stores:
        acc = covered(s)
        if acc is not None and any(rows[p][0] == Ev.PCOMMIT and fence_after(rows[p][1], p)
                                   is not None for p in range(acc + 1, k)):
            out.add(s)
    return out


def brute_images(run: Run, order: str, edges: bool = True, bursts: bool = True) -> set[bytes]:
    """Every image of every crash point: per chain (a line, or an 8-byte word in px86 mode) a
    prefix of its stores from the guaranteed ones to the visible ones, every combination that
    respects the META-after-data pairs (none when ``edges`` is False) and, in px86 mode, the
    line-burst pairs (none when ``bursts`` is False).

    Prefixes that leave a chain with the same contents give the same image, and differ only in
    which pairs they satisfy: of a chain that is never a pair's later side the longest such
    prefix is kept (it satisfies every pair a shorter one does), of one that is never an
    earlier side the shortest; of any other chain, every prefix."""
    rows = _rows(run)
    pairs = meta_pairs(run, rows) if edges else []
    if bursts and order == "px86":
        pairs += burst_pairs(run, rows)
    unit = 64 if order == "line" else 8
    chains: dict[int, list[int]] = {}
    for i, r in enumerate(rows):
        if _is_store(r):
            chains.setdefault(r[2] // unit, []).append(i)
    keys = sorted(chains)
    pos = {s: (c, n + 1) for c, key in enumerate(keys) for n, s in enumerate(chains[key])}
    base = run.trace.base.view(np.uint64)
    contents = []  # per chain and prefix length: the chain's words, as (word, value) pairs
    for key in keys:
        cur = {w: int(base[w]) for w in sorted({rows[s][2] // 8 for s in chains[key]})}
        seq = [tuple(cur.items())]
        for s in chains[key]:
            cur[rows[s][2] // 8] = rows[s][3]
            seq.append(tuple(cur.items()))
        contents.append(seq)
    states: set[tuple[tuple[tuple[int, int], ...], ...]] = set()
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
        for counts in _satisfying(options, live):
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


def _satisfying(options: list[list[int]], pairs: list[tuple[int, int, int, int]]) -> Iterator[list[int]]:
    """Every choice of one option per chain under which each pair ``(xc, xn, yc, yn)`` holds
    (``counts[yc] >= yn`` implies ``counts[xc] >= xn``): the product, pruned chain by chain
    (a pair is checked once both its chains are chosen), so px86's line bursts do not cost
    ``9**words``."""
    check: dict[int, list[tuple[int, int, int, int]]] = {}
    for e in pairs:
        check.setdefault(max(e[0], e[2]), []).append(e)
    counts = [0] * len(options)
    stack = [(0, 0)]  # (chain, index of its next option)
    while stack:
        c, i = stack.pop()
        if c == len(options):
            yield counts
            continue
        if i == len(options[c]):
            continue
        stack.append((c, i + 1))
        counts[c] = options[c][i]
        if all(counts[xc] >= xn or counts[yc] < yn for xc, xn, yc, yn in check.get(c, ())):
            stack.append((c + 1, 0))


# -- the rows --------------------------------------------------------------------------------------
R1: tuple[Tx, ...] = (((X, 1), (Y, 1)),)
R2: tuple[Tx, ...] = (((X, 1),), ((X, 2), (Y, 2)))
R3: tuple[Tx, ...] = (((X, 1), (Y, 1)), ((Z, 1),), ((X, 3),))
R4: tuple[Tx, ...] = (((X, 1),), ((Y, 1),))

ROWS: dict[str, tuple[str, tuple[Tx, ...], set[Outcome]]] = {
    # atomicity: all of T1 or nothing
    "R1": ("loc-ec", R1, {(0, 0), (1, 1)}),
    # one window: T1's x is coalesced into T2 and never logged, so T1 alone never recovers
    "R2": ("loc[sd=2]", R2, {(0, 0), (2, 2)}),
    # the M19 shape: T1's x coalesced into T3, T2 between them; T1 commits only with T3
    "R3": ("loc[sd=3]", R3, {(0, 0, 0), (3, 1, 1)}),
    # the same on loc-fine (the base of loc:M19): a META line per transaction
    "R3f": ("loc-fine", R3, {(0, 0, 0), (3, 1, 1)}),
    # strict ordering: every prefix
    "R4": ("hwal", R4, {(0, 0), (1, 0), (1, 1)}),
}

MUTANT_ROWS: dict[str, tuple[str, tuple[Tx, ...], set[Outcome]]] = {
    # a tag persists before its data line: the slot's old contents (zeros) are replayed
    "R1-M4": ("loc:M4", R1, {(0, 0), (1, 0), (0, 1), (1, 1)}),
    # T3's META and the pair durable, T2's tag not: T1 replayed without the x it left to T3
    "R3-M19": ("loc:M19", R3, {(0, 0, 0), (0, 1, 0), (3, 1, 1)}),
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
        names = {p.__name__ for p in run.session.runtime.edge_providers()}
        _BRUTE[key] = brute_images(run, order, edges="loc_meta_after_data" in names,
                                   bursts="loc_line_bursts" in names)
    return _BRUTE[key]


@pytest.mark.parametrize("domain", ["pdom0", "pdom1", "pdom2"])
@pytest.mark.parametrize("row", sorted(ROWS))
def test_loc_row(row: str, domain: str, backend: str) -> None:
    runtime, prog, want = ROWS[row]
    run = _run(runtime, prog, domain)
    images = model_images(run, "line", backend)
    assert images == _brute(runtime, prog, domain, "line"), "the model and the brute force differ"
    got = run.outcomes(images)
    assert got == want, f"{row} on {runtime} [{domain}]: outcomes {sorted(got)}"
    assert got <= run.workload.prefixes()
    assert not run.errors(images)


@pytest.mark.parametrize("row", [pytest.param(r, marks=pytest.mark.slow) if r == "R3f" else r
                                 for r in sorted(ROWS)])  # R3f: 757 images, 16 s per backend
def test_loc_row_px86(row: str, backend: str) -> None:
    runtime, prog, want = ROWS[row]
    run = _run(runtime, prog, "pdom1")
    images = model_images(run, "px86", backend)
    assert images == _brute(runtime, prog, "pdom1", "px86"), "the model and the brute force differ"
    assert run.outcomes(images) == want


@pytest.mark.parametrize("row", sorted(MUTANT_ROWS))
def test_loc_mutant_recovers_a_non_prefix(row: str, backend: str) -> None:
    runtime, prog, want = MUTANT_ROWS[row]
    run = _run(runtime, prog, "pdom1")
    images = model_images(run, "line", backend)
    assert images == _brute(runtime, prog, "pdom1", "line")
    got = run.outcomes(images)
    assert got == want, f"{row}: outcomes {sorted(got)}"
    assert got - run.workload.prefixes(), f"{runtime} recovers only prefixes on {row}"
    assert run.outcomes(_brute(runtime, prog, "pdom1", "px86")) == want


def test_the_meta_after_data_pairs_are_the_runtimes_edges() -> None:
    # M4 is the same trace without the edges: the model must then let the tag persist alone
    run = _run("loc-ec", R1, "pdom1")
    rows = _rows(run)
    assert meta_pairs(run, rows), "R1 writes two tags, each after its data line"
    with_edges = model_images(run, "line")
    model = CrashModel(run.trace, "line", "pdom1")
    without = {img.tobytes() for p in model.points("reduced")
               for _, img in model.space(p).hashed_images(distinct=True)}
    assert with_edges < without
    assert without == brute_images(run, "line", edges=False)



def test_m19_needs_a_meta_line_per_transaction_or_word_granular_tags() -> None:
    # loc:M19's recovery on one META line per window: T3's tag cannot persist without T2's
    # (earlier in the same line: line mode, and px86's line bursts), so the cut is never wrong;
    # px86 without the burst rule (its step dropped) frees the tags
    m19 = Mutant("test:M19-sd3", "loc[sd=3]", (skip_check("loc.recover.close-prefix"),),
                 ("pdom1",), "the recovery cut not closed under pair successors")
    run = _run(m19, R3, "pdom1")
    assert run.outcomes(model_images(run, "line")) == {(0, 0, 0), (3, 1, 1)}
    assert run.outcomes(_brute(m19, R3, "pdom1", "px86")) == {(0, 0, 0), (3, 1, 1)}
    assert run.outcomes(brute_images(run, "px86", bursts=False)) == {(0, 0, 0), (0, 1, 0),
                                                                     (3, 1, 1)}
