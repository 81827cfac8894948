"""The crash-state semantics against a brute-force oracle written from the definitions."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crashfuzz.model import Edge, TraceIndex, image_hash, sweep_python, word_terms
from crashfuzz.states import CrashModel
from pmsim.cache import native
from pmsim.errors import ConfigError, TraceError
from pmsim.trace import Ev, Mark, Trace

SIZE = 256
STORES = (Ev.STORE, Ev.NTSTORE)


@st.composite
def events(draw: st.DrawFn, max_events: int = 12, max_stores: int = 8, lines: int = 2,
           wb: bool = False, min_events: int = 0, clflush: bool = False, nt: bool = False
           ) -> list[tuple]:
    """Random two-thread event rows ``(kind, tid, addr, value, aux)``.

    ``clflush`` biases towards CLFLUSH and away from fences; ``nt`` towards non-temporal stores
    (long NT windows in PDOM-2).
    """
    if clflush:
        kinds = [Ev.STORE] * 5 + [Ev.CLFLUSH] * 3 + [Ev.CLWB, Ev.SFENCE, Ev.MARK]
    elif nt:
        kinds = [Ev.STORE] * 4 + [Ev.NTSTORE] * 4 + [Ev.CLFLUSH, Ev.RMW, Ev.SFENCE, Ev.MARK]
    else:
        kinds = ([Ev.STORE] * 5 + [Ev.CLFLUSH, Ev.CLFLUSHOPT, Ev.CLWB, Ev.PCOMMIT] * 2
                 + [Ev.NTSTORE, Ev.RMW, Ev.SFENCE, Ev.MFENCE, Ev.MARK] + ([Ev.WB] * 2 if wb else []))
    rows: list[tuple] = []
    stores = 0
    for _ in range(draw(st.integers(min_events, max_events))):
        k = draw(st.sampled_from(kinds))
        t = draw(st.integers(0, 1))
        line = draw(st.integers(0, lines - 1))
        atom = draw(st.integers(0, 1))
        v = draw(st.integers(1, 3))
        if k in STORES or (k == Ev.RMW):
            stored = 1 if k != Ev.RMW else draw(st.integers(0, 1))
            if stored and stores >= max_stores:
                k, stored = Ev.SFENCE, 0
            stores += stored
            # RMW: whether it stored; NTSTORE: issued (0), drained (1) or persisted (2)
            aux = stored if k == Ev.RMW else draw(st.integers(0, 2)) if k == Ev.NTSTORE else 0
            rows.append((k, t, line * 64 + atom * 8, v, aux))
        elif k in (Ev.CLFLUSH, Ev.CLFLUSHOPT, Ev.CLWB):
            rows.append((k, t, line * 64, 0, 0))
        elif k == Ev.WB:
            rows.append((k, t, line * 64, draw(st.integers(0, 20_000)), 0))
        elif k == Ev.MARK:
            rows.append((k, t, 0, draw(st.integers(1, 3)), draw(st.sampled_from(list(Mark)[:4]))))
        else:
            rows.append((k, t, 0, 0, 0))
    return rows


def make_trace(rows: list[tuple]) -> Trace:
    return Trace.build(rows, size=SIZE)


def backends() -> list[str]:
    return ["python", "c"] if native.available() else ["python"]


# -- the oracle ------------------------------------------------------------------------------------
def _is_store(r: tuple) -> bool:
    return r[0] in STORES or (r[0] == Ev.RMW and r[4] == 1)


def brute_images(rows: list[tuple], k: int, order: str, domain: str,
                 before: Sequence[tuple[int, int]] = ()) -> set[bytes]:
    """Surviving images at point k, from the definitions: down-closed D with G <= D <= V.

    ``before``: extra ``(a, b)`` event pairs, store a persists before store b (every domain).
    """
    fences = {i for i, r in enumerate(rows) if r[0] in (Ev.SFENCE, Ev.MFENCE, Ev.RMW)}
    V = [i for i in range(k) if _is_store(rows[i])]

    def chain(i: int) -> int:
        return rows[i][2] // (64 if order == "line" else 8)

    def line(i: int) -> int:
        return rows[i][2] // 64

    def issued_nt(i: int) -> bool:
        return rows[i][0] == Ev.NTSTORE and rows[i][4] == 0

    def persisted_nt(i: int) -> bool:
        return rows[i][0] == Ev.NTSTORE and rows[i][4] == 2

    def fenced(t: int, a: int) -> int | None:
        """Position of thread t's first fence after a, if before k."""
        for g in range(a + 1, k):
            if g in fences and rows[g][1] == t:
                return g
        return None

    def covered(s: int) -> int | None:
        """Earliest event whose completion covers store s (persistent in PDOM-1, accepted in
        PDOM-0): s itself when drained, a CLFLUSH, else the fence after a flush or issued NT."""
        times = []
        if rows[s][0] == Ev.NTSTORE:
            times.append(fenced(rows[s][1], s) if issued_nt(s) else s)
        for f in range(s + 1, k):
            r = rows[f]
            if r[0] in (Ev.CLFLUSH, Ev.CLFLUSHOPT, Ev.CLWB) and r[2] == line(s) * 64:
                times.append(f if r[0] == Ev.CLFLUSH else fenced(r[1], f))
        return min((x for x in times if x is not None), default=None)

    if domain == "pdom2":
        G = {s for s in V if not issued_nt(s) or fenced(rows[s][1], s) is not None}
    elif domain == "pdom1":
        G = {s for s in V if covered(s) is not None}
    else:
        G = set()
        for s in V:
            acc = covered(s)
            if acc is None:
                continue
            for p in range(acc + 1, k):
                if rows[p][0] == Ev.PCOMMIT and fenced(rows[p][1], p) is not None:
                    G.add(s)
                    break
    G |= {s for s in V if persisted_nt(s)}  # acknowledged by the media: durable everywhere
    order_pairs = [(a, b) for a, b in itertools.combinations(V, 2) if chain(a) == chain(b)]
    order_pairs += [(a, b) for a, b in before if b < k]
    out = set()
    for bits in range(1 << len(V)):
        D = {s for n, s in enumerate(V) if bits >> n & 1}
        if not G <= D or any(b in D and a not in D for a, b in order_pairs):
            continue
        img = np.zeros(SIZE, np.uint8)
        words = img.view(np.uint64)
        for s in sorted(D):
            words[rows[s][2] // 8] = rows[s][3]
        out.add(img.tobytes())
    return out


def log_pairs(rows: list[tuple]) -> list[tuple[int, int]]:
    """Event pairs of the test ordering: a store to line 0 (a "log") persists before every later
    store of its thread to another line."""
    stores = [i for i, r in enumerate(rows) if _is_store(r)]
    return [(a, b) for a, b in itertools.combinations(stores, 2)
            if rows[a][1] == rows[b][1] and rows[a][2] // 64 == 0 and rows[b][2] // 64 != 0]


def log_edges(ix: TraceIndex, domain: str) -> list[Edge]:
    """A test-defined edge provider: :func:`log_pairs` as persist-order edges."""
    rows = [tuple(int(ix.trace.events[f][i]) for f in ("kind", "tid", "addr", "value", "aux"))
            for i in range(ix.n)]
    pos = {int(e): int(p) + 1 for e, p in zip(ix.st_event.tolist(), ix.st_pos.tolist(), strict=True)}
    return [Edge(int(ix.chain[a]), pos[a], int(ix.chain[b]), pos[b]) for a, b in log_pairs(rows)]


@settings(max_examples=300)
@given(st.one_of(events(), events(min_events=6, clflush=True), events(min_events=4, nt=True)),
       st.sampled_from(["line", "px86"]), st.sampled_from(["pdom0", "pdom1", "pdom2"]),
       st.sampled_from(backends()), st.booleans())
def test_states_match_the_definitions(rows: list[tuple], order: str, domain: str, backend: str,
                                      with_edges: bool) -> None:
    extra = [log_edges] if with_edges else []
    model = CrashModel(make_trace(rows), order, domain, backend, extra_edge_providers=extra)
    before = log_pairs(rows) if with_edges else []
    for k in range(len(rows) + 1):
        got = {img.tobytes() for img in model.space(k).images()}
        assert got == brute_images(rows, k, order, domain, before), f"point {k}"


@pytest.mark.ccore
@settings(max_examples=200)
@given(st.one_of(events(max_events=40, max_stores=30, lines=4),
                 events(max_events=40, max_stores=30, lines=4, nt=True)),
       st.sampled_from(["line", "px86"]), st.sampled_from(["pdom0", "pdom1", "pdom2"]))
def test_sweep_c_equals_python(rows: list[tuple], order: str, domain: str) -> None:
    if not native.available():
        pytest.skip("C core not built")
    from crashfuzz._ccrash import sweep_c
    from crashfuzz.model import LowerBounds

    ix = TraceIndex(make_trace(rows), order)
    py = LowerBounds(ix, sweep_python(ix, domain))
    c = LowerBounds(ix, sweep_c(ix, domain))
    for k in range(len(rows) + 1):
        assert np.array_equal(py.at(k), c.at(k))


@pytest.mark.ccore
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=64))
def test_image_hash_c_numpy_and_scalar_agree(words: list[int]) -> None:
    img = np.array(words, np.uint64).view(np.uint8)
    scalar = [0, 0]
    for i, w in enumerate(words):
        a, b = word_terms(i, w)
        scalar = [(scalar[0] + a) % 2**64, (scalar[1] + b) % 2**64]
    assert image_hash(img) == tuple(scalar)
    if native.available():
        from crashfuzz._ccrash import hash_words_c

        assert hash_words_c(img.view(np.uint64)) == tuple(scalar)


