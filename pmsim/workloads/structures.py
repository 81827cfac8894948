"""Shared pieces of the key-value structure workloads (hashtable, hashmap, btree, rbtree, avl).

Each of them keeps maps from keys ``1..keys`` to values in one or more instances (trees or hash
maps). A transaction is ``ops_per_tx`` operations ``(kind, instance, key, value)``: a lookup, an
insert (which updates the value of a present key) or a delete (of an absent key: nothing). A
value is ``value_words`` words derived from one 64-bit number (:func:`value_words`), so a torn
value is visible in the recovered data.

The initial data (``initial`` keys per instance) is built before tracing by running the
workload's own insert body on :class:`InitTx`, an untimed stand-in for a transaction; the
reference model starts from the same inserts in the same order. A workload whose initial
objects are too many to insert one by one can compute them at once and store them with
:class:`BulkInit`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator, Hashable, Sequence
from typing import Any

import numpy as np

from ..config import check_most, check_types
from ..errors import ConfigError, PmsimError
from ..runtimes.alloc import HeapExhausted
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray, block_size
from .base import MASK64, Model, Workload, check_range

LOOKUP, INSERT, DELETE = 0, 1, 2
KINDS = ("lookup", "insert", "delete")

Op = tuple[int, int, int, int]
"""One operation: (kind, instance, key, value); the value is 0 unless the kind is INSERT."""
TxOp = tuple[Op, ...]
"""One transaction's operations, applied in order."""

MAX_KEYS = 1 << 24
MAX_VALUE_WORDS = 64
MAX_OPS = 64
MAX_LOCKS = 1 << 18
"""Most application locks a workload creates (each is a SimPy resource)."""
GOLDEN = 0x9E3779B97F4A7C15
INIT_STREAM = 1 << 40
"""The random stream of the initial data: ``default_rng([seed, INIT_STREAM])``, never a
thread's (threads draw from ``[seed, tid]``)."""


def mix(key: int) -> int:
    """A multiplicative hash of a key (Fibonacci hashing; the high half of the product)."""
    return ((key * GOLDEN) & MASK64) >> 32


def value_words(value: int, n: int) -> list[int]:
    """The ``n`` words that store ``value``: ``value, value + 1, ...`` (mod 2**64)."""
    return [(value + i) & MASK64 for i in range(n)]


def value_of(words: Sequence[int]) -> int:
    """The value stored in ``words``; a PmsimError if they are not one value's words (torn)."""
    v = int(words[0])
    for i, w in enumerate(words):
        if int(w) != (v + i) & MASK64:
            raise PmsimError(f"a value's words {[int(x) for x in words]} are torn")
    return v


def check_map_params(name: str, p: Any, instances: int) -> None:
    """Validate the parameters every structure shares: keys, initial, the mix, ops_per_tx,
    value_words (``instances``: how many maps or trees hold ``keys`` keys each)."""
    label = f"workload {name!r}: parameter "
    check_types(p, label)
    check_range(name, "keys", p.keys, 1)
    check_most(label, "keys", p.keys, MAX_KEYS, "use at most 2**24 = 16777216 keys")
    check_range(name, "initial", p.initial, 0, p.keys)
    check_most(label, "initial", p.initial * instances, 1 << 22,
               "the initial data holds at most 2**22 keys in all (they are built in Python)")
    check_range(name, "ops_per_tx", p.ops_per_tx, 1, MAX_OPS)
    check_range(name, "insert_pct", p.insert_pct, 0, 100)
    check_range(name, "delete_pct", p.delete_pct, 0, 100 - p.insert_pct)
    check_range(name, "value_words", p.value_words, 1, MAX_VALUE_WORDS)


def check_locks(name: str, what: str, value: int, locks: int, fix: str) -> None:
    """Raise a ConfigError when ``locks`` application locks exceed MAX_LOCKS."""
    if locks > MAX_LOCKS:
        raise ConfigError(f"workload {name!r}: parameter {what}={value!r} gives {locks} "
                          f"application locks, more than 2**18 = {MAX_LOCKS}; {fix}")


