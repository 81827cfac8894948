"""A campaign reports the same findings and counts for any number of jobs or shards.

Sampling is seeded by the seed and the crash point, the work is cut into units fixed by the
config (each from empty caches), idempotence images are the first candidates in trace order,
and failures are kept in report order, so how the units are spread over workers is invisible.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashfuzz import FuzzConfig, Report, fuzz
from crashfuzz.campaign import CHUNK_POINTS, Failure, failure_key

SAMPLED_MUTANT = FuzzConfig(runtime="redo:R2", workload="bank", threads=2, txs=3, budget=4,
                            samples=4, seed=7, class_limit=0)
SAMPLED_CORRECT = FuzzConfig(runtime="redo", workload="bank", threads=2, txs=3, budget=4,
                             samples=4, seed=3, class_limit=0)
CLASSED_MUTANT = FuzzConfig(runtime="redo:R2", workload="bank", threads=2, txs=3, budget=4,
                            samples=4, seed=7, class_from=1)


def counts(rep: Report) -> dict[str, Any]:
    """Every field of a report but its time and failures."""
    return {f.name: getattr(rep, f.name) for f in dataclasses.fields(rep)
            if f.name not in ("seconds", "failures")}


def findings(rep: Report) -> list[dict[str, Any]]:
    """Every field of every kept failure, the image as bytes."""
    return [{**{f.name: getattr(x, f.name) for f in dataclasses.fields(x) if f.name != "image"},
             "image": x.image.tobytes()} for x in rep.failures]


def sharded(cfg: FuzzConfig, shards: int, **kw: Any) -> Report:
    with ThreadPoolExecutor(3) as ex:
        return fuzz(cfg, executor=ex, shards=shards, **kw)


@pytest.mark.parametrize("cfg", [SAMPLED_MUTANT, SAMPLED_CORRECT, CLASSED_MUTANT],
                         ids=["redo:R2", "redo", "redo:R2-classes"])
def test_any_number_of_shards_reports_the_same(cfg: FuzzConfig) -> None:
    reps = [sharded(cfg, k) for k in (1, 2, 3)]
    one = reps[0]
    assert (one.points_classed if cfg.class_limit else one.points_sampled) > 0
    assert one.deep_runs > 0 and one.idempotence_images > 0
    assert one.points > CHUNK_POINTS, "one chunk only: sharding would prove nothing"
    assert one.ok == (cfg.runtime == "redo")
    for other in reps[1:]:
        assert counts(other) == counts(one)
        assert findings(other) == findings(one)


def test_failures_are_kept_in_report_order() -> None:
    rep = fuzz(dataclasses.replace(SAMPLED_MUTANT, max_failures=5))
    assert rep.failure_count > 5 and len(rep.failures) == 5
    assert rep.failures == sorted(rep.failures, key=failure_key)
    assert rep.first_failure_point == rep.failures[0].point
    everything = fuzz(dataclasses.replace(SAMPLED_MUTANT, max_failures=1000))
    assert [failure_key(f) for f in everything.failures[:5]] == [failure_key(f)
                                                                for f in rep.failures]


def test_stop_at_first_is_the_same_for_any_number_of_shards() -> None:
    cfg = dataclasses.replace(SAMPLED_MUTANT, stop_at_first=True)
    reps = [sharded(cfg, k) for k in (1, 2, 3)]
    assert reps[0].failure_count == 1 and reps[0].points < reps[0].points_planned
    for other in reps[1:]:
        assert counts(other) == counts(reps[0])
        assert findings(other) == findings(reps[0])


def test_merge_does_not_depend_on_order() -> None:
    rep = fuzz(dataclasses.replace(SAMPLED_MUTANT, depth=1))
    fs: list[Failure] = rep.failures
    assert len(fs) >= 4

    def part(items: list[Failure]) -> Report:
        r = Report(rep.config, rep.runtime, rep.workload)
        for f in items:
            r.add(f)
        return r

    a, b = part(fs[::2]), part(fs[1::2])
    ab, ba = part([]), part([])
    ab.merge(a)
    ab.merge(b)
    ba.merge(b)
    ba.merge(a)
    assert ab.failures == ba.failures == sorted(fs, key=failure_key)
    assert ab.first_failure_point == ba.first_failure_point == fs[0].point


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), shards=st.integers(2, 4))
def test_sharding_never_changes_a_report(seed: int, shards: int) -> None:
    cfg = FuzzConfig(runtime="redo:R2", workload="bank", threads=2, txs=2, budget=3, samples=3,
                     seed=seed, depth=1, idempotence=2, max_failures=8, class_limit=0)
    one = fuzz(cfg)
    other = sharded(cfg, shards)
    assert counts(other) == counts(one)
    assert findings(other) == findings(one)


def _cli(tmp: Path, jobs: int) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any], bytes]]]:
    """The JSON report (without seconds) and the saved findings (file name, document, image)
    of the issue's example run."""
    findings_dir, out = tmp / f"findings{jobs}", tmp / f"report{jobs}.json"
    r = subprocess.run([sys.executable, "-m", "crashfuzz", "run", "--runtime", "redo:R2",
                        "--workload", "bank", "--threads", "2", "--txs", "3", "--budget", "4",
                        "--samples", "4", "--seed", "7", "--class-limit", "0", "--jobs", str(jobs),
                        "--findings",
                        str(findings_dir), "--json", str(out)],
                       capture_output=True, text=True, check=False, timeout=120)
    assert r.returncode == 1, r.stderr
    doc = json.loads(out.read_text())
    del doc["seconds"]
    saved = []
    for p in sorted(findings_dir.glob("*.json")):
        d = json.loads(p.read_text())
        saved.append((p.name, d, np.load(findings_dir / d["image"]).tobytes()))
    return doc, saved


def test_cli_jobs_one_and_two_give_the_same_findings(tmp_path: Path) -> None:
    doc1, saved1 = _cli(tmp_path, 1)
    doc2, saved2 = _cli(tmp_path, 2)
    assert saved1 and doc1["failure_count"] > 0 and doc1["points_sampled"] > 0
    assert [d["kind"] for _, d, _ in saved1]
    assert saved1 == saved2  # kind, crash point, message, image (its hash in the file name)
    assert doc1 == doc2
