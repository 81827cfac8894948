"""The persistency litmus suite (litmus.md) on both backends, plus the litmus format itself."""

from __future__ import annotations

import pytest

from crashfuzz.litmus import check, executions, litmus_suite, order_edges, parse_litmus, run_litmus
from crashfuzz.model import Edge, TraceIndex
from pmsim.errors import ConfigError
from pmsim.trace import Ev, Trace

A4 = {(0, 0), (1, 0), (0, 1), (1, 1)}
A3 = {(0, 0), (1, 0), (1, 1)}

# The exact sets of litmus.md, row by row: (modes, domains, images). Kept here as well as in the
# .litmus files so that an edit of a data file cannot silently change the conformance suite.
LITMUS_MD = {
    "L1": (("line", "px86"), ("pdom1",), A4),
    "L1e": (("line", "px86"), ("pdom2",), A3),
    "L2": (("line",), ("pdom1",), {(0,), (1,), (2,)}),
    "L3": (("line",), ("pdom1",), A3),
    "L4": (("line",), ("pdom1",), A4),
    "L5": (("line",), ("pdom1",), A3),
    "L6": (("line",), ("pdom1",), A3),
    "L7": (("line",), ("pdom1",), A3),
    "L7x": (("line",), ("pdom1",), A3),
    "L8": (("line",), ("pdom1",), A4),
    "L9": (("line",), ("pdom1",), A3),
    "L9p": (("px86",), ("pdom1",), A4),
    "L10": (("line",), ("pdom1",), {(0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 1, 1)}),
    "L10p": (("px86",), ("pdom1",), {(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0), (1, 1, 1)}),
    "L11": (("line",), ("pdom1",), {(1,), (2,)}),
    "L12": (("line",), ("pdom1",), A3),
    "L13": (("line",), ("pdom1",), A4),
    "L14": (("line",), ("pdom1",), {(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0), (1, 0, 1), (1, 1, 1)}),
    "L15": (("line",), ("pdom0",), A4),
    "L16": (("line",), ("pdom0",), A3),
    "L17": (("line",), ("pdom1",), A3),
    "L18": (("line",), ("pdom1",), A4),
}

A5 = {(0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 1, 1)}
BOTH = ("line", "px86")

# The LOC hardware-ordering rows (docs/litmus-loc.md): (modes, domains, order pairs, images).
LOC_ROWS = {
    "LOC1": (BOTH, ("pdom1",), (("d", "m"),), A3),
    "LOC1z": (BOTH, ("pdom0",), (("d", "m"),), A3),
    "LOC1e": (BOTH, ("pdom2",), (("d", "m"),), A3),
    "LOC1n": (BOTH, ("pdom1",), (), A4),
    "LOC2": (("px86",), ("pdom1",), (("d0", "m"), ("d1", "m")),
             {(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0), (1, 1, 1)}),
    "LOC2l": (("line",), ("pdom1",), (("d0", "m"), ("d1", "m")), A5),
    "LOC2h": (("line",), ("pdom1",), (("d1", "m"),), A5),
    "LOC2hp": (("px86",), ("pdom1",), (("d1", "m"),),
               {(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0), (0, 1, 1), (1, 1, 1)}),
    "LOC3": (BOTH, ("pdom1", "pdom2"), (("d", "m"),), A5),
    "LOC3z": (BOTH, ("pdom0",), (("d", "m"),), A5),
    "LOC3n": (BOTH, ("pdom1",), (("d", "m"),),
              {(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1)}),
}

A16 = {(a, b, c, d) for a in (0, 3) for b in (0, 4) for c in (0, 1) for d in (0, 2)}
A14 = A16 - {(0, 4, 0, 2), (0, 4, 1, 2)}
A12 = {im for im in A16 if im[3] == 0 or im[2] == 1}