def test_flush_by_other_thread_covers_and_its_fence_guarantees() -> None:
    tr = make_trace([(Ev.STORE, 0, 0, 1), (Ev.CLWB, 1, 0, 0), (Ev.STORE, 0, 0, 2), (Ev.SFENCE, 0, 0, 0),
                     (Ev.SFENCE, 1, 0, 0)])
    m = CrashModel(tr, "line", "pdom1", "python")
    assert m.bounds(4)[0].tolist() == [0]  # T0's fence does not complete T1's flush
    assert m.bounds(5)[0].tolist() == [1]  # T1's does; the younger store stays unguaranteed


def test_pdom0_needs_pcommit_after_acceptance() -> None:
    rows = [(Ev.STORE, 0, 0, 1), (Ev.CLWB, 0, 0, 0), (Ev.SFENCE, 0, 0, 0), (Ev.PCOMMIT, 1, 0, 0),
            (Ev.MFENCE, 1, 0, 0)]
    m = CrashModel(make_trace(rows), "line", "pdom0", "python")
    assert [int(m.bounds(k)[0][0]) for k in range(6)] == [0, 0, 0, 0, 0, 1]


def test_rmw_is_a_fence_and_a_store() -> None:
    rows = [(Ev.STORE, 0, 0, 1), (Ev.CLFLUSHOPT, 0, 0, 0), (Ev.RMW, 0, 64, 7, 1)]
    m = CrashModel(make_trace(rows), "line", "pdom1", "python")
    lo, hi = m.bounds(3)
    assert lo.tolist() == [1, 0] and hi.tolist() == [1, 1]


