"""Thread schedules (pmsim.schedule): deterministic per index, different interleavings, and
exploration of a transaction runtime's schedules in one campaign."""

from __future__ import annotations

import pytest

from crashfuzz import Campaign, FuzzConfig, fuzz
from pmsim.errors import ConfigError
from pmsim.schedule import Schedule


def test_a_schedule_is_a_function_of_its_seed_and_index() -> None:
    a = [Schedule("random", 3, 7, 2).delay(t % 2) for t in range(20)]
    b = [Schedule("random", 3, 7, 2).delay(t % 2) for t in range(20)]
    assert a == b
    s1, s2 = Schedule("random", 1, 7, 2), Schedule("random", 2, 7, 2)
    assert [s1.delay(0) for _ in range(20)] != [s2.delay(0) for _ in range(20)]


def test_pct_delays_lower_priorities_and_changes_them() -> None:
    s = Schedule("pct", 1, 0, 3, depth=1)
    assert sorted(s.delay(t) for t in range(3)) == [0.0, 50_000.0, 100_000.0]
    s = Schedule("pct", 1, 0, 3, depth=3, horizon=4)
    for i in range(8):
        s.delay(i % 3)
    assert 1 <= len(s.changes) <= 2 and min(s.priority.values()) < 0  # someone was demoted


def test_bad_schedules_are_refused() -> None:
    with pytest.raises(ConfigError, match="unknown schedule kind"):
        Schedule("fifo", 1, 0, 2)
    with pytest.raises(ConfigError, match="schedule_kind"):
        FuzzConfig(schedule_kind="fifo")
    with pytest.raises(ConfigError, match="schedules"):
        FuzzConfig(schedules=0)


def test_schedules_change_a_runtimes_interleaving_and_campaigns_explore_them() -> None:
    cfg = FuzzConfig(runtime="undo", workload="bank", threads=2, txs=4, depth=1, idempotence=1)
    hashes = {Campaign(FuzzConfig(**{**cfg.to_dict(), "schedule_index": i,
                                     "machine": None})).trace_hash for i in range(4)}
    assert len(hashes) > 1
    rep = fuzz(cfg, schedules=4)
    assert rep.ok and rep.schedules == 4 and 1 < rep.distinct_traces <= 4
    assert "schedules: 4 run (pct, depth 3)" in rep.summary()
