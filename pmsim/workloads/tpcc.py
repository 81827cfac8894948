"""TPC-C-like: New-Order, Payment, Order-Status and Delivery on static tables.

The mixes of DUDETx (New-Order only, as in REWIND) and NV-HTM (workload A: 20% Delivery, 65%
Order-Status, 15% Payment; workload B: 2% Delivery, 26% Order-Status, 70% Payment, 2% New-Order;
Stock-Level is left out, as NV-HTM does). Tables are static arrays indexed by their keys (DUDETx
stores them in B+-trees or hash tables; the index is not modelled):

* warehouse ``[ytd, tax]``, district ``[ytd, tax, next_o_id, next_deliv]``,
* customer ``[balance, ytd_payment, payment_cnt, delivery_cnt, last_o_id, discount]``,
* item ``[price]`` (read-only), stock ``[quantity, ytd, order_cnt, remote_cnt]``,
* order ``[o_id, c_id, ol_cnt, carrier, all_local]`` and its ``max_lines`` order lines
  ``[i_id, supply_w, quantity, amount, delivery_d]``.

Each district keeps its newest ``order_slots`` orders in a ring (slot ``o_id % order_slots``):
the orders table is that window ``[next_o_id - order_slots, next_o_id)``, and the new-order
table is ``[next_deliv, next_o_id)``. A New-Order that would overwrite an undelivered order
drops it from the new-order table (``next_deliv`` moves past it). As in TPC-C's initial
population (3,000 orders per district, the last 900 undelivered), every district starts with
``order_slots`` orders, the last 30% of them undelivered (:meth:`TPCC.initial_orders`).

``port='htm'`` runs the profiles as NV-HTM's in-memory HTM port of TPC-C does (its reference
[47], H-Store's port), sized by the paper's Table 3, whose writes per transaction (NV-HTM NLP: a
log entry per written word plus one commit marker per update transaction) are 1.6 in workload A
and 4.7 in B. With A's 35% and B's 74% update transactions that leaves 3.6 and 5.4 words per
update transaction, which TPC-C's full profiles (Payment 5 words, Delivery about 15 per district
over ten districts) exceed many times over. The reading that meets both mixes: Payment writes
W_YTD, D_YTD and C_BALANCE (3 words), Delivery delivers one district per transaction (TPC-C
2.7.4.2 lets a deferred Delivery run as one transaction per district) and writes the order's
carrier, the customer's balance and delivery count and the district's next undelivered order,
not the order lines' dates (4 words), and New-Order is unchanged (8 + 9 words per line, 98 at
ten lines): A gives 0.15 x 3 + 0.2 x 4 + 0.35 = 1.60 and B 0.7 x 3 + 0.02 x 4 + 0.02 x 98 +
0.74 = 4.88 (paper 4.7). The two mixes fix two of the three sizes; the third (New-Order) is
TPC-C's own.

``new_order_ns`` is compute inside a New-Order besides the table accesses pmsim models (the
indexes that DUDETx keeps its tables in, the string fields, the terminal I/O), spread evenly
over the order's lines: DUDETx's New-Order "costs about 110k cycles" (its §6.3).

Money is in cents and wraps modulo 2**64 (balances go negative). ``rollback_pct`` of the
New-Orders name an unused item in their last line and roll back after writing the others, as
TPC-C specifies (1%).

Consistency checks (TPC-C's conditions 1-3, on the window): warehouse YTD is the sum of its
districts' YTD, every order in a district's window has the id its slot implies, and exactly the
orders before ``next_deliv`` have a carrier.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import check_most, check_types, param
from ..errors import ConfigError, PmsimError
from ..runtimes.base import Runtime
from ..runtimes.layout import PMSpec, StaticArray
from .base import MASK64, Model, Workload, check_range, register_workload

NEW_ORDER, PAYMENT, ORDER_STATUS, DELIVERY = 0, 1, 2, 3
KINDS = ("New-Order", "Payment", "Order-Status", "Delivery")
MIXES = {
    "new-order": (100.0, 0.0, 0.0, 0.0),
    "a": (0.0, 15.0, 65.0, 20.0),
    "b": (2.0, 70.0, 26.0, 2.0),
}
"""Named mixes: percentages of New-Order, Payment, Order-Status, Delivery (DUDETx; NV-HTM A, B)."""

W_YTD, W_TAX = 0, 1
D_YTD, D_TAX, D_NEXT_O, D_NEXT_DELIV = 0, 1, 2, 3
C_BALANCE, C_YTD, C_PAYMENT_CNT, C_DELIVERY_CNT, C_LAST_O, C_DISCOUNT = range(6)
S_QUANTITY, S_YTD, S_ORDER_CNT, S_REMOTE_CNT = range(4)
O_ID, O_C_ID, O_OL_CNT, O_CARRIER, O_ALL_LOCAL = range(5)
OL_I_ID, OL_SUPPLY_W, OL_QUANTITY, OL_AMOUNT, OL_DELIVERY_D = range(5)
WORDS = {"warehouse": 2, "district": 4, "customer": 6, "item": 1, "stock": 4, "orders": 5,
         "lines": 5}
D_YTD_INIT = 3_000_000
"""A district's initial YTD in cents (TPC-C: 30,000.00); a warehouse starts at the sum."""
C_BALANCE_INIT = -1000 & MASK64
C_YTD_INIT = 1000
STOCK_STRIPES = 16
"""Stock locks per warehouse (stock rows are striped over them by item id)."""
MAX_LOCKS = 1 << 18
PORTS = ("full", "htm")