def test_clflush_is_durable_where_it_takes_effect() -> None:
    rows = [(Ev.STORE, 1, 0, 1), (Ev.STORE, 0, 0, 2), (Ev.CLFLUSH, 0, 0, 0), (Ev.STORE, 0, 64, 1),
            (Ev.STORE, 0, 0, 3)]
    m = CrashModel(make_trace(rows), "line", "pdom1", "python")
    assert m.edges.shape == (0, 6)  # no ordering edges: the rule is a lower bound
    assert [int(m.bounds(k)[0][0]) for k in range(6)] == [0, 0, 0, 2, 2, 2]
    assert m.space(4).kind == "product" and m.space(4).count == 2  # y free, x fixed at 2
    assert m.space(5).count == 2 * 2  # the younger x:=3 is not covered
    m0 = CrashModel(make_trace(rows[:3] + [(Ev.PCOMMIT, 0, 0, 0), (Ev.SFENCE, 0, 0, 0)]), "line",
                    "pdom0", "python")
    assert [int(m0.bounds(k)[0][0]) for k in range(6)] == [0, 0, 0, 0, 0, 2]


def test_pdom2_non_temporal_store_is_optional_until_its_fence() -> None:
    rows = [(Ev.NTSTORE, 0, 0, 1), (Ev.STORE, 0, 64, 1), (Ev.STORE, 1, 128, 1), (Ev.SFENCE, 0, 0, 0),
            (Ev.STORE, 0, 64, 2)]
    m = CrashModel(make_trace(rows), "line", "pdom2", "python")
    words = lambda sp: {tuple(im.view(np.uint64)[[0, 8, 16]].tolist()) for im in sp.images()}  # noqa: E731
    assert words(m.space(2)) == {(0, 1, 0), (1, 1, 0)}
    assert words(m.space(3)) == {(0, 1, 1), (1, 1, 1)}  # just before the fence
    assert words(m.space(4)) == {(1, 1, 1)}
    assert words(m.space(5)) == {(1, 2, 1)}
    # the chain rule: a later store of x's chain forces it; a drained NT store is not optional
    same = [(Ev.NTSTORE, 0, 0, 1), (Ev.STORE, 1, 8, 2)]
    assert CrashModel(make_trace(same), "line", "pdom2", "python").space(2).count == 1
    assert CrashModel(make_trace(same), "px86", "pdom2", "python").space(2).count == 2
    drained = [(Ev.NTSTORE, 0, 0, 1, 1), (Ev.STORE, 0, 64, 1)]
    m2 = CrashModel(make_trace(drained), "line", "pdom2", "python")
    assert m2.lower is None and m2.space(2).count == 1  # the fast path: prefixes only


