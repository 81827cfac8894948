"""STAMP's Vacation: the reference model and recovery on every kind of runtime, STAMP's client
draw (action mix, ids within the query range), the actions' rules, crash consistency, and the
bulk build of the initial trees (valid red-black trees in the image, the insert build's records
in the same blocks, STAMP's 2**20 records)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import crashfuzz
from pmsim.errors import ConfigError
from pmsim.runtimes.base import Runtime
from pmsim.workloads import Session, Vacation
from pmsim.workloads.rbtree import BLACK, KEY, RED, VALUE, bulk_nodes
from pmsim.workloads.vacation import (
    CAR,
    CUSTOMER,
    DELETE_CUSTOMER,
    FLIGHT,
    PRICE,
    RESERVE,
    TABLES,
    UPDATE,
    VacationModel,
    VacationParams,
    _DictStore,
    client,
    unpack,
)

from . import stamp

SMALL = {"relations": 48, "queries": 4, "query_pct": 60.0, "user_pct": 80.0}


def session(runtime: str, threads: int, txs: int = 40, **params: Any) -> Session:
    return stamp.session("vacation", SMALL, runtime, threads, txs, **params)


@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("runtime", stamp.RUNTIMES)
def test_matches_reference_and_recovers(runtime: str, threads: int) -> None:
    s = session(runtime, threads)
    before = s.workload.app_data(s.runtime)
    assert stamp.run_checked(s, runtime, 40, threads) != before


def test_the_client_draws_stamps_mix() -> None:
    wl = Vacation(threads=1, seed=5, relations=1000, queries=4, query_pct=60.0, user_pct=90.0)
    rng = wl.rng(0)
    ops = [wl.next_op(0, rng) for _ in range(4000)]
    kinds = [op[0] for op in ops]
    assert 0.88 < kinds.count(RESERVE) / 4000 < 0.92
    assert 0.03 < kinds.count(DELETE_CUSTOMER) / 4000 < 0.07
    assert 0.03 < kinds.count(UPDATE) / 4000 < 0.07
    ids = [rid for op in ops if op[0] == RESERVE for _, rid in op[2]]
    assert min(ids) == 1 and max(ids) == 600  # the first 60% of the ids
    assert {len(op[2]) for op in ops if op[0] == RESERVE} == {1, 2, 3, 4}
    prices = {p for op in ops if op[0] == UPDATE for _, _, add, p in op[1] if add}
    assert prices == {50, 60, 70, 80, 90}


def model(**tables: dict[int, list[int]]) -> VacationModel:
    m = VacationModel([[], [], [], []])
    for t, name in enumerate(("car", "flight", "room", "customer")):
        for k, rec in tables.get(name, {}).items():
            m.tables[t][k] = [k, 0, 0, 0, *rec]
    return m


def test_a_reservation_takes_the_dearest_item_of_each_type() -> None:
    m = model(car={1: [0, 100, 100, 50], 2: [0, 100, 100, 80]}, flight={3: [0, 0, 100, 90]})
    m.apply((RESERVE, 7, ((CAR, 1), (CAR, 2), (FLIGHT, 3), (CAR, 9))))
    cars, flights, _, customers = m.tables
    assert cars[2][4:] == [1, 99, 100, 80] and cars[1][4:] == [0, 100, 100, 50]
    assert flights[3][4:] == [0, 0, 100, 90]  # no seat free: not reserved
    count, *held = customers[7][4:]
    assert count == 1 and unpack(held[0]) == (CAR, 2, 80)


def test_deleting_a_customer_cancels_its_reservations() -> None:
    m = model(car={2: [0, 100, 100, 80]})
    m.apply((RESERVE, 7, ((CAR, 2),)))
    m.apply((DELETE_CUSTOMER, 7))
    assert m.tables[CUSTOMER] == {} and m.tables[CAR][2][4:] == [0, 100, 100, 80]


def test_updates_add_take_and_remove() -> None:
    m = model(car={1: [0, 100, 100, 50]}, flight={2: [1, 99, 100, 60], 3: [0, 100, 100, 60]})
    m.apply((UPDATE, ((CAR, 1, 1, 70), (CAR, 5, 1, 90), (FLIGHT, 2, 0, 0), (FLIGHT, 3, 0, 0))))
    cars, flights = m.tables[CAR], m.tables[FLIGHT]
    assert cars[1][4:] == [0, 200, 200, 70] and cars[5][4:] == [0, 100, 100, 90]
    assert 2 in flights and 3 not in flights  # a reserved flight stays; an empty one goes
    m.apply((UPDATE, ((CAR, 5, 0, 0),)))
    assert 5 not in m.tables[CAR]


@pytest.mark.parametrize("params, match", [
    ({"relations": 0}, "relations"),
    ({"relations": (1 << 20) + 1}, r"relations=1048577 is above 2\*\*20"),
    ({"build": "fast"}, "build='fast'"),
    ({"queries": 0}, "queries"),
    ({"query_pct": 120.0}, "query_pct"),
    ({"query_pct": 0.0}, "query_pct"),
    ({"user_pct": -1.0}, "user_pct"),
])
def test_bad_parameters(params: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        Vacation(threads=1, **params)


@pytest.mark.parametrize("runtime, ok", [("nvhtm", True), ("undo", True), ("nvhtm:M1", False)])
def test_crash_fuzzing(runtime: str, ok: bool) -> None:
    rep = stamp.fuzz(runtime, "vacation", stop_at_first=not ok)
    assert rep.ok is ok, crashfuzz.format_report(rep)


def test_the_compact_model_is_a_dict_of_every_record() -> None:
    """The model's tables (initial records in arrays, touched ones in a dict) go through the
    same transactions as plain dicts of every record, to the same snapshot."""
    wl = Vacation(threads=1, seed=2, relations=64, queries=4, query_pct=100.0, user_pct=60.0)
    m = VacationModel(wl.initial_arrays())
    plain = [{k: [k, 0, 0, 0, *rec[VALUE:]] for k, rec in t.items()} for t in m.tables]
    rng = wl.rng(0)
    for _ in range(300):
        op = wl.next_op(0, rng)
        m.apply(op)
        for _ in client(_DictStore(plain), op):
            pass
    assert m.snapshot() == tuple(tuple(sorted((k, tuple(r[VALUE:])) for k, r in t.items()))
                                 for t in plain)
    assert [len(t) for t in m.tables] == [len(t) for t in plain]


def test_auto_builds_by_inserts_up_to_2_16_relations() -> None:
    assert not VacationParams().bulk and not VacationParams(relations=1 << 16).bulk
    assert VacationParams(relations=(1 << 16) + 1).bulk
    assert VacationParams(relations=8, build="bulk").bulk
    assert not VacationParams(relations=1 << 20, build="inserts").bulk


def rb_levels(rt: Runtime, root: int, keys: int) -> tuple[int, np.ndarray]:
    """Walk the red-black tree at ``root`` in the PM image a level at a time (NumPy, so 2**20
    nodes take a second): keys in search order within ``1..keys``, a black root, no red node
    with a red child, as many black nodes on every path to a nil link, and every node reached
    once (the layout has no parent link: one parent per node is what keeps the links
    consistent). Returns the number of levels and the nodes."""
    c = next(c for c in rt.layout.heap if c.base <= root < c.end)
    off = (rt.field_addr(root, 0) - root) // 8
    image = rt.m.pm_words(c.base, c.nblocks * c.block // 8).reshape(c.nblocks, c.block // 8)
    words = image[:, off: off + VALUE].astype(np.int64)
    level = np.array([root], np.int64)
    lo, hi = np.zeros(1, np.int64), np.full(1, keys + 1, np.int64)
    blacks, parent_red = np.zeros(1, np.int64), np.zeros(1, bool)
    nil_blacks: set[int] = set()
    seen = []
    while level.size:
        assert len(seen) < 64, "deeper than 64 levels: a cycle"
        assert ((level - c.base) % c.block == 0).all() and (level < c.end).all()
        key, left, right, color = words[(level - c.base) // c.block].T
        assert ((lo < key) & (key < hi)).all(), "keys out of search order"
        assert np.isin(color, (BLACK, RED)).all()
        red = color == RED
        assert not (red & parent_red).any() and not (seen == [] and red.any())
        b = blacks + ~red
        nil_blacks.update(b[left == 0].tolist() + b[right == 0].tolist())
        has_l, has_r = left != 0, right != 0
        seen.append(level)
        level = np.concatenate([left[has_l], right[has_r]])
        lo = np.concatenate([lo[has_l], key[has_r]])
        hi = np.concatenate([key[has_l], hi[has_r]])
        blacks = np.concatenate([b[has_l], b[has_r]])
        parent_red = np.concatenate([red[has_l], red[has_r]])
    nodes = np.concatenate(seen)
    assert np.unique(nodes).size == nodes.size, "a node is reached twice"
    assert len(nil_blacks) == 1, f"black heights {sorted(nil_blacks)}"
    return len(seen), nodes


def bulk_session(runtime: str, relations: int, build: str = "bulk", **params: Any) -> Session:
    return session(runtime, 1, relations=relations, build=build, **params)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 1 << 40), unique=True, max_size=300))
def test_bulk_nodes_link_a_balanced_red_black_tree(keys: list[int]) -> None:
    """Any distinct keys in any order: an in-order walk of the links gives them sorted, the
    root is black, no red node has a red child, every path has as many black nodes, and the
    tree has ceil(log2(n + 1)) levels with every nil link on the last two."""
    n = len(keys)
    objs = 64 * np.arange(1, n + 1, dtype=np.int64)
    root, words = bulk_nodes(np.array(keys, np.int64), objs)
    at = {int(o): w.tolist() for o, w in zip(objs, words, strict=True)}

    def walk(x: int, depth: int, parent_red: bool) -> tuple[list[int], set[int], int]:
        if not x:
            return [], {depth}, 0
        key, left, right, color = at.pop(x)
        assert color in (BLACK, RED) and not (color == RED and (parent_red or depth == 0))
        ks, ds, bl = walk(left, depth + 1, color == RED)
        ks2, ds2, br = walk(right, depth + 1, color == RED)
        assert bl == br
        return ks + [key] + ks2, ds | ds2, bl + (color == BLACK)

    ks, depths, _ = walk(root, 0, False)
    assert ks == sorted(keys) and not at  # every node reached, once
    assert max(depths) == n.bit_length() and max(depths) - min(depths) <= 1


@pytest.mark.parametrize("relations", [1, 2, 1000, 1 << 12])
def test_bulk_built_trees_are_red_black_in_the_image(relations: int) -> None:
    s = bulk_session("undo", relations)
    rt, wl = s.runtime, s.workload
    roots = rt.peek_static("roots")[:, 0].tolist()
    for root in roots:
        levels, nodes = rb_levels(rt, root, relations)
        assert nodes.size == relations and levels == relations.bit_length()
    assert wl.read_data(rt) == wl.expected([])  # RBTree.walk's checks, and the records
    assert rt.check_invariants(wl.live_objects(rt)) == []  # every node allocated, no other


def test_the_bulk_build_holds_the_insert_builds_records_in_the_same_blocks() -> None:
    ins, blk = (bulk_session("redo", 1000, build) for build in ("inserts", "bulk"))
    assert blk.workload.read_data(blk.runtime) == ins.workload.read_data(ins.runtime)

    def record_at(s: Session) -> dict[int, tuple[int, ...]]:
        rt = s.runtime
        return {n: (rt.peek(n, KEY), *rt.peek_words(n, VALUE, 4))
                for n in s.workload.live_objects(rt)}

    assert record_at(blk) == record_at(ins)


def test_under_a_read_log_the_bulk_build_writes_word_by_word_the_same_image() -> None:
    """A read log must see every word written, so BulkInit then writes through init_words."""
    s = bulk_session("nvhtm", 300)
    m, rt = s.machine, s.runtime
    fast = m.pm_image()
    rt.format()
    m.start_read_log()
    s.workload.init_data(rt)
    m.stop_read_log()
    assert np.array_equal(m.pm_image(), fast)
    assert s.workload.read_data(rt) == s.workload.expected([])


@pytest.mark.parametrize("runtime", ["undo", "nvhtm", "pstm"])
def test_a_bulk_built_run_matches_the_reference_and_recovers(runtime: str) -> None:
    s = session(runtime, 4, build="bulk")
    before = s.workload.app_data(s.runtime)
    assert stamp.run_checked(s, runtime, 40, 4) != before


@pytest.mark.parametrize("runtime", ["nvhtm", "undo"])
def test_crash_fuzzing_a_bulk_built_image(runtime: str) -> None:
    rep = stamp.fuzz(runtime, "vacation", params={"build": "bulk"})
    assert rep.ok, crashfuzz.format_report(rep)


@pytest.mark.slow
def test_stamps_2_20_relations_build_in_bulk() -> None:
    """STAMP's -r1048576: four trees of 2**20 nodes, 21 levels each (ceil(log2(2**20 + 1)))."""
    r = 1 << 20
    s = stamp.session("vacation", {"relations": r}, "undo", 1, 10)
    rt, wl = s.runtime, s.workload
    assert wl.p.bulk
    nodes = []
    for t, root in enumerate(rt.peek_static("roots")[:, 0].tolist()):
        levels, ns = rb_levels(rt, root, r)
        assert levels == 21 and ns.size == r, TABLES[t]
        nodes.append(ns)
    assert rt.heap.allocated() == set(np.concatenate(nodes).tolist())
    ids, vals = wl.initial_arrays()[CAR]
    first = int(nodes[CAR].min())  # the lowest block: the first car inserted
    assert rt.peek(first, KEY) == ids[0] and rt.peek(first, VALUE + PRICE) == vals[0] & 0xFFFF
    s.run(10)
    assert rt.commits == 10
