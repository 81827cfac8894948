"""STAMP's Vacation: the reference model and recovery on every kind of runtime, STAMP's client
draw (action mix, ids within the query range), the actions' rules, and crash consistency."""

from __future__ import annotations

from typing import Any

import pytest

import crashfuzz
from pmsim.errors import ConfigError
from pmsim.workloads import Session, Vacation
from pmsim.workloads.vacation import (
    CAR,
    CUSTOMER,
    DELETE_CUSTOMER,
    FLIGHT,
    RESERVE,
    UPDATE,
    VacationModel,
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
