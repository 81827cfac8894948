"""LOC hardware (Lu, Shu, Sun, Mutlu, ICCD 2014): the Commit/Recovery Logic (CRL), multi-versioned
cache lines and the statically laid-out NVM log, shared by LOC-WAL, EC-WAL and H-WAL.

What the unit models (card ``loc.md`` §3-§5, §10):

* **Versions.** A transactional store does not change architectural memory: it creates or
  updates the transaction's *version* of the 64-byte line (a copy of the newest version, or of
  memory, with the word changed) and is timed as a cache access by the core. Loads see the
  newest version. Versions are tagged with the hardware TxID and a TxDirty bit (not logged).
* **Log.** A ring of *block groups*: 7 data slots (64-byte line copies) and a META line ``[7 x
  BLK-TAG, SID]``: the SID last, so a META line that persists as a prefix of its words (a burst
  in ``line`` mode and in ``px86``) is either invisible to recovery (its old SID is below the
  head's) or whole; the card's ``[SID, 7 x BLK-TAG]`` let a new SID validate an earlier lap's
  tags (``LogLayout.sid_first``, mutant M20). A tag packs valid and stub bits, the TxID
  (``txid_bits`` wide), TxCnt and the home line (relative to the PM base). The CRL writes log
  lines with non-temporal stores (they bypass the caches, as hardware log writes do) and META
  once its group is full or its window closes. In the trace the hardware's rule "a group's META
  persists only after its data lines" is a persist-order edge (:func:`meta_after_data`), not a
  wait: the card's atomic 512-byte group is not one burst, and the per-line order is its sound
  over-approximation. A log line is one burst: in ``px86`` it persists as a prefix of its words
  (:func:`line_bursts`), as every line does in ``line`` mode.
* **Eager Commit.** No commit record: a transaction's last logged block (or a count-only stub
  tag) carries TxCnt, and recovery commits a transaction whose log copies, plus the versions
  coalesced into committed successors, equal TxCnt. TxCnt counts copies, not the card's
  distinct lines: a line spilled early and written again is logged twice, and with a count of
  distinct lines its early copy completes the count while its final copy may be lost (the
  card's M2 row, which pmsim's fuzzing found on ``loc-spill``).
* **Speculative Persistence.** Up to ``sd`` writing transactions form a window. When a later
  transaction commits, older TxDirty versions of the lines it wrote are coalesced (dropped
  unlogged) and a dependency pair ``<Tx, Ty, n>`` is counted. The window closes at its SD-th
  commit, on ``flush`` or under log pressure: the remaining TxDirty versions and a stub per
  transaction without one are logged, the window record (first TxID, aborted TxIDs, pairs) is
  written when the window has an aborted transaction or a pair (recovery needs nothing else from
  it), and the CRL waits until all of it is durable: the window's one ordering point. Then
  LastCommittedTxID advances, the window's transactions are acknowledged, and their newest
  lines are released to be written home (lazily: in the trace they are plain stores that may
  persist at any later time).
* **Version overflow.** At most ``version_ways`` TxDirty versions live in one LLC set (of
  ``version_sets``); one more spills the oldest of them to the log (TxCnt 0), which costs its
  coalescing. The unit
  does not see the engines' own LRU evictions (its versions are not lines of their cache
  arrays), so this set budget is the only source of early log writes.
* **TxID wrap.** Tags keep ``txid_bits`` of the TxID; recovery reads them relative to the
  head's start TxID, so the CRL truncates before the log could hold half the TxID space (the
  card's TxST bound: 8-bit TxIDs for 128 live transactions).
* **Truncation.** When the ring or the window-record slots run short, the CRL flushes the home
  lines released since the last truncation, waits, then advances the head (one word: start
  TxID and start SID) and waits again.
* **H-WAL** (``mode="hwal"``): the same log, a window of one transaction, and strict ordering:
  at commit the blocks are logged, the CRL waits, writes a commit record (the head's second
  word: the last committed TxID) and waits again before acknowledging.

Recovery (:func:`decode`) is the card's §5 implementation-grade procedure with the closing loop
(M19), each rule a named check that mutants may skip.

The unit runs over either engine: it issues loads, non-temporal stores, stores, flushes and
fences through the core, as named persist steps of the runtime that owns it, so mutations act on
its protocol by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config import LINE
from ..errors import ConfigError
from ..trace import Ev, Mark

SLOTS = 7
"""Data blocks per block group (the eighth line is META)."""
GROUP_BYTES = 8 * LINE
TAG_VALID = 1 << 63
TAG_STUB = 1 << 62
TXID_SHIFT = 40
TXID_MAX_BITS = 22
CNT_SHIFT = 24
CNT_MAX = (1 << 16) - 1
LINE_MAX = (1 << 24) - 1
_MASK = (1 << 64) - 1
REC_HEAD = 5  # first TxID, transactions, aborted, pairs, checksum


def make_tag(txid: int, cnt: int, line: int, txid_bits: int, stub: bool = False) -> int:
    """A BLK-TAG word: valid, stub, TxID (low ``txid_bits``), TxCnt and home line."""
    return (TAG_VALID | (TAG_STUB if stub else 0) | ((txid & ((1 << txid_bits) - 1)) << TXID_SHIFT)
            | (cnt << CNT_SHIFT) | line)


def read_tag(w: int) -> tuple[bool, bool, int, int, int]:
    """``(valid, stub, txid field, TxCnt, home line)`` of a tag word."""
    return (bool(w & TAG_VALID), bool(w & TAG_STUB), (w >> TXID_SHIFT) & ((1 << TXID_MAX_BITS) - 1),
            (w >> CNT_SHIFT) & CNT_MAX, w & LINE_MAX)


def pack_head(start_txid: int, start_sid: int) -> int:
    """The head word: start TxID (high 32 bits) and start SID (low 32), one atomic store."""
    return ((start_txid & 0xFFFFFFFF) << 32) | (start_sid & 0xFFFFFFFF)


def checksum(words: Sequence[int]) -> int:
    """A position-dependent 64-bit checksum of a window record's words (never 0)."""
    h = 0x243F6A8885A308D3
    for i, w in enumerate(words):
        h = ((h ^ (w + i)) * 0x9E3779B97F4A7C15) & _MASK
        h ^= h >> 29
    return h | 1