class MapModel(Model):
    """The reference: one dict per instance; a snapshot is a tuple, per instance, of its sorted
    ``(key, value)`` pairs."""

    def __init__(self, instances: int, initial: Sequence[Sequence[tuple[int, int]]]) -> None:
        self.maps: list[dict[int, int]] = [{} for _ in range(instances)]
        for t, items in enumerate(initial):
            for k, v in items:
                self.apply(((INSERT, t, k, v),))

    def apply(self, op: TxOp) -> None:
        for kind, t, key, value in op:
            if kind == INSERT:
                self.maps[t][key] = value
            elif kind == DELETE:
                self.maps[t].pop(key, None)

    def snapshot(self) -> Hashable:
        return tuple(tuple(sorted(d.items())) for d in self.maps)


class MapWorkload(Workload):
    """Base of the structure workloads: ops drawn from the mix, the dict model, initial data."""

    _initial: list[list[tuple[int, int]]] | None = None

    def instances(self) -> int:
        """How many maps or trees the workload keeps."""
        return 1

    def next_op(self, tid: int, rng: np.random.Generator) -> TxOp:
        p = self.p
        n = self.instances()
        ops = []
        for _ in range(p.ops_per_tx):
            r = float(rng.random()) * 100
            kind = INSERT if r < p.insert_pct else DELETE if r < p.insert_pct + p.delete_pct \
                else LOOKUP
            t = int(rng.integers(0, n)) if n > 1 else 0
            key = int(rng.integers(1, p.keys + 1))
            value = int(rng.integers(1, 1 << 62)) if kind == INSERT else 0
            ops.append((kind, t, key, value))
        return tuple(ops)

    def initial_items(self) -> list[list[tuple[int, int]]]:
        """Per instance, the ``initial`` distinct keys (and values) inserted before the run, in
        insertion order; drawn from the seed alone."""
        if self._initial is None:
            p = self.p
            rng = np.random.default_rng([self.seed, INIT_STREAM])
            self._initial = []
            for _ in range(self.instances()):
                keys = (rng.choice(p.keys, size=p.initial, replace=False) + 1).tolist()
                vals = rng.integers(1, 1 << 62, size=p.initial).tolist()
                self._initial.append(list(zip(keys, vals, strict=True)))
        return self._initial

    def max_keys(self) -> int:
        """Most keys held at once in all instances: the key space, or fewer when the number of
        transactions is known (each operation inserts at most one key)."""
        p = self.p
        most = self.instances() * p.keys
        if self.txs is None:
            return most
        return min(most, self.instances() * p.initial + self.threads * self.txs * p.ops_per_tx)

    def model(self) -> Model:
        return MapModel(self.instances(), self.initial_items())

    def init_data(self, rt: Runtime) -> None:
        """Insert the initial items with an untimed :class:`InitTx`. The built words are
        remembered (the last few builds of the process, keyed by everything a build reads: the
        workload, the runtime's class and layout, and the memory image before it), so the
        points of a sweep that differ only in the machine's timing or the runtime's options
        reuse them."""
        key = None if rt.m.reads_logged else _build_key(self, rt)  # a read log sees the build
        tx = InitTx(rt)
        hit = _BUILT.pop(key, None) if key is not None else None
        if hit is None:
            for t, items in enumerate(self.initial_items()):
                for k, v in items:
                    drive(self.body(tx, ((INSERT, t, k, v),)))
            hit = (dict(tx.buf), dict(tx.bits))  # flush reads the word lists, never edits them
        else:
            tx.buf, tx.bits = dict(hit[0]), dict(hit[1])
        if key is not None:
            _BUILT[key] = hit  # the most recently used last
            while len(_BUILT) > BUILDS_KEPT:
                del _BUILT[next(iter(_BUILT))]
        tx.flush()


BUILDS_KEPT = 4
"""Initial builds a process remembers: a sweep interleaves the runtimes of a point, and each
runtime's layout is a build of its own (the largest, LOC's full-scale B+Tree, is some 40 MB)."""
_BUILT: dict[tuple[Any, ...], tuple[dict[int, list[int | None]], dict[int, int]]] = {}
"""The last initial builds of this process, least recently used first: InitTx's words and
bitmap words by key."""


def _build_key(wl: MapWorkload, rt: Runtime) -> tuple[Any, ...]:
    """What an initial build depends on. The build reads the memory through the runtime and
    takes blocks from its allocator (rebuilt from the image afterwards), so the key holds the
    runtime's class, its layout and a digest of every memory region as formatted."""
    digest = hashlib.blake2b(digest_size=16)
    for arr in rt.m.engine.mem.arrays:
        digest.update(memoryview(np.ascontiguousarray(arr)).cast("B"))
    return (type(wl).__module__, type(wl).__qualname__, repr(wl.p), wl.seed, wl.threads,
            wl.txs, type(rt).__module__, type(rt).__qualname__, repr(rt.layout),
            digest.hexdigest())


