"""DUDETx log combination and compression (papers/dudetx-decoupled.md §7, D9; mutants M13, M17).

:class:`DudeTxCombineRuntime` is DUDETx whose Persist thread is a *combiner*. Each Persist step
takes a **group**: every committed update transaction with an ID in the contiguous range
``[a, b]``, where ``a = D + 1`` and ``b <= min(sampled ID counter, D + group_txs)``. The
combiner merges all threads' vlogs in ID order into an address-keyed map (the last writer wins;
keys are 8-byte words, which is all a transaction writes). The group is written as **one unit**
to a single group log (a PM ring spread over the per-thread log areas of the layout):

* the body: the combined ``(home, value)`` entries sorted by address (kind ``RAW``), or, with
  ``compress``, a raw DEFLATE stream of those entries (kind ``DEFLATE``, zlib's as the stand-in
  for lz4), padded to 16-byte slots;
* the commit record, two slots: ``RANGE = [a << 1][blob length << 8 | kind]`` and
  ``END = [b << 24 | nbody << 1 | 1][checksum]``, the checksum (FNV-1a of
  :func:`~.dudetx.record_checksum`) covering the epoch, ``b``, ``nbody``, RANGE and the body.

Then clwb of the touched lines and one ordering point; only after it does D jump from ``a - 1``
to ``b`` and are the members acknowledged (``dudetx.combine.ack``). Reproduce replays whole
groups (from the kept volatile copy of the combined entries, so no decompression), in ID order,
then the data fence, ``R = b``, a fence, and only then recycles the group's ring slots (the
GC order of card §3). Recovery scans the whole ring for commit records whose checksum verifies
with the current epoch, decodes the body (the length must match the slots and the stream must
end exactly there), and replays the groups ``R+1 = a1 .. b1``, ``b1+1 = a2 ..`` up to the first
gap, then persists R and bumps the epoch as DUDETx does. States inside a group are never
observable: a group is applied whole or not at all.

A group is cut short of ``group_txs`` only when a worker's vlog is full (so Perform never waits
for a group to fill) or when the run stops. The mutants (M13 in three forms, M17) are data at
the end of this module; :func:`log_write_bytes` and :func:`d9_rows` measure the NVM bytes of
Persist and Reproduce with and without combination (D9). docs/protocols/dudetx/dudetx.md, section
"Log combination and compression", describes the design and the measured figures.
"""

from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ...config import LINE
from ...errors import ConfigError
from ..base import PB_DOMAINS, RuntimeCosts
from ..descriptor import G_EPOCH
from ..layout import Layout, PMSpec, plan
from ..mutation import Mutant, delay, patch, skip_check
from ..registry import register_mutant, register_runtime, variant
from .dudetx import ID_SHIFT, N_MASK, SLOT, DudeTxRuntime, Record, end_word, record_checksum

RAW, DEFLATE = 0, 1
"""Body kinds: the combined entries as little-endian ``(home, value)`` words, or a raw DEFLATE
stream of them (no zlib header or Adler-32: the group's own length and checksum guard it, as an
lz4 block would need)."""
KIND_BITS = 8
DEFLATE_LEVEL = 1
"""zlib level 1: the fast setting, nearest to lz4 in spirit (lz4 has no entropy coder, so it
compresses less than DEFLATE on the same data)."""


def encode(entries: Sequence[tuple[int, int]], compress: bool) -> tuple[int, bytes]:
    """``(kind, blob)`` of a group's combined entries (sorted by address by the caller)."""
    raw = np.array(entries, dtype="<u8").reshape(-1, 2).tobytes()
    if not compress:
        return RAW, raw
    c = zlib.compressobj(DEFLATE_LEVEL, zlib.DEFLATED, -15)
    return DEFLATE, c.compress(raw) + c.flush()


