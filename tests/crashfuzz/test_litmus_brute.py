"""Every litmus row, and random small programs, against the brute-force machine (crashfuzz.brute).

The brute force shares no code with the crash-state model: it runs the program on an
operational machine (store buffers, write-combining buffers, persistence steps) and collects
the persisted image of every reachable state.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashfuzz.brute import brute_images, brute_litmus
from crashfuzz.litmus import litmus_suite, parse_litmus, run_litmus

SUITE = {t.name: t for t in litmus_suite()}


@pytest.mark.parametrize("name", sorted(SUITE))
def test_every_row_matches_the_brute_force(name: str) -> None:
    test = SUITE[name]
    for (mode, dom), got in brute_litmus(test).items():
        where = f"{name} [{mode}, {dom}]"
        assert set(got) == set(test.expect), f"{where}: brute force gives {sorted(got)}"
        assert not got & test.forbid, f"{where}: forbidden images {sorted(got & test.forbid)} survive"


def test_brute_force_rejects_unknown_modes() -> None:
    with pytest.raises(ValueError, match="px86"):
        brute_images(SUITE["L1"], "lines", "pdom1")
    with pytest.raises(ValueError, match="pdom2"):
        brute_images(SUITE["L1"], "line", "adr")


# -- random programs -------------------------------------------------------------------------------
REGS = ("r", "r1")


@st.composite
def _simple(draw: st.DrawFn, locs: tuple[str, ...]) -> str:
    loc = draw(st.sampled_from(locs))
    kind = draw(st.sampled_from(["store"] * 4 + ["load"] * 3 + ["movnt"] * 2 + [
        "clflush", "clflushopt", "clwb", "sfence", "sfence", "mfence", "pcommit", "xchg"]))
    val = draw(st.integers(1, 2))
    if kind == "store":
        return f"{loc}:={draw(st.sampled_from([str(val), str(val), *REGS]))}"
    if kind == "load":
        return f"{draw(st.sampled_from(REGS))}:={loc}"
    if kind == "movnt":
        return f"movnt {loc}:={val}"
    if kind in ("clflush", "clflushopt", "clwb"):
        return f"{kind} {loc}"
    if kind == "xchg":
        return draw(st.sampled_from([f"xchg {loc},{val}", f"r:=xchg {loc},{val}"]))
    return kind


@st.composite
def _block(draw: st.DrawFn, locs: tuple[str, ...], budget: int, nested: bool = False
           ) -> tuple[list[str], int]:
    """Up to ``budget`` instructions; an ``if`` costs nothing itself, its body counts."""
    n = draw(st.integers(1, budget))
    out: list[str] = []
    used = 0
    while used < n:
        if not nested and draw(st.integers(0, 4)) == 0:
            reg, op = draw(st.sampled_from(REGS)), draw(st.sampled_from(["=", "!="]))
            v = draw(st.integers(0, 2))
            body, k = draw(_block(locs, n - used, nested=True))
            out.append(f"if {reg}{op}{v} {{ {'; '.join(body)} }}")
            used += k
        else:
            out.append(draw(_simple(locs)))
            used += 1
    return out, used


@st.composite
def _family(draw: st.DrawFn, locs: tuple[str, ...]) -> list[list[str]]:
    """Both threads of a classic litmus shape (store buffering, message passing, a guarded
    flush, ordered writes) with random orderings (fences, flushes, pcommit) and write kinds."""
    a, b = draw(st.permutations(locs))[:2]

    def write(loc: str, v: int = 1) -> str:
        return draw(st.sampled_from([f"{loc}:={v}", f"{loc}:={v}", f"movnt {loc}:={v}", f"xchg {loc},{v}"]))

    def order(loc: str) -> list[str]:
        pick = draw(st.sampled_from(["sfence", "sfence", "mfence", "clflush", "clflushopt", "clwb",
                                     "pcommit", ""]))
        return [f"{pick} {loc}" if pick.startswith("cl") else pick] if pick else []

    def anywhere() -> str:
        return draw(st.sampled_from(locs))

    shape = draw(st.sampled_from(["store-buffering", "message-passing", "guarded", "ordered",
                                  "flush-passes"]))
    if shape == "flush-passes":  # F1: may T0's flush of b take effect before a is visible?
        c = draw(st.sampled_from(locs))
        flush = draw(st.sampled_from(["clflushopt", "clwb", "clflush"]))
        between = draw(st.sampled_from(["", "", "sfence", "mfence", "pcommit", f"clflush {c}",
                                        f"clwb {c}", f"xchg {c},2"]))
        fence = draw(st.sampled_from(["sfence", "mfence", f"xchg {c},2"]))
        return [[write(a), *([between] if between else []), f"{flush} {b}", fence],
                [write(b, 3), f"r:={a}", f"if r=0 {{ {write(c, 4)} }}"]]
    if shape == "store-buffering":
        c, d = draw(st.permutations(locs))[:2]  # different locations show that both ran
        return [[write(a), *order(a), f"r:={b}", f"if r=0 {{ {write(c, 2)} }}"],
                [write(b), *order(b), f"r:={a}", f"if r=0 {{ {write(d, 2)} }}"]]
    if shape == "message-passing":
        return [[write(a), *order(a), write(b)],
                [f"r:={b}", f"if r=1 {{ {'; '.join([*order(a), write(anywhere(), 2)])} }}"]]
    if shape == "guarded":
        return [[write(a), *order(a)],
                [f"r:={a}", f"if r=1 {{ {'; '.join([*order(a), *order(a), write(b)])} }}"]]
    return [[write(a), *order(a), *order(b), write(b)], draw(_block(locs, 2))[0]]


@st.composite
def litmus_programs(draw: st.DrawFn) -> str:
    """A two-thread litmus test of at most 4 instructions per thread over 2-3 locations (an
    ``if`` counts by its body), random or shaped like a classic litmus test."""
    locs = ("x", "y", "z")[:draw(st.integers(2, 3))]
    shared = draw(st.booleans())  # x and y in one cache line
    if draw(st.integers(0, 2)):
        threads = draw(_family(locs))
    else:
        threads = [draw(_block(locs, 4))[0] for _ in range(2)]
    crash = draw(st.sampled_from(["anywhere", "anywhere", "end"]))
    lines = ["name random", "mode line px86", "domain pdom0 pdom1 pdom2", f"crash {crash}"]
    if shared:
        lines.append("lines x=0 y=8" + (" z=64" if "z" in locs else ""))
    lines += [f"T{t}: {'; '.join(body)}" for t, body in enumerate(threads)]
    lines += [f"observe {' '.join(locs)}", f"expect ({','.join('0' * len(locs))})"]
    return "\n".join(lines)


@st.composite
def ordered_programs(draw: st.DrawFn) -> str:
    """:func:`litmus_programs` with one or two hardware ``order`` pairs over its locations."""
    text = draw(litmus_programs())
    locs = next(line for line in text.splitlines() if line.startswith("observe")).split()[1:]
    pairs = draw(st.lists(st.permutations(locs).map(lambda p: f"{p[0]} -> {p[1]}"),
                          min_size=1, max_size=2, unique=True))
    return f"{text}\norder {', '.join(pairs)}"


def _agree(text: str, backend: str) -> None:
    test = parse_litmus(text)
    got = run_litmus(test, backend).images
    want = brute_litmus(test)
    for key in sorted(want):
        missing, extra = sorted(want[key] - got[key]), sorted(got[key] - want[key])
        assert not missing and not extra, (
            f"{key}: the crash model misses {missing} and adds {extra} (brute force: "
            f"{sorted(want[key])})\n{text}")


@settings(max_examples=70, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=litmus_programs())
def test_random_programs_match_the_brute_force(text: str, backend: str) -> None:
    _agree(text, backend)


@pytest.mark.slow
@settings(max_examples=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=litmus_programs())
def test_random_programs_match_the_brute_force_long(text: str, backend: str) -> None:
    _agree(text, backend)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=ordered_programs())
def test_random_programs_with_order_pairs_match_the_brute_force(text: str, backend: str) -> None:
    _agree(text, backend)


@pytest.mark.slow
@settings(max_examples=1000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=ordered_programs())
def test_random_programs_with_order_pairs_match_the_brute_force_long(text: str, backend: str
                                                                      ) -> None:
    _agree(text, backend)