# The rows of a clflushopt / clwb leaving the store buffer ahead of older entries to other lines
# (Intel SDM vol. 3 8.2.2), over (a,b,c,d) (F2l, F2lp: (a,b,e,d), e in a's line):
# (modes, domains, images). F1* gain images with it; the F2* controls must not.
FLUSH_ROWS = {
    "F1": (BOTH, ("pdom1",), A16),
    "F1w": (BOTH, ("pdom1",), A16),
    "F1l": (BOTH, ("pdom1",), A16),
    "F1p": (BOTH, ("pdom0",), A16),
    "F1c": (BOTH, ("pdom1",), A12),
    "F1o": (BOTH, ("pdom1",), A12),
    "F2s": (BOTH, ("pdom1",), A14),
    "F2m": (BOTH, ("pdom1",), A14),
    "F2x": (BOTH, ("pdom1",), A14),
    "F2p": (BOTH, ("pdom0",), A14),
    "F2l": (("line",), ("pdom1",), {
        (0, 0, 0, 0), (0, 0, 1, 0), (3, 0, 0, 0), (3, 0, 1, 0), (0, 4, 0, 0), (3, 4, 0, 0),
        (3, 4, 1, 0), (0, 0, 1, 2), (3, 0, 1, 2), (3, 4, 1, 2)}),
    "F2lp": (("px86",), ("pdom1",), {(a, b, e, 0) for a in (0, 3) for b in (0, 4) for e in (0, 1)}
             | {(0, 0, 1, 2), (3, 0, 1, 2), (3, 4, 1, 2)}),
}

SUITE = {t.name: t for t in litmus_suite()}


def test_every_litmus_md_row_has_a_data_file() -> None:
    assert set(LITMUS_MD) <= set(SUITE)
    for name, (modes, domains, images) in LITMUS_MD.items():
        t = SUITE[name]
        assert (t.modes, t.domains, set(t.expect)) == (modes, domains, images), name


def test_every_loc_row_has_a_data_file() -> None:
    assert {n for n in SUITE if n.startswith("LOC")} == set(LOC_ROWS)
    for name, (modes, domains, order, images) in LOC_ROWS.items():
        t = SUITE[name]
        assert (t.modes, t.domains, t.order, set(t.expect)) == (modes, domains, order, images), name


def test_every_flush_ordering_row_has_a_data_file() -> None:
    assert {n for n in SUITE if n.startswith("F")} == set(FLUSH_ROWS)
    for name, (modes, domains, images) in FLUSH_ROWS.items():
        t = SUITE[name]
        assert (t.modes, t.domains, set(t.expect)) == (modes, domains, images), name


@pytest.mark.parametrize("program, orders", [
    ("c:=1; clflushopt a", 2),            # the flush may pass the older store to another line
    ("c:=1; clwb a", 2),
    ("c:=1; d:=1; clwb a", 3),            # ... and several of them
    ("clflush c; clwb a", 2),             # ... and a clflush or clflushopt of another line
    ("clflushopt c; clflushopt a", 2),
    ("c:=1; clflushopt a; d:=1", 2),      # a younger store does not pass it
    ("c:=1; clflush a", 1),               # clflush is ordered with every older write
    ("c:=1; sfence; clwb a", 1),          # nor does it pass an sfence or a pcommit
    ("c:=1; pcommit; clwb a", 1),
    ("e:=1; clflushopt a", 1),            # nor a store or flush of its own line (e is in a's)
    ("clwb e; clflushopt a", 1),
])
def test_clflushopt_and_clwb_leave_ahead_of_older_entries_to_other_lines(program: str,
                                                                          orders: int) -> None:
    test = parse_litmus(f"lines a=0 e=8\nT0: {program}\nobserve a\nexpect 0")
    traces = executions(test)
    assert len(traces) == orders
    assert all(len(tr) == len(program.split(";")) for tr in traces)  # one event each


