"""Vacation: STAMP's travel reservation system (Minh et al., IISWC'08), on red-black trees.

A manager keeps four tables, each a red-black tree (:class:`~pmsim.workloads.rbtree.RBTree`'s
nodes and rebalancing): cars, flights and rooms map an id to a reservation record ``[used,
free, total, price]``, and customers map an id to the reservations they hold. Each client
transaction is one of STAMP's three actions, drawn as STAMP's client draws them:

- **make a reservation** (``user_pct`` of them): query 1..``queries`` random items (a lookup
  each), then, if any exists, add the customer (an insert if new) and reserve the most
  expensive item found of each type (``used + 1``, ``free - 1``, an entry in the customer);
- **delete a customer** (half the rest): if the customer exists, cancel each of its
  reservations (``used - 1``, ``free + 1``) and remove it from its tree;
- **update the tables** (the other half): 1..``queries`` random items, each either added to
  (100 more seats at a new price, or a new record) or taken from (100 fewer; a flight only when
  none of it is reserved; a record left with none is removed).

Ids are drawn from the first ``query_pct`` percent of ``relations``. STAMP's Vacation-High is
``-n4 -q60 -u90``, Vacation-Low ``-n2 -q90 -u98``, both on ``-r1048576`` relations.

The initial data is STAMP's: every id of each table in a random order, with ``(1..5) x 100``
seats at a price of ``50..90``, and every customer. How the trees are built is the ``build``
parameter:

- ``inserts``: as STAMP's manager does, each record inserted in that random order through the
  red-black insert (in Python, on an untimed stand-in transaction: 40-70 us a record, so 2**13
  relations take 1.3 s, 2**16 12 s, and STAMP's 2**20 some 280 s and 3 GiB);
- ``bulk``: each tree laid out at once from its sorted ids (:class:`~.structures.BulkInit`,
  :func:`~.rbtree.bulk_nodes`): perfectly balanced, an incomplete last level red and every
  second level above it (:func:`~.rbtree.balanced`); 2**20 relations take 1.5 s. A record's
  node is the same heap block either way (the i-th block of a table holds the id inserted
  i-th); only the links and colors differ, so the shape is not that of random-order inserts:
  every path has ``ceil(log2(r + 1))`` nodes or one fewer (21 at 2**20), where the inserted
  trees are 24-25 levels deep with a mean node depth of 19.5 (bulk: 19.0; at 2**16 15.4 and
  15.0). On NV-HTM (preset ``nvhtm-xeon``) the bulk-built trees gave throughput from 1%
  below to 2.2% above the inserted ones' and 0.3-1.4% more log entries a transaction at 2**16
  records (Vacation-Low and -High, 1 and 4 threads); at 2**20 0.2% below and 0.1% more on
  Low at 1 thread, 0.9% above and 1.7% more on High at 4;
- ``auto`` (the default): ``inserts`` up to 2**16 relations, ``bulk`` above. The sizes run
  before the bulk build existed (the default 2**13, the tests' tens) are built by inserts as
  before, so their trees and simulated numbers stay bit-identical; larger tables (the NV-HTM
  reproduction's STAMP-sized 2**20) take the bulk build.

The reference model keeps the initial records in arrays and in dicts only the records a run
touched (:class:`_Table`): dicts of every record took some 1.4 GiB at 2**20 with the pairs
they were built from; the arrays take 24 MiB. A 2**20 run on NV-HTM peaks at 1.3 GiB (the PM
image and NV-HTM's DRAM copy of it are most of it; COW, a wrapper and a payload a node, 3 GiB);
checking its data against the model reads every node of the image in Python (some 30 s and
3 GiB).

What pmsim leaves out: a customer holds at most three reservations inline in its record
(STAMP: a linked list with a node allocated per reservation), and a reservation that would be
a fourth is not made. Above 2**20 relations (STAMP's largest input) the PM image, its copies
and the model grow past what one host holds comfortably, so ``relations`` stops there.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import check_types, param
from ..errors import ConfigError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import Model, check_range, register_workload
from .rbtree import VALUE, RBTree, bulk_nodes
from .structures import DELETE, INIT_STREAM, INSERT, BulkInit, Nodes

RESERVE, DELETE_CUSTOMER, UPDATE = 100, 101, 102
"""First element of a client op (an initial insert is ``((INSERT, table, id, value),)``)."""
CAR, FLIGHT, ROOM, CUSTOMER = 0, 1, 2, 3
TABLES = ("car", "flight", "room", "customer")
USED, FREE, TOTAL, PRICE = 0, 1, 2, 3
"""A reservation record's words (after a node's key, links and color)."""
SLOTS = 3
"""Reservations a customer record holds: ``[count, entry, entry, entry]``."""
SEATS = 100
"""Seats an update adds or takes (STAMP's client: 100)."""
MAX_RELATIONS = 1 << 20
"""Most records a table holds: STAMP's largest input, ``-r1048576``."""
BULK_ABOVE = 1 << 16
"""``build='auto'`` builds tables of more records than this in bulk: every size run before the
bulk build existed (default 2**13, the tests' tens) keeps its inserted trees."""
BUILDS = ("auto", "inserts", "bulk")
"""The ways to build the initial trees (``VacationParams.build``; see the module docstring)."""


def entry(kind: int, rid: int, price: int) -> int:
    """A customer's reservation entry packed into one word."""
    return kind << 56 | rid << 16 | price


def unpack(e: int) -> tuple[int, int, int]:
    return e >> 56, (e >> 16) & ((1 << 40) - 1), e & 0xFFFF


@dataclass(frozen=True)
class VacationParams:
    relations: int = param(1 << 13, "records", "records of each table at the start (STAMP: "
                           "-r1048576 = 2**20, the most allowed; default 2**13)")
    queries: int = param(4, "items", "most items a transaction queries or updates (STAMP -n: "
                         "High 4, Low 2)")
    query_pct: float = param(60.0, "%", "share of the ids that are queried (STAMP -q: High "
                             "60, Low 90)")
    user_pct: float = param(90.0, "%", "share of reservation transactions (STAMP -u: High 90, "
                            "Low 98); the rest delete customers and update tables, half each")
    build: str = param("auto", "", "how the initial trees are built: 'inserts' (STAMP's random-"
                       "order inserts, ~50 us a record), 'bulk' (balanced trees laid out at once, "
                       "1.5 s at 2**20), 'auto' (inserts up to 2**16 relations, bulk above)")

    def __post_init__(self) -> None:
        check_types(self, "workload 'vacation': parameter ")
        check_range("vacation", "relations", self.relations, 1)
        if self.relations > MAX_RELATIONS:
            raise ConfigError(f"workload 'vacation': parameter relations={self.relations!r} is "
                              "above 2**20 = 1048576, STAMP's largest input (-r1048576), the "
                              "most the PM image, its copies and the reference model are sized "
                              "for; use at most 1048576")
        if self.build not in BUILDS:
            raise ConfigError(f"workload 'vacation': parameter build={self.build!r} is not one "
                              f"of {', '.join(map(repr, BUILDS))}")
        check_range("vacation", "queries", self.queries, 1, 64)
        check_range("vacation", "query_pct", self.query_pct, 0, 100)
        check_range("vacation", "user_pct", self.user_pct, 0, 100)
        if self.query_range < 1:
            raise ConfigError(f"workload 'vacation': query_pct={self.query_pct!r} of "
                             f"{self.relations} relations queries no id; raise query_pct")

    @property
    def bulk(self) -> bool:
        """Whether the initial trees are laid out in bulk rather than inserted."""
        return self.build == "bulk" or (self.build == "auto" and self.relations > BULK_ABOVE)

    # what the red-black tree code reads
    @property
    def keys(self) -> int:
        return self.relations

    @property
    def trees(self) -> int:
        return len(TABLES)

    @property
    def value_words(self) -> int:
        return 4

    @property
    def initial(self) -> int:
        return self.relations

    @property
    def ops_per_tx(self) -> int:
        return self.queries

    @property
    def query_range(self) -> int:
        """Ids ``1..query_range`` are queried (STAMP rounds ``q% x r``)."""
        return int(self.query_pct / 100.0 * self.relations + 0.5)


class _Store:
    """The tables as the transaction logic sees them: ``find`` gives a record's words (edited
    in place), ``put`` inserts one, ``remove`` deletes one."""

    def find(self, table: int, rid: int) -> Generator[Any, Any, list[int] | None]:
        raise NotImplementedError

    def put(self, table: int, rid: int, record: list[int]) -> Generator[Any, Any, None]:
        raise NotImplementedError

    def remove(self, table: int, rid: int) -> Generator[Any, Any, None]:
        raise NotImplementedError


class _TreeStore(_Store):
    """The tables in a runtime's red-black trees, through one :class:`Nodes` per transaction."""

    def __init__(self, wl: RBTree, tx: Any) -> None:
        self.wl = wl
        self.nodes = Nodes(tx, wl.node_words)
        self.roots = [self.nodes.get(tx.rt.static("roots", t), 1) for t in range(len(TABLES))]

    def find(self, table: int, rid: int) -> Generator[Any, Any, list[int] | None]:
        return (yield from self.wl.lookup(self.nodes, self.roots[table], rid))

    def put(self, table: int, rid: int, record: list[int]) -> Generator[Any, Any, None]:
        yield from self.wl.operate(self.nodes, self.roots[table], INSERT, rid, record)

    def remove(self, table: int, rid: int) -> Generator[Any, Any, None]:
        yield from self.wl.operate(self.nodes, self.roots[table], DELETE, rid, [])


class _DictStore(_Store):
    """The tables as mappings of node-shaped lists (the record at ``VALUE``): the reference
    model."""

    def __init__(self, tables: Sequence[MutableMapping[int, list[int]]]) -> None:
        self.tables = tables

    def find(self, table: int, rid: int) -> Generator[Any, Any, list[int] | None]:
        return self.tables[table].get(rid)
        yield

    def put(self, table: int, rid: int, record: list[int]) -> Generator[Any, Any, None]:
        self.tables[table][rid] = [rid, 0, 0, 0, *record]
        yield from ()

    def remove(self, table: int, rid: int) -> Generator[Any, Any, None]:
        del self.tables[table][rid]
        yield from ()


def client(s: _Store, op: tuple[Any, ...]) -> Generator[Any, Any, None]:
    """One client transaction on the tables (STAMP's ``client_run`` actions)."""
    if op[0] == RESERVE:
        _, cust, queries = op
        best = [(-1, 0)] * 3  # per type: (price, id) of the most expensive item found
        for kind, rid in queries:
            r = yield from s.find(kind, rid)
            if r is not None and r[VALUE + PRICE] > best[kind][0]:
                best[kind] = (r[VALUE + PRICE], rid)
        if all(rid == 0 for _, rid in best):
            return
        if (yield from s.find(CUSTOMER, cust)) is None:
            yield from s.put(CUSTOMER, cust, [0, 0, 0, 0])
        for kind, (_, rid) in enumerate(best):
            if not rid:
                continue
            c = yield from s.find(CUSTOMER, cust)
            r = yield from s.find(kind, rid)
            if c is None or r is None or r[VALUE + FREE] <= 0 or c[VALUE] >= SLOTS:
                continue
            r[VALUE + USED] += 1
            r[VALUE + FREE] -= 1
            c[VALUE + 1 + c[VALUE]] = entry(kind, rid, r[VALUE + PRICE])
            c[VALUE] += 1
    elif op[0] == DELETE_CUSTOMER:
        cust = op[1]
        c = yield from s.find(CUSTOMER, cust)
        if c is None:
            return
        held = [unpack(e) for e in c[VALUE + 1: VALUE + 1 + c[VALUE]]]
        for kind, rid, _ in held:
            r = yield from s.find(kind, rid)
            if r is not None:
                r[VALUE + USED] -= 1
                r[VALUE + FREE] += 1
        yield from s.remove(CUSTOMER, cust)
    else:
        for kind, rid, add, price in op[1]:
            r = yield from s.find(kind, rid)
            if add:
                if r is None:
                    yield from s.put(kind, rid, [0, SEATS, SEATS, price])
                else:
                    r[VALUE + FREE] += SEATS
                    r[VALUE + TOTAL] += SEATS
                    r[VALUE + PRICE] = price
                continue
            if r is None:
                continue
            take = r[VALUE + TOTAL] if kind == FLIGHT else SEATS
            if (kind == FLIGHT and r[VALUE + USED]) or r[VALUE + FREE] < take:
                continue
            r[VALUE + FREE] -= take
            r[VALUE + TOTAL] -= take
            if r[VALUE + TOTAL] == 0:
                yield from s.remove(kind, rid)


Initial = tuple[np.ndarray, np.ndarray]
"""A table's initial records: its ids in insertion order and their drawn values (int64)."""


class _Table(MutableMapping[int, list[int]]):
    """One table of the reference model, a mapping from id to node-shaped record: the initial
    records in arrays indexed by id, and the records read or changed since in a dict (None: a
    deleted one). At STAMP's 2**20 records a table, dicts of every record take some 220 MiB a
    table; these take 9 bytes a record plus the records a run touches."""

    def __init__(self, table: int, ids: np.ndarray, values: np.ndarray) -> None:
        self.table = table
        size = int(ids.max()) + 1 if ids.size else 0
        self.present = np.zeros(size, bool)
        self.present[ids] = True
        self.value = np.zeros(size, np.int64)
        self.value[ids] = values
        self.live = int(ids.size)  # records in the table
        self.touched: dict[int, list[int] | None] = {}

    def _initial(self, k: int) -> bool:
        return 0 <= k < self.present.size and bool(self.present[k])

    def __getitem__(self, k: int) -> list[int]:
        if k in self.touched:
            r = self.touched[k]
            if r is None:
                raise KeyError(k)
            return r
        if not self._initial(k):
            raise KeyError(k)
        r = self.touched[k] = [k, 0, 0, 0, *_record(self.table, int(self.value[k]))]
        return r

    def __contains__(self, k: object) -> bool:
        if k in self.touched:
            return self.touched[k] is not None  # type: ignore[index]
        return isinstance(k, int) and self._initial(k)

    def __setitem__(self, k: int, record: list[int]) -> None:
        if k not in self:
            self.live += 1
        self.touched[k] = record

    def __delitem__(self, k: int) -> None:
        if k not in self:
            raise KeyError(k)
        self.touched[k] = None
        self.live -= 1

    def __iter__(self) -> Iterator[int]:
        untouched = np.flatnonzero(self.present).tolist()
        yield from (k for k in untouched if k not in self.touched)
        yield from (k for k, r in self.touched.items() if r is not None)

    def __len__(self) -> int:
        return self.live

    def items_sorted(self) -> tuple[tuple[int, tuple[int, ...]], ...]:
        """Every ``(id, record)`` in id order (the untouched records built from the arrays)."""
        ids = np.flatnonzero(self.present)
        if self.touched:
            ids = ids[~np.isin(ids, np.fromiter(self.touched, np.int64, len(self.touched)))]
        v = self.value[ids]
        zero = np.zeros_like(v)
        if self.table == CUSTOMER:
            cols = [zero, zero, zero, zero]
        else:
            seats = v >> 16
            cols = [zero, seats, seats, v & 0xFFFF]
        recs = zip(*(c.tolist() for c in cols), strict=True)
        out = list(zip(ids.tolist(), recs, strict=True))
        out += [(k, tuple(r[VALUE:])) for k, r in self.touched.items() if r is not None]
        out.sort()
        return tuple(out)


class VacationModel(Model):
    """The reference: the four tables (:class:`_Table`) edited by :func:`client`."""

    def __init__(self, initial: Sequence[Sequence[tuple[int, int]] | Initial]) -> None:
        self.tables = [_Table(t, *_arrays(items)) for t, items in enumerate(initial)]

    def apply(self, op: tuple[Any, ...]) -> None:
        for _ in client(_DictStore(self.tables), op):
            pass

    def snapshot(self) -> Hashable:
        return tuple(t.items_sorted() for t in self.tables)


def _arrays(items: Sequence[tuple[int, int]] | Initial) -> Initial:
    """A table's initial records as arrays, from arrays or from ``(id, value)`` pairs."""
    if isinstance(items, tuple) and len(items) == 2 and isinstance(items[0], np.ndarray):
        return items  # type: ignore[return-value]
    pairs = np.array(items, np.int64).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def _record(table: int, v: int) -> list[int]:
    """An initial record from its drawn value: ``seats << 16 | price`` (customers: empty)."""
    if table == CUSTOMER:
        return [0, 0, 0, 0]
    seats, price = v >> 16, v & 0xFFFF
    return [0, seats, seats, price]


@register_workload
class Vacation(RBTree):
    """STAMP's Vacation: reservations, customer deletions and table updates on four trees."""

    name = "vacation"
    Params = VacationParams  # type: ignore[assignment]
    help = ("STAMP's Vacation: make reservations, delete customers and update four red-black "
            "tree tables (cars, flights, rooms, customers)")
    fuzz_params = {"relations": 4, "queries": 2, "query_pct": 100.0, "user_pct": 60.0}

    def spec(self) -> PMSpec:
        p = self.p
        obj = self.objects_per_op() * (p.queries + 1) + 4
        return PMSpec(statics=(StaticArray("roots", len(TABLES), 1),),
                      heap=((self.node_words, self.node_words, self.max_nodes()),),
                      max_tx_writes=obj, max_tx_words=obj * self.node_words,
                      max_tx_allocs=p.queries + 1, max_tx_objects=obj, conservative_log=True)

    def locks_of(self, op: Any) -> list[int]:
        return list(range(len(TABLES)))

    _arrays: list[Initial] | None = None

    def initial_arrays(self) -> list[Initial]:
        """STAMP's manager, per table: every id in a random order, ``(1..5) x 100`` seats at
        ``50..90`` (value ``seats << 16 | price``), and every customer (value 0)."""
        if self._arrays is None:
            r = self.p.relations
            rng = np.random.default_rng([self.seed, INIT_STREAM])
            self._arrays = []
            for t in range(len(TABLES)):
                ids = rng.permutation(r).astype(np.int64) + 1
                if t == CUSTOMER:
                    self._arrays.append((ids, np.zeros(r, np.int64)))
                    continue
                seats = (rng.integers(0, 5, size=r) + 1) * 100
                price = rng.integers(0, 5, size=r) * 10 + 50
                self._arrays.append((ids, (seats << 16 | price).astype(np.int64)))
        return self._arrays

    def initial_items(self) -> list[list[tuple[int, int]]]:
        """:meth:`initial_arrays` as ``(id, value)`` pairs in insertion order (what the
        insert build inserts)."""
        if self._initial is None:
            self._initial = [list(zip(ids.tolist(), vals.tolist(), strict=True))
                             for ids, vals in self.initial_arrays()]
        return self._initial

    def init_data(self, rt: Runtime) -> None:
        """Build the initial trees: by inserts (:meth:`MapWorkload.init_data`), or in bulk
        (``VacationParams.bulk``): each table's nodes in the blocks its inserts would take,
        linked as a balanced red-black tree (:func:`~.rbtree.bulk_nodes`), records as
        :func:`_record` makes them."""
        if not self.p.bulk:
            super().init_data(rt)
            return
        init = BulkInit(rt)
        for t, (ids, vals) in enumerate(self.initial_arrays()):
            objs = init.alloc(self.node_words, ids.size)
            root, links = bulk_nodes(ids, objs)
            words = np.zeros((ids.size, self.node_words), np.uint64)
            words[:, :VALUE] = links
            if t != CUSTOMER:
                seats = (vals >> 16).astype(np.uint64)
                words[:, VALUE + FREE] = seats
                words[:, VALUE + TOTAL] = seats
                words[:, VALUE + PRICE] = (vals & 0xFFFF).astype(np.uint64)
            init.write(objs, words)
            rt.init_words(rt.static("roots", t), 0, [root])
        init.flush()

    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[Any, ...]:
        """STAMP's client draw: an action, then its customer or its items."""
        p = self.p
        q = p.query_range
        action = int(rng.integers(0, 100))
        if action < p.user_pct:
            n = int(rng.integers(0, p.queries)) + 1
            cust = int(rng.integers(0, q)) + 1
            return (RESERVE, cust, tuple((int(rng.integers(0, 3)), int(rng.integers(0, q)) + 1)
                                         for _ in range(n)))
        if action & 1:
            return (DELETE_CUSTOMER, int(rng.integers(0, q)) + 1)
        n = int(rng.integers(0, p.queries)) + 1
        ups = []
        for _ in range(n):
            kind, rid, add = (int(rng.integers(0, 3)), int(rng.integers(0, q)) + 1,
                              int(rng.integers(0, 2)))
            ups.append((kind, rid, add, int(rng.integers(0, 5)) * 10 + 50 if add else 0))
        return (UPDATE, tuple(ups))

    def body(self, tx: Any, op: Any) -> Generator[Any, Any, None]:
        if isinstance(op[0], tuple):  # an initial insert (MapWorkload.init_data)
            (_, t, k, v), = op
            nodes = Nodes(tx, self.node_words)
            root = nodes.get(tx.rt.static("roots", t), 1)
            yield from self.operate(nodes, root, INSERT, k, _record(t, v))
            nodes.flush()
            return
        s = _TreeStore(self, tx)
        yield from client(s, op)
        s.nodes.flush()

    def model(self) -> Model:
        return VacationModel(self.initial_arrays())

    def node_value(self, vals: list[int], where: str) -> Any:
        """A record's words as they are (no torn-value check: records are edited field by
        field)."""
        return tuple(vals)


__all__ = ["TABLES", "Vacation", "VacationParams"]