def price(i: int) -> int:
    """Item ``i``'s price in cents (TPC-C: 1.00..100.00)."""
    return 100 + (i * 7919) % 9901


def initial_quantity(w: int, i: int, items: int) -> int:
    """Stock quantity of item ``i`` in warehouse ``w`` at setup (TPC-C: 10..100)."""
    return 10 + ((w * items + i) * 37) % 91


def nurand(rng: np.random.Generator, a: int, c: int, n: int) -> int:
    """TPC-C's NURand(A, 0, n - 1) with run-time constant C."""
    return ((int(rng.integers(0, a + 1)) | int(rng.integers(0, n))) + c) % n


def parse_mix(mix: str) -> tuple[float, float, float, float]:
    """A named mix, or four percentages ``"NO:P:OS:D"`` that sum to 100."""
    if mix in MIXES:
        return MIXES[mix]
    parts = mix.split(":")
    label = f"workload 'tpcc': parameter mix={mix!r}"
    try:
        pct = tuple(float(x) for x in parts)
    except ValueError:
        pct = ()
    if len(pct) != 4:
        raise ConfigError(f"{label} is neither a named mix ({', '.join(MIXES)}) nor four "
                          "percentages New-Order:Payment:Order-Status:Delivery such as "
                          "'45:43:6:6'")
    if any(not 0 <= x <= 100 for x in pct) or abs(sum(pct) - 100) > 1e-9:
        raise ConfigError(f"{label}: the percentages must be in [0, 100] and sum to 100")
    return pct  # type: ignore[return-value]


