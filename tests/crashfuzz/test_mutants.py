"""The mutation suite: every registered mutant is killed exactly where the card says it is a bug.

A dropped persist barrier is harmless under PDOM-2 (stores persist in program order), so those
mutants must *survive* there; all others must be killed in every domain. Correct runtimes never
report a failure (tests/crashfuzz/test_campaign.py).
"""

from __future__ import annotations

import pytest

from crashfuzz.mutants import kill_matrix
from pmsim.runtimes.registry import MUTANTS, get_mutant

get_mutant("undo:U1")  # registers the built-in runtimes and their mutants
NAMES = sorted(MUTANTS)


def test_every_card_mutation_is_registered() -> None:
    want = ({f"undo:U{i}" for i in range(1, 8)} | {f"redo:R{i}" for i in range(1, 6)}
            | {f"cow:C{i}" for i in range(1, 7)}
            | {f"{r}:A{i}" for r in ("undo", "redo", "cow") for i in (1, 2)})
    assert want <= set(NAMES)


def _check(name: str, domains: tuple[str, ...]) -> None:
    rows = kill_matrix([name], domains)
    for r in rows:
        assert r.as_expected, (
            f"{r.mutant} in {r.domain}: {'killed' if r.killed else 'survived'}, expected "
            f"{'kill' if r.expected_kill else 'survive'} ({r.failure or 'no failure'})")
    assert any(r.killed for r in rows) or all(not r.expected_kill for r in rows)


SLOW_SURVIVAL = {"loc:M16", "proteus:X7", "proteus:X8", "proteus:X15", "atom:A2", "pmem:S1",
                 "pmem:S2"}
"""Mutants whose survival takes long to show (every trial workload, run to the end; minutes for
LOC, whose log's non-temporal writes stay open until each window's fence, and for X15, which
writes every log entry through; seconds for the others): checked only in the slow suite, their
kills in the default one."""


@pytest.mark.parametrize("name", NAMES)
def test_mutant_killed_exactly_where_it_is_a_bug(name: str) -> None:
    """PDOM-1 (where nearly every mutant is a bug) and PDOM-2 (where drop-barrier ones are not);
    a mutant that is a bug only with a volatile WPQ (X15) in PDOM-0."""
    bug = get_mutant(name).domains
    if name in SLOW_SURVIVAL:
        _check(name, ("pdom1",) if "pdom1" in bug else tuple(bug))
    else:
        _check(name, ("pdom1", "pdom2"))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW_SURVIVAL))
def test_mutant_survives_where_harmless(name: str) -> None:
    _check(name, tuple(d for d in ("pdom1", "pdom2") if d not in get_mutant(name).domains))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_mutant_killed_in_pdom0(name: str) -> None:
    _check(name, ("pdom0",))
