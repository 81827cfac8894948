"""The paper's Array trend, direction only (card M2-M4, M1): at PDOM-0 (500 ns barriers) redo
beats undo, at PDOM-2 (0 ns) undo beats redo, and COW is slowest where barriers are cheap."""

from __future__ import annotations

import pytest

from pmsim import preset
from pmsim.experiments import run_experiment

PARAMS = {"slots": 50_000, "slot_words": 4, "write_pct": 100}


def latency(runtime: str, domain: str) -> float:
    r = run_experiment(runtime, "array", preset(f"marathe-{domain}").replace(cores=1), txs=60,
                       warmup=20, params=PARAMS)
    assert r.commits == 60
    return r.lat_p50


@pytest.fixture(scope="module")
def lat() -> dict[tuple[str, str], float]:
    return {(rt, d): latency(rt, d) for rt in ("undo", "redo", "cow") for d in ("pdom0", "pdom2")}


def test_redo_beats_undo_with_expensive_barriers(lat: dict) -> None:
    assert lat["redo", "pdom0"] < lat["undo", "pdom0"]


def test_undo_beats_redo_with_free_barriers(lat: dict) -> None:
    assert lat["undo", "pdom2"] < lat["redo", "pdom2"]


def test_cow_is_slowest(lat: dict) -> None:
    assert lat["cow", "pdom2"] > max(lat["undo", "pdom2"], lat["redo", "pdom2"])
    assert lat["cow", "pdom0"] > lat["redo", "pdom0"]


def test_read_only_needs_no_barriers() -> None:
    r = run_experiment("undo", "array", preset("marathe-pdom0").replace(cores=1), txs=20,
                       params={**PARAMS, "write_pct": 0})
    assert r.pb_per_tx == 0