@dataclass(frozen=True)
class TPCCParams:
    mix: str = param("new-order", "", "transaction mix: 'new-order' (DUDETx), 'a' or 'b' "
                     "(NV-HTM's workloads A and B), or percentages 'NO:P:OS:D'")
    warehouses: int = param(2, "warehouses", "warehouses (NV-HTM: 10 for A, 30 for B; DUDETx: "
                            "not given; documented default)")
    districts: int = param(10, "districts", "districts per warehouse (TPC-C: 10)")
    customers: int = param(30, "customers", "customers per district (TPC-C: 3,000; scaled down)")
    items: int = param(1000, "items", "items, and stock rows per warehouse (TPC-C: 100,000; "
                       "scaled down)")
    order_slots: int = param(16, "orders", "orders each district keeps (a ring: the orders "
                             "table's window; TPC-C keeps all) and starts with, the last 30% "
                             "undelivered (TPC-C: 3,000 and 900; documented default)")
    min_lines: int = param(5, "lines", "fewest order lines of a New-Order (TPC-C: 5)")
    max_lines: int = param(15, "lines", "most order lines of a New-Order (TPC-C: 15)")
    rollback_pct: float = param(1.0, "%", "New-Orders whose last item is unused, so they roll "
                                "back (TPC-C: 1%)")
    remote_pct: float = param(1.0, "%", "order lines supplied by another warehouse (TPC-C: 1%)")
    payment_remote_pct: float = param(15.0, "%", "Payments for a customer of another warehouse "
                                      "(TPC-C: 15%)")
    port: str = param("full", "", "'full': TPC-C's profiles as specified; 'htm': NV-HTM's "
                      "in-memory HTM port (Payment writes 3 words, Delivery one district and "
                      "no order-line dates; sized by NV-HTM's Table 3, see the module doc)")
    new_order_ns: float = param(0.0, "ns", "compute inside a New-Order besides its modelled "
                                "table accesses (indexes, strings), spread over its lines "
                                "(DUDETx: about 110k cycles a New-Order in all)")

    def __post_init__(self) -> None:
        label = "workload 'tpcc': parameter "
        check_types(self, label)
        parse_mix(self.mix)
        if self.port not in PORTS:
            raise ConfigError(f"{label}port={self.port!r} is unknown: use 'full' (TPC-C's "
                              "profiles) or 'htm' (NV-HTM's in-memory HTM port)")
        check_range("tpcc", "new_order_ns", self.new_order_ns, 0)
        for name in ("warehouses", "districts", "customers", "items", "order_slots",
                     "min_lines"):
            check_range("tpcc", name, getattr(self, name), 1)
        check_range("tpcc", "max_lines", self.max_lines, self.min_lines, 256)
        for name in ("rollback_pct", "remote_pct", "payment_remote_pct"):
            check_range("tpcc", name, getattr(self, name), 0, 100)
        check_most(label, "customers", self.customers, 1 << 20, "use at most 2**20 customers")
        check_most(label, "items", self.items, 1 << 20, "use at most 2**20 items")
        check_most(label, "order_slots", self.order_slots, 1 << 16,
                   "use at most 2**16 order slots per district")
        districts = self.warehouses * self.districts
        check_most(label, "districts", districts, 1 << 16,
                   "warehouses x districts must be at most 2**16")
        locks = self.warehouses * (self.districts + 1 + min(self.items, STOCK_STRIPES))
        if locks > MAX_LOCKS:
            raise ConfigError(f"{label}warehouses={self.warehouses!r} is too large: warehouses "
                              f"x (districts + 1 + {min(self.items, STOCK_STRIPES)} stock "
                              f"stripes) gives {locks} application locks, more than 2**18")
        rows = max(districts * self.customers, self.warehouses * self.items,
                   districts * self.order_slots * self.max_lines)
        if rows > 1 << 24:
            raise ConfigError(f"{label}warehouses={self.warehouses!r} is too large: a table "
                              f"would hold {rows} rows, more than 2**24; scale customers, items "
                              "or order_slots down")