def test_pdom2_intervals_inside_an_nt_window_are_refused() -> None:
    rows = [(Ev.STORE, 0, 192, 1), (Ev.NTSTORE, 0, 0, 1), (Ev.STORE, 0, 64, 1), (Ev.CLWB, 0, 64, 0),
            (Ev.STORE, 0, 128, 1), (Ev.SFENCE, 0, 0, 0)]
    m = CrashModel(make_trace(rows), "line", "pdom2", "python")
    with pytest.raises(ConfigError, match="non-temporal store may still be unpersisted"):
        m.space(m.point(5, since=2))
    assert m.space(m.point(4, since=2)).count == 2  # no store strictly inside: one box
    assert m.space(m.point(1, since=-1)).kind == "prefix"  # before the window opens
    assert [p.index for p in m.points()] == [1, 2, 4, 5, 6]


def test_edge_provider_orders_until_the_bounds_imply_it() -> None:
    rows = [(Ev.STORE, 0, 0, 1), (Ev.CLWB, 0, 0, 0), (Ev.STORE, 0, 64, 1), (Ev.SFENCE, 0, 0, 0),
            (Ev.STORE, 0, 128, 1)]

    def first_before_second(ix: TraceIndex, domain: str) -> list[Edge]:
        return [Edge(0, 1, 1, 1, until=4)]  # from point 4 the fence guarantees line 0 anyway

    m = CrashModel(make_trace(rows), "line", "pdom1", "python", edge_providers=[first_before_second])
    assert m.edges[:, :4].tolist() == [[0, 1, 1, 1]]
    assert m.space(3).kind == "ordered" and m.space(3).count == 3
    assert m.space(5).kind == "product" and m.space(5).count == 4


