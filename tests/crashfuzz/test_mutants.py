"""The mutation suite: every registered mutant is killed exactly where the card says it is a bug.

A dropped persist barrier is harmless under PDOM-2 (stores persist in program order), so those
mutants must *survive* there; all others must be killed in every domain. Correct runtimes never
report a failure (tests/crashfuzz/test_campaign.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import crashfuzz.mutants as mutants
from crashfuzz import FuzzConfig
from crashfuzz.mutants import KillRow, format_matrix, kill_matrix, kill_one, trials
from pmsim.experiments.unified import kill_counts, read_kill_matrix
from pmsim.runtimes.marathe.undo import UndoRuntime
from pmsim.runtimes.mutation import Mutant, drop, mutate
from pmsim.runtimes.registry import MUTANTS, get_mutant

get_mutant("undo:U1")  # registers the built-in runtimes and their mutants
NAMES = sorted(MUTANTS)
KILL_MATRIX = Path(__file__).parents[2] / "docs" / "kill-matrix.txt"
KILLED_BY = ({(r["mutant"], r["domain"]): r["workload"] for r in read_kill_matrix(KILL_MATRIX)
              if r["killed"]} if KILL_MATRIX.exists() else {})
"""The workload whose campaign killed each (mutant, domain) in the committed matrix: the checks
below try it first (a mutant killed on its fourth workload does not first run three campaigns
to their end); the other workloads follow in the matrix's order, so a mutant that the recorded
workload no longer kills is still killed (or survives) exactly as in the full matrix. Empty
where the docs are not beside the tests (the sanitizer's scratch copy runs only C-core tests);
test_the_committed_matrix_has_no_kill_that_is_the_bases_own reads the matrix itself."""


def test_every_card_mutation_is_registered() -> None:
    want = ({f"undo:U{i}" for i in range(1, 8)} | {f"redo:R{i}" for i in range(1, 6)}
            | {f"cow:C{i}" for i in range(1, 7)}
            | {f"{r}:A{i}" for r in ("undo", "redo", "cow") for i in (1, 2)})
    assert want <= set(NAMES)


def _check(name: str, domains: tuple[str, ...], check_base: bool = False) -> None:
    """``name`` killed or surviving as its card says. The base campaign of each kill (a full
    campaign of the unmodified runtime) runs in the slow suite and in the committed matrix
    (``crashfuzz mutants``), which the default suite reads below."""
    rows = kill_matrix([name], domains, check_base=check_base, prefer=KILLED_BY)
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


LONG_SURVIVAL = {"undo:U1", "undo:U5", "undo:U6", "undo:U7", "redo:R1", "redo:R2", "redo:R4",
                 "cow:C2", "cow:C3", "pstm:no-data-flush", "pstm:no-entry-flush",
                 "pstm:no-abort-flush", "phtm:no-log-fence", "phtm:no-log-flush", "nvhtm:M2",
                 "nvml:no-write-flush", "mnemosyne:no-log-flush", "swal:S1", "swal:S2", "swal:S4"}
"""Mutants harmless in PDOM-2 whose survival there repeats another's of the same runtime and
kind of mutation (a dropped persist barrier, flush or fence, which orders nothing in PDOM-2):
showing it takes every trial workload run to its end (5-45 s, mostly array-raw's, one logged
word per store). Their survival is checked in the slow suite and in the committed matrix, their
kills in the default suite, where each runtime keeps the survival of one mutant of each kind
(undo:U3, redo:R3, cow:C1, pstm:no-entry-order, phtm:no-data-flush, nvhtm:M1, nvml:no-log-flush,
mnemosyne:no-data-flush, swal:S3; see test_each_kind_of_survival_stays_in_the_default_suite)."""


SLOW_KILL = {"dudetx-locks:M14b": ("pdom2",), "dudetx:M8": ("pdom2",), "dudetx-htm:M12": ("pdom2",)}
"""Mutants whose kill takes long to show in a domain (M14b in PDOM-1: about a minute of
read-set classes, each recovered and run on, before point 291; 0.4 s in PDOM-2; M8 and M12 in
PDOM-1: 15-25 s of new transactions run on every distinct image, 1-2 s in PDOM-2): the default
suite checks them in the domains given, the slow suite and the committed matrix in all. Their
PDOM-1 kills stay in the default suite as their protocols' tests check them, on the same
workloads with new transactions run once per recovered data (test_mutant_killed in
tests/runtimes/dudetx: test_locks.py, test_dudetx.py, test_htm.py)."""


@pytest.mark.parametrize("name", NAMES)
def test_mutant_killed_exactly_where_it_is_a_bug(name: str) -> None:
    """PDOM-1 (where nearly every mutant is a bug) and PDOM-2 (where drop-barrier ones are not);
    a mutant that is a bug only with a volatile WPQ (X15) in PDOM-0."""
    bug = get_mutant(name).domains
    if name in SLOW_SURVIVAL | LONG_SURVIVAL:
        _check(name, ("pdom1",) if "pdom1" in bug else tuple(bug))
    else:
        _check(name, SLOW_KILL.get(name, ("pdom1", "pdom2")))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_kill_is_the_mutants_own(name: str) -> None:
    """The unmodified runtime passes each campaign that kills a mutant."""
    bug = get_mutant(name).domains
    _check(name, ("pdom1",) if "pdom1" in bug else tuple(bug), check_base=True)


def test_the_committed_matrix_has_no_kill_that_is_the_bases_own() -> None:
    """docs/kill-matrix.txt (``crashfuzz mutants``) counts no kill whose campaign the base
    runtime fails too (a matrix written before the base check records "-" for the base)."""
    rows = read_kill_matrix(KILL_MATRIX)
    assert rows
    for r in rows:
        where = f"{r['mutant']} in {r['domain']}"
        assert r["base"] in ("passes", "refuses", "fails", "-"), f"{where}: base {r['base']!r}"
        assert r["base"] != "fails", f"{where}: the base runtime fails its kill campaign"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW_SURVIVAL | LONG_SURVIVAL))
def test_mutant_survives_where_harmless(name: str) -> None:
    _check(name, tuple(d for d in ("pdom1", "pdom2") if d not in get_mutant(name).domains))


def _survives_in_default_suite(name: str) -> bool:
    """``name`` is harmless in PDOM-2 and the default suite checks that it survives there."""
    m = get_mutant(name)
    return (name not in SLOW_SURVIVAL | LONG_SURVIVAL and name not in SLOW_KILL
            and "pdom2" in m.base.supported_domains and "pdom2" not in m.domains)


def _kinds(name: str) -> set[str]:
    return {type(mutation).__name__ for mutation in get_mutant(name).mutations}


def test_each_kind_of_survival_stays_in_the_default_suite() -> None:
    """A survival left to the slow suite leaves, for each kind of mutation it makes (drop,
    delay, skip_check, patch, ...), a mutant of the same runtime with that kind, harmless in
    PDOM-2 too, whose survival the default suite checks."""
    assert all("pdom2" not in get_mutant(n).domains for n in LONG_SURVIVAL)
    for name in sorted(LONG_SURVIVAL):
        runtime = name.partition(":")[0]
        kept = [n for n in NAMES if n.partition(":")[0] == runtime and _survives_in_default_suite(n)]
        covered = set().union(*map(_kinds, kept))
        assert _kinds(name) <= covered, (
            f"{name}: no survival of a {', '.join(sorted(_kinds(name) - covered))} mutation of "
            f"{runtime} left in the default suite")


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in NAMES if "pdom0" in get_mutant(n).base.supported_domains])
def test_mutant_killed_in_pdom0(name: str) -> None:
    _check(name, ("pdom0",))


# -- a kill counts only if the unmodified runtime passes the same campaign -------------------------

BROKEN_UNDO = mutate(UndoRuntime, [drop("undo.append.pb")], "broken-undo")
"""A base runtime that is itself broken (no per-record persist barrier): it fails the matrix's
first campaign in PDOM-1."""
SMALL = FuzzConfig(txs=4, idempotence=1, reduce=False, budget=1024)


def test_a_failure_the_base_shares_is_not_a_kill(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two mutants of a broken base: both campaigns fail, so does the base's; neither row is a
    kill, both are unexpected, and the base campaign ran once for both (cached)."""
    calls: list[object] = []
    real = mutants.fuzz

    def counting(cfg: FuzzConfig, runtime: object = None) -> object:
        calls.append(runtime)
        return real(cfg, runtime=runtime)

    monkeypatch.setattr(mutants, "fuzz", counting)
    monkeypatch.setattr(mutants, "_BASE_RESULTS", {})
    rows = [kill_one(Mutant(f"broken-undo:{s}", BROKEN_UNDO, [drop(s)], domains=("pdom1",)),
                     "pdom1", SMALL) for s in ("undo.commit.pb4", "undo.abort.pb2")]
    for r in rows:
        assert (r.killed, r.base, r.verdict, r.as_expected) == (False, "fails", "base-fails", False)
        assert r.failure.startswith("the base runtime fails too: ")
    assert calls.count(BROKEN_UNDO) == 1 and len(calls) == 3
    table = format_matrix(rows)
    assert "base-fails" in table and "UNEXPECTED" in table and " fails " in table


def test_a_base_that_refuses_the_campaign_leaves_the_kill(monkeypatch: pytest.MonkeyPatch) -> None:
    """A base that rejects the campaign with a clear error (the check its mutant removes, as
    dudetx-locks-1r-fine refuses a cyclic lock graph) does not fail it: the kill stands."""
    from pmsim.errors import PmsimError

    real = mutants.fuzz

    def refusing(cfg: FuzzConfig, runtime: object = None) -> object:
        if runtime is BROKEN_UNDO:
            raise PmsimError("broken-undo: this workload needs a check the mutant removes")
        return real(cfg, runtime=runtime)

    monkeypatch.setattr(mutants, "fuzz", refusing)
    monkeypatch.setattr(mutants, "_BASE_RESULTS", {})
    row = kill_one(Mutant("broken-undo:pb4", BROKEN_UNDO, [drop("undo.commit.pb4")],
                          domains=("pdom1",)), "pdom1", SMALL)
    assert (row.killed, row.base, row.verdict, row.as_expected) == (True, "refuses", "yes", True)


def test_a_kill_records_that_the_base_passes() -> None:
    row = kill_one(get_mutant("undo:U1"), "pdom1", SMALL, "undo:U1")
    assert (row.killed, row.base, row.verdict, row.as_expected) == (True, "passes", "yes", True)
    survivor = KillRow("undo:U1", "pdom2", False, False, "bank", None, "", 10, 1.0)
    assert (survivor.base, survivor.verdict, survivor.as_expected) == ("-", "no", True)


def test_the_matrix_file_carries_the_base_column(tmp_path: Path) -> None:
    rows = [KillRow("undo:U1", "pdom1", True, True, "array", 41, "[data] crash point 41", 9, 0.1,
                    "passes"),
            KillRow("undo:U5", "pdom1", True, False, "array", 12, "the base runtime fails too: x",
                    9, 0.1, "fails"),
            KillRow("undo:U1", "pdom2", False, False, "bank", None, "", 9, 0.1)]
    p = tmp_path / "kill-matrix.txt"
    p.write_text(format_matrix(mutants.KillMatrix(rows, ["not run in pdom0, ..."])) + "\n")
    got = read_kill_matrix(p)
    assert [(r["mutant"], r["domain"], r["killed"], r["ok"], r["base"]) for r in got] == [
        ("undo:U1", "pdom1", True, True, "passes"), ("undo:U5", "pdom1", False, False, "fails"),
        ("undo:U1", "pdom2", False, True, "-")]
    assert kill_counts(got)[("undo", "pdom1")] == {"bugs": 2, "killed": 1, "unexpected": 1}


def test_a_preferred_workload_is_tried_first_and_the_rest_keep_their_order() -> None:
    base = FuzzConfig(runtime="redo:A1", domain="pdom1")
    names = [c.workload for c in trials(base)]
    assert names[:2] == ["array", "alloc-x"]
    moved = list(trials(base, prefer="alloc-x"))
    assert [c.workload for c in moved] == ["alloc-x"] + [n for n in names if n != "alloc-x"]
    assert moved[0] == next(c for c in trials(base) if c.workload == "alloc-x")  # the same campaign
    assert [c.workload for c in trials(base, prefer="no-such-workload")] == names
    own = [c.workload for c in trials(base, "queue", 4, (), prefer="bank")]
    assert own[:2] == ["bank", "queue"] and sorted(own) == sorted(["queue", *names])
