"""Crash-point selection: the reduced points are complete, marker counts are right."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crashfuzz.points import every_points, reduced_points, sampled_points, select_points
from crashfuzz.states import CrashModel
from pmsim.errors import ConfigError, UnknownNameError
from pmsim.trace import Ev, Mark
from tests.crashfuzz.test_model import backends, events, log_edges, make_trace


def _union(model: CrashModel, kind: str) -> set[bytes]:
    return {im.tobytes() for p in model.points(kind) for im in model.space(p).images(distinct=True)}


@settings(max_examples=150)
@given(st.one_of(events(max_stores=9, lines=3, max_events=16),
                 events(max_stores=9, lines=3, min_events=6, max_events=14, clflush=True),
                 events(max_stores=9, lines=3, min_events=6, max_events=14, nt=True)),
       st.sampled_from(["line", "px86"]), st.sampled_from(["pdom0", "pdom1", "pdom2"]),
       st.sampled_from(backends()), st.booleans())
def test_reduced_points_cover_every_point(rows: list[tuple], order: str, domain: str, backend: str,
                                          edges: bool) -> None:
    model = CrashModel(make_trace(rows), order, domain, backend,
                       extra_edge_providers=[log_edges] if edges else [])
    assert _union(model, "reduced") == _union(model, "every")
    # without a domain the reduced points are what every domain needs
    each = {p.index for d in ("pdom0", "pdom1", "pdom2") for p in reduced_points(model.trace, d)}
    assert {p.index for p in reduced_points(model.trace)} == each


def test_reduced_points_depend_on_the_domain() -> None:
    rows = [(Ev.STORE, 0, 0, 1), (Ev.CLFLUSH, 0, 0, 0), (Ev.NTSTORE, 1, 64, 1), (Ev.STORE, 1, 128, 1),
            (Ev.NTSTORE, 0, 192, 1, 1), (Ev.SFENCE, 1, 0, 0)]
    tr = make_trace(rows)
    got = {d: [(p.index, p.reason) for p in reduced_points(tr, d)] for d in ("pdom0", "pdom1", "pdom2")}
    assert got["pdom0"] == [(5, "fence"), (6, "end")]
    assert got["pdom1"] == [(1, "clflush"), (4, "movnt"), (5, "fence"), (6, "end")]
    assert got["pdom2"] == [(2, "nt-window"), (3, "nt-window"), (4, "nt-window"), (5, "fence"), (6, "end")]
    assert [p.index for p in reduced_points(tr)] == [1, 2, 3, 4, 5, 6]
    with pytest.raises(UnknownNameError, match="pdom1"):
        reduced_points(tr, "adr")


@settings(max_examples=100)
@given(events(max_stores=9, lines=3, max_events=16), st.sampled_from(["pdom0", "pdom1", "pdom2"]))
def test_marker_counts_are_constant_inside_each_interval(rows: list[tuple], domain: str) -> None:
    tr = make_trace(rows)
    pts = reduced_points(tr)
    every = {p.index: p for p in every_points(tr)}
    assert pts[0].since == -1 and pts[-1].index == len(tr)
    for a, b in zip(pts, pts[1:], strict=False):
        assert b.since == a.index
    for p in pts:
        for k in range(p.since + 1, p.index + 1):
            q = every[k]
            counts = (q.begun, q.committed, q.durable, q.aborted)
            assert counts == (p.begun, p.committed, p.durable, p.aborted)


def test_points_carry_transaction_ids_and_reasons() -> None:
    rows = [(Ev.MARK, 0, 0, 7, Mark.TX_BEGIN), (Ev.STORE, 0, 0, 1), (Ev.SFENCE, 0, 0, 0),
            (Ev.MARK, 0, 0, 7, Mark.TX_COMMIT), (Ev.MARK, 1, 0, 7, Mark.TX_DURABLE),
            (Ev.MARK, 1, 0, 8, Mark.TX_BEGIN)]
    pts = reduced_points(make_trace(rows))
    assert [(p.index, p.since, p.reason) for p in pts] == [
        (0, -1, "pre-mark"), (1, 0, "mark"), (2, 1, "fence"), (3, 2, "pre-mark"),
        (4, 3, "mark+pre-mark"), (5, 4, "mark+pre-mark"), (6, 5, "mark+end")]
    end = pts[-1]
    assert (end.begun, end.committed, end.durable) == (2, 1, 1)
    assert end.begun_ids == (7, 8) and end.durable_ids == (7,) and end.committed_ids == (7,)
    assert end.marks.per_thread(Mark.TX_BEGIN, end.index) == {0: 1, 1: 1}


def test_sampled_and_select() -> None:
    tr = make_trace([(Ev.STORE, 0, 0, i) for i in range(20)])
    got = sampled_points(tr, 5, np.random.default_rng(3))
    assert len({p.index for p in got}) == 5
    assert all(0 <= p.index <= 20 and p.since == p.index - 1 for p in got)
    assert len(sampled_points(tr, 100, np.random.default_rng(3))) == 21
    assert len(select_points(tr, "every")) == 21
    with pytest.raises(ConfigError, match="need n"):
        select_points(tr, "sampled")
    with pytest.raises(UnknownNameError, match="reduced"):
        select_points(tr, "reduce")


def test_coverage_reports_points_and_states() -> None:
    rows = [(Ev.STORE, 0, 0, 1), (Ev.STORE, 0, 64, 1), (Ev.CLWB, 0, 0, 0), (Ev.SFENCE, 0, 0, 0),
            (Ev.STORE, 0, 128, 1)]
    model = CrashModel(make_trace(rows), "line", "pdom1", "python")
    red = model.coverage(model.points("reduced"), budget=3)
    every = model.coverage(model.points("every"))
    assert (red.points, red.states, red.max_states, red.over_budget) == (2, 4 + 4, 4, 2)
    assert every.points == 6 and every.states == 1 + 2 + 4 + 4 + 2 + 4  # the fence fixes line 0
