"""Campaigns: correct runtimes survive exhaustive fuzzing; determinism; reports; bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from crashfuzz.campaign import Campaign, drop_stores
from pmsim.errors import ConfigError, UnknownNameError

RUNTIMES = ("undo", "redo", "cow")
WORKLOADS = ("array", "kv", "bank", "alloc-x")
DOMAINS = ("pdom0", "pdom1", "pdom2")


def _check(cfg: FuzzConfig) -> crashfuzz.Report:
    rep = fuzz(cfg)
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.states_checked > 0 and rep.recoveries > 0
    return rep


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_correct_runtimes_survive_exhaustive_fuzzing(runtime: str, workload: str,
                                                     domain: str) -> None:
    # COW's wrappers, payloads and allocator lines give some points 1e5-1e7 states; in the
    # default suite those points are sampled (the report says so); the slow campaign raises
    # the budget. Undo and redo must be exhaustive.
    cow = runtime == "cow"
    rep = _check(FuzzConfig(runtime=runtime, workload=workload, domain=domain, txs=20,
                            idempotence=2, budget=2048 if cow else 65536, samples=64))
    assert rep.transactions >= 1
    assert rep.exhaustive or cow, f"{rep.points_sampled} points were sampled, not enumerated"


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("domain", ("pdom0", "pdom1"))
def test_px86_order_mode(runtime: str, domain: str) -> None:
    rep = _check(FuzzConfig(runtime=runtime, workload="kv", domain=domain, order="px86", txs=20,
                            idempotence=1, budget=1 << 20, samples=64))
    assert rep.exhaustive or runtime == "cow"  # COW: a few points over 1M states are sampled


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_two_threads(runtime: str) -> None:
    _check(FuzzConfig(runtime=runtime, workload="bank", threads=2, txs=6, idempotence=1,
                      budget=4096))


@pytest.mark.slow
@pytest.mark.parametrize("order", ("line", "px86"))
@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_long_campaign(runtime: str, workload: str, domain: str, order: str) -> None:
    _check(FuzzConfig(runtime=runtime, workload=workload, domain=domain, order=order, txs=100,
                      idempotence=16))


def test_same_seed_same_findings() -> None:
    cfg = FuzzConfig(runtime="undo:U1", workload="array", txs=5, idempotence=0)
    a, b = fuzz(cfg), fuzz(cfg)
    assert not a.ok
    key = lambda r: [(f.kind, f.point, f.image_hash, f.message) for f in r.failures]  # noqa: E731
    assert key(a) == key(b)
    assert (a.failure_count, a.states_checked, a.distinct_images) == (
        b.failure_count, b.states_checked, b.distinct_images)


def test_report_counts_and_sampling_is_said() -> None:
    rep = fuzz(FuzzConfig(runtime="redo", workload="array", txs=5, budget=2, samples=3,
                          idempotence=0, reduce=False, class_limit=0))
    assert rep.points_sampled > 0 and not rep.exhaustive
    assert rep.states_checked < rep.states_total
    assert "sampled" in rep.summary()


def test_failure_report_is_actionable(tmp_path) -> None:
    rep = fuzz(FuzzConfig(runtime="undo:U1", workload="array", txs=5, idempotence=0,
                          stop_at_first=True))
    assert rep.failure_count == 1
    f = rep.failures[0]
    assert f.persisted and f.expected and f.recovered
    paths = crashfuzz.save_findings(rep, tmp_path)
    text = crashfuzz.format_report(rep, paths)
    assert "crash point" in text and "persisted" in text and "replay" in text
    again = crashfuzz.replay(paths[0], verbose=False)
    assert again is not None and again.kind == f.kind


def test_sharded_campaign_finds_the_same_failures() -> None:
    from concurrent.futures import ThreadPoolExecutor

    cfg = FuzzConfig(runtime="undo:U1", workload="array", txs=4, idempotence=0)
    one = fuzz(cfg)
    with ThreadPoolExecutor(2) as ex:
        two = fuzz(cfg, executor=ex, shards=3)
    assert one.failure_count == two.failure_count
    assert one.states_checked == two.states_checked


@pytest.mark.parametrize("workload", ("array", "alloc-x", "kv"))
def test_irrelevant_words_recover_identically(workload: str) -> None:
    """The runtimes' declarations of words recovery ignores hold on real crash images."""
    for runtime in RUNTIMES:
        camp = Campaign(FuzzConfig(runtime=runtime, workload=workload, txs=6, reduce=False))
        words = np.asarray(sorted(camp.session.runtime.crash_irrelevant()), np.uint64)
        rng = np.random.default_rng(1)
        for p in camp.model.points("reduced")[::3]:
            sp = camp.model.space(p)
            for s in sp.sample(4, rng):
                img = sp.image(s)
                zeroed = img.copy()
                for w in words.tolist():
                    off = w - camp.trace.pm_base
                    zeroed[off:off + 8] = camp.trace.base[off:off + 8]
                _, d1, e1, _ = camp.recover(img)
                _, d2, e2, _ = camp.recover(zeroed)
                assert (d1, e1) == (d2, e2), f"{runtime}: point {p.index}"


