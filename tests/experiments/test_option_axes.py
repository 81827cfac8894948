"""Experiments sweep runtime options (``options={"persist_bw": (1, 4)}``) like parameters."""

from __future__ import annotations

import pytest

from pmsim.errors import ConfigError
from pmsim.experiments.claims import Experiment, measure
from pmsim.runtimes.options import with_options


def test_first_only_runs_one_value_for_that_runtime() -> None:
    e = Experiment("t", "t", "bank", ("nvhtm-nlp", "nvhtm"), ("nvhtm-xeon",), threads=(2,),
                   options={"log_slots": (512, 64)}, first_only=(("nvhtm-nlp", "log_slots"),))
    assert [(p["runtime"], p["options"]) for p in e.points()] == [
        ("nvhtm-nlp", {"log_slots": 512}), ("nvhtm", {"log_slots": 512}),
        ("nvhtm", {"log_slots": 64})]


def test_options_sweep_only_the_runtimes_that_have_them() -> None:
    e = Experiment("t", "t", "bank", ("stm", "dudetx"), ("dudetx-xeon",), threads=(2,),
                   options={"persist_bw": (1.0, 8.0, 16.0)}, quick_options={"persist_bw": (1.0,)},
                   quick_txs=10, quick_warmup=1)
    full = e.points()
    assert [p.get("options") for p in full] == [None, {"persist_bw": 1.0},
                                                {"persist_bw": 8.0}, {"persist_bw": 16.0}]
    quick = e.points(quick=True)
    assert [p.get("options") for p in quick] == [None, {"persist_bw": 1.0}]
    rows = [measure(p) for p in quick]
    assert [r["runtime"] for r in rows] == ["stm", "dudetx"]
    assert "persist_bw" not in rows[0] and rows[1]["persist_bw"] == 1.0


def test_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="quick_options"):
        Experiment("t", "t", "bank", ("dudetx",), ("dudetx-xeon",),
                   options={"persist_bw": (1.0,)}, quick_options={"vlog_entries": (8,)})
    with pytest.raises(ConfigError, match="reuse row column names"):
        Experiment("t", "t", "bank", ("dudetx",), ("dudetx-xeon",),
                   options={"threads": (1,)})


def test_with_options_merges_over_a_name_that_has_some() -> None:
    assert with_options("dudetx", {}) == "dudetx"
    assert with_options("dudetx[vlog_entries=8]", {"persist_bw": 2.0}) == \
        "dudetx[persist_bw=2.0,vlog_entries=8]"
    assert with_options("dudetx[persist_bw=1]", {"persist_bw": 2.0}) == "dudetx[persist_bw=2.0]"
