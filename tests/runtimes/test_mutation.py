"""Finer-grained mutations (drop_flush, drop_fence) and undo's replaceable checksum."""

from __future__ import annotations

from typing import Any

import pytest

from crashfuzz import fuzz
from pmsim.errors import ConfigError
from pmsim.runtimes import Mutant, delay, drop, drop_fence, drop_flush, get_runtime, patch
from pmsim.runtimes.marathe.undo import checksum
from pmsim.runtimes.mutation import mutate
from pmsim.runtimes.steps import StepHook, step_ops
from pmsim.trace import Ev
from pmsim.workloads.session import Session

HEADER = "undo.begin.header"  # stores the descriptor header, then clwb of its line
FLUSHES = {int(Ev.CLWB), int(Ev.CLFLUSHOPT), int(Ev.CLFLUSH)}


def _run(runtime: Any, backend: str) -> tuple[dict[str, list[int]], list[int]]:
    """Per step, the event kinds it issued, in order; and every event kind of the run."""
    s = Session.create(runtime, "array", txs=4, seed=1, backend=backend)
    spans: list[tuple[int, int, int, str]] = []
    s.runtime.log_steps([], spans)
    s.run(4)
    ev = s.machine.trace().events
    kinds, tids = ev["kind"].tolist(), ev["tid"].tolist()
    per_step: dict[str, list[int]] = {}
    for start, end, tid, name in spans:
        per_step.setdefault(name, []).extend(k for k, t in zip(kinds[start:end], tids[start:end],
                                                               strict=True) if t == tid)
    return per_step, kinds


@pytest.mark.parametrize("backend", ["c", "python"])
def test_drop_flush_keeps_a_steps_stores_and_removes_only_its_flushes(backend: str) -> None:
    base, all_base = _run("undo", backend)
    cls = mutate(get_runtime("undo"), [drop_flush(HEADER)], "undo~header-unflushed")
    mut, all_mut = _run(cls, backend)
    assert base[HEADER].count(Ev.STORE) == mut[HEADER].count(Ev.STORE) == 3 * 4
    assert base[HEADER].count(Ev.CLWB) == 4 and not FLUSHES & set(mut[HEADER])
    # every other step issues what it did before, and the run loses exactly those flushes
    assert {k: v for k, v in base.items() if k != HEADER} == \
        {k: v for k, v in mut.items() if k != HEADER}
    assert all_base.count(Ev.STORE) == all_mut.count(Ev.STORE)
    assert all_base.count(Ev.CLWB) - all_mut.count(Ev.CLWB) == 4


def test_step_ops_names_what_each_step_issued() -> None:
    spans = [(0, 3, 0, "a"), (3, 3, 0, "b"), (-1, -1, 1, "c")]
    kinds, tids = [Ev.STORE, Ev.MARK, Ev.CLWB], [0, 1, 0]
    got = step_ops(spans, kinds, tids)
    assert got == {"a": {int(Ev.STORE), int(Ev.CLWB)}, "b": set(), "c": set()}


def test_unflushed_header_is_killed_where_flushes_persist_and_survives_in_pdom2() -> None:
    """Without the header's clwb, the new transaction's RUNNING state and version may not be
    persistent when its first in-place write is: recovery then sees the previous version and
    rolls nothing back (torn). Under PDOM-2 caches are persistent: the flush is not needed."""
    m = Mutant("undo:header-unflushed", "undo", [drop_flush(HEADER)], domains=("pdom0", "pdom1"))
    for domain in ("pdom0", "pdom1"):
        rep = fuzz(runtime=m.build(), workload="array", domain=domain, txs=4, reduce=False,
                   stop_at_first=True)
        assert not rep.ok, domain
        assert rep.failures[0].kind == "data"
    rep = fuzz(runtime=m.build(), workload="array", domain="pdom2", txs=4, reduce=False)
    assert rep.ok and rep.exhaustive and rep.states_checked > 0