@pytest.mark.parametrize("name", sorted(SUITE))
@pytest.mark.parametrize("points", ["reduced", "every"])
def test_litmus(name: str, points: str, backend: str) -> None:
    res = check(SUITE[name], backend, points)
    for got in res.images.values():
        assert set(got) == set(SUITE[name].expect)


@pytest.mark.parametrize("name", sorted(SUITE))
def test_litmus_with_machine_like_nt_events(name: str, backend: str) -> None:
    # issued NTSTORE events leave the write-combining buffer to the crash model (no row reads
    # another thread's non-temporal store, where this mode over-approximates)
    check(SUITE[name], backend, "reduced", nt="issue")


def test_sfence_lets_later_loads_pass() -> None:
    def both_read_zero(name: str) -> bool:  # both threads then store (a and b): 4 stores
        return any(sum(r[0] == Ev.STORE for r in tr) == 4 for tr in executions(SUITE[name]))

    assert both_read_zero("X3a") and not both_read_zero("X3b")
    assert (1, 1) in run_litmus(SUITE["X3a"]).images[("line", "pdom2")]


def test_non_temporal_stores_drain_from_a_write_combining_buffer() -> None:
    rows = executions(parse_litmus("T0: movnt x:=1; y:=1\nexpect (0,0)"))
    assert sorted([(r[0], r[4]) for r in tr] for tr in rows) == [
        [(Ev.STORE, 0), (Ev.NTSTORE, 1)], [(Ev.NTSTORE, 1), (Ev.STORE, 0)]]
    issued = executions(parse_litmus("T0: movnt x:=1; y:=1\nexpect (0,0)"), nt="issue")
    assert [[(r[0], r[4]) for r in tr] for tr in issued] == [[(Ev.NTSTORE, 0), (Ev.STORE, 0)]]
    with pytest.raises(ConfigError, match="'drain'"):
        executions(SUITE["L1"], nt="late")


def test_a_wrong_expectation_is_reported_readably() -> None:
    text = SUITE["L3"].source.replace("expect (0,0) (1,0) (1,1)", "expect (0,0) (1,0) (0,1) (1,1)")
    with pytest.raises(AssertionError) as err:
        check(parse_litmus(text, "L3-wrong"))
    msg = str(err.value)
    assert "L3 [line, pdom1] over (x, y)" in msg and "missing (0,1)" in msg and "unexpected none" in msg


def test_forbid_is_checked() -> None:
    text = "T0: x:=1; y:=1\nobserve x y\nexpect (0,0) (1,0) (0,1) (1,1)\nforbid (0,1)"
    with pytest.raises(AssertionError, match="forbidden but present \\(0,1\\)"):
        check(text)


def test_user_tests_from_strings_registers_and_conditionals() -> None:
    text = """
    name mine
    domain pdom2              # at the end everything visible survives: the final memory
    regs a
    T0: x:=5; a:=xchg y,2; z:=a
    T1: r1:=y; if r1!=2 { w:=3 }
    crash end
    observe x y z w
    expect (5,2,0,0) (5,2,0,3)
    """
    res = check(text)
    assert res.traces >= 2
    assert run_litmus(text).images[("line", "pdom2")] == {(5, 2, 0, 0), (5, 2, 0, 3)}


def test_store_buffer_forwarding_and_tso_loads() -> None:
    # SB: both threads may read 0 under TSO; each reads its own buffered store
    text = """
    domain pdom2
    T0: x:=1; r:=x; a:=r; r1:=y; b:=r1
    T1: y:=1; r:=y; c:=r; r1:=x; d:=r1
    crash end
    observe a b c d
    expect (1,0,1,0) (1,0,1,1) (1,1,1,0) (1,1,1,1)
    """
    check(text)


def test_executions_are_deduplicated_traces() -> None:
    assert len(executions(SUITE["L1"])) == 1
    assert len(executions(SUITE["L12"])) == 2