def inflate(kind: int, data: bytes, chunk: int = SLOT) -> tuple[bytes, bool]:
    """``(bytes decoded, complete)``: complete when ``data`` decodes without error, as a whole,
    to whole 16-byte entries (for DEFLATE: the stream ends exactly at the end of ``data``).
    A DEFLATE stream is fed ``chunk`` bytes at a time so that what decodes before a corrupt
    byte is returned too (only a recovery that ignores the length would use it)."""
    if kind == RAW:
        return data, len(data) % SLOT == 0
    if kind != DEFLATE:
        return b"", False
    d = zlib.decompressobj(-15)
    out = bytearray()
    end = 0
    try:
        while end < len(data) and not d.eof:
            out += d.decompress(data[end: end + chunk])
            end += chunk
    except zlib.error:
        return bytes(out), False
    whole = end >= len(data) and not d.unused_data
    return bytes(out), d.eof and whole and len(out) % SLOT == 0


def entries_of(out: bytes) -> list[tuple[int, int]]:
    """The whole ``(home, value)`` entries in decoded bytes (a trailing partial one dropped)."""
    n = len(out) // SLOT
    w = np.frombuffer(out[: n * SLOT], dtype="<u8").reshape(n, 2)
    return [(int(a), int(v)) for a, v in w.tolist()]


def decode(kind: int, blob: bytes) -> list[tuple[int, int]] | None:
    """The entries a complete blob holds, or None if it is not one (see :func:`inflate`)."""
    out, complete = inflate(kind, blob)
    return entries_of(out) if complete else None


def body_words(blob: bytes) -> list[tuple[int, int]]:
    """The blob as 16-byte slots of two words (zero-padded)."""
    pad = -len(blob) % SLOT
    w = np.frombuffer(blob + bytes(pad), dtype="<u8").reshape(-1, 2)
    return [(int(a), int(b)) for a, b in w.tolist()]


def body_bytes(words: Iterable[tuple[int, int]]) -> bytes:
    """The bytes of body slots read back from PM."""
    return np.array(list(words), dtype="<u8").reshape(-1, 2).tobytes()


