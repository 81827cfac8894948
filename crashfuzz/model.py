"""Crash-state semantics: persistence chains, per-point bounds and ordering edges.

A crash point ``k`` means "the crash happens after trace events ``[0, k)``". The stores that
may have persisted form a down-closed set ``D`` of a persist partial order with
``G_k <= D <= V_k`` (``G_k`` guaranteed persistent, ``V_k`` every store before ``k``).

The order is kept as *chains* (one per 64-byte line in ``line`` order mode, one per 8-byte
atom in ``px86`` mode; a chain's stores persist in trace order, so a state is a prefix length
per chain) plus extra :class:`Edge` s. Per chain and point, ``hi`` counts the visible stores
and ``lo`` the guaranteed ones:

* a CLFLUSH of line L covers every store to L before it (from any thread) as soon as it takes
  effect: from the point after it (Px86: clflush is ordered with the thread's later stores, so
  it is durable before any of them is visible);
* a CLWB / CLFLUSHOPT of line L by thread T covers every store to L before it, an NTSTORE
  covers itself; that coverage is guaranteed once a later SFENCE / MFENCE / RMW of T
  completes (PDOM-1);
* PDOM-0: coverage only makes the stores *accepted* (the WPQ is volatile); a PCOMMIT by
  thread T guarantees what was accepted before it once a later fence of T completes;
* PDOM-2: every visible store is persistent (``lo == hi``), except non-temporal stores not yet
  fenced by their thread (see below); unions over an interval of points are prefixes of the
  global store order (see :mod:`crashfuzz.states`).

Non-temporal stores (NTSTORE) come in two flavours, told apart by the event's ``aux``:

* ``aux == 0`` (*issued*, what the simulated machine records): the event sits where the store
  left the store buffer; it may wait in the write-combining buffer, invisible and volatile,
  until its thread's next fence completes (it is weakly ordered with later stores, Intel SDM
  vol. 3 8.2.2). Its place in its chain is still its trace position, so it is forced as soon as
  a later store of its chain is (PDOM-2), and it is covered by that fence (PDOM-0/1).
* ``aux == 1`` (*drained*, what the litmus interpreter records when it models the
  write-combining buffer): the event sits where the store left that buffer, became visible and
  reached the memory controller, so it is covered at once (persistent in PDOM-1/2, accepted
  in PDOM-0), together with the earlier stores of its chain.
* ``aux == 2`` (*persisted*, a device write acknowledged by the media, e.g. a hardware log
  written through a volatile queue): the event sits where the write is known durable, so it is
  persistent at once in every domain (PDOM-0 too), together with the earlier stores of its
  chain.

Ordering edges come from *edge providers* (``EDGE_PROVIDERS``): callables
``provider(index, domain) -> Iterable[Edge]``. No domain needs one by default (CLFLUSH's
ordering is a lower bound now); hardware designs (Proteus, LOC, ATOM) add theirs by passing
``edge_providers`` to :class:`~crashfuzz.states.CrashModel`; an edge must point from an
earlier store to a later one. Every domain consults them (PDOM-2 only matters inside a
non-temporal store's window: its other states are prefixes of the store order, which respect
any forward edge).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from pmsim.config import ATOM, DOMAINS, LINE
from pmsim.errors import ConfigError, TraceError
from pmsim.trace import Ev, Trace

ORDERS: tuple[str, ...] = ("line", "px86")
FENCE_KINDS = (int(Ev.SFENCE), int(Ev.MFENCE), int(Ev.RMW))
FLUSH_KINDS = (int(Ev.CLFLUSH), int(Ev.CLFLUSHOPT), int(Ev.CLWB))
DOMAIN_CODE = {"pdom0": 0, "pdom1": 1, "pdom2": 2}
ATOMS_PER_LINE = LINE // ATOM

_MASK = (1 << 64) - 1


@dataclass(frozen=True)
class Edge:
    """"Chain ``y_chain`` persisted >= ``y_count`` stores" implies the same of ``x_chain``/``x_count``.

    Equivalently: store number ``x_count`` of ``x_chain`` persists before store number
    ``y_count`` of ``y_chain`` (1-based counts). ``until``, when known, is the first crash
    point from which the lower bounds imply the edge (so points from there on skip it).
    """

    x_chain: int
    x_count: int
    y_chain: int
    y_count: int
    until: int | None = None


EdgeProvider = Callable[["TraceIndex", str], Iterable[Edge]]


def check_order_domain(order: str, domain: str) -> None:
    """Raise a ConfigError naming the valid choices."""
    if order not in ORDERS:
        raise ConfigError(f"unknown order mode {order!r}; use 'line' (a line persists in store "
                          "order) or 'px86' (only 8-byte atoms are ordered)")
    if domain not in DOMAINS:
        raise ConfigError(f"unknown persistence domain {domain!r}; use one of {', '.join(DOMAINS)}")


# -- image hashing -----------------------------------------------------------------------------
def mix64(x: int) -> int:
    """splitmix64 finaliser (the same as ``pm_mix64`` in the C core)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def word_terms(word: int, value: int) -> tuple[int, int]:
    """The two hash terms of one 8-byte word of an image (word index, value)."""
    return mix64(value ^ mix64(2 * word)), mix64((value + mix64(2 * word + 1)) & _MASK)


