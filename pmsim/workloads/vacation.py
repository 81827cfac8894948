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

What pmsim leaves out: the tables hold ``relations`` records each (default 2**13: the initial
trees are built in Python, and 2**20 would take hours), so the trees are 13 levels deep instead
of 20 and fit the last-level cache; a customer holds at most three reservations inline in its
record (STAMP: a linked list with a node allocated per reservation), and a reservation that
would be a fourth is not made. The initial data is STAMP's: every id of each table, inserted
in a random order, with ``(1..5) x 100`` seats at a price of ``50..90``, and every customer.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import check_types, param
from ..errors import ConfigError
from ..runtimes.layout import PMSpec, StaticArray
from .base import Model, check_range, register_workload
from .rbtree import VALUE, RBTree
from .structures import DELETE, INIT_STREAM, INSERT, Nodes

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


def entry(kind: int, rid: int, price: int) -> int:
    """A customer's reservation entry packed into one word."""
    return kind << 56 | rid << 16 | price


def unpack(e: int) -> tuple[int, int, int]:
    return e >> 56, (e >> 16) & ((1 << 40) - 1), e & 0xFFFF


@dataclass(frozen=True)
class VacationParams:
    relations: int = param(1 << 13, "records", "records of each table at the start (STAMP: "
                           "-r1048576; default 2**13, the build is Python)")
    queries: int = param(4, "items", "most items a transaction queries or updates (STAMP -n: "
                         "High 4, Low 2)")
    query_pct: float = param(60.0, "%", "share of the ids that are queried (STAMP -q: High "
                             "60, Low 90)")
    user_pct: float = param(90.0, "%", "share of reservation transactions (STAMP -u: High 90, "
                            "Low 98); the rest delete customers and update tables, half each")

    def __post_init__(self) -> None:
        check_types(self, "workload 'vacation': parameter ")
        check_range("vacation", "relations", self.relations, 1, 1 << 18)
        check_range("vacation", "queries", self.queries, 1, 64)
        check_range("vacation", "query_pct", self.query_pct, 0, 100)
        check_range("vacation", "user_pct", self.user_pct, 0, 100)
        if self.query_range < 1:
            raise ConfigError(f"workload 'vacation': query_pct={self.query_pct!r} of "
                             f"{self.relations} relations queries no id; raise query_pct")

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
    """The tables as dicts of node-shaped lists (the record at ``VALUE``): the reference
    model."""

    def __init__(self, tables: list[dict[int, list[int]]]) -> None:
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


class VacationModel(Model):
    def __init__(self, initial: list[list[tuple[int, int]]]) -> None:
        self.tables: list[dict[int, list[int]]] = [
            {k: [k, 0, 0, 0, *_record(t, v)] for k, v in items}
            for t, items in enumerate(initial)]

    def apply(self, op: tuple[Any, ...]) -> None:
        for _ in client(_DictStore(self.tables), op):
            pass

    def snapshot(self) -> Hashable:
        return tuple(tuple(sorted((k, tuple(r[VALUE:])) for k, r in t.items()))
                     for t in self.tables)


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

    def initial_items(self) -> list[list[tuple[int, int]]]:
        """STAMP's manager: every id of each table in a random order, ``(1..5) x 100`` seats
        at ``50..90`` (``seats << 16 | price``), and every customer (value 0)."""
        if self._initial is None:
            r = self.p.relations
            rng = np.random.default_rng([self.seed, INIT_STREAM])
            self._initial = []
            for t in range(len(TABLES)):
                ids = (rng.permutation(r) + 1).tolist()
                if t == CUSTOMER:
                    self._initial.append([(k, 0) for k in ids])
                    continue
                seats = ((rng.integers(0, 5, size=r) + 1) * 100).tolist()
                price = (rng.integers(0, 5, size=r) * 10 + 50).tolist()
                self._initial.append([(k, s << 16 | c)
                                      for k, s, c in zip(ids, seats, price, strict=True)])
        return self._initial

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
        return VacationModel(self.initial_items())

    def node_value(self, vals: list[int], where: str) -> Any:
        """A record's words as they are (no torn-value check: records are edited field by
        field)."""
        return tuple(vals)


__all__ = ["TABLES", "Vacation", "VacationParams"]