class TPCCModel(Model):
    """The reference: every table as Python lists, updated as the transactions do."""

    def __init__(self, wl: TPCC) -> None:
        p = wl.p
        self.wl = wl
        nd = p.warehouses * p.districts
        self.warehouse = [[p.districts * D_YTD_INIT] for _ in range(p.warehouses)]
        first = wl.first_undelivered()
        self.district = [[D_YTD_INIT, p.order_slots + 1, first]  # ytd, next_o, next_deliv
                         for _ in range(nd)]
        self.customer = [[C_BALANCE_INIT, C_YTD_INIT, 1, 0, 0]
                         for _ in range(nd * p.customers)]
        self.stock = [[initial_quantity(w, i, p.items), 0, 0, 0]
                      for w in range(p.warehouses) for i in range(p.items)]
        self.orders: list[dict[int, list[Any]]] = []
        for di in range(nd):
            self.orders.append({o[0]: o for o in wl.initial_orders(di)})
            for o in self.orders[di].values():
                self.customer[di * p.customers + o[1]][4] = o[0]

    def apply(self, op: tuple[Any, ...]) -> None:
        kind = op[0]
        if kind == NEW_ORDER:
            self._new_order(*op[1:])
        elif kind == PAYMENT:
            _, w, d, cw, cd, c, amount = op
            self.warehouse[w][0] = (self.warehouse[w][0] + amount) & MASK64
            dd = self.district[self.wl.district_index(w, d)]
            dd[0] = (dd[0] + amount) & MASK64
            cu = self.customer[self.wl.customer_index(cw, cd, c)]
            cu[0] = (cu[0] - amount) & MASK64
            if self.wl.p.port == "full":
                cu[1] = (cu[1] + amount) & MASK64
                cu[2] += 1
        elif kind == DELIVERY:
            self._delivery(*op[1:])

    def _new_order(self, w: int, d: int, c: int, lines: tuple[tuple[int, int, int], ...],
                   _date: int) -> None:
        p = self.wl.p
        if lines[-1][0] >= p.items:
            return  # rolled back
        di = self.wl.district_index(w, d)
        dd = self.district[di]
        o = dd[1]
        if o - dd[2] >= p.order_slots:
            dd[2] += 1
        dd[1] += 1
        out = []
        for i, sw, q in lines:
            st = self.stock[sw * p.items + i]
            st[0] = st[0] - q if st[0] >= q + 10 else st[0] - q + 91
            st[1] += q
            st[2] += 1
            st[3] += sw != w
            out.append((i, sw, q, q * price(i), 0))
        all_local = int(all(sw == w for _, sw, _ in lines))
        self.orders[di][o] = [o, c, len(lines), 0, all_local, out]
        self.orders[di].pop(o - p.order_slots, None)  # overwritten in the ring
        self.customer[self.wl.customer_index(w, d, c)][4] = o

    def _delivery(self, w: int, carrier: int, date: int, districts: tuple[int, ...]) -> None:
        dated = self.wl.p.port == "full"
        for d in districts:
            di = self.wl.district_index(w, d)
            dd = self.district[di]
            if dd[2] >= dd[1]:
                continue
            order = self.orders[di][dd[2]]
            order[3] = carrier
            total = 0
            for j, line in enumerate(order[5]):
                total += line[3]
                if dated:
                    order[5][j] = (*line[:4], date)
            cu = self.customer[self.wl.customer_index(w, d, order[1])]
            cu[0] = (cu[0] + total) & MASK64
            cu[3] += 1
            dd[2] += 1

    def snapshot(self) -> Hashable:
        s = self.wl.p.order_slots
        orders = []
        for di, dd in enumerate(self.district):
            window = range(max(1, dd[1] - s), dd[1])
            orders.append(tuple((*self.orders[di][o][:5], tuple(self.orders[di][o][5]))
                                for o in window))
        return (tuple(x[0] for x in self.warehouse), tuple(map(tuple, self.district)),
                tuple(map(tuple, self.customer)), tuple(map(tuple, self.stock)), tuple(orders))