def _mix64_np(x: np.ndarray) -> np.ndarray:
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def word_terms_np(words: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised :func:`word_terms`."""
    w2 = np.asarray(words, np.uint64) * np.uint64(2)
    v = np.asarray(values, np.uint64)
    return _mix64_np(v ^ _mix64_np(w2)), _mix64_np(v + _mix64_np(w2 + np.uint64(1)))


def image_hash(image: np.ndarray) -> tuple[int, int]:
    """Two 64-bit multiset hashes of a PM image: the sums of :func:`word_terms` over its words.

    Sums make the hash incremental: changing one word adds ``terms(new) - terms(old)``.
    """
    words = np.ascontiguousarray(image).view(np.uint64)
    t1, t2 = word_terms_np(np.arange(len(words), dtype=np.uint64), words)
    return int(t1.sum(dtype=np.uint64)), int(t2.sum(dtype=np.uint64))


# -- the parsed trace --------------------------------------------------------------------------
class TraceIndex:
    """A trace cut into persistence chains, with per-chain store tables.

    Chains are numbered in order of their first store. The store table is chain-major: chain
    ``c``'s stores are rows ``off[c]:off[c+1]`` in trace order, each with its image word, the
    value written, the word's previous value in that chain (``old``) and the hash deltas.
    """

    def __init__(self, trace: Trace, order: str) -> None:
        if order not in ORDERS:
            check_order_domain(order, "pdom1")
        self.trace = trace
        self.order = order
        ev = trace.events
        self.n = n = len(ev)
        self.kind = np.ascontiguousarray(ev["kind"]).astype(np.uint8)
        self.tid = np.ascontiguousarray(ev["tid"]).astype(np.uint16)
        self.nthreads = int(self.tid.max()) + 1 if n else 1
        kind = self.kind.astype(np.int64)
        is_store = (kind == Ev.STORE) | (kind == Ev.NTSTORE) | ((kind == Ev.RMW) & (ev["aux"] == 1))
        # per event, a non-temporal store's aux: 0 issued (covered at its thread's fence),
        # 1 drained (covered where it sits), 2 persisted (persistent where it sits); else 0
        nt = kind == Ev.NTSTORE
        self.drained = np.where(nt & (ev["aux"] <= 2), ev["aux"], 0).astype(np.uint8)
        self.issued_nt = int((nt & (self.drained == 0)).sum())
        self.nwords = trace.size // ATOM
        pos = np.nonzero(is_store)[0]
        rel = ev["addr"][pos].astype(np.int64) - trace.pm_base
        bad = (rel < 0) | (rel >= trace.size) | (rel % ATOM != 0)
        if bad.any():
            i = int(pos[np.argmax(bad)])
            raise TraceError(f"event {trace.describe(i)} stores outside the PM region "
                             f"[{trace.pm_base:#x}, {trace.pm_base + trace.size:#x}) or to an "
                             "address that is not 8-byte aligned")
        word = rel // ATOM
        key = word // ATOMS_PER_LINE if order == "line" else word
        uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
        rank = np.empty(len(uniq), np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(uniq))
        sc = rank[inv] if len(pos) else np.zeros(0, np.int64)
        self.nchains = C = len(uniq)
        self.chain_key = np.empty(C, np.int64)
        self.chain_key[rank] = uniq
        self.chain = np.full(n, -1, np.int64)
        self.chain[pos] = sc
        # global store order (PDOM-2)
        self.store_event = pos.astype(np.int64)
        self.store_chain = sc
        # chain-major store table
        perm = np.lexsort((pos, sc))
        self.st_event = pos[perm].astype(np.int64)
        self.st_chain = sc[perm]
        self.st_word = word[perm].astype(np.int64)
        self.st_val = ev["value"][self.st_event].astype(np.uint64)
        self.off = np.searchsorted(self.st_chain, np.arange(C + 1)).astype(np.int64)
        self.st_pos = np.arange(len(perm), dtype=np.int64) - self.off[self.st_chain]
        base_words = trace.base.view(np.uint64)
        self.st_old = np.empty(len(perm), np.uint64)
        if len(perm):
            # previous value of the same word: the previous row with the same word, else base
            wperm = np.lexsort((np.arange(len(perm)), self.st_word))
            w_sorted = self.st_word[wperm]
            prev_same = np.r_[False, w_sorted[1:] == w_sorted[:-1]]
            olds = base_words[w_sorted].copy()
            olds[prev_same] = self.st_val[wperm][np.r_[prev_same[1:], False]]
            self.st_old[wperm] = olds
        t_new = word_terms_np(self.st_word, self.st_val)
        t_old = word_terms_np(self.st_word, self.st_old)
        self.st_d1 = t_new[0] - t_old[0]
        self.st_d2 = t_new[1] - t_old[1]
        self.base_hash = image_hash(trace.base)
        # flushes: the chains of the flushed line
        line_of_chain = self.chain_key if order == "line" else self.chain_key // ATOMS_PER_LINE
        self.chain_line = line_of_chain
        lines, lrow = np.unique(line_of_chain, return_inverse=True)
        self.line_table = np.full((max(len(lines), 1), ATOMS_PER_LINE), -1, np.int64)
        slot = np.zeros(len(lines), np.int64)
        for c in range(C):
            r = lrow[c]
            self.line_table[r, slot[r]] = c
            slot[r] += 1
        self.frow = np.full(n, -1, np.int64)
        fpos = np.nonzero(np.isin(kind, FLUSH_KINDS))[0]
        if len(fpos) and len(lines):
            fl = (ev["addr"][fpos].astype(np.int64) - trace.pm_base) // LINE
            hit = np.searchsorted(lines, fl)
            hit_c = np.minimum(hit, len(lines) - 1)
            ok = lines[hit_c] == fl
            self.frow[fpos[ok]] = hit_c[ok]
        self._st_key = self.st_chain * (n + 1) + self.st_event

    @property
    def chain_addr(self) -> np.ndarray:
        """Byte address of each chain's first byte (its line or atom)."""
        unit = LINE if self.order == "line" else ATOM
        return self.trace.pm_base + self.chain_key * unit

    def hi_at(self, k: int) -> np.ndarray:
        """Stores of each chain before point ``k``."""
        q = np.arange(self.nchains, dtype=np.int64) * (self.n + 1) + k
        return np.searchsorted(self._st_key, q) - self.off[:-1]

    def stores_before(self, k: int) -> int:
        """Stores (all chains) among events ``[0, k)``: a prefix length of the global store order."""
        return int(np.searchsorted(self.store_event, k))

    def counts_of_prefix(self, m: int) -> np.ndarray:
        """Per-chain store counts in the first ``m`` stores of the global store order."""
        return np.bincount(self.store_chain[:m], minlength=self.nchains).astype(np.int64)

    def store_event_of(self, chain: int, count: int) -> int:
        """Trace index of store number ``count`` (1-based) of ``chain``."""
        return int(self.st_event[self.off[chain] + count - 1])

    def image_at(self, counts: np.ndarray) -> np.ndarray:
        """The image with the first ``counts[c]`` stores of each chain applied to the base."""
        img = self.trace.base.copy()
        words = img.view(np.uint64)
        sel = np.nonzero(self.st_pos < counts[self.st_chain])[0]
        if len(sel):
            w = self.st_word[sel][::-1]
            _, last = np.unique(w, return_index=True)
            words[w[last]] = self.st_val[sel][::-1][last]
        return img

    def prefix_hash(self, chain: int, count: int) -> tuple[int, int]:
        """Hash change of chain ``chain`` at prefix ``count`` relative to the base image."""
        a = self.off[chain]
        return (int(self.st_d1[a:a + count].sum(dtype=np.uint64)),
                int(self.st_d2[a:a + count].sum(dtype=np.uint64)))


# -- lower bounds --------------------------------------------------------------------------------
def sweep_python(ix: TraceIndex, domain: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pure-Python reference of the bounds sweep (every domain).

    Returns the change log ``(k, chain, lo)``: from point ``k`` on, ``lo[chain] >= lo``.
    Only strict increases are logged, in trace order. Per event ``i``:

    * covered now (at ``i + 1``): the stores of a CLFLUSH's line (PDOM-0/1), a drained NTSTORE
      and its chain's earlier stores, and in PDOM-2 every store except an issued NTSTORE;
    * persistent now in every domain: a persisted NTSTORE (aux 2) and its chain's earlier
      stores;
    * pending until the thread's next fence: the stores a CLWB / CLFLUSHOPT covers (PDOM-0/1)
      and an issued NTSTORE;
    * "covered" raises ``lo`` in PDOM-1/2; in PDOM-0 it only makes the stores accepted, and a
      fence of a thread that issued a PCOMMIT raises ``lo`` to what was accepted before it.
    """
    pdom0 = domain == "pdom0"
    pdom2 = domain == "pdom2"
    count = [0] * ix.nchains
    lo = [0] * ix.nchains
    accepted = [0] * ix.nchains
    acc_log: list[tuple[int, int]] = []
    applied = 0
    pending: dict[int, dict[int, int]] = {}
    pcommit: dict[int, int] = {}
    out_k: list[int] = []
    out_c: list[int] = []
    out_v: list[int] = []

    def raise_lo(at: int, c2: int, v: int) -> None:
        if v > lo[c2]:
            lo[c2] = v
            out_k.append(at)
            out_c.append(c2)
            out_v.append(v)

    def cover(at: int, c2: int, v: int) -> None:
        if not pdom0:
            raise_lo(at, c2, v)
        elif v > accepted[c2]:
            accepted[c2] = v
            acc_log.append((c2, v))

    kinds, tids, chains, frows, drained = (ix.kind.tolist(), ix.tid.tolist(), ix.chain.tolist(),
                                           ix.frow.tolist(), ix.drained.tolist())
    table = ix.line_table.tolist()
    for i in range(ix.n):
        k, t, c = kinds[i], tids[i], chains[i]
        if c >= 0:
            count[c] += 1
            if k == Ev.NTSTORE and not drained[i]:
                pending.setdefault(t, {})[c] = count[c]
            elif drained[i] == 2:
                raise_lo(i + 1, c, count[c])
            elif pdom2 or drained[i]:
                cover(i + 1, c, count[c])
        if k in FLUSH_KINDS:
            if frows[i] >= 0 and not pdom2:
                p = pending.setdefault(t, {})
                for c2 in table[frows[i]]:
                    if c2 < 0:
                        break
                    if not count[c2]:
                        continue
                    if k == Ev.CLFLUSH:
                        cover(i + 1, c2, count[c2])
                    else:
                        p[c2] = count[c2]
        elif k == Ev.PCOMMIT and pdom0:
            pcommit[t] = len(acc_log)
        if k in FENCE_KINDS:
            p = pending.pop(t, {})
            if pdom0:
                upto = pcommit.pop(t, -1)
                if upto > applied:
                    for c2, v in acc_log[applied:upto]:
                        raise_lo(i + 1, c2, v)
                    applied = upto
            for c2, v in p.items():
                cover(i + 1, c2, v)
    return (np.array(out_k, np.int64), np.array(out_c, np.int64), np.array(out_v, np.int64))


def sweep_capacity(ix: TraceIndex, domain: str) -> int:
    """An upper bound on the change-log length: in PDOM-2 one entry per store at most, else one
    per chain a flush covers and one per non-temporal store."""
    if domain == "pdom2":
        return len(ix.store_event) + 1
    nflush = int(np.isin(ix.kind, FLUSH_KINDS).sum())
    nnt = int((ix.kind == Ev.NTSTORE).sum())
    return ATOMS_PER_LINE * nflush + nnt + 1


class LowerBounds:
    """``lo`` of every chain at any point, from a change log (searchsorted, no per-point sweep)."""

    def __init__(self, ix: TraceIndex, log: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        k, c, v = log
        order = np.lexsort((k, c))
        self._n = ix.n
        self._key = c[order] * (ix.n + 2) + k[order]
        self._val = v[order]
        self._start = np.searchsorted(self._key, np.arange(ix.nchains, dtype=np.int64) * (ix.n + 2))
        self._nchains = ix.nchains

    def at(self, k: int) -> np.ndarray:
        q = np.arange(self._nchains, dtype=np.int64) * (self._n + 2) + k
        pos = np.searchsorted(self._key, q, side="right") - 1
        ok = pos >= self._start
        out = np.zeros(self._nchains, np.int64)
        if len(self._val):
            out[ok] = self._val[pos[ok]]
        return out


# -- ordering edges ------------------------------------------------------------------------------
EDGE_PROVIDERS: dict[str, list[EdgeProvider]] = {
    "pdom0": [],
    "pdom1": [],
    "pdom2": [],
}
"""The edge providers each domain consults by default (none: the built-in rules are all lower
bounds). Extend per model with ``edge_providers`` / ``extra_edge_providers``."""


def collect_edges(ix: TraceIndex, domain: str, providers: Iterable[EdgeProvider]) -> np.ndarray:
    """Every provider's edges as int64 rows ``[x_chain, x_count, y_chain, y_count, y_event, until]``.

    An edge matters at points ``k`` with ``y_event < k < until`` (``until`` defaults to n + 1).

    Raises TraceError for an edge that does not point from an earlier store to a later one
    (that would make the persist order cyclic).
    """
    rows: list[tuple[int, int, int, int, int, int]] = []
    for prov in providers:
        for e in prov(ix, domain):
            for ch, cnt in ((e.x_chain, e.x_count), (e.y_chain, e.y_count)):
                if not (0 <= ch < ix.nchains and 1 <= cnt <= ix.off[ch + 1] - ix.off[ch]):
                    raise TraceError(f"edge {e} from {getattr(prov, '__name__', prov)} names store "
                                     f"{cnt} of chain {ch}, which does not exist")
            xe, ye = ix.store_event_of(e.x_chain, e.x_count), ix.store_event_of(e.y_chain, e.y_count)
            if xe >= ye:
                raise TraceError(f"edge {e} from {getattr(prov, '__name__', prov)} orders event "
                                 f"#{xe} before the earlier event #{ye}; persist-order edges "
                                 "must point from an earlier store to a later one")
            until = ix.n + 1 if e.until is None else e.until
            rows.append((e.x_chain, e.x_count, e.y_chain, e.y_count, ye, until))
    return np.array(sorted(set(rows)), np.int64).reshape(-1, 6)


# -- the image the simulated hardware actually held ----------------------------------------------
def actual_image(ix: TraceIndex, domain: str, k: int) -> np.ndarray:
    """What the simulated caches, WPQ and media really held at point ``k``.

    PDOM-2: every store before ``k``. PDOM-1: each line as of its last write-back (WB event)
    before ``k``. PDOM-0: only write-backs whose media completion time (WB value, ps) is at or
    before the time of event ``k - 1``. A non-temporal store counts as a write-back of its line
    at its own position (the engine records no separate WB for it), unless the next event is a
    WB of the same line with aux 2, which then carries its timing. In PDOM-1 a CLFLUSH counts
    as a write-back of its line at its own position too: it is durable once it took effect, and
    the engine records its WB just after it.
    """
    if domain == "pdom2":
        return ix.image_at(ix.hi_at(k))
    ev = ix.trace.events[:k]
    kinds = ev["kind"].astype(np.int64)
    wb = np.nonzero(kinds == Ev.WB)[0]
    wb_line = (ev["addr"][wb].astype(np.int64) - ix.trace.pm_base) // LINE
    if domain == "pdom0" and k > 0:
        limit = float(ev["time"][k - 1]) * 1000.0
        done = ev["value"][wb].astype(np.float64) <= limit
        wb, wb_line = wb[done], wb_line[done]
    nt = np.nonzero(kinds == Ev.NTSTORE)[0]
    if len(nt):
        nt_line = (ev["addr"][nt].astype(np.int64) - ix.trace.pm_base) // LINE
        nxt = np.minimum(nt + 1, max(k - 1, 0))
        carried = ((kinds[nxt] == Ev.WB) & (ev["aux"][nxt] == 2) & (nxt > nt)
                   & ((ev["addr"][nxt].astype(np.int64) - ix.trace.pm_base) // LINE == nt_line))
        wb = np.r_[wb, nt[~carried] + 1]
        wb_line = np.r_[wb_line, nt_line[~carried]]
    if domain == "pdom1":
        cf = np.nonzero(kinds == Ev.CLFLUSH)[0]
        wb = np.r_[wb, cf]
        wb_line = np.r_[wb_line, (ev["addr"][cf].astype(np.int64) - ix.trace.pm_base) // LINE]
    img = ix.trace.base.copy()
    if not len(wb):
        return img
    order = np.lexsort((wb, wb_line))
    wl, wp = wb_line[order], wb[order]
    last = np.r_[wl[1:] != wl[:-1], True]
    lines, upto = wl[last], wp[last]
    st_line = ix.st_word // ATOMS_PER_LINE
    hit = np.searchsorted(lines, st_line)
    hit_c = np.minimum(hit, len(lines) - 1)
    sel = np.nonzero((lines[hit_c] == st_line) & (ix.st_event < upto[hit_c]))[0]
    if len(sel):
        words = img.view(np.uint64)
        w = ix.st_word[sel][::-1]
        _, lastw = np.unique(w, return_index=True)
        words[w[lastw]] = ix.st_val[sel][::-1][lastw]
    return img