def test_drop_fence_removes_a_barrier_and_keeps_the_rest() -> None:
    full, all_full = _run("undo", "c")
    fenceless, all_fenceless = _run(mutate(get_runtime("undo"), [drop_fence("undo.append.pb")],
                                           "undo~nofence"), "c")
    dropped, all_dropped = _run(mutate(get_runtime("undo"), [drop("undo.append.pb")], "undo~d"),
                                "c")
    assert Ev.SFENCE in full["undo.append.pb"] and fenceless["undo.append.pb"] == []
    assert all_fenceless == all_dropped and all_fenceless != all_full


def test_drop_flush_and_drop_fence_name_steps_that_issue_them() -> None:
    undo = get_runtime("undo")
    with pytest.raises(ConfigError, match=r"pb step .* issues no cache-line flushes.*drop\("):
        mutate(undo, [drop_flush("undo.append.pb")], "x")
    with pytest.raises(ConfigError, match="store step .* issues no fences"):
        mutate(undo, [drop_fence("undo.append.checksum")], "x")
    with pytest.raises(ConfigError, match="undo.begin.header"):
        mutate(undo, [drop_flush("undo.begin.headr")], "x")
    assert str(drop_flush(HEADER)) == f"drop_flush({HEADER})"
    assert mutate(undo, [drop_flush("undo.write.flush"), drop_fence("undo.append.pb")], "y")


def _checksum_without(index: int) -> Any:
    def make(original: Any) -> Any:
        def checksum(self: Any, words: Any) -> int:
            return original(self, [w for i, w in enumerate(words) if i != index])
        return checksum
    return make


def _reversed_checksum(original: Any) -> Any:
    def checksum(self: Any, words: Any) -> int:
        return original(self, list(words)[::-1]) ^ 1
    return checksum


def test_undo_checksum_is_a_method_recovery_and_records_both_use() -> None:
    undo = get_runtime("undo")
    words = [1, 2, 3]
    assert undo.checksum(None, words) == checksum(words)  # type: ignore[arg-type]
    # another complete checksum: records carry it and recovery verifies with it (if either
    # used the original, no record would verify and torn transactions would not roll back)
    other = Mutant("undo:other-checksum", "undo", [patch("checksum", _reversed_checksum)])
    assert other.build().checksum(None, words) != checksum(words)  # type: ignore[arg-type]
    rep = fuzz(runtime=other.build(), workload="array", domain="pdom1", txs=4, reduce=False)
    assert rep.ok and rep.exhaustive


def test_a_checksum_that_ignores_the_version_is_killed() -> None:
    """A previous transaction's record at the same log position whose version word alone was
    overwritten passes as the current transaction's: its stale old values are restored."""
    m = Mutant("undo:checksum-without-version", "undo",
               [patch("checksum", _checksum_without(1), "ignores the version word")])
    for domain in ("pdom1", "pdom2"):
        rep = fuzz(runtime=m.build(), workload="array", domain=domain, txs=4, reduce=False,
                   stop_at_first=True)
        assert not rep.ok, domain
    assert fuzz(runtime="undo", workload="array", domain="pdom1", txs=4, reduce=False).ok


class _FakeCpu:
    """Records the instructions it is given."""

    tid = 0

    def __init__(self) -> None:
        self.got: list[tuple[str, tuple[int, ...]]] = []

    def __getattr__(self, op: str) -> Any:
        return lambda *args: self.got.append((op, args))


def test_a_delayed_step_without_its_flushes_replays_only_its_stores() -> None:
    cpu = _FakeCpu()
    hook = StepHook([drop_flush("s"), drop_fence("f"), delay("s", after="t")])
    with hook.step(cpu, "s") as c:
        c.store(8, 1)
        c.clwb(0)
        c.clflushopt(0)
        c.flush_range(0, 64)
    assert cpu.got == []
    hook.op(cpu, "t", "sfence")
    hook.op(cpu, "f", "sfence")
    hook.op(cpu, "f", "store", 16, 2)
    with hook.step(cpu, "f") as c:
        c.persist_barrier()
        c.mfence()
        c.clwb(64)
    assert cpu.got == [("sfence", ()), ("store", (8, 1)), ("store", (16, 2)), ("clwb", (64,))]
