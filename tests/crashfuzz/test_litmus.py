"""The persistency litmus suite (litmus.md) on both backends, plus the litmus format itself."""

from __future__ import annotations

import pytest

from crashfuzz.litmus import check, executions, litmus_suite, parse_litmus, run_litmus
from pmsim.errors import ConfigError
from pmsim.trace import Ev

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

SUITE = {t.name: t for t in litmus_suite()}


def test_every_litmus_md_row_has_a_data_file() -> None:
    assert set(LITMUS_MD) <= set(SUITE)
    for name, (modes, domains, images) in LITMUS_MD.items():
        t = SUITE[name]
        assert (t.modes, t.domains, set(t.expect)) == (modes, domains, images), name


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
])
def test_parse_errors_say_what_to_fix(text: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_litmus(text)