def drive(res: Any) -> Any:
    """Run a body's result to completion outside a simulation (its pauses yield nothing)."""
    if isinstance(res, Generator):
        try:
            while True:
                next(res)
        except StopIteration as stop:
            return stop.value
    return res


class WalkedImage:
    """A workload whose data and live heap objects come from one walk of the image:
    ``_read(rt)`` returns both (a PmsimError when a structure is broken), and the contract's
    ``read_data`` and ``live_objects`` are its two halves (no objects from a broken image)."""

    def _read(self, rt: Runtime) -> tuple[list[int], Hashable]:
        raise NotImplementedError

    def read_data(self, rt: Runtime) -> Hashable:
        return self._read(rt)[1]

    def live_objects(self, rt: Runtime) -> list[int]:
        try:
            return self._read(rt)[0]
        except (PmsimError, IndexError):
            return []


class InitTx:
    """An untimed stand-in for a transaction that builds the initial data before tracing.

    Writes go to a buffer that reads see; :meth:`flush` stores it with ``rt.init_words`` (so a
    runtime that keeps a copy of the data, such as DUDETx's shadow, gets it too). An
    allocation takes a block from the runtime's allocator and sets its bit in the persistent
    bitmap, as a committed allocation does; every runtime formats its blocks' metadata to
    zero, which is what an untouched block holds. The flush ends by having the runtime rebuild
    its volatile state from the PM image (``_load``, as when it attaches to an image), so its
    allocator and any copy of the bitmaps agree with the new bits.
    """

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.buf: dict[int, list[int | None]] = {}  # object -> its words (None: not written)
        self.bits: dict[int, int] = {}  # bitmap word -> value

    def _words(self, obj: int, end: int) -> list[int | None]:
        """The object's buffered words, at least ``end`` long."""
        w = self.buf.get(obj)
        if w is None:
            w = self.buf[obj] = []
        if len(w) < end:
            w.extend([None] * (end - len(w)))
        return w

    def read(self, obj: int, field: int) -> int:
        w = self.buf.get(obj)
        v = w[field] if w is not None and field < len(w) else None
        return self.rt.peek(obj, field) if v is None else v

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        w = self.buf.get(obj)
        if w is not None:
            vals = w[field:field + n]
            if len(vals) == n and None not in vals:  # the common case: a node built here
                return vals  # type: ignore[return-value]
        return [self.read(obj, f) for f in range(field, field + n)]

    def write(self, obj: int, field: int, value: int) -> None:
        self._words(obj, field + 1)[field] = value & MASK64

    def write_words(self, obj: int, field: int, values: Sequence[int]) -> None:
        self._words(obj, field + len(values))[field:field + len(values)] = [
            v & MASK64 for v in values]

    def alloc(self, words: int) -> int:
        rt = self.rt
        addr = rt.heap.pop(0, rt.obj_bytes(words))
        word, mask = rt.heap.bit_of(addr)
        self.bits[word] = self.bits.get(word, rt.m.peek(word)) | mask
        return addr

    def free(self, obj: int) -> None:
        raise PmsimError("the initial data is built by inserts only; nothing is freed")

    def pause(self) -> tuple[()]:
        return ()

    def flush(self) -> None:
        """Store the buffered words (one ``init_words`` per run of consecutive fields) and the
        allocation bits, then let the runtime reload its volatile state."""
        rt = self.rt
        for obj, words in self.buf.items():
            start = None
            for i, v in enumerate([*words, None]):
                if v is None:
                    if start is not None:
                        rt.init_words(obj, start, words[start:i])  # type: ignore[arg-type]
                    start = None
                elif start is None:
                    start = i
        for word, v in self.bits.items():
            rt.m.poke(word, v)
        self.buf.clear()
        self.bits.clear()
        rt._load()


