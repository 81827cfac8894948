"""State spaces: counting, enumeration, sampling, images and hashes; Python vs C."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crashfuzz.model import image_hash
from crashfuzz.states import CrashModel, StateSpace
from pmsim.cache import native
from pmsim.trace import Ev, Trace
from tests.crashfuzz.test_model import backends, events, log_edges, make_trace

ORDERS = st.sampled_from(["line", "px86"])
DOMAINS = st.sampled_from(["pdom0", "pdom1", "pdom2"])


def _spaces(rows: list[tuple], order: str, domain: str, backend: str, kind: str = "every",
            edges: bool = False) -> list[StateSpace]:
    """The spaces of every point of ``kind``; ``edges`` adds the test edge provider (ordered spaces)."""
    model = CrashModel(make_trace(rows), order, domain, backend,
                       extra_edge_providers=[log_edges] if edges else [])
    return [model.space(p) for p in model.points(kind)]


def make_trace_big(rows: list[tuple]) -> Trace:
    return Trace.build(rows, size=64 * 64)


def _chain_bytes(space: StateSpace, img: np.ndarray, c: int) -> bytes:
    ix = space.model.index
    unit = 64 if ix.order == "line" else 8
    a = int(ix.chain_key[c]) * unit
    return img[a:a + unit].tobytes()


RICH = st.one_of(events(max_stores=9, lines=3, min_events=5, max_events=14),
                 events(max_stores=9, lines=3, min_events=6, max_events=14, clflush=True),
                 events(max_stores=9, lines=3, min_events=6, max_events=14, nt=True))


@settings(max_examples=150)
@given(RICH, ORDERS, DOMAINS, st.sampled_from(backends()), st.booleans())
def test_enumeration_is_exact_and_images_respect_bounds(rows: list[tuple], order: str, domain: str,
                                                        backend: str, edges: bool) -> None:
    for space in _spaces(rows, order, domain, backend, "reduced", edges):
        states = list(space.exhaustive())
        assert len(states) == space.count == len(set(states))
        assert [space.unrank(r) for r in range(space.count)] == states
        assert all(space.contains(s) for s in states)
        imgs = [space.image(s) for s in states]
        hashes = space.hashes()
        assert [tuple(h) for h in hashes.tolist()] == [space.hash(s) for s in states]
        assert [image_hash(im) for im in imgs] == [space.hash(s) for s in states]
        ix = space.model.index
        for s, img in zip(states, imgs, strict=True):
            full = np.zeros(ix.nchains, np.int64)
            full[space.chains] = space.lo
            full[space.free] = s
            assert np.array_equal(img, ix.image_at(full))
            for c, lo, hi in zip(space.chains.tolist(), space.lo.tolist(), space.hi.tolist(), strict=True):
                allowed = set()
                for x in range(lo, hi + 1):
                    f2 = np.zeros(ix.nchains, np.int64)
                    f2[c] = x
                    allowed.add(_chain_bytes(space, ix.image_at(f2), c))
                assert _chain_bytes(space, img, c) in allowed
        distinct = {im.tobytes() for im in imgs}
        assert space.distinct_count() == len(distinct)
        streamed = [(h, im.tobytes()) for h, im in space.hashed_images(distinct=True)]
        assert {b for _, b in streamed} == distinct and len(streamed) == len(distinct)
        assert all(image_hash(np.frombuffer(b, np.uint8)) == h for h, b in streamed)
        assert [im.tobytes() for im in space.images()] == [im.tobytes() for im in imgs]
        lower, upper = space.lower_image().tobytes(), space.upper_image().tobytes()
        assert lower in {im.tobytes() for im in imgs[:1]} and upper in distinct


@settings(max_examples=80)
@given(RICH, ORDERS, DOMAINS, st.integers(0, 2**32 - 1), st.booleans())
def test_samples_are_distinct_members(rows: list[tuple], order: str, domain: str, seed: int,
                                      edges: bool) -> None:
    rng = np.random.default_rng(seed)
    for space in _spaces(rows, order, domain, "python", "reduced", edges):
        n = max(1, space.count // 2)
        got = space.sample(n, rng)
        assert len(got) == len(set(got)) == min(n, space.count)
        assert all(space.contains(s) for s in got)
        assert sorted(space.sample(space.count + 3, rng)) == sorted(space.exhaustive())


@pytest.mark.ccore
@settings(max_examples=150)
@given(st.one_of(events(max_events=20, max_stores=14, lines=3, min_events=5),
                 events(max_events=20, max_stores=14, lines=3, min_events=8, clflush=True),
                 events(max_events=20, max_stores=14, lines=3, min_events=8, nt=True)),
       ORDERS, DOMAINS, st.booleans())
def test_c_and_python_kernels_agree(rows: list[tuple], order: str, domain: str, edges: bool) -> None:
    if not native.available():
        pytest.skip("C core not built")
    py = _spaces(rows, order, domain, "python", "reduced", edges)
    c = _spaces(rows, order, domain, "c", "reduced", edges)
    for sp, sc in zip(py, c, strict=True):
        assert sp.count == sc.count and sp.kind == sc.kind
        n = min(sp.count, 300)
        assert np.array_equal(sp.hashes(0, n), sc.hashes(0, n))
        start = sp.count // 3
        assert np.array_equal(sp.hashes(start, 50), sc.hashes(start, 50))
        for (hp, ip), (hc, ic) in itertools.islice(zip(sp.hashed_images(), sc.hashed_images(),
                                                       strict=True), 100):
            assert hp == hc and np.array_equal(ip, ic)


def test_product_count_is_exact_without_enumerating() -> None:
    rows = [(Ev.STORE, 0, line * 64 + (i % 8) * 8, i + 1) for line in range(40) for i in range(5)]
    model = CrashModel(make_trace_big(rows), "line", "pdom1", "python")
    space = model.space(len(rows))
    assert space.kind == "product" and space.count == 6 ** 40
    assert space.distinct_count() == 6 ** 40
    s = space.sample(3, np.random.default_rng(1))
    assert len(set(s)) == 3 and all(space.contains(x) for x in s)
    assert space.unrank(space.count - 1) == (5,) * 40


def test_repeated_values_are_deduplicated() -> None:
    rows = [(Ev.STORE, 0, 0, 1), (Ev.STORE, 0, 0, 0), (Ev.STORE, 0, 0, 1), (Ev.STORE, 0, 64, 2)]
    space = CrashModel(make_trace(rows), "line", "pdom1", "python").space(4)
    assert space.count == 8
    assert space.distinct_count() == 4
    assert len(list(space.hashed_images(distinct=True))) == 4
    assert len(list(space.hashed_images(distinct=False))) == 8


def test_pdom2_interval_gives_prefixes_of_the_store_order() -> None:
    rows = [(Ev.STORE, 0, 0, 1), (Ev.STORE, 1, 64, 1), (Ev.STORE, 0, 0, 2), (Ev.SFENCE, 0, 0, 0)]
    model = CrashModel(make_trace(rows), "line", "pdom2", "python")
    whole = model.space(model.point(4, since=-1))
    assert whole.kind == "prefix" and whole.count == 4
    words = {tuple(im.view(np.uint64)[[0, 8]].tolist()) for im in whole.images()}
    assert words == {(0, 0), (1, 0), (1, 1), (2, 1)}
    assert model.space(2).count == 1


def test_ordered_space_counts_a_star_of_edges() -> None:
    # one log line ordered before 6 later lines: 1 + 2**6 states over (x, y1..y6)
    rows = [(Ev.STORE, 0, 0, 1)] + [(Ev.STORE, 0, 64 * i, 1) for i in range(1, 7)]
    space = CrashModel(make_trace_big(rows), "line", "pdom1", "python",
                       extra_edge_providers=[log_edges]).space(len(rows))
    assert space.kind == "ordered" and space.count == 1 + 2 ** 6 == len(list(space.exhaustive()))


def test_pdom2_nt_window_spaces_are_boxes() -> None:
    # x (movnt) may be missing until the fence; y1..y3 persist in order: 2 states per point
    rows = ([(Ev.NTSTORE, 0, 0, 1)] + [(Ev.STORE, 0, 64 * i, 1) for i in range(1, 4)]
            + [(Ev.SFENCE, 0, 0, 0)])
    model = CrashModel(make_trace(rows), "line", "pdom2", "python")
    pts = model.points()
    assert [(p.index, p.reason) for p in pts] == [
        (0, "nt-window"), (1, "nt-window"), (2, "nt-window"), (3, "nt-window"), (4, "fence"), (5, "end")]
    assert [model.space(p).count for p in pts] == [1, 2, 2, 2, 2, 1]
    assert model.coverage(model.points("every")).states == 1 + 2 * 4 + 1