def test_extra_edge_provider_is_consulted_and_validated() -> None:
    rows = [(Ev.STORE, 0, 0, 1), (Ev.STORE, 0, 64, 1)]
    tr = make_trace(rows)

    def log_first(ix: TraceIndex, domain: str) -> list[Edge]:
        return [Edge(0, 1, 1, 1)]  # line 0's store persists before line 1's

    m = CrashModel(tr, "line", "pdom1", "python", extra_edge_providers=[log_first])
    assert m.space(2).count == 3
    with pytest.raises(TraceError, match="earlier"):
        CrashModel(tr, "line", "pdom1", "python", extra_edge_providers=[lambda ix, d: [Edge(1, 1, 0, 1)]])
    with pytest.raises(TraceError, match="does not exist"):
        CrashModel(tr, "line", "pdom1", "python", extra_edge_providers=[lambda ix, d: [Edge(0, 2, 1, 1)]])


def test_bad_inputs_have_actionable_errors() -> None:
    tr = make_trace([(Ev.STORE, 0, 0, 1)])
    with pytest.raises(ConfigError, match="px86"):
        CrashModel(tr, "lines")
    with pytest.raises(ConfigError, match="pdom1"):
        CrashModel(tr, "line", "adr")
    with pytest.raises(TraceError, match="outside the PM region"):
        CrashModel(make_trace([(Ev.STORE, 0, 4, 1)]))
    rows = [(Ev.STORE, 0, 0, 1), (Ev.CLWB, 0, 0, 0), (Ev.SFENCE, 0, 0, 0), (Ev.STORE, 0, 0, 2)]
    m = CrashModel(make_trace(rows), "line", "pdom1", "python")
    with pytest.raises(ConfigError, match="split the interval"):
        m.space(m.point(4, since=0))


# -- the actual image --------------------------------------------------------------------------------
def test_actual_image_follows_write_backs() -> None:
    rows = [(Ev.STORE, 0, 0, 1), (Ev.STORE, 0, 64, 2), (Ev.WB, 0, 0, 5_000), (Ev.STORE, 0, 0, 3),
            (Ev.NTSTORE, 0, 72, 4)]
    tr = make_trace(rows)
    words = lambda im: im.view(np.uint64)[[0, 8, 9]].tolist()  # noqa: E731
    m1 = CrashModel(tr, "line", "pdom1", "python")
    assert words(m1.actual_image(2)) == [0, 0, 0]
    assert words(m1.actual_image(4)) == [1, 0, 0]
    assert words(m1.actual_image(5)) == [1, 2, 4]  # movnt writes its whole line back
    m0 = CrashModel(tr, "line", "pdom0", "python")
    assert words(m0.actual_image(4)) == [0, 0, 0]  # WB completes at 5 ns; event 3 is at 3 ns
    m2 = CrashModel(tr, "line", "pdom2", "python")
    assert words(m2.actual_image(4)) == [3, 2, 0]


@settings(max_examples=40)
@given(st.lists(st.tuples(st.sampled_from(["store", "clwb", "clflush", "sfence", "nt"]),
                          st.integers(0, 1), st.integers(0, 3), st.integers(1, 5)), max_size=14))
def test_actual_image_of_a_machine_run_is_a_model_state(prog: list[tuple]) -> None:
    from pmsim.config import CacheConfig, CacheLevel, MachineConfig, Region
    from pmsim.machine import Machine

    tiny = CacheLevel(1, 1, 1.0)  # 16 direct-mapped sets: the lines below conflict and evict
    cfg = MachineConfig(cache=CacheConfig(tiny, tiny, tiny),
                        regions=(Region("pm", 0, 4096, "pm"), Region("dram", 1 << 20, 4096, "dram")))
    m = Machine(cfg, backend="python")
    base = m.pm.base
    for op, t, line, v in prog:
        cpu = m.cpu(t)
        a = base + line * 1024 + (v % 2) * 8
        if op == "store":
            cpu.store(a, v)
        elif op == "nt":
            cpu.ntstore(a, v)
        elif op == "sfence":
            cpu.sfence()
        else:
            getattr(cpu, op)(a)
    tr = m.trace()
    model = CrashModel(tr, "line", "pdom1", "python")
    for k in range(len(tr) + 1):
        space = model.space(k)
        assert image_hash(model.actual_image(k)) in {h for h, _ in space.hashed_images()}