@pytest.mark.parametrize("text, match", [
    ("T0: x:=1\nobserve x\nexpect 1\nmode tso", "unknown mode 'tso'"),
    ("T0: x:=1\nexpect (1,0)", "has 2 values but 1 locations"),
    ("T0: x:=1", "no `expect` line"),
    ("T0: x:=y\nexpect 0", "is a location; a stored value must be"),
    ("T0: clwb r\nexpect 0", "is a register"),
    ("T0: x:=1 @\nexpect 0", "cannot read"),
    ("T1: x:=1\nexpect 0", "numbered T0, T1"),
    ("T0: x:=1\nlines x=3\nexpect 0", "8-byte aligned"),
    ("T0: if r { x:=1 }\nexpect 0", "a condition is"),
    ("T0: x:=1\nfoo bar\nexpect 0", "unknown line 'foo'"),
    ("T0: x:=1; y:=1\norder x -> q\nexpect (0,0)", "unknown location 'q' in `order x -> q`"),
    ("T0: x:=1; y:=1\norder x -> x\nexpect (0,0)", "orders a location after itself"),
    ("T0: x:=1; y:=1\norder r -> y\nexpect (0,0)", "'r' in `order r -> y` is a register"),
    ("T0: x:=1; y:=1\norder x => y\nexpect (0,0)", "cannot read the order pair 'x => y'"),
    ("T0: x:=1; y:=1\norder x -> y,\nexpect (0,0)", "separated by commas"),
    ("T0: x:=1; y:=1\norder\nexpect (0,0)", "separated by commas"),
])
def test_parse_errors_say_what_to_fix(text: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_litmus(text)


def test_order_pairs_parse_across_lines_and_commas() -> None:
    text = "T0: a:=1; b:=1; c:=1\norder a -> b, b->c\norder a -> b\norder c -> a\nexpect (0,0,0)"
    assert parse_litmus(text).order == (("a", "b"), ("b", "c"), ("c", "a"))
    assert parse_litmus("T0: x:=1\nexpect 0").order == ()


def test_order_edges_run_from_the_latest_earlier_store() -> None:
    # stores to d: #0 and #2; to m: #1 and #3. Each m store follows the d store just before it.
    test = parse_litmus("T0: d:=1; m:=1; d:=2; m:=2\norder d -> m\nexpect (0,0)")
    (rows,) = executions(test)
    tr = Trace.build(list(rows), size=128)
    (provider,) = order_edges(test)
    assert provider(TraceIndex(tr, "line"), "pdom1") == [Edge(0, 1, 1, 1), Edge(0, 2, 1, 2)]
    # a store to m with no earlier d store, and a pair inside one chain, give no edge
    first = parse_litmus("T0: m:=1; d:=1\norder d -> m\nexpect (0,0)")
    (rows,) = executions(first)
    assert order_edges(first)[0](TraceIndex(Trace.build(list(rows), size=128), "line"), "pdom1") == []
    same = parse_litmus("lines d=0 m=8\nT0: d:=1; m:=1\norder d -> m\nexpect (0,0)")
    (rows,) = executions(same)
    ix = TraceIndex(Trace.build(list(rows), size=64), "line")
    assert order_edges(same)[0](ix, "pdom1") == []
    assert order_edges(SUITE["L1"]) == []


def test_order_keeps_non_temporal_stores_behind_their_data() -> None:
    # without the pair the tag may drain from the write-combining buffer first; with it, never
    def tag_first(text: str) -> bool:
        return any(tr[0][2] == 64 for tr in executions(parse_litmus(text)))

    assert tag_first("T0: movnt d:=1; movnt m:=1\nexpect (0,0)")
    assert not tag_first("T0: movnt d:=1; movnt m:=1\norder d -> m\nexpect (0,0)")
    assert tag_first("T0: movnt d:=1; m:=1\nexpect (0,0)")
    assert not tag_first("T0: movnt d:=1; m:=1\norder d -> m\nexpect (0,0)")
