"""Genome: STAMP's gene sequencer (Minh et al., IISWC'08), its transactional phases.

A gene of ``gene`` nucleotides is cut into ``segments`` overlapping segments of ``segment``
nucleotides at random start positions (STAMP's ``segments_create``: uniform starts, then
extra segments so that every position is covered and no gap is as long as a segment). Every
thread runs STAMP's ``sequencer_run`` on its share, with a barrier between phases:

1. **Remove duplicates**: chunks of ``chunk`` segments (STAMP's ``CHUNK_STEP1`` = 12), one
   transaction a chunk, each segment inserted into a hash set of ``gene`` buckets (sorted
   chains; a duplicate inserts nothing, so most of these transactions only read).
2. **Index the unique segments**: for each unique segment of the thread's buckets, one
   transaction claims a free construct entry (probing from the thread's cursor), then one
   transaction per prefix length ``1..segment-1`` inserts the entry into that length's table
   keyed by the prefix's hash, and one more into the table of whole-segment hashes (STAMP's
   ``startHashToConstructEntryTables`` and ``hashToConstructEntryTable``, ``gene`` buckets
   each, chains sorted by entry address).
3. **Match ends to starts**: for every overlap length from ``segment-1`` down to 1 (a barrier
   after each), every entry of the thread's share that is still the end of a chain tries, one
   transaction each, the candidates in its suffix hash's bucket: a candidate that is still a
   chain start, is not the entry's own chain and whose prefix equals the entry's suffix is
   linked after it (start flag, the two chains' start/end pointers, the overlap, the joined
   length and the entry's next pointer: STAMP's six writes).

STAMP's last step (thread 0 walks the chains to build the sequence) runs outside any
transaction and is not run. The thread-local "is an end" flags stay volatile as in STAMP; the
entry's next pointer (STAMP's ``TM_LOCAL_WRITE``, not logged by its HTM port) is written
through the transaction here, since it is part of the persistent result. List nodes hold their
key in the node (STAMP's hash set allocates a pair beside the node). A thread's cursor into the
construct entries starts in proportion to its first bucket (STAMP's is not specified there).

The work is fixed by the input, as in STAMP: a thread ends when its share is done (its
remaining transactions are not run), so throughput is the whole computation's commits over the
time until the last thread finishes. A run of ``txs`` transactions a thread must allow the
busiest thread's share (:meth:`Genome.transactions` counts them): a barrier waits only for
the threads still running, so a thread stopped by the run's end lets the others pass and the
phases overlap in the next run (the data stays consistent; STAMP's separation does not).
Defaults: STAMP's input for simulators (``-g256 -s16 -n16384``, about 5,900 transactions); its
"++" input (``-g16384 -s64 -n16777216``) has 2.5 million.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import check_types, param
from ..errors import PmsimError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import FINISHED, MASK64, Model, Workload, check_range, register_workload
from .structures import WalkedImage, check_node

DEDUP, ENTRY, START, MATCH = 0, 1, 2, 3
"""First element of an op, then the thread and its op's sequence number: ``(DEDUP, tid, seq,
first, stop)``, ``(ENTRY, tid, seq, content, cursor)``, ``(START, tid, seq, length, entry,
content)``, ``(MATCH, tid, seq, overlap, entry, k, content)`` (``k``: the candidate's place in
its chain)."""
HEAD, SIZE = 0, 1
"""A bucket's words: its chain's first node and its length."""
KEY, NEXT = 0, 1
"""A chain node's words: its key (content or entry, plus one) and the next node."""
SEG, IS_START, START_PTR, END_PTR, OVERLAP, LENGTH, NEXT_PTR = range(7)
"""A construct entry's words (STAMP's ``constructEntry_t``; pointers are entry + 1, 0 null)."""
ENTRY_WORDS = 8
BARRIER = object()
"""What a thread's program yields between phases."""
NUCLEOTIDES = "acgt"


def sdbm(text: str) -> int:
    """STAMP's ``hashString`` (the sdbm hash) on 64-bit words."""
    h = 0
    for ch in text:
        h = (ord(ch) + (h << 6) + (h << 16) - h) & MASK64
    return h