@register_workload
class TPCC(Workload):
    name = "tpcc"
    Params = TPCCParams
    help = "TPC-C-like New-Order/Payment/Order-Status/Delivery (DUDETx, NV-HTM A/B mixes)"
    fuzz_params = {"mix": "40:30:10:20", "warehouses": 2, "districts": 1, "customers": 2,
                   "items": 4, "order_slots": 2, "min_lines": 1, "max_lines": 1,
                   "rollback_pct": 10.0, "remote_pct": 20.0}

    C_CUSTOMER, C_ITEM = 259, 7911
    """NURand's run-time constants C (TPC-C 2.1.6; fixed here)."""

    @property
    def mix(self) -> tuple[float, float, float, float]:
        return parse_mix(self.p.mix)

    def district_index(self, w: int, d: int) -> int:
        return w * self.p.districts + d

    def customer_index(self, w: int, d: int, c: int) -> int:
        return self.district_index(w, d) * self.p.customers + c

    def line_index(self, di: int, o: int, j: int) -> int:
        return (di * self.p.order_slots + o % self.p.order_slots) * self.p.max_lines + j

    def first_undelivered(self) -> int:
        """Every district's first undelivered initial order (the last 30% are undelivered)."""
        s = self.p.order_slots
        return s + 1 - (3 * s + 5) // 10

    def initial_orders(self, di: int) -> list[list[Any]]:
        """District ``di``'s initial orders ``[o_id, c_id, ol_cnt, carrier, all_local, lines]``,
        ``o_id = 1..order_slots``: customers in turn; a delivered order has a carrier and its
        lines a delivery date and amount 0, as TPC-C's initial population (section 4.3.3.1)."""
        p = self.p
        w = di // p.districts
        first = self.first_undelivered()
        out = []
        for o in range(1, p.order_slots + 1):
            n = p.min_lines + (7 * o + 3 * di) % (p.max_lines - p.min_lines + 1)
            done = o < first
            lines = []
            for j in range(n):
                i = (13 * o + 101 * j + di) % p.items
                lines.append((i, w, 5, 0 if done else 5 * price(i), 1 if done else 0))
            out.append([o, (o - 1) % p.customers, n, 1 + o % 10 if done else 0, 1, lines])
        return out

    # -- layout --------------------------------------------------------------------------------
    def spec(self) -> PMSpec:
        p = self.p
        nd = p.warehouses * p.districts
        counts = {"warehouse": p.warehouses, "district": nd, "customer": nd * p.customers,
                  "item": p.items, "stock": p.warehouses * p.items,
                  "orders": nd * p.order_slots, "lines": nd * p.order_slots * p.max_lines}
        statics = tuple(StaticArray(n, counts[n], WORDS[n]) for n in WORDS)
        L, D = p.max_lines, p.districts
        bounds = [(0, 0, 0)]  # (TXN_WRITE calls, words, objects) per kind in the mix
        no, pay, _, dl = self.mix
        if no:
            bounds.append((3 + 2 * L, 8 + 9 * L, 3 + 2 * L))
        port = p.port == "htm"
        if pay:
            bounds.append((3, 3, 3) if port else (3, 5, 3))
        if dl:
            bounds.append((4, 4, 3) if port else (D * (3 + L), D * (6 + L), D * (3 + L)))
        return PMSpec(statics=statics, max_tx_writes=max(b[0] for b in bounds),
                      max_tx_words=max(b[1] for b in bounds), max_tx_allocs=0,
                      max_tx_objects=max(b[2] for b in bounds))

    def stripes(self) -> int:
        return min(self.p.items, STOCK_STRIPES)

    def nlocks(self) -> int:
        p = self.p
        return p.warehouses * (p.districts + 1 + self.stripes())

    def init_data(self, rt: Runtime) -> None:
        p = self.p
        put, static = rt.init_words, rt.static
        for w in range(p.warehouses):
            put(static("warehouse", w), 0, [p.districts * D_YTD_INIT, 500 + 37 * w % 1500])
            for d in range(p.districts):
                di = self.district_index(w, d)
                put(static("district", di), 0, [D_YTD_INIT, 500 + 53 * di % 1500,
                                                p.order_slots + 1, self.first_undelivered()])
                last: dict[int, int] = {}
                for o_id, c, n, carrier, local, lines in self.initial_orders(di):
                    put(static("orders", di * p.order_slots + o_id % p.order_slots), 0,
                        [o_id, c, n, carrier, local])
                    for j, line in enumerate(lines):
                        put(static("lines", self.line_index(di, o_id, j)), 0, list(line))
                    last[c] = o_id
                for c in range(p.customers):
                    put(static("customer", di * p.customers + c), 0,
                        [C_BALANCE_INIT, C_YTD_INIT, 1, 0, last.get(c, 0), 17 * c % 5000])
            for i in range(p.items):
                put(static("stock", w * p.items + i), 0, [initial_quantity(w, i, p.items)])
        for i in range(p.items):
            put(static("item", i), 0, [price(i)])

    # -- transactions --------------------------------------------------------------------------
    def next_op(self, tid: int, rng: np.random.Generator) -> tuple[Any, ...]:
        """``(NEW_ORDER, w, d, c, ((i_id, supply_w, qty), ...), date)``, ``(PAYMENT, w, d, c_w,
        c_d, c, amount)``, ``(ORDER_STATUS, w, d, c)`` or ``(DELIVERY, w, carrier, date)``."""
        p = self.p
        r = float(rng.random()) * 100
        acc, kind = 0.0, DELIVERY
        for k, pct in enumerate(self.mix):
            acc += pct
            if r < acc:
                kind = k
                break
        w = int(rng.integers(0, p.warehouses))
        if kind == DELIVERY:
            carrier, date = int(rng.integers(1, 11)), int(rng.integers(1, 1 << 32))
            districts = ((int(rng.integers(0, p.districts)),) if p.port == "htm"
                         else tuple(range(p.districts)))
            return kind, w, carrier, date, districts
        d = int(rng.integers(0, p.districts))
        c = nurand(rng, 1023, self.C_CUSTOMER, p.customers)
        if kind == ORDER_STATUS:
            return kind, w, d, c
        if kind == PAYMENT:
            cw, cd = w, d
            if p.warehouses > 1 and float(rng.random()) * 100 < p.payment_remote_pct:
                cw = (w + 1 + int(rng.integers(0, p.warehouses - 1))) % p.warehouses
                cd = int(rng.integers(0, p.districts))
            return kind, w, d, cw, cd, c, int(rng.integers(100, 500_001))
        n = int(rng.integers(p.min_lines, p.max_lines + 1))
        rollback = float(rng.random()) * 100 < p.rollback_pct
        lines = []
        for j in range(n):
            i = nurand(rng, 8191, self.C_ITEM, p.items)
            sw = w
            if p.warehouses > 1 and float(rng.random()) * 100 < p.remote_pct:
                sw = (w + 1 + int(rng.integers(0, p.warehouses - 1))) % p.warehouses
            if rollback and j == n - 1:
                i = p.items  # an unused item number
            lines.append((i, sw, int(rng.integers(1, 11))))
        return kind, w, d, c, tuple(lines), int(rng.integers(1, 1 << 32))

    def locks_of(self, op: tuple[Any, ...]) -> list[int]:
        p = self.p
        kind, w = op[0], op[1]
        nd = p.warehouses * p.districts
        if kind == DELIVERY:
            return [self.district_index(w, d) for d in op[4]]
        out = [self.district_index(w, op[2])]
        if kind == PAYMENT:
            out += [nd + w, self.district_index(op[3], op[4])]
        elif kind == NEW_ORDER:
            k = self.stripes()
            out += [nd + p.warehouses + sw * k + i % k for i, sw, _ in op[4] if i < p.items]
        return out

    def body(self, tx: Any, op: tuple[Any, ...]) -> Generator[Any, Any, bool]:
        kind = op[0]
        if kind == NEW_ORDER:
            return (yield from self._new_order(tx, *op[1:]))
        if kind == PAYMENT:
            return (yield from self._payment(tx, *op[1:]))
        if kind == ORDER_STATUS:
            return (yield from self._order_status(tx, *op[1:]))
        return (yield from self._delivery(tx, *op[1:]))

    def _new_order(self, tx: Any, w: int, d: int, c: int,
                   lines: tuple[tuple[int, int, int], ...],
                   date: int) -> Generator[Any, Any, bool]:
        p = self.p
        static = tx.rt.static
        share = p.new_order_ns / (len(lines) + 1)
        if share:
            tx.cpu.work(share)
        di = self.district_index(w, d)
        tx.read(static("warehouse", w), W_TAX)
        dist = static("district", di)
        _, next_o, next_deliv = tx.read_words(dist, D_TAX, 3)
        cust = static("customer", self.customer_index(w, d, c))
        tx.read(cust, C_DISCOUNT)
        if next_o - next_deliv >= p.order_slots:
            next_deliv += 1  # the ring slot still holds an undelivered order: drop it
        tx.write_words(dist, D_NEXT_O, [next_o + 1, next_deliv])
        all_local = int(all(sw == w for _, sw, _ in lines))
        tx.write_words(static("orders", di * p.order_slots + next_o % p.order_slots), O_ID,
                       [next_o, c, len(lines), 0, all_local])
        tx.write(cust, C_LAST_O, next_o)
        for j, (i, sw, q) in enumerate(lines):
            yield from tx.pause()
            if share:
                tx.cpu.work(share)
            if i >= p.items:
                return False  # an unused item: roll the whole order back
            pr = tx.read(static("item", i), 0)
            stock = static("stock", sw * p.items + i)
            s_q, s_ytd, s_cnt, s_remote = tx.read_words(stock, S_QUANTITY, 4)
            s_q = s_q - q if s_q >= q + 10 else s_q - q + 91
            tx.write_words(stock, S_QUANTITY, [s_q, s_ytd + q, s_cnt + 1, s_remote + (sw != w)])
            tx.write_words(static("lines", self.line_index(di, next_o, j)), OL_I_ID,
                           [i, sw, q, q * pr, 0])
        return True

    def _payment(self, tx: Any, w: int, d: int, cw: int, cd: int, c: int,
                 amount: int) -> Generator[Any, Any, bool]:
        static = tx.rt.static
        wh = static("warehouse", w)
        tx.write(wh, W_YTD, (tx.read(wh, W_YTD) + amount) & MASK64)
        yield from tx.pause()
        dist = static("district", self.district_index(w, d))
        tx.write(dist, D_YTD, (tx.read(dist, D_YTD) + amount) & MASK64)
        yield from tx.pause()
        cust = static("customer", self.customer_index(cw, cd, c))
        if self.p.port == "htm":
            tx.write(cust, C_BALANCE, (tx.read(cust, C_BALANCE) - amount) & MASK64)
            return True
        bal, ytd, cnt = tx.read_words(cust, C_BALANCE, 3)
        tx.write_words(cust, C_BALANCE, [(bal - amount) & MASK64, (ytd + amount) & MASK64,
                                         cnt + 1])
        return True

    def _order_status(self, tx: Any, w: int, d: int, c: int) -> Generator[Any, Any, bool]:
        p = self.p
        static = tx.rt.static
        di = self.district_index(w, d)
        tx.read(static("customer", self.customer_index(w, d, c)), C_BALANCE)
        o = tx.read(static("customer", self.customer_index(w, d, c)), C_LAST_O)
        next_o = tx.read(static("district", di), D_NEXT_O)
        if o and o >= next_o - p.order_slots:
            order = static("orders", di * p.order_slots + o % p.order_slots)
            n = tx.read(order, O_OL_CNT)
            tx.read(order, O_CARRIER)
            for j in range(n):
                yield from tx.pause()
                tx.read_words(static("lines", self.line_index(di, o, j)), OL_I_ID, 5)
        return True

    def _delivery(self, tx: Any, w: int, carrier: int, date: int,
                  districts: tuple[int, ...]) -> Generator[Any, Any, bool]:
        p = self.p
        static = tx.rt.static
        port = p.port == "htm"
        for k, d in enumerate(districts):
            if k:
                yield from tx.pause()
            di = self.district_index(w, d)
            dist = static("district", di)
            next_o, o = tx.read_words(dist, D_NEXT_O, 2)
            if o >= next_o:
                continue  # no undelivered order in this district
            order = static("orders", di * p.order_slots + o % p.order_slots)
            c, n = tx.read_words(order, O_C_ID, 2)
            tx.write(order, O_CARRIER, carrier)
            total = 0
            for j in range(n):
                line = static("lines", self.line_index(di, o, j))
                total += tx.read(line, OL_AMOUNT)
                if not port:
                    tx.write(line, OL_DELIVERY_D, date)
            cust = static("customer", self.customer_index(w, d, c))
            bal, ytd, cnt, dcnt = tx.read_words(cust, C_BALANCE, 4)
            if port:
                tx.write(cust, C_BALANCE, (bal + total) & MASK64)
                tx.write(cust, C_DELIVERY_CNT, dcnt + 1)
            else:
                tx.write_words(cust, C_BALANCE, [(bal + total) & MASK64, ytd, cnt, dcnt + 1])
            tx.write(dist, D_NEXT_DELIV, o + 1)
        return True

    # -- the reference and the data ------------------------------------------------------------
    def model(self) -> Model:
        return TPCCModel(self)

    def check(self, rt: Runtime) -> None:
        """Raise PmsimError unless TPC-C's consistency conditions hold (see the module doc)."""
        self.read_data(rt)

    def read_data(self, rt: Runtime) -> Hashable:
        p = self.p
        wh = rt.peek_static("warehouse")[:, W_YTD]
        dist = rt.peek_static("district")
        dytd = dist[:, D_YTD].reshape(p.warehouses, p.districts)
        with np.errstate(over="ignore"):
            if not np.array_equal(wh, dytd.sum(axis=1, dtype=np.uint64)):
                raise PmsimError("a warehouse's YTD is not the sum of its districts' YTD")
        orders = rt.peek_static("orders")
        lines = rt.peek_static("lines")
        s = p.order_slots
        out = []
        for di, (next_o, next_deliv) in enumerate(dist[:, D_NEXT_O:].tolist()):
            if not (1 <= next_deliv <= next_o and next_o - next_deliv <= s):
                raise PmsimError(f"district {di}: next_o_id {next_o} and next delivery "
                                 f"{next_deliv} are inconsistent")
            window = []
            for o in range(max(1, next_o - s), next_o):
                row = orders[di * s + o % s].tolist()
                if row[O_ID] != o:
                    raise PmsimError(f"district {di}: next_o_id is {next_o} but order slot "
                                     f"{o % s} holds order {row[O_ID]}, not {o}")
                if (row[O_CARRIER] != 0) != (o < next_deliv):
                    raise PmsimError(f"district {di}: order {o}'s carrier disagrees with the "
                                     "new-order table")
                n = row[O_OL_CNT]
                if not 1 <= n <= p.max_lines:
                    raise PmsimError(f"district {di}: order {o} has {n} lines")
                first = self.line_index(di, o, 0)
                window.append((*row, tuple(map(tuple, lines[first: first + n].tolist()))))
            out.append(tuple(window))
        return (tuple(wh.tolist()), tuple(map(tuple, dist[:, [D_YTD, D_NEXT_O, D_NEXT_DELIV]]
                                              .tolist())),
                tuple(map(tuple, rt.peek_static("customer")[:, :C_DISCOUNT].tolist())),
                tuple(map(tuple, rt.peek_static("stock").tolist())), tuple(out))