class BulkInit:
    """The bulk counterpart of :class:`InitTx`, for initial data of millions of objects whose
    words are computed at once with NumPy (a tree laid out from its sorted keys) instead of
    inserted one by one: :meth:`alloc` takes ``n`` blocks, :meth:`write` stores an array of
    words per object, :meth:`flush` sets the allocation bits and has the runtime reload its
    volatile state (``_load``), as InitTx's flush does.

    The words go to the objects' homes (``rt.field_addr``) in the PM image in one NumPy
    assignment per call. Every runtime's ``init_words`` stores there and, at most, into a
    volatile copy of the data (NV-HTM's and DUDETx's DRAM shadows) that ``_load`` rebuilds
    from the homes, as after a crash, so the flush's ``_load`` gives the runtime what
    ``init_words`` would. The fast path needs the homes of a new object's fields to be
    consecutive words at a fixed offset from the object (so for every runtime's fresh block:
    checked on the first and last object) and no read log (which must see each word written);
    otherwise :meth:`write` goes through ``rt.init_words`` one object at a time (only slower).
    """

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.bits: dict[int, np.ndarray] = {}  # size class index -> its bitmap with our blocks

    def alloc(self, words: int, n: int) -> np.ndarray:
        """``n`` new objects of ``words`` fields (their addresses, int64): the lowest free blocks
        of the size class, which is what ``n`` :meth:`InitTx.alloc` calls hand out from an
        allocator rebuilt from the bitmaps (thread 0's superblock first, lowest block first,
        then the next threads'), so the objects are where those inserts would put them."""
        rt = self.rt
        b = block_size(rt.obj_bytes(words))
        ci = next((i for i, c in enumerate(rt.layout.heap) if c.block == b), None)
        if ci is None:
            raise HeapExhausted(f"the layout has no heap blocks of {b} bytes: declare objects of "
                                "this size in the workload's PMSpec.heap")
        c = rt.layout.heap[ci]
        bits = self.bits.get(ci)
        if bits is None:
            bits = self.bits[ci] = rt.heap.bitmap_bits(c)
        free = np.flatnonzero(~bits)[:n]
        if free.size < n:
            raise HeapExhausted(f"the heap has {free.size} free {b}-byte blocks, not {n}: raise "
                                "the live-object bound in the workload's PMSpec.heap")
        bits[free] = True
        return c.base + c.block * free

    def write(self, objs: np.ndarray, values: np.ndarray) -> None:
        """Store ``values[i]`` (a row of k words) as fields ``0..k-1`` of object ``objs[i]``
        (objects of one :meth:`alloc`)."""
        rt = self.rt
        n, k = values.shape
        if not n:
            return
        first, last = int(objs[0]), int(objs[-1])
        off = rt.field_addr(first, 0) - first
        affine = all(rt.field_addr(o, f) == o + off + 8 * f for o in (first, last)
                     for f in (0, k - 1))
        c = next((c for c in rt.layout.heap if c.base <= first < c.end), None)
        if (not affine or c is None or rt.m.reads_logged or off % 8 or off < 0
                or off + 8 * k > c.block):
            for o, row in zip(objs.tolist(), values.tolist(), strict=True):
                rt.init_words(o, 0, row)
            return
        lo = (c.base - rt.m.pm.base) // 8
        blocks = rt.m.engine.mem.pm[lo: lo + c.nblocks * c.block // 8].reshape(
            c.nblocks, c.block // 8)  # a view: writing it writes the PM image
        blocks[(objs - c.base) // c.block, off // 8: off // 8 + k] = values

    def flush(self) -> None:
        """Set the allocated blocks' bits (a ``poke`` per changed bitmap word), then let the
        runtime reload its volatile state from the image."""
        rt = self.rt
        for ci, bits in self.bits.items():
            c = rt.layout.heap[ci]
            nwords = (c.nblocks + 63) >> 6
            packed = np.zeros(8 * nwords, np.uint8)
            packed[: (c.nblocks + 7) >> 3] = np.packbits(bits, bitorder="little")
            new = packed.view("<u8")
            old = rt.m.pm_words(c.bitmap, nwords)
            for w in np.flatnonzero(new != old).tolist():
                rt.m.poke(c.bitmap + 8 * w, int(new[w]))
        self.bits.clear()
        rt._load()


def _changed_span(old: list[int], new: list[int]) -> tuple[int, int]:
    """The span [lo, hi) from the first to the last word where two equal-length, different
    lists differ, found by bisection on slice comparisons (a node's words are compared in C,
    not one by one in Python)."""
    a, b = 0, len(new)  # old[:a] == new[:a]; they differ within [:b]
    while b - a > 1:
        m = (a + b) // 2
        if old[:m] == new[:m]:
            a = m
        else:
            b = m
    lo = a
    a, b = 0, len(new) - lo  # the last a words agree; the last b do not
    while b - a > 1:
        m = (a + b) // 2
        if old[-m:] == new[-m:]:
            a = m
        else:
            b = m
    return lo, len(new) - a


class Nodes:
    """The nodes one operation touches, each read whole once and written back once.

    ``get`` reads a node into a list the structure code edits in place; ``flush`` writes every
    changed node with one TXN_WRITE of the span from its first to its last changed word (a new
    node whole), so an operation's writes are one per node it changed.
    """

    def __init__(self, tx: Any, words: int) -> None:
        self.tx = tx
        self.words = words
        self.cur: dict[int, list[int]] = {}
        self.orig: dict[int, list[int]] = {}

    def get(self, obj: int, words: int | None = None) -> list[int]:
        """The node's words (read on first use; ``words``: a static object's size)."""
        n = self.cur.get(obj)
        if n is None:
            n = list(map(int, self.tx.read_words(obj, 0, words or self.words)))
            self.orig[obj] = list(n)
            self.cur[obj] = n
        return n

    def new(self) -> tuple[int, list[int]]:
        """A new node (all words zero until set) and its words."""
        obj = self.tx.alloc(self.words)
        n = [0] * self.words
        self.cur[obj] = n
        return obj, n

    def free(self, obj: int) -> None:
        """Free a node; it is not written back."""
        self.cur.pop(obj, None)
        self.orig.pop(obj, None)
        self.tx.free(obj)

    def flush(self) -> None:
        """Write back what changed."""
        for obj, n in self.cur.items():
            o = self.orig.get(obj)
            if o is None:
                self.tx.write_words(obj, 0, n)
                continue
            if o != n:
                lo, hi = _changed_span(o, n)
                self.tx.write_words(obj, lo, n[lo:hi])
        self.orig = {obj: list(n) for obj, n in self.cur.items()}


class TreeWorkload(MapWorkload):
    """Base of the trees: ``trees`` instances, each under a static root pointer (``roots``) and
    one lock (a transaction takes the locks of the trees it touches). An operation's nodes go
    through one :class:`Nodes`, so each node it changes is written once, when it ends (the
    next operation of the transaction reads them back through the transaction).

    A tree defines ``node_words``, :meth:`operate` (one operation, a generator that pauses at
    each step down the tree), :meth:`objects_per_op` and :meth:`allocs_per_op` (worst-case
    bounds of one operation, for the logs) and :meth:`walk` (read and check one tree).
    Their layout asks for a conservative log (``PMSpec.conservative_log``): a hand-written undo
    log of a tree covers every node rebalancing might modify, not only those it does.
    """

    @property
    def node_words(self) -> int:
        """Words of a node (every node of a tree has the same size)."""
        raise NotImplementedError

    def instances(self) -> int:
        return int(self.p.trees)

    def max_nodes(self) -> int:
        """Most nodes live at once in all trees (one per key unless a tree says otherwise)."""
        return self.max_keys()

    def objects_per_op(self) -> int:
        raise NotImplementedError

    def allocs_per_op(self) -> int:
        return 1

    def spec(self) -> PMSpec:
        p = self.p
        n = p.ops_per_tx
        obj = self.objects_per_op() * n
        written = None if self.txs is None else min(p.trees, self.threads * self.txs * n)
        # one TXN_WRITE per changed node (Nodes.flush), at most the node's words
        return PMSpec(statics=(StaticArray("roots", p.trees, 1, written),),
                      heap=((self.node_words, self.node_words, self.max_nodes()),),
                      max_tx_writes=obj, max_tx_words=obj * self.node_words,
                      max_tx_allocs=self.allocs_per_op() * n, max_tx_objects=obj,
                      conservative_log=True)

    def nlocks(self) -> int:
        return int(self.p.trees) if self.threads > 1 else 0

    def locks_of(self, op: TxOp) -> list[int]:
        return sorted({t for _, t, _, _ in op})

    def body(self, tx: Any, op: TxOp) -> Generator[Any, Any, None]:
        for j, (kind, t, key, value) in enumerate(op):
            if j:
                yield from tx.pause()
            nodes = Nodes(tx, self.node_words)
            root = nodes.get(tx.rt.static("roots", t), 1)
            yield from self.operate(nodes, root, kind, key,
                                    value_words(value, self.p.value_words))
            nodes.flush()

    def operate(self, nodes: Nodes, root: list[int], kind: int, key: int,
                vals: list[int]) -> Generator[Any, Any, None]:
        """One operation on the tree whose root pointer is ``root[0]`` (edited in place)."""
        raise NotImplementedError

    def walk(self, rt: Runtime, root: int) -> tuple[list[int], list[tuple[int, int]]]:
        """The nodes of the tree at ``root`` and its items in key order; a PmsimError if the
        structure is broken."""
        raise NotImplementedError

    def _walk_all(self, rt: Runtime) -> tuple[list[int], list[list[tuple[int, int]]]]:
        roots = rt.peek_static("roots")[:, 0].tolist()
        nodes: list[int] = []
        items = []
        for r in roots:
            ns, its = self.walk(rt, r)
            nodes += ns
            items.append(its)
        if len(set(nodes)) != len(nodes):
            raise PmsimError("a node belongs to two trees")
        return nodes, items

    def read_data(self, rt: Runtime) -> Hashable:
        return tuple(tuple(its) for its in self._walk_all(rt)[1])

    def live_objects(self, rt: Runtime) -> list[int]:
        try:
            return self._walk_all(rt)[0]
        except (PmsimError, IndexError):
            return []


def check_node(rt: Runtime, node: int, seen: set[int]) -> None:
    """Raise a PmsimError unless ``node`` is a heap block not met before in this walk."""
    if not rt.heap.is_block(node):
        raise PmsimError(f"a link points to {node:#x}, which is not a heap block")
    if node in seen:
        raise PmsimError(f"node {node:#x} is reachable twice (a cycle or a shared subtree)")
    seen.add(node)


def set_child(nodes: Nodes, root: list[int], parent: int, old: int, new: int,
              left: int, right: int) -> None:
    """Make ``new`` the child of ``parent`` that ``old`` was (fields ``left``/``right``), or the
    root when ``parent`` is 0."""
    if not parent:
        root[0] = new
        return
    p = nodes.get(parent)
    if p[left] == old:
        p[left] = new
    else:
        p[right] = new


def rotate(nodes: Nodes, x: int, to_left: bool, left: int, right: int) -> int:
    """Rotate the subtree at ``x`` left (its right child rises) or right; returns the new
    subtree root (the caller links it to x's parent)."""
    n = nodes.get(x)
    up, down = (right, left) if to_left else (left, right)
    y = n[up]
    yn = nodes.get(y)
    n[up] = yn[down]
    yn[down] = x
    return y


def check_value(words: Sequence[int], where: str) -> int:
    """:func:`value_of` with the place named in the error."""
    try:
        return value_of(words)
    except PmsimError as e:
        raise PmsimError(f"{where}: {e}") from None


def heap_blocks(rt: Runtime) -> int:
    """How many heap blocks the layout holds: the bound of every walk of a linked structure."""
    return sum(c.nblocks for c in rt.layout.heap)


def rb_height(n: int) -> int:
    """Most nodes on a root-to-leaf path of a red-black tree of ``n`` nodes (2 log2(n + 1))."""
    return 2 * ((n + 1).bit_length() - 1) if n else 0


def avl_height(n: int) -> int:
    """Most nodes on a root-to-leaf path of an AVL tree of ``n`` nodes (the tallest tree whose
    minimal node count N(h) = N(h-1) + N(h-2) + 1 is at most n)."""
    a, b, h = 0, 1, 0  # N(h), N(h + 1)
    while b <= n:
        a, b, h = b, a + b + 1, h + 1
    return h


def btree_height(n: int, node_keys: int) -> int:
    """Most levels of a B+-tree of ``n`` keys with at most ``node_keys`` keys a node: a tree of
    h >= 2 levels has at least 2 (min children)^(h-2) leaves of at least min-leaf keys each."""
    min_leaf, min_children = (node_keys + 1) // 2, node_keys // 2 + 1
    h = 1
    while 2 * min_children ** (h - 1) * min_leaf <= n:
        h += 1
    return h


__all__ = [
    "BulkInit", "DELETE", "INSERT", "KINDS", "LOOKUP", "MAX_LOCKS", "InitTx", "MapModel",
    "MapWorkload", "Nodes", "Op",
    "TreeWorkload", "TxOp", "avl_height", "btree_height", "check_locks", "check_map_params",
    "check_node", "check_value", "drive", "heap_blocks", "mix", "rb_height", "rotate",
    "set_child", "value_of", "value_words",
]