def partition(lo: int, hi: int, tid: int, n: int) -> range:
    """STAMP's ``createPartition``: thread ``tid``'s share of ``[lo, hi)``."""
    chunk = max(1, (hi - lo + n // 2) // n)
    start = lo + chunk * tid
    stop = hi if tid == n - 1 else min(hi, start + chunk)
    return range(min(start, hi), max(min(start, hi), stop))


@dataclass(frozen=True)
class GenomeParams:
    gene: int = param(256, "nucleotides", "gene length (STAMP -g; its simulator input: 256)")
    segment: int = param(16, "nucleotides", "segment length (STAMP -s: 16)")
    segments: int = param(16384, "segments", "segments drawn (STAMP -n: 16384)")
    chunk: int = param(12, "segments", "segments a duplicate-removal transaction inserts "
                       "(STAMP's CHUNK_STEP1: 12)")

    def __post_init__(self) -> None:
        check_types(self, "workload 'genome': parameter ")
        check_range("genome", "segment", self.segment, 2, 64)
        check_range("genome", "gene", self.gene, self.segment, 1 << 16)
        check_range("genome", "segments", self.segments, 1, 1 << 25)
        check_range("genome", "chunk", self.chunk, 1, 1024)


@dataclass(frozen=True)
class Input:
    """A gene, its segments as content ids, and the unique contents' hashes."""

    gene: str
    segments: tuple[int, ...]
    contents: tuple[str, ...]
    prefix: tuple[tuple[int, ...], ...]
    """``prefix[c][j]``: the hash of content ``c``'s first ``j`` nucleotides, ``j <= s``."""
    suffix: tuple[tuple[int, ...], ...]
    """``suffix[c][j]``: the hash of its last ``j`` nucleotides."""


def generate(seed: int, gene: int, segment: int, segments: int) -> Input:
    """STAMP's ``gene_create`` and ``segments_create``: a random gene over a, c, g, t; random
    segment starts, then one at 0 if missing and one ending every gap of ``segment - 1``
    uncovered starts."""
    rng = np.random.default_rng([seed, 0x6E0E])
    text = "".join(NUCLEOTIDES[i] for i in rng.integers(0, 4, gene))
    starts_n = gene - segment + 1
    starts = rng.integers(0, starts_n, segments).tolist()
    covered = np.zeros(starts_n, dtype=bool)
    covered[starts] = True
    if not covered[0]:
        starts.append(0)
        covered[0] = True
    i = 0
    while i < starts_n:
        stop = min(i + segment - 1, starts_n)
        while i < stop and not covered[i]:
            i += 1
        if i == stop and (i == starts_n or not covered[i]):
            starts.append(i - 1)
            covered[i - 1] = True
        i += 1
    drawn = np.asarray(starts)
    used = np.unique(drawn).tolist()
    contents = tuple(sorted({text[i:i + segment] for i in used}))
    rank = {c: k for k, c in enumerate(contents)}
    of_start = np.full(starts_n, -1, dtype=np.int64)
    of_start[used] = [rank[text[i:i + segment]] for i in used]
    return Input(text, tuple(of_start[drawn].tolist()), contents,
                 tuple(tuple(sdbm(c[:j]) for j in range(segment + 1)) for c in contents),
                 tuple(tuple(sdbm(c[segment - j:]) for j in range(segment + 1))
                       for c in contents))


class GenomeModel(Model):
    """The hash set, the construct entries and the tables, applied in commit order; records
    each op's outcome by (thread, sequence number) for a resumed run."""

    def __init__(self, inp: Input, gene: int, segment: int) -> None:
        self.inp, self.g, self.s = inp, gene, segment
        self.u = len(inp.contents)
        self.uniq: dict[int, list[int]] = {}
        self.entries = [[0, 1, i + 1, i + 1, 0, segment, 0] for i in range(gene)]
        self.tables: dict[tuple[int, int], list[int]] = {}
        self.outcomes: dict[tuple[int, int], Any] = {}

    def apply(self, op: tuple[int, ...]) -> None:
        kind, tid, seq = op[:3]
        inp, g = self.inp, self.g
        if kind == DEDUP:
            for i in range(op[3], op[4]):
                c = inp.segments[i]
                chain = self.uniq.setdefault(inp.prefix[c][self.s] % g, [])
                if c not in chain:
                    chain.append(c)
                    chain.sort()
            return
        if kind == ENTRY:
            e = op[4]
            while self.entries[e][SEG]:
                e = (e + 1) % self.u
            self.entries[e][SEG] = op[3] + 1
            self.outcomes[tid, seq] = e
            return
        if kind == START:
            j, e, c = op[3:6]
            chain = self.tables.setdefault((j, inp.prefix[c][j] % g), [])
            chain.append(e)
            chain.sort()
            return
        length, e, k, c = op[3:7]
        chain = self.tables.get((length, inp.suffix[c][length] % g), [])
        matched = k < len(chain) and self._link(e, chain[k], length)
        self.outcomes[tid, seq] = matched

    def _link(self, e: int, cand: int, length: int) -> bool:
        ent, s = self.entries, self.s
        start = ent[cand]
        if not (start[IS_START] and ent[e][START_PTR] != cand + 1
                and match(self.inp, start[SEG] - 1, ent[e][SEG] - 1, length, s)):
            return False
        start[IS_START] = 0
        s_end, e_start = start[END_PTR] - 1, ent[e][START_PTR] - 1
        ent[s_end][START_PTR] = e_start + 1
        ent[e][NEXT_PTR] = cand + 1
        ent[e_start][END_PTR] = s_end + 1
        ent[e][OVERLAP] = length
        ent[e_start][LENGTH] = ent[e_start][LENGTH] + start[LENGTH] - length
        return True

    def snapshot(self) -> Hashable:
        return (tuple(sorted((b, tuple(ch)) for b, ch in self.uniq.items())),
                tuple(tuple(e) for e in self.entries),
                tuple(sorted((k, tuple(ch)) for k, ch in self.tables.items())))


def match(inp: Input, start: int, end: int, length: int, s: int) -> bool:
    """STAMP's ``strncmp``: the start content's first ``length`` nucleotides equal the end
    content's last ``length``."""
    return 0 <= start and 0 <= end and inp.contents[start][:length] == inp.contents[end][s - length:]


@register_workload
class Genome(WalkedImage, Workload):
    """STAMP's Genome: remove duplicate segments, index them, match overlaps, in phases."""

    name = "genome"
    Params = GenomeParams
    help = ("STAMP's Genome: deduplicate gene segments in a hash set, index their prefixes in "
            "hash tables and link overlapping segments, in barrier-separated phases")
    fuzz_params = {"gene": 6, "segment": 3, "segments": 4, "chunk": 2}
    gated = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        p = self.p
        self.inp = generate(self.seed, p.gene, p.segment, p.segments)
        self.u = len(self.inp.contents)
        self._fresh()

    def _fresh(self, replay: dict[tuple[int, int], Any] | None = None,
               last: dict[int, int] | None = None) -> None:
        """New programs for every thread (replaying committed outcomes, if given)."""
        self._out: dict[int, Any] = {}
        self._claims: dict[int, int] = {}
        self._progs: dict[int, Iterator[Any]] = {}
        self._peek: dict[int, Any] = {}
        self._phase = [0] * self.threads
        self._left: set[int] = set()
        self._waiting: list[tuple[int, Any]] = []
        self._replay = replay or {}
        self._last = last or {}

    # -- the threads' programs ---------------------------------------------------------------------
    def share(self, tid: int) -> tuple[range, list[int], range]:
        """Thread ``tid``'s segments (phase 1), unique contents (phase 2, in bucket and chain
        order) and construct entries (phase 3)."""
        p, inp = self.p, self.inp
        buckets = partition(0, p.gene, tid, self.threads)
        mine = sorted((inp.prefix[c][p.segment] % p.gene, c) for c in range(self.u)
                      if inp.prefix[c][p.segment] % p.gene in buckets)
        return (partition(0, len(inp.segments), tid, self.threads), [c for _, c in mine],
                partition(0, self.u, tid, self.threads))

    def _chains(self) -> dict[tuple[int, int], int]:
        """Chain lengths of the prefix tables once phase 2 is done (fixed by the contents)."""
        out: dict[tuple[int, int], int] = {}
        p = self.p
        for c in range(self.u):
            for j in range(1, p.segment + 1):
                key = (j, self.inp.prefix[c][j] % p.gene)
                out[key] = out.get(key, 0) + 1
        return out

    def _program(self, tid: int) -> Iterator[Any]:
        p, inp = self.p, self.inp
        segs, mine, ends = self.share(tid)
        seq = 0
        for a in range(segs.start, segs.stop, p.chunk):
            yield (DEDUP, tid, seq, a, min(a + p.chunk, segs.stop))
            seq += 1
        yield BARRIER
        cursor = partition(0, p.gene, tid, self.threads).start * self.u // p.gene % self.u
        for c in mine:
            yield (ENTRY, tid, seq, c, cursor)
            e = self._out[tid]
            self._claims[e] = c
            seq += 1
            cursor = (e + 1) % self.u
            for j in range(1, p.segment + 1):
                yield (START, tid, seq, j, e, c)
                seq += 1
        yield BARRIER
        chains = self._chains()
        open_ends = [e for e in ends if e in self._claims]
        for length in range(p.segment - 1, 0, -1):
            still = []
            for e in open_ends:
                c = self._claims[e]
                for k in range(chains.get((length, inp.suffix[c][length] % p.gene), 0)):
                    yield (MATCH, tid, seq, length, e, k, c)
                    seq += 1
                    if self._out[tid]:
                        break
                else:
                    still.append(e)
            open_ends = still
            yield BARRIER

    def _pull(self, tid: int) -> Any:
        """The thread's next program item; committed ops of a resumed run are replayed."""
        if tid in self._peek:
            return self._peek.pop(tid)
        prog = self._progs.get(tid)
        if prog is None:
            prog = self._progs[tid] = self._program(tid)
        for item in prog:
            if item is BARRIER or item[2] > self._last.get(tid, -1):
                return item
            self._out[tid] = self._replay.get((tid, item[2]))
        return FINISHED

    def next_op(self, tid: int, rng: np.random.Generator) -> Any:
        """The thread's next transaction (barriers pass unwaited), FINISHED when done."""
        item = self._pull(tid)
        while item is BARRIER:
            self._phase[tid] += 1
            item = self._pull(tid)
        return item

    def gate(self, cpu: Any, rt: Runtime, tid: int) -> Generator[Any, Any, None]:
        """Wait at the barriers before the thread's next transaction for every thread still
        running to arrive."""
        self._left.discard(tid)
        item = self._pull(tid)
        while item is BARRIER:
            yield from self._wait(cpu, rt, tid, self._phase[tid] + 1)
            item = self._pull(tid)
        self._peek[tid] = item

    def _wait(self, cpu: Any, rt: Runtime, tid: int, phase: int) -> Generator[Any, Any, None]:
        """Arrive at barrier ``phase`` at the thread's own time, then wait for the others."""
        yield from cpu.sync()
        self._phase[tid] = phase
        self._release()
        if not self._arrived(phase):
            ev = rt.m.env.event()
            self._waiting.append((phase, ev))
            yield from cpu.wait(ev)

    def _arrived(self, phase: int) -> bool:
        return all(self._phase[t] >= phase for t in range(self.threads) if t not in self._left)

    def _release(self) -> None:
        keep = []
        for phase, ev in self._waiting:
            if self._arrived(phase):
                ev.succeed()
            else:
                keep.append((phase, ev))
        self._waiting = keep

    def leave(self, tid: int) -> None:
        """The thread stopped (its share done or its transactions run): no barrier waits for
        it."""
        self._left.add(tid)
        self._release()

    def resume(self, order: Any) -> None:
        """A recovered run continues every thread after its last committed transaction (the
        committed ones' outcomes replayed from the model); without an order, from the start."""
        if order is None:
            self._fresh()
            return
        m = self.model()
        last: dict[int, int] = {}
        for t in order:
            op = self.executed[t]
            m.apply(op)
            last[op[1]] = max(last.get(op[1], -1), op[2])
        self._fresh(m.outcomes, last)

    def transactions(self) -> list[int]:
        """The transactions each thread's share takes when every thread runs it (the matching
        phase counted at its sequential outcome)."""
        m = self.model()
        counts = [0] * self.threads
        saved = (self._out, self._claims)
        self._out, self._claims = {}, {}
        progs = {t: self._program(t) for t in range(self.threads)}
        live = set(progs)
        while live:
            for t in sorted(live):
                for item in progs[t]:
                    if item is BARRIER:
                        break
                    m.apply(item)
                    counts[t] += 1
                    self._out[t] = m.outcomes.get((t, item[2]))
                else:
                    live.discard(t)
        self._out, self._claims = saved
        return counts

    # -- layout and transactions -------------------------------------------------------------------
    def spec(self) -> PMSpec:
        p = self.p
        nodes = self.u * (1 + p.segment)
        return PMSpec(statics=(StaticArray("uniq", p.gene, 2),
                               StaticArray("entries", p.gene, ENTRY_WORDS),
                               StaticArray("tables", p.segment * p.gene, 2)),
                      heap=((2, 2, nodes),),
                      max_tx_writes=4 * p.chunk + 8, max_tx_words=4 * p.chunk + 8,
                      max_tx_allocs=p.chunk, max_tx_objects=3 * p.chunk + 8)

    def nlocks(self) -> int:
        """The hash set, the construct entries with the tables: one lock each."""
        return 2

    def locks_of(self, op: tuple[int, ...]) -> tuple[int, ...]:
        return (0,) if op[0] == DEDUP else (1,)

    def init_data(self, rt: Runtime) -> None:
        for i in range(self.p.gene):
            rt.init_words(rt.static("entries", i), 0, [0, 1, i + 1, i + 1, 0, self.p.segment, 0])

    def body(self, tx: Any, op: tuple[int, ...]) -> Generator[Any, Any, None]:
        kind = op[0]
        if kind == DEDUP:
            inp, g, s = self.inp, self.p.gene, self.p.segment
            for i in range(op[3], op[4]):
                c = inp.segments[i]
                yield from self._insert(tx, tx.rt.static("uniq", inp.prefix[c][s] % g), c + 1)
            return
        if kind == ENTRY:
            yield from self._claim(tx, op)
            return
        if kind == START:
            j, e, c = op[3:6]
            row = (j - 1) * self.p.gene + self.inp.prefix[c][j] % self.p.gene
            yield from self._insert(tx, tx.rt.static("tables", row), e + 1, dedup=False)
            return
        yield from self._match(tx, op)

    def _insert(self, tx: Any, bucket: int, key: int, dedup: bool = True
                ) -> Generator[Any, Any, None]:
        """STAMP's sorted ``TMlist_insert`` of ``key`` into the chain at ``bucket``."""
        head, size = (int(w) for w in tx.read_words(bucket, 0, 2))
        prev, cur = 0, head
        while cur:
            yield from tx.pause()
            k, nxt = (int(w) for w in tx.read_words(cur, 0, 2))
            if k >= key:
                if dedup and k == key:
                    return
                break
            prev, cur = cur, nxt
        node = tx.alloc(2)
        tx.write_words(node, 0, [key, cur])
        if prev:
            tx.write(prev, NEXT, node)
        else:
            tx.write(bucket, HEAD, node)
        tx.write(bucket, SIZE, size + 1)

    def _claim(self, tx: Any, op: tuple[int, ...]) -> Generator[Any, Any, None]:
        """Probe for a free construct entry from the cursor and give it the content."""
        static = tx.rt.static
        e = op[4]
        for _ in range(self.u):
            if not tx.read(static("entries", e), SEG):
                break
            yield from tx.pause()
            e = (e + 1) % self.u
        else:
            raise PmsimError("genome: no free construct entry (more claims than unique "
                             "segments)")
        tx.write(static("entries", e), SEG, op[3] + 1)
        self._out[op[1]] = e

    def _match(self, tx: Any, op: tuple[int, ...]) -> Generator[Any, Any, None]:
        """Try the ``k``-th candidate of the entry's suffix bucket; link it if it matches."""
        static = tx.rt.static
        tid, length, e, k, c = op[1], op[3], op[4], op[5], op[6]
        g = self.p.gene
        self._out[tid] = False
        cur = int(tx.read(static("tables", (length - 1) * g + self.inp.suffix[c][length] % g),
                          HEAD))
        for _ in range(k):
            if not cur:
                break
            cur = int(tx.read(cur, NEXT))
        if not cur:
            return
        cand = self._index(int(tx.read(cur, KEY)) - 1, "a table node's key")
        yield from tx.pause()
        ce, ee = static("entries", cand), static("entries", e)
        is_start, cseg = tx.read(ce, IS_START), int(tx.read(ce, SEG))
        e_start = self._index(int(tx.read(ee, START_PTR)) - 1, f"entry {e}'s start pointer")
        if not (is_start and e_start != cand
                and match(self.inp, cseg - 1, int(tx.read(ee, SEG)) - 1, length,
                          self.p.segment)):
            return
        tx.write(ce, IS_START, 0)
        s_end = self._index(int(tx.read(ce, END_PTR)) - 1, f"entry {cand}'s end pointer")
        tx.write(static("entries", s_end), START_PTR, e_start + 1)
        tx.write(ee, NEXT_PTR, cand + 1)
        es = static("entries", e_start)
        tx.write(es, END_PTR, s_end + 1)
        tx.write(ee, OVERLAP, length)
        tx.write(es, LENGTH, int(tx.read(es, LENGTH)) + int(tx.read(ce, LENGTH)) - length)
        self._out[tid] = True

    def sequences(self, rt: Runtime) -> list[str]:
        """STAMP's last step on an image: every chain, from each claimed entry still a start,
        its segments joined at their overlaps (one chain equal to the gene when the matching
        reconstructed it)."""
        ent = rt.peek_static("entries")
        out = []
        for i in range(self.u):
            if not (ent[i, SEG] and ent[i, IS_START]):
                continue
            text, cur = self.inp.contents[int(ent[i, SEG]) - 1], i
            for _ in range(self.u):
                nxt = int(ent[cur, NEXT_PTR]) - 1
                if nxt < 0:
                    break
                text += self.inp.contents[int(ent[nxt, SEG]) - 1][int(ent[cur, OVERLAP]):]
                cur = nxt
            out.append(text)
        return out

    def _index(self, i: int, what: str) -> int:
        """An entry index read from PM, checked (a corrupt image raises PmsimError)."""
        if not 0 <= i < self.p.gene:
            raise PmsimError(f"genome: {what} is {i + 1}, not an entry of 1..{self.p.gene}")
        return i

    # -- reference and image -----------------------------------------------------------------------
    def model(self) -> Model:
        return GenomeModel(self.inp, self.p.gene, self.p.segment)

    def _chain(self, rt: Runtime, bucket_words: Any, what: str, seen: set[int],
               live: list[int], limit: int) -> list[int]:
        head, size = (int(w) for w in bucket_words)
        keys: list[int] = []
        x = head
        while x:
            check_node(rt, x, seen)
            live.append(x)
            k, x = (int(w) for w in rt.peek_words(x, 0, 2))
            if not 1 <= k <= limit or len(keys) >= limit:
                raise PmsimError(f"genome: {what} holds a bad key {k}")
            keys.append(k - 1)
        if keys != sorted(keys) or len(keys) != size:
            raise PmsimError(f"genome: {what}'s chain is unsorted or not its size {size}")
        return keys

    def _read(self, rt: Runtime) -> tuple[list[int], Hashable]:
        p = self.p
        seen: set[int] = set()
        live: list[int] = []
        uniq = rt.peek_static("uniq")
        sets = []
        for b in range(p.gene):
            keys = self._chain(rt, uniq[b], f"hash-set bucket {b}", seen, live, self.u)
            if keys:
                sets.append((b, tuple(keys)))
        entries = tuple(tuple(int(w) for w in row[:NEXT_PTR + 1])
                        for row in rt.peek_static("entries"))
        tables = rt.peek_static("tables")
        chains = []
        for row in range(p.segment * p.gene):
            keys = self._chain(rt, tables[row], f"table row {row}", seen, live, p.gene)
            if keys:
                chains.append(((row // p.gene + 1, row % p.gene), tuple(keys)))
        return live, (tuple(sets), entries, tuple(chains))


__all__ = ["Genome", "GenomeParams"]