def max_body_slots(entries: int, compress: bool) -> int:
    """Most body slots a group of ``entries`` combined entries takes (DEFLATE may expand
    incompressible data by a few bytes per 16 KiB block, zlib's deflateBound)."""
    if not compress:
        return entries
    n = SLOT * entries
    return -(-(n + (n >> 12) + (n >> 14) + 16) // SLOT)


@dataclass(slots=True)
class Group:
    """One combined group of transactions ``a..b``: its members, combined entries (the kept
    volatile copy Reproduce applies) and its encoded body."""

    a: int
    b: int
    entries: list[tuple[int, int]]
    kind: int = RAW
    blob: bytes = b""
    members: list[Record] = field(default_factory=list)
    pos: int = -1
    """First ring slot (a running count), once placed."""
    nslots: int = 0
    """Ring slots it occupies: body and commit record."""

    @property
    def id(self) -> int:
        """The group's last ID (what R becomes once it is reproduced)."""
        return self.b

    @property
    def nbody(self) -> int:
        return -(-len(self.blob) // SLOT)

    @property
    def length_word(self) -> int:
        return len(self.blob) << KIND_BITS | self.kind


@register_runtime
class DudeTxCombineRuntime(DudeTxRuntime):
    """DUDETx with cross-transaction log combination (card §7): groups of ``group_txs``
    transactions persisted as one unit."""

    name = "dudetx-combine"
    group_txs: ClassVar[int] = 10
    """Transactions per group (card D9: 10 to 100,000); a group is cut short only when a vlog
    is full or the run stops."""
    compress: ClassVar[bool] = False
    """Compress each group's combined entries (raw DEFLATE as the stand-in for lz4)."""
    plog_groups: ClassVar[int] = 2
    """The group log holds this many of the largest groups (Persist writes the next group
    while Reproduce replays the previous one)."""
    max_group_entries: ClassVar[int] = 1 << 20
    """A group takes members while their entries sum to at most this (bounds the ring)."""
    combine_ns_per_entry: ClassVar[float] = 10.0
    """Insert one 8-byte key into the combiner's map (an open-addressing probe that hits in
    cache). With redo's per-transaction hash cost (40 ns) the combiner, not Persist's ordering,
    bounds throughput at groups of 10 on YCSB (3.3 vs 4.8 MTPS, 4 threads)."""
    compress_ns_per_byte: ClassVar[float] = 1.3
    """lz4 compression, ~780 MB/s per core (lz4 README, level 1)."""
    decompress_ns_per_byte: ClassVar[float] = 0.2
    """lz4 decompression, ~5 GB/s per core (lz4 README)."""

    STEPS = {
        "dudetx.combine.append": ("group", "store the group's body (combined entries, or the "
                                  "compressed blob) at the tail of the group log"),
        "dudetx.combine.commit": ("group", "store the group's one commit record: RANGE "
                                  "(a, blob length, kind) and END (b, body slots, checksum)"),
        "dudetx.combine.flush": ("flush", "clwb every group-log line the group wrote"),
        "dudetx.combine.fence": ("order", "the whole group is persistent before D jumps to b"),
        "dudetx.combine.ack": ("group", "D = b; acknowledge (TX_DURABLE) every transaction with "
                               "ID <= D"),
    }
    OMIT_STEPS = DudeTxRuntime.OMIT_STEPS | frozenset(
        {"dudetx.persist.append", "dudetx.persist.flush", "dudetx.persist.fence",
         "dudetx.persist.ack"})
    CHECKS = {
        "dudetx.recover.checksum": "a group counts only if its END's checksum (epoch, b, body "
                                   "slots, RANGE, body) verifies",
        "dudetx.recover.gap": "replay stops at the first group that does not start right after "
                              "the previous one (R+1 first)",
        "dudetx.recover.bounds": "every entry of a group names a word of application data",
        "dudetx.combine.recover.length": "a body decodes only if its stored length fits its slots "
                                         "and the entries end exactly there",
    }

    # -- layout ------------------------------------------------------------------------------------
    @classmethod
    def group_entries(cls, spec: PMSpec) -> int:
        """Most entries (summed over members) a group takes."""
        per_tx = cls.record_slots(spec) - 1
        return max(per_tx, min(int(cls.group_txs) * per_tx, int(cls.max_group_entries)))

    @classmethod
    def group_slots(cls, spec: PMSpec) -> int:
        """Ring slots of the largest group: its body and the two-slot commit record."""
        return max_body_slots(cls.group_entries(spec), bool(cls.compress)) + 2

    @classmethod
    def plan(cls, spec: PMSpec, threads: int, base: int = 0) -> Layout:
        """DUDETx's layout with the group log (``plog_groups`` largest groups) spread over the
        per-thread log areas, which a single combiner uses as one ring."""
        ring = int(cls.plog_groups) * cls.group_slots(spec)
        per = max(-(-ring // max(threads, 1)), cls.record_slots(spec))
        return plan(cls.family, spec, threads, base, obj_bytes=cls.obj_bytes,
                    stride_of=cls.static_stride, log_bytes=SLOT * per,
                    alloc_cap=cls.alloc_cap(spec), extra_heap=cls.extra_heap(spec, threads))

    def __init__(self, machine: Any, layout: Layout, costs: RuntimeCosts | None = None) -> None:
        super().__init__(machine, layout, costs)
        if int(self.group_txs) < 1:
            raise ConfigError(f"{self.name}: group_txs must be >= 1, got {self.group_txs}")
        self._seg = layout.log_bytes // SLOT
        self._gslots = self._seg * layout.threads
        self._gmax = self.group_entries(layout.spec)
        if self._gslots < self.group_slots(layout.spec):
            raise ConfigError(f"{self.name}: the group log holds {self._gslots} slots but a group "
                              f"may take {self.group_slots(layout.spec)}: plan the layout with "
                              f"{type(self).__name__}.plan")
        self.groups_persisted = 0
        self.group_members = 0
        self.entries_in = 0
        self.entries_out = 0
        self.member_bytes = 0
        self.combined_bytes = 0
        self.written_bytes = 0

    def crash_irrelevant(self) -> list[int]:
        """None: recovery reads every word of the group log and the header."""
        return super().crash_irrelevant()

    def counters(self) -> dict[str, float]:
        """DUDETx's counters and the combiner's: groups, members, entries in and out, and the
        log bytes the members would take unbatched, the uncompressed groups and the groups as
        written (``combine.ratio`` = written / uncompressed)."""
        out = super().counters()
        out.update({
            "combine.groups": float(self.groups_persisted),
            "combine.members": float(self.group_members),
            "combine.entries_in": float(self.entries_in),
            "combine.entries_out": float(self.entries_out),
            "combine.member_bytes": float(self.member_bytes),
            "combine.combined_bytes": float(self.combined_bytes),
            "combine.written_bytes": float(self.written_bytes),
            "combine.ratio": self.written_bytes / self.combined_bytes if self.combined_bytes
            else 1.0,
        })
        return out

    def _reset_volatile(self) -> None:
        super()._reset_volatile()
        self._ghead = self._gtail = 0
        self._groups: deque[Group] = deque()

    def _gaddr(self, slot: int) -> int:
        """PM address of group-log slot ``slot`` (a running count)."""
        s = slot % self._gslots
        return self.layout.log[s // self._seg] + SLOT * (s % self._seg)

    def _ring_room(self, need: int) -> bool:
        return self._gtail + need - self._ghead <= self._gslots

    # -- Persist: the combiner ---------------------------------------------------------------------
    def _vlog_pressure(self) -> bool:
        """Whether some worker's vlog lacks room for another record (it waits at begin)."""
        need = self._rec_slots
        return any(self._vslots - (self._vtail[t] - self._vhead[t]) < need
                   for t in range(self.layout.threads))

    def _gather(self, sampled: int) -> list[Record]:
        """The next group's members in ID order: IDs D+1 .. b (every ID up to ``sampled`` is in
        a vlog), when ``group_txs`` of them are committed, a vlog is full or the run stops."""
        pending = sampled - self.D
        if pending <= 0:
            return []
        if pending < self.group_txs and not self.stopping and not self._vlog_pressure():
            return []
        b = min(sampled, self.D + int(self.group_txs))
        recs = sorted((r for q in self._vq for r in q if r.id <= b), key=lambda r: r.id)
        out, n = [], 0
        for r in recs:
            n += len(r.entries)
            if out and n > self._gmax:
                break
            out.append(r)
        return out

    def _combine(self, cpu: Any, members: list[Record]) -> Group:
        """Merge the members' vlog entries in ID order into an address-keyed map (the last
        writer wins), then encode the group."""
        merged: dict[int, int] = {}
        ld, vs = cpu.load, self._vslots
        n = 0
        for rec in members:
            vbase = self._vlog[rec.thread]
            for i in range(rec.nslots):
                va = vbase + SLOT * ((rec.vslot + i) % vs)
                ld(va)
                ld(va + 8)
            for a, v in rec.entries:
                merged[a] = v
            n += len(rec.entries)
        cpu.work(self.combine_ns_per_entry * n)
        entries = sorted(merged.items())
        kind, blob = self._encode(entries)
        if self.compress:
            cpu.work(self.compress_ns_per_byte * SLOT * len(entries))
        g = Group(members[0].id, members[-1].id, entries, kind, blob, members)
        g.nslots = g.nbody + 2
        return g

    def _encode(self, entries: Sequence[tuple[int, int]]) -> tuple[int, bytes]:
        return encode(entries, bool(self.compress))

    def _commit_words(self, g: Group, body: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        """The commit record: RANGE and END (with the checksum over epoch, b, body slots, RANGE
        and body)."""
        rng = (g.a << 1, g.length_word)
        nbody = len(body)
        return [rng, (end_word(g.b, nbody),
                      record_checksum(self.epoch, g.b, nbody, (rng, *body)))]

    def _persist_batch(self, cpu: Any) -> bool:
        """One combiner step: gather, combine, place, persist; True if a group was persisted."""
        sampled = int(cpu.load(self._ctr))
        members = self._gather(sampled)
        bound = max_body_slots(sum(len(r.entries) for r in members), bool(self.compress)) + 2
        g = self._combine(cpu, members) if members and self._ring_room(bound) else None
        if g is None:
            with self.step(cpu, "dudetx.combine.ack") as c:
                self._acknowledge(c, cpu)  # read-only transactions whose counter D reached
            return False
        g.pos = self._gtail
        self._gtail += g.nslots
        for rec in members:
            q = self._vq[rec.thread]
            assert q[0] is rec, "a group's members are a prefix of each thread's vlog"
            q.popleft()
        self._persist_group(cpu, g)
        return True

    def _persist_group(self, cpu: Any, g: Group) -> None:
        """Write the group as one unit, fence, then D = b and acknowledge."""
        self._write_group(cpu, g)
        self._group_durable(cpu, g)

    def _write_group(self, cpu: Any, g: Group) -> None:
        """Body, commit record, clwb, one ordering point, and the emulated persist cost."""
        body = body_words(g.blob)
        lines: dict[int, None] = {}
        with self.step(cpu, "dudetx.combine.append") as c:
            st = c.store
            for i, (w0, w1) in enumerate(body):
                p = self._gaddr(g.pos + i)
                st(p, w0)
                st(p + 8, w1)
                lines[p & ~(LINE - 1)] = None
            c.work(self.costs.checksum_ns_per_byte * SLOT * (len(body) + 1))
        with self.step(cpu, "dudetx.combine.commit") as c:
            for i, (w0, w1) in enumerate(self._commit_words(g, body)):
                p = self._gaddr(g.pos + len(body) + i)
                c.store(p, w0)
                c.store(p + 8, w1)
                lines[p & ~(LINE - 1)] = None
        self.flush(cpu, "dudetx.combine.flush", lines)
        self.order(cpu, "dudetx.combine.fence")
        nbytes = SLOT * (len(body) + 2)
        cpu.work(self.bandwidth.cost(cpu.clock, nbytes))
        self.written_bytes += nbytes

    def _group_durable(self, cpu: Any, g: Group) -> None:
        """After the group's fence: free the members' vlog slots, hand the group to Reproduce,
        D = b, acknowledge."""
        for rec in g.members:
            self._vhead[rec.thread] = rec.vslot + rec.nslots
        self._persisted_max = max(self._persisted_max, g.b)
        self._groups.append(g)
        self.groups_persisted += 1
        self.group_members += len(g.members)
        self.entries_in += sum(len(r.entries) for r in g.members)
        self.entries_out += len(g.entries)
        self.member_bytes += sum(SLOT * r.nslots for r in g.members)
        self.combined_bytes += SLOT * (len(g.entries) + 2)
        self.persist_batches += 1
        self._progress += 1
        self._advance(cpu, g.b)

    def _advance(self, cpu: Any, b: int) -> None:
        """D = b; TX_DURABLE for every transaction it covers."""
        self.D = max(self.D, b)
        with self.step(cpu, "dudetx.combine.ack") as c:
            self._acknowledge(c, cpu)

    # -- Reproduce: whole groups -------------------------------------------------------------------
    def _next_batch(self) -> list[Group]:  # type: ignore[override]
        """Whole persisted groups in ID order, up to ``reproduce_batch`` transactions (at least
        one group)."""
        limit = self._reproduce_limit()
        out: list[Group] = []
        n = 0
        for g in self._groups:
            size = g.b - g.a + 1
            if g.b > limit or (out and n + size > self.reproduce_batch):
                break
            out.append(g)
            n += size
        return out

    def _values(self, c: Any, rec: Any) -> list[tuple[int, int]]:
        """A group's combined entries: the kept volatile copy (Reproduce) or the decoded body
        (recovery)."""
        return list(rec.entries)

    def _recycle(self, recs: Sequence[Any]) -> None:
        """Free the groups' ring slots (only once R covers them)."""
        for g in recs:
            if self._groups and self._groups[0] is g:
                self._groups.popleft()
            if g.pos >= 0:
                self._ghead = max(self._ghead, g.pos + g.nslots)

    # -- recovery ----------------------------------------------------------------------------------
    def _decode(self, length_word: int, body: Sequence[tuple[int, int]]) -> list[tuple[int, int]] | None:
        """The entries of a group body read from PM, or None if it does not decode."""
        kind, blen = length_word & ((1 << KIND_BITS) - 1), length_word >> KIND_BITS
        data = body_bytes(body)
        if self.check("dudetx.combine.recover.length"):
            if not (body and SLOT * (len(body) - 1) < blen <= SLOT * len(body)):
                return None
            out, complete = inflate(kind, data[:blen])
            return entries_of(out) if complete else None
        out, _ = inflate(kind, data)
        return entries_of(out)

    def _scan_groups(self, cpu: Any, epoch: int) -> dict[int, Group]:
        """Every group of the current epoch in the group log: first ID -> group."""
        m, lay, gs = self.m, self.layout, self._gslots
        words = np.concatenate([m.pm_words(lay.log[t], 2 * self._seg) for t in range(lay.threads)])
        chk = self.check("dudetx.recover.checksum")
        bounds = self.check("dudetx.recover.bounds")
        out: dict[int, Group] = {}
        decoded = 0
        for s in np.flatnonzero(words[0::2] & np.uint64(1)).tolist():
            w = int(words[2 * s])
            b, nbody = w >> ID_SHIFT, (w >> 1) & N_MASK
            if nbody + 2 > gs:
                continue
            r = (s - 1) % gs
            ra, lw = int(words[2 * r]), int(words[2 * r + 1])
            a = ra >> 1
            if ra & 1 or not 1 <= a <= b or a in out:
                continue
            idx = [2 * ((s - 1 - nbody + i) % gs) for i in range(nbody)]
            body = [(int(words[j]), int(words[j + 1])) for j in idx]
            if chk and int(words[2 * s + 1]) != record_checksum(epoch, b, nbody, ((ra, lw), *body)):
                continue
            entries = self._decode(lw, body)
            if entries is None:
                continue
            decoded += SLOT * nbody
            if bounds and not all(self._is_home(x) for x, _ in entries):
                continue
            g = Group(a, b, entries, lw & ((1 << KIND_BITS) - 1))
            out[a] = g
        cpu.work(self.costs.checksum_ns_per_byte * gs * SLOT
                 + (self.decompress_ns_per_byte * decoded if self.compress else 0.0))
        return out

    def _recover(self, cpu: Any) -> None:
        """Replay whole groups R+1.. up to the first gap; persist R; truncate (bump the epoch)."""
        lay = self.layout
        epoch = int(self.m.peek(lay.base + 8 * G_EPOCH))
        r = self._watermark()
        found = self._scan_groups(cpu, epoch)
        plan_: list[Group] = []
        if self.check("dudetx.recover.gap"):
            nxt = r + 1
            while nxt in found:
                plan_.append(found[nxt])
                nxt = found[nxt].b + 1
        else:
            plan_ = sorted((g for g in found.values() if g.b > r), key=lambda g: g.a)
        if plan_:
            self._apply(cpu, plan_, "dudetx.recover.replay")  # type: ignore[arg-type]
            self.order(cpu, "dudetx.recover.fence")
            with self.step(cpu, "dudetx.recover.watermark") as c:
                self._store_watermark(c, plan_[-1].b, plan_)  # type: ignore[arg-type]
            self.order(cpu, "dudetx.recover.fence-r")
        with self.step(cpu, "dudetx.recover.truncate") as c:
            a = lay.base + 8 * G_EPOCH
            c.store(a, epoch + 1)
            c.clwb(a)
        self.order(cpu, "dudetx.recover.fence-t")


DUDETX_LZ = variant(DudeTxCombineRuntime, "dudetx-lz", compress=True)
"""Combination with each group compressed (raw DEFLATE standing in for lz4)."""
DUDETX_COMBINE_FINE = variant(DudeTxCombineRuntime, "dudetx-combine-fine", group_txs=2,
                              reproduce_batch=2)
"""Groups of two transactions, one group per Reproduce batch: few lines per fenced epoch, so
every crash point's states can be enumerated (groups of three take 5x the states on kv)."""
DUDETX_LZ_FINE = variant(DudeTxCombineRuntime, "dudetx-lz-fine", group_txs=3, reproduce_batch=3,
                         compress=True)
"""Groups of three, compressed: a compressed group of three takes as few lines as a raw group of
two, and its blob spans lines (what M17 needs)."""


# -- measurement (D9) --------------------------------------------------------------------------------
def log_write_bytes(rt: DudeTxRuntime) -> dict[str, int]:
    """NVM bytes the background threads of a DUDETx runtime stored (8 per store): ``persist``
    (log records or groups) and ``reproduce`` (home data and R). Works for plain DUDETx too."""
    st = rt.m.stats()
    t = rt.layout.threads
    return {"persist": 8 * int(st["stores"][t]), "reproduce": 8 * int(st["stores"][t + 1])}


def sized(base: type[DudeTxCombineRuntime] | type[DudeTxRuntime], spec: PMSpec, threads: int,
          group_txs: int | None = None, compress: bool = False) -> type[DudeTxRuntime]:
    """An unregistered class of ``base`` whose vlogs hold a whole group (so a group is not
    cut short by a full vlog) and, for combination, groups of ``group_txs``."""
    rec = base.record_slots(spec)
    per_thread = -(-(group_txs or 1) // threads) + 4
    attrs: dict[str, Any] = {"name": f"{base.name}-sized",
                             "vlog_entries": max(int(base.vlog_entries), 2 * per_thread * rec)}
    if group_txs is not None:
        attrs.update(group_txs=group_txs, compress=compress,
                     max_group_entries=max(group_txs * (rec - 1), rec))
    return type(base.__name__ + "_sized", (base,), attrs)


def d9_rows(group_sizes: Sequence[int], txs: int, threads: int = 4, seed: int = 1,
            params: dict[str, Any] | None = None, config: Any = None,
            compress: bool = True, workload: str = "ycsb") -> list[dict[str, float]]:
    """D9: NVM bytes of Persist and Reproduce on ``workload`` (default YCSB, Zipf 0.99, 50/50)
    for plain DUDETx (``group`` 1, the baseline) and combination with each group size; with
    ``compress``, also the compressed group log. ``txs`` per thread. Savings are relative to the
    baseline's bytes; ``mtps`` is simulated throughput (M tx/s) and ``ack_p50_us`` the median
    begin-to-acknowledgement latency."""
    from ...presets import preset
    from ...workloads import Session
    from ...workloads.base import build_workload

    cfg = config or preset("optane-adr")
    spec = build_workload(workload, threads=threads, seed=seed, txs=txs, params=params).spec()

    def run(cls: type[DudeTxRuntime]) -> tuple[dict[str, int], DudeTxRuntime, dict[str, float]]:
        s = Session.create(cls, workload, cfg, threads=threads, seed=seed, txs=txs, params=params)
        s.run(txs)
        rt: Any = s.runtime
        perf = {"mtps": 1e3 * rt.commits / max(s.machine.now, 1e-9),
                "ack_p50_us": float(np.median(rt.ack_latencies)) / 1e3 if rt.ack_latencies
                else 0.0}
        return log_write_bytes(rt), rt, perf

    base, _, perf0 = run(sized(DudeTxRuntime, spec, threads))
    rows: list[dict[str, float]] = []
    total0 = base["persist"] + base["reproduce"]
    rows.append({"group": 1, "compress": False, "persist": base["persist"],
                 "reproduce": base["reproduce"], "persist_saved": 0.0, "reproduce_saved": 0.0,
                 "total_saved": 0.0, "ratio": 1.0, "groups": 0.0, **perf0})
    for g in group_sizes:
        for comp in ((False, True) if compress else (False,)):
            got, rt, perf = run(sized(DudeTxCombineRuntime, spec, threads, g, comp))
            c = rt.counters()
            rows.append({
                "group": g, "compress": comp, "persist": got["persist"],
                "reproduce": got["reproduce"],
                "persist_saved": 1 - got["persist"] / base["persist"],
                "reproduce_saved": 1 - got["reproduce"] / base["reproduce"],
                "total_saved": 1 - (got["persist"] + got["reproduce"]) / total0,
                "ratio": c["combine.ratio"], "groups": c["combine.groups"], **perf,
            })
    return rows


# -- mutants (card §6 M13, M17) ----------------------------------------------------------------------
Fn = Callable[..., Any]


def per_thread_groups(orig: Fn) -> Fn:
    """M13a: a group is one thread's pending records (the thread of the lowest pending ID),
    not every ID of a contiguous range: another thread's ID inside [a, b] is left out, yet D
    jumps to b."""
    def _gather(self: Any, sampled: int) -> list[Any]:
        recs = [r for q in self._vq for r in q if r.id <= sampled]
        if not recs or (len(recs) < self.group_txs and not self.stopping
                        and not self._vlog_pressure()):
            return []
        t = min(recs, key=lambda r: r.id).thread
        return [r for r in self._vq[t] if r.id <= sampled][: int(self.group_txs)]
    return _gather


def group_in_pieces(orig: Fn) -> Fn:
    """M13b: the group is written in two pieces, each with its own commit record for [a, b]
    and its own fence, and D jumps to b after the first piece."""
    def _persist_group(self: Any, cpu: Any, g: Any) -> None:
        half = len(g.entries) // 2
        pieces = [Group(g.a, g.b, g.entries[:half]), Group(g.a, g.b, g.entries[half:])]
        for p in pieces:
            p.kind, p.blob = self._encode(p.entries)
            p.nslots = p.nbody + 2
        total = sum(p.nslots for p in pieces)
        if half == 0 or not self._ring_room(total - g.nslots):
            orig(self, cpu, g)
            return
        self._gtail += total - g.nslots
        g.nslots = total
        pos = g.pos
        for p in pieces[:-1]:
            p.pos = pos
            pos += p.nslots
            self._write_group(cpu, p)
            self._advance(cpu, g.b)
        pieces[-1].pos = pos
        self._write_group(cpu, pieces[-1])
        self._group_durable(cpu, g)
    return _persist_group


_M13 = "two worker threads whose IDs interleave inside a group"
for _m in (
    Mutant("dudetx-combine:M13a", DUDETX_COMBINE_FINE,
           (patch("_gather", per_thread_groups, "one thread's records per group"),),
           why="a group that is not ID-contiguous: D jumps over another thread's unpersisted ID "
               "(acknowledged, then lost), and recovery and Reproduce order its writes after the "
               "group's", needs=_M13, threads=2),
    Mutant("dudetx-combine:M13b", DUDETX_COMBINE_FINE,
           (patch("_persist_group", group_in_pieces, "group flushed in two pieces"),),
           why="a group flushed in pieces, each with a commit record, D advanced per piece: a "
               "crash between the pieces recovers part of the group (a later transaction's y "
               "without an earlier one's x)", needs="a group of two or more entries"),
    Mutant("dudetx-combine:M13c", DUDETX_COMBINE_FINE,
           (delay("dudetx.combine.fence", after="dudetx.combine.ack"),), PB_DOMAINS,
           "members acknowledged (D = b) before the group's fence: an acknowledged group is lost "
           "(a shorter prefix, caught by the acknowledged-ID check)"),
    Mutant("dudetx-lz:M17", DUDETX_LZ_FINE,
           (skip_check("dudetx.recover.checksum"), skip_check("dudetx.combine.recover.length")),
           PB_DOMAINS,
           "a compressed blob without length or checksum: a torn blob (its END persisted, a body "
           "line not) decodes to part of the group or garbage, which recovery applies",
           needs="a blob over two or more lines"),
):
    register_mutant(_m)

__all__ = ["DEFLATE", "DUDETX_COMBINE_FINE", "DUDETX_LZ", "DUDETX_LZ_FINE", "RAW",
           "DudeTxCombineRuntime", "Group", "body_bytes", "body_words", "d9_rows", "decode",
           "encode", "entries_of", "group_in_pieces", "inflate", "log_write_bytes",
           "max_body_slots", "per_thread_groups", "sized"]