def test_drop_stores_keeps_markers_and_other_stores() -> None:
    camp = Campaign(FuzzConfig(runtime="redo", workload="array", txs=3, reduce=False))
    words = np.asarray(sorted(camp.session.runtime.crash_irrelevant()), np.uint64)
    red = drop_stores(camp.trace, words)
    assert len(red) <= len(camp.trace)
    ev = camp.trace.events
    assert (red.events["kind"] == 11).sum() == (ev["kind"] == 11).sum()


def test_bad_config_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="domain"):
        FuzzConfig(domain="pdom9")
    with pytest.raises(ConfigError, match="txs"):
        FuzzConfig(txs=0)
    with pytest.raises(UnknownNameError, match="Did you mean"):
        fuzz(FuzzConfig(runtime="udno"))
    with pytest.raises(UnknownNameError):
        fuzz(FuzzConfig(workload="arrray"))
    with pytest.raises(ConfigError):
        FuzzConfig.from_dict({"runtime": "undo", "bogus": 1})


def test_config_round_trip() -> None:
    cfg = FuzzConfig(runtime="redo", params=(("keys", 8),), txs=3)
    assert FuzzConfig.from_dict(cfg.to_dict()) == cfg
    assert dataclasses.replace(cfg, seed=3).seed == 3


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("domain", DOMAINS)
def test_records_that_span_cache_lines(runtime: str, domain: str) -> None:
    # 8-word slots: an undo record (4 header words, 8 old values, checksum) crosses a line,
    # the only case where line order lets part of one record persist without the rest
    rep = _check(FuzzConfig(runtime=runtime, workload="array", domain=domain, txs=10,
                            params=(("slot_words", 8), ("slots", 8)), idempotence=2,
                            budget=2048 if runtime == "cow" else 65536, samples=64))
    assert rep.exhaustive or runtime == "cow"


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_bug_that_needs_a_second_crash_is_killed_at_depth_two(domain: str) -> None:
    cfg = FuzzConfig(runtime="undo:U8", workload="array", domain=domain, txs=6, reduce=False,
                     idempotence=2, new_tx=3, new_tx_every_image=True)
    assert fuzz(dataclasses.replace(cfg, depth=1)).ok  # invisible to one crash
    rep = fuzz(cfg)
    assert not rep.ok and rep.deep_runs > 0
    f = rep.failures[0]
    assert f.depth == 2 and f.lineage and "recovered the image" in f.origin
    assert "depth 2" in crashfuzz.format_report(rep)


def test_depth_two_findings_replay(tmp_path) -> None:  # noqa: ANN001
    rep = fuzz(FuzzConfig(runtime="undo:U8", workload="array", domain="pdom1", txs=6,
                          reduce=False, stop_at_first=True))
    paths = crashfuzz.save_findings(rep, tmp_path)
    again = crashfuzz.replay(paths[0], verbose=False)
    assert again is not None and again.depth == 2 and again.point == rep.failures[0].point


def test_depth_report_and_determinism() -> None:
    cfg = FuzzConfig(runtime="redo", workload="kv", txs=6, depth=3, depth_runs=2, depth_txs=1)
    a, b = fuzz(cfg), fuzz(cfg)
    assert a.ok and a.deep_runs >= 2 and a.deep_points > 0 and a.deep_states > 0
    assert (a.deep_runs, a.deep_states, a.deep_distinct) == (b.deep_runs, b.deep_states,
                                                            b.deep_distinct)
    assert "runs after recovery" in a.summary()
    assert "depth 1: off" not in a.summary()
    with pytest.raises(ConfigError, match="depth"):
        FuzzConfig(depth=0)


def test_failures_name_the_persist_step_of_the_crash_point() -> None:
    rep = fuzz(FuzzConfig(runtime="undo:U1", workload="array", txs=5, idempotence=0, depth=1))
    f = rep.failures[0]
    assert f.step.startswith(("undo.", "alloc.")), f.step
    assert f"in persist step {f.step}" in crashfuzz.format_report(rep)