def pack_pair(tx_rel: int, ty_rel: int, n: int) -> int:
    return (tx_rel << 48) | (ty_rel << 32) | n


@dataclass(frozen=True)
class LogLayout:
    """Where the log lives in PM: a head line, a ring of block groups, window-record slots."""

    base: int
    groups: int
    records: int
    record_words: int
    sid_first: bool = False
    """The card's META layout ``[SID, 7 x BLK-TAG]``; by default the SID is the last word,
    ``[7 x BLK-TAG, SID]``, so that a META line persisting as a prefix of its words never shows
    a new SID over an earlier lap's tags (the card assumes the line atomic)."""

    @property
    def head(self) -> int:
        return self.base

    @property
    def ring(self) -> int:
        return self.base + LINE

    def slot(self, pos: int, j: int) -> int:
        return self.ring + pos * GROUP_BYTES + j * LINE

    def meta(self, pos: int) -> int:
        return self.ring + pos * GROUP_BYTES + SLOTS * LINE

    @property
    def sid_word(self) -> int:
        """Index of the SID among the META line's eight words."""
        return 0 if self.sid_first else SLOTS

    def tag_word(self, j: int) -> int:
        """Index of slot ``j``'s tag among the META line's eight words."""
        return j + 1 if self.sid_first else j

    def tag(self, pos: int, j: int) -> int:
        """Address of the tag of slot ``j`` of group ``pos``."""
        return self.meta(pos) + 8 * self.tag_word(j)

    def meta_words(self, sid: int, tags: Sequence[int]) -> list[int]:
        """The eight words of a META line, in address (and store) order."""
        return [sid, *tags] if self.sid_first else [*tags, sid]

    @property
    def record_bytes(self) -> int:
        return -(-self.record_words * 8 // LINE) * LINE

    def record(self, r: int) -> int:
        return self.ring + self.groups * GROUP_BYTES + r * self.record_bytes

    @property
    def nbytes(self) -> int:
        return LINE + self.groups * GROUP_BYTES + self.records * self.record_bytes

    @staticmethod
    def record_words_for(sd: int) -> int:
        """Header, one aborted TxID per window slot, one pair per (older, newer) couple."""
        return REC_HEAD + sd + sd * (sd - 1) // 2


# -- recovery ----------------------------------------------------------------------------------
@dataclass
class Decoded:
    """What recovery found in the log and what it replays."""

    start_txid: int
    start_sid: int
    order: list[int]
    committed: dict[int, bool]
    replayed: list[int]
    replay: list[tuple[int, list[int]]]
    next_txid: int
    next_sid: int


Words = Callable[[int, int], Sequence[int]]


def decode(words: Words, lay: LogLayout, pm_base: int, mode: str, txid_bits: int,
           check: Callable[[str], bool]) -> Decoded:
    """The card's §5 recovery over the log: which transactions are committed, where the prefix
    is cut, and the home lines to replay (in commit order, per transaction the newest copy of
    each line). ``words(addr, n)`` reads PM; ``check(name)`` is False for a skipped rule."""
    head = [int(x) for x in words(lay.head, 2)]
    start_txid, start_sid = head[0] >> 32, head[0] & 0xFFFFFFFF
    mask, half = (1 << txid_bits) - 1, 1 << (txid_bits - 1)
    tags: dict[int, list[tuple[int, int, bool, int, int]]] = {}
    max_sid = start_sid - 1
    sid_valid = check("loc.recover.sid-valid")
    for pos in range(lay.groups):
        meta = [int(x) for x in words(lay.meta(pos), SLOTS + 1)]
        sid = meta[lay.sid_word]
        if sid == 0:
            continue
        max_sid = max(max_sid, sid)
        if sid_valid and sid < start_sid:
            continue
        for j in range(SLOTS):
            valid, stub, tfield, cnt, line = read_tag(meta[lay.tag_word(j)])
            if not valid:
                continue
            rel = (tfield - start_txid) & mask
            if rel >= half:
                continue
            tags.setdefault(start_txid + rel, []).append((sid, j, stub, cnt, line))
    aborted: set[int] = set()
    pairs: dict[int, list[tuple[int, int]]] = {}
    last = max(tags, default=start_txid - 1)
    for r in range(lay.records):
        rec = [int(w) for w in words(lay.record(r), lay.record_words)]
        first, ntx, nab, npr, csum = rec[:REC_HEAD]
        if ntx < 1 or first < start_txid or REC_HEAD + nab + npr > lay.record_words:
            continue
        body = rec[REC_HEAD: REC_HEAD + nab + npr]
        if csum != checksum(rec[:REC_HEAD - 1] + body):
            continue
        last = max(last, first + ntx - 1)
        aborted.update(body[:nab])
        for p in body[nab:]:
            tx, ty, n = first + (p >> 48), first + ((p >> 32) & 0xFFFF), p & 0xFFFFFFFF
            pairs.setdefault(tx, []).append((ty, n))
    order = [t for t in range(start_txid, last + 1) if t not in aborted]
    committed: dict[int, bool] = {}
    copies = check("loc.recover.count-copies")

    def complete(t: int, extra: int = 0) -> tuple[bool, int]:
        ts = tags.get(t, [])
        data = [line for _, _, stub, _, line in ts if not stub]
        cnt = max((c for *_, c, _ in ts), default=0)
        return cnt > 0 and (len(data) if copies else len(set(data))) + extra == cnt, cnt

    if mode == "hwal":  # strictly ordered: the commit record, and the count against aborts
        done = head[1]
        for t in order:
            committed[t] = t <= done and complete(t)[0]
        replayed = [t for t in order if committed[t]]
    else:
        succ_ok = check("loc.recover.pair-successor-committed")
        for t in (reversed(order) if check("loc.recover.pairs-tail-to-head") else order):
            ps = pairs.get(t, [])
            ok, cnt = complete(t, sum(n for ty, n in ps if committed.get(ty, False) or not succ_ok))
            ok = ok and (not succ_ok or all(committed.get(ty, False) for ty, _ in ps))
            if not check("loc.recover.count-complete"):
                ok = cnt > 0
            committed[t] = ok
        replayed = _cut(order, committed, pairs, check)
    blocks: list[tuple[int, int, int, int]] = []  # (rank, sid, j, line) per replayed block
    for rank, t in enumerate(replayed):
        newest: dict[int, tuple[int, int]] = {}
        for sid, j, stub, _, line in tags.get(t, []):
            if not stub and (sid, j) > newest.get(line, (-1, -1)):
                newest[line] = (sid, j)
        blocks.extend((rank, sid, j, line) for line, (sid, j) in newest.items())
    if check("loc.recover.replay-commit-order"):
        blocks.sort()
    else:
        blocks.sort(key=lambda b: (b[1], b[2]))
    replay = []
    for _, sid, j, line in blocks:
        pos = (sid - 1) % lay.groups
        replay.append((pm_base + line * LINE, [int(w) for w in words(lay.slot(pos, j), 8)]))
    return Decoded(start_txid, start_sid, order, committed, replayed, replay,
                   max(start_txid, last + 1), max(start_sid, max_sid + 1))


def _cut(order: list[int], committed: dict[int, bool], pairs: dict[int, list[tuple[int, int]]],
         check: Callable[[str], bool]) -> list[int]:
    """The replayed prefix: up to the first transaction not committed (a gap with no blocks
    included), closed so that no replayed transaction has a pair successor after the cut."""
    if not check("loc.recover.prefix-cut"):
        return [t for t in order if committed[t]]
    k = next((i for i, t in enumerate(order) if not committed[t]), len(order))
    if check("loc.recover.close-prefix"):
        pos_of = {t: i for i, t in enumerate(order)}
        moved = True
        while moved:
            moved = False
            for i in range(k):
                if any(pos_of.get(ty, len(order)) >= k for ty, _ in pairs.get(order[i], [])):
                    k, moved = i, True
                    break
    return order[:k]


# -- the persist-order edges of the hardware -----------------------------------------------------
@dataclass(frozen=True)
class MetaAfterData:
    """The edge provider of the rule "a tag of a group's META persists only after its data
    line": for each valid, non-stub tag store in the trace, an edge from the last store to every
    word of its slot's line before it (``line`` mode: the line's chain; ``px86``: each word's)."""

    lay: LogLayout
    __name__ = "loc_meta_after_data"

    def __call__(self, ix: Any, domain: str) -> list[Any]:
        import numpy as np

        from crashfuzz.model import Edge

        lay = self.lay
        ring_w0 = (lay.ring - ix.trace.pm_base) // 8
        ring_w1 = ring_w0 + lay.groups * GROUP_BYTES // 8
        w = ix.st_word
        tag_w0 = 8 * SLOTS + lay.tag_word(0)  # group-relative words of the tags
        rows = np.nonzero((w >= ring_w0) & (w < ring_w1) & ((w - ring_w0) % 64 >= tag_w0)
                          & ((w - ring_w0) % 64 < tag_w0 + SLOTS))[0]
        if not len(rows):
            return []
        key_of = {int(k): c for c, k in enumerate(ix.chain_key.tolist())}
        per_line = ix.order == "line"
        out: list[Edge] = []
        for r in rows.tolist():
            valid, stub, *_ = read_tag(int(ix.st_val[r]))
            if not valid or stub:
                continue
            rel = int(w[r]) - ring_w0
            pos, j = rel // 64, rel % 64 - tag_w0
            data_w = ring_w0 + pos * 64 + j * 8
            e = int(ix.st_event[r])
            y = (int(ix.st_chain[r]), int(ix.st_pos[r]) + 1)
            for key in ([data_w // 8] if per_line else range(data_w, data_w + 8)):
                c = key_of.get(key)
                if c is None:
                    continue
                lo, hi = int(ix.off[c]), int(ix.off[c + 1])
                n = int(np.searchsorted(ix.st_event[lo:hi], e))
                if n:
                    out.append(Edge(c, n, *y))
        return out


def meta_after_data(lay: LogLayout) -> MetaAfterData:
    """The META-after-data edge provider of a log (picklable, for worker processes)."""
    return MetaAfterData(lay)


@dataclass(frozen=True)
class LineBursts:
    """The edge provider of the rule "the CRL writes a log line as one burst", for ``px86``.

    The card assumes a line-sized log write is atomic (its alternative to atomic 512-byte
    groups). ``px86`` would otherwise let each word of a log line persist on its own; this
    provider makes a burst persist as a prefix of its words (an edge from each word's store to
    the next word's store of the same burst), the order ``line`` mode already gives every
    line. A prefix is a superset of the atomic line's two states, so a recovery that passes
    under it passes under the card's rule. ``line`` mode needs no edge."""

    lay: LogLayout
    __name__ = "loc_line_bursts"

    def __call__(self, ix: Any, domain: str) -> list[Any]:
        import numpy as np

        from crashfuzz.model import Edge

        if ix.order == "line":
            return []
        lay = self.lay
        w0 = (lay.ring - ix.trace.pm_base) // 8
        w1 = (lay.base + lay.nbytes - ix.trace.pm_base) // 8
        rows = np.argsort(ix.st_event, kind="stable")  # the store table in trace order
        w = ix.st_word[rows]
        ev = ix.st_event[rows]
        nt = ix.kind[ev] == Ev.NTSTORE
        inlog = nt & (w >= w0) & (w < w1)
        nxt = np.nonzero(inlog[:-1] & inlog[1:] & (w[1:] == w[:-1] + 1) & (w[1:] % 8 != 0)
                         & (ix.tid[ev[1:]] == ix.tid[ev[:-1]]))[0]
        chain, count = ix.st_chain[rows], ix.st_pos[rows] + 1
        return [Edge(int(chain[i]), int(count[i]), int(chain[i + 1]), int(count[i + 1]))
                for i in nxt.tolist()]


def line_bursts(lay: LogLayout) -> LineBursts:
    """The line-burst edge provider of a log (picklable, for worker processes)."""
    return LineBursts(lay)


# -- the CRL -------------------------------------------------------------------------------------
@dataclass
class Version:
    """One transaction's copy of a line in the cache."""

    txid: int
    words: list[int]
    seq: int
    dirty: bool = True  # TxDirty: not yet logged


@dataclass
class TxState:
    """A TxST entry: one writing transaction."""

    txid: int
    rt_txid: int
    lines: set[int] = field(default_factory=set)
    emitted: int = 0
    coalesced: int = 0  # versions dropped unlogged into successors (the pairs' n, summed)
    committed: bool = False
    aborted: bool = False
    pairs: dict[int, int] = field(default_factory=dict)


@dataclass
class LocCounts:
    """Cumulative counters of the unit (``Runtime.counters``)."""

    log_lines: int = 0
    meta_lines: int = 0
    record_lines: int = 0
    home_lines: int = 0
    coalesced: int = 0
    overflow: int = 0
    stubs: int = 0
    windows: int = 0
    window_txs: int = 0  # writing transactions over all closed windows (occupancy = / windows)
    close_stall_ns: float = 0.0
    truncations: int = 0
    max_versions: int = 0


class Crl:
    """The Commit/Recovery Logic of one core, driving the log through its owner's named steps.

    ``owner`` is the runtime (it provides ``step``, ``order``, ``flush`` and ``m``, the machine).
    Class-level switches used by mutants live on the owner: ``home_gate`` ("window": home
    writes only after the window is durable; "own-log": after the transaction's own blocks were
    issued, the paper's literal gate), ``coalesce_at`` ("commit" or "write"), ``overflow_to_home``,
    ``count_on_overflow``, ``ack_before_wait``, ``pair_for_logged``, ``coalesce_without_pair``,
    ``count_lines`` (TxCnt and the recovery count over distinct lines, the card's rule),
    ``group_per_tx`` (end the group after each transaction's blocks at a close, so one META line
    never holds two transactions' tags), and ``groups_per_tx`` (free groups a new writing
    transaction needs, else the CRL closes the window and truncates).
    """

    def __init__(self, owner: Any, lay: LogLayout, mode: str, sd: int, version_ways: int,
                 txid_bits: int) -> None:
        self.o = owner
        self.m = owner.m
        self.lay = lay
        self.mode = mode
        self.sd = sd
        self.version_ways = version_ways
        self.txid_bits = txid_bits
        cfg = self.m.config
        self.sets = owner.version_sets or cfg.cache.llc.sets
        self.pm_base = self.m.pm.base
        self.counts = LocCounts()
        self.versions: dict[int, list[Version]] = {}
        self.set_dirty: dict[int, int] = {}
        self.seq = 0
        self.window: list[TxState] = []
        self.acks: list[tuple[int, float]] = []  # (txid, begin time) awaiting acknowledgement
        self.cur: TxState | None = None
        self.released: set[int] = set()
        self.load_head()

    def load_head(self) -> None:
        """Volatile CRL state from the persistent head (after format or recovery)."""
        h = self.m.peek(self.lay.head)
        self.start_txid, self.start_sid = h >> 32, h & 0xFFFFFFFF
        self.next_txid, self.next_sid = self.start_txid, self.start_sid
        self.last_committed = self.start_txid - 1
        self.group: list[int] = []
        self.records_used = 0

    # -- loads and stores ------------------------------------------------------------------------
    def load(self, cpu: Any, addr: int) -> int:
        v = cpu.load(addr)
        vs = self.versions.get(addr >> 6)
        return vs[-1].words[(addr >> 3) & 7] if vs else v

    def load_words(self, cpu: Any, addr: int, n: int) -> list[int]:
        """``n`` consecutive words from ``addr`` (the words of one read: independent loads,
        as many single loads on the in-order core), each line's newest version over memory."""
        vals = cpu.load_words(addr, n)
        versions = self.versions
        if versions:
            for line in range(addr >> 6, ((addr + 8 * n - 1) >> 6) + 1 if n else addr >> 6):
                vs = versions.get(line)
                if vs:
                    words = vs[-1].words
                    lo = max(0, -((addr - (line << 6)) // 8))
                    hi = min(n, -((addr - ((line + 1) << 6)) // 8))
                    for i in range(lo, hi):
                        vals[i] = words[((addr >> 3) + i) & 7]
        return vals

    def newest(self, addr: int) -> int | None:
        """The newest version's value of a word (untimed), None when no version exists."""
        vs = self.versions.get(addr >> 6)
        return vs[-1].words[(addr >> 3) & 7] if vs else None

    def store(self, cpu: Any, tx: Any, addr: int, value: int) -> None:
        cpu.load(addr)  # the core's access (read for ownership); the value goes to the version
        st = self._state(cpu, tx)
        line = addr >> 6
        vs = self.versions.setdefault(line, [])
        if vs and vs[-1].txid == st.txid:
            v = vs[-1]
            v.words[(addr >> 3) & 7] = value
            if not v.dirty:  # dirty again after a spill: now the most recently used version
                v.dirty = True
                self.seq += 1
                v.seq = self.seq
                self._pressure(cpu, line)
            return
        if self.o.coalesce_at == "write" and vs and vs[-1].dirty:
            old = vs.pop()
            self._clean(old, line)
            self._coalesce(old, st, line)
        base = vs[-1].words if vs else [int(w) for w in self.m.pm_words(line << 6, 8)]
        self.seq += 1
        v = Version(st.txid, list(base), self.seq)
        v.words[(addr >> 3) & 7] = value  # the store lands before any spill copies the line
        vs.append(v)
        st.lines.add(line)
        self.counts.max_versions = max(self.counts.max_versions, len(vs))
        self._pressure(cpu, line)

    def _state(self, cpu: Any, tx: Any) -> TxState:
        """The TxST entry of ``tx``, taking a TxID at its first write (single core: the order of
        first writes is the commit order)."""
        st = self.cur
        if st is not None and st.rt_txid == tx.txid:
            return st
        live = self.next_txid - self.start_txid + self.sd  # TxIDs the log may hold after this one
        if (self._free_groups() - self._window_groups() < self.o.groups_per_tx
                or live >= 1 << (self.txid_bits - 1)):
            self.close(cpu)
            self.truncate(cpu)
        st = self.cur = TxState(self.next_txid, tx.txid)
        self.next_txid += 1
        return st

    def _window_groups(self) -> int:
        """Groups the open window will still fill at its close: its TxDirty versions and a
        stub per transaction, beyond the current group's free slots."""
        pending = sum(self.set_dirty.values()) + len(self.window) - (SLOTS - len(self.group)) % SLOTS
        return max(0, -(-pending // SLOTS))

    def _free_groups(self) -> int:
        return self.lay.groups - (self.next_sid - self.start_sid) - (1 if self.group else 0)

    def _clean(self, v: Version, line: int) -> None:
        """``v`` (of ``line``) is logged or dropped: no longer TxDirty, out of its set's budget."""
        if v.dirty:
            v.dirty = False
            self.set_dirty[line % self.sets] -= 1

    def _pressure(self, cpu: Any, line: int) -> None:
        s = line % self.sets
        n = self.set_dirty[s] = self.set_dirty.get(s, 0) + 1
        if n <= self.version_ways:
            return
        best: tuple[int, Version] | None = None
        for ln, vs in self.versions.items():
            if ln % self.sets != s:
                continue
            for v in vs:
                if v.dirty and (best is None or v.seq < best[1].seq):
                    best = (ln, v)
        if best is None:
            return
        ln, v = best
        self.counts.overflow += 1
        self._clean(v, ln)
        st = self._tx(v.txid)
        if self.o.overflow_to_home:
            with self.o.step(cpu, "loc.log.block") as c:
                for i, w in enumerate(v.words):
                    c.store((ln << 6) + 8 * i, w)
            return
        cnt = self._txcnt(st, 1) if (st is not None and self.o.count_on_overflow) else 0
        self._log_block(cpu, v.txid, ln, v.words, cnt)
        if st is not None:
            st.emitted += 1
        vs = self.versions[ln]
        if v is not vs[-1]:
            vs.remove(v)

    def _tx(self, txid: int) -> TxState | None:
        if self.cur is not None and self.cur.txid == txid:
            return self.cur
        return next((t for t in self.window if t.txid == txid), None)

    # -- the log ---------------------------------------------------------------------------------
    def _log_block(self, cpu: Any, txid: int, line: int, words: Sequence[int], cnt: int) -> None:
        if len(self.group) == SLOTS:
            self._write_meta(cpu)
        if not self.group and self._free_groups() <= 0:
            raise ConfigError(f"the LOC log ring ({self.lay.groups} groups) is full inside one "
                              "window: raise the runtime's log_groups option or lower sd")
        pos = (self.next_sid - 1) % self.lay.groups
        j = len(self.group)
        with self.o.step(cpu, "loc.log.block") as c:
            a = self.lay.slot(pos, j)
            for i, w in enumerate(words):
                c.ntstore(a + 8 * i, w)
        self.counts.log_lines += 1
        self.group.append(make_tag(txid, cnt, line - (self.pm_base >> 6), self.txid_bits))

    def _stub(self, cpu: Any, txid: int, cnt: int) -> None:
        if len(self.group) == SLOTS:
            self._write_meta(cpu)
        self.counts.stubs += 1
        self.group.append(make_tag(txid, cnt, 0, self.txid_bits, stub=True))

    def _write_meta(self, cpu: Any) -> None:
        if not self.group:
            return
        pos = (self.next_sid - 1) % self.lay.groups
        tags = self.group + [0] * (SLOTS - len(self.group))
        with self.o.step(cpu, "loc.log.meta") as c:
            a = self.lay.meta(pos)
            for i, w in enumerate(self.lay.meta_words(self.next_sid, tags)):
                c.ntstore(a + 8 * i, w)
        self.counts.meta_lines += 1
        self.next_sid += 1
        self.group = []

    # -- commit, abort, windows --------------------------------------------------------------------
    def commit(self, cpu: Any, tx: Any) -> None:
        """TxCommit: coalesce older versions under the removal rule; close the window at its
        SD-th writing transaction (H-WAL: log, wait, commit record, wait). A read-only
        transaction is acknowledged with the window before it."""
        st = self.cur
        if st is None or st.rt_txid != tx.txid:
            self.acks.append((tx.txid, tx.start))
            if not self.window:
                self._ack(cpu)
            return
        self.cur = None
        st.committed = True
        self.window.append(st)
        self.acks.append((tx.txid, tx.start))
        if self.o.coalesce_at == "commit":
            for line in st.lines:
                vs = self.versions[line]
                for v in vs[:-1]:
                    if v.dirty:
                        self._clean(v, line)
                        self._coalesce(v, st, line)
                    elif self.o.pair_for_logged and (prev := self._tx(v.txid)) is not None:
                        prev.pairs[st.txid] = prev.pairs.get(st.txid, 0) + 1
                vs[:] = vs[-1:]
        if self.o.home_gate == "own-log":
            self._log_tx(cpu, st, release=True)
        if self.mode == "hwal" or sum(not t.aborted for t in self.window) >= self.sd:
            self.close(cpu)

    def _coalesce(self, v: Version, succ: TxState, line: int) -> None:
        """``v`` (of an older transaction, a line ``succ`` wrote) will never be logged."""
        prev = self._tx(v.txid)
        self.counts.coalesced += 1
        if prev is None:
            return
        if self.o.coalesce_without_pair:
            prev.lines.discard(line)
            return
        prev.coalesced += 1
        prev.pairs[succ.txid] = prev.pairs.get(succ.txid, 0) + 1

    def _txcnt(self, st: TxState, more: int) -> int:
        """TxCnt once ``more`` further blocks are emitted: every log copy of the transaction
        (a line spilled early and logged again counts twice) plus its coalesced versions, so a
        missing copy always leaves the count short. ``count_lines`` is the card's rule (distinct
        lines), which a spilled line's early copy can complete while its final copy is lost."""
        n = len(st.lines) if self.o.count_lines else st.emitted + more + st.coalesced
        return min(n, CNT_MAX)

    def abort(self, cpu: Any, tx: Any) -> None:
        """TxAbort (before commit): drop the transaction's versions; keep its TxID (marked
        aborted in the window record) only if some of its blocks already reached the log."""
        st = self.cur
        if st is None or st.rt_txid != tx.txid:
            return
        self.cur = None
        for line in st.lines:
            vs = self.versions.get(line, [])
            for v in [v for v in vs if v.txid == st.txid]:
                self._clean(v, line)
                vs.remove(v)
            if not vs:
                self.versions.pop(line, None)
        if st.emitted:
            st.aborted = True
            self.window.append(st)
        else:
            self.next_txid = st.txid

    def _log_tx(self, cpu: Any, st: TxState, release: bool = False) -> None:
        """Log the transaction's TxDirty versions; the last block (or a stub) carries TxCnt."""
        pending = [ln for ln in sorted(st.lines)
                   if self.versions.get(ln) and self.versions[ln][-1].txid == st.txid
                   and self.versions[ln][-1].dirty]
        cnt = self._txcnt(st, len(pending))
        for i, ln in enumerate(pending):
            v = self.versions[ln][-1]
            self._log_block(cpu, st.txid, ln, v.words, cnt if i == len(pending) - 1 else 0)
            self._clean(v, ln)
            st.emitted += 1
        if not pending:
            self._stub(cpu, st.txid, cnt)
        if self.o.group_per_tx:
            self._write_meta(cpu)
        if release:
            self._release(cpu, [st])

    def close(self, cpu: Any) -> None:
        """Close the window: log what is left, write the record, wait (the one ordering point),
        advance LastCommittedTxID, acknowledge, release the home writes."""
        if not self.window:
            self._ack(cpu)
            return
        txs = [t for t in self.window if not t.aborted]
        t0 = cpu.clock
        if self.o.home_gate != "own-log":
            for st in txs:
                self._log_tx(cpu, st)
        self._write_meta(cpu)
        if self.mode == "hwal":
            self.o.order(cpu, "hwal.commit.wait-log")
            with self.o.step(cpu, "hwal.commit.record") as c:
                c.store(self.lay.head + 8, self.window[-1].txid)
                c.clwb(self.lay.head)
            self.o.order(cpu, "hwal.commit.wait-record")
        else:
            if any(t.aborted or t.pairs for t in self.window):  # else recovery needs no record
                self._write_record(cpu)
            if self.o.ack_before_wait:
                self._ack(cpu)
            self.o.order(cpu, "loc.close.wait")
        self.last_committed = self.window[-1].txid
        self._ack(cpu)
        c = self.counts
        c.windows += 1
        c.window_txs += len(txs)
        if self.o.home_gate != "own-log":
            self._release(cpu, txs)
        self.window = []
        c.close_stall_ns += cpu.clock - t0
        if self.mode != "hwal" and self.records_used >= self.lay.records:
            self.truncate(cpu)

    def _write_record(self, cpu: Any) -> None:
        first = self.window[0].txid
        txs = self.window
        aborted = [t.txid for t in txs if t.aborted]
        pairs = [pack_pair(t.txid - first, ty - first, n) for t in txs
                 for ty, n in sorted(t.pairs.items())]
        head = [first, len(txs), len(aborted), len(pairs)]
        body = aborted + pairs
        rec = head + [checksum(head + body)] + body
        if len(rec) > self.lay.record_words:
            raise ConfigError("a LOC window record outgrew its slot; this is a bug in the sizing "
                              "of record_words")
        r = self.records_used % self.lay.records
        with self.o.step(cpu, "loc.close.record") as c:
            a = self.lay.record(r)
            for i, w in enumerate(rec):
                c.ntstore(a + 8 * i, w)
        self.records_used += 1
        self.counts.record_lines += -(-len(rec) // 8)

    def _ack(self, cpu: Any) -> None:
        """Acknowledge durability (TX_DURABLE) of the waiting transactions, in commit order."""
        for t, start in self.acks:
            cpu.mark(Mark.TX_DURABLE, t)
            self.o.ack_latencies.append(cpu.clock - start)
        self.acks = []

    def _release(self, cpu: Any, txs: Sequence[TxState]) -> None:
        """Write the transactions' newest lines home (cached stores that persist lazily) and
        drop their versions."""
        ids = {t.txid for t in txs}
        lines = sorted({ln for t in txs for ln in t.lines})
        with self.o.step(cpu, "loc.close.home") as c:
            for ln in lines:
                vs = self.versions.get(ln)
                if not vs or vs[-1].txid not in ids:
                    continue
                v = vs[-1]
                old = self.m.pm_words(ln << 6, 8)
                for i, w in enumerate(v.words):
                    if w != int(old[i]):
                        c.store((ln << 6) + 8 * i, w)
                self.released.add(ln)
                self.counts.home_lines += 1
                self._clean(v, ln)
                del self.versions[ln]

    def flush(self, cpu: Any) -> None:
        """TxFlush: close the open window now."""
        if self.cur is None:
            self.close(cpu)

    def truncate(self, cpu: Any) -> None:
        """Make the released home lines durable, then advance the head past every closed
        window (the window must be empty)."""
        self._write_meta(cpu)
        if self.released:
            self.o.flush(cpu, "loc.trunc.flush-home", [ln << 6 for ln in sorted(self.released)])
            self.o.order(cpu, "loc.trunc.wait-home")
        with self.o.step(cpu, "loc.trunc.head") as c:
            c.store(self.lay.head, pack_head(self.next_txid, self.next_sid))
            c.clwb(self.lay.head)
        self.o.order(cpu, "loc.trunc.wait-head")
        self.start_txid, self.start_sid = self.next_txid, self.next_sid
        self.released = set()
        self.records_used = 0
        self.counts.truncations += 1


__all__ = ["Crl", "Decoded", "LocCounts", "LogLayout", "TxState", "Version", "checksum", "decode",
           "make_tag", "meta_after_data", "pack_head", "read_tag"]
