"""run_experiment takes runtimes and workloads as names, import paths, classes or instances."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmsim.errors import ConfigError
from pmsim.experiments.run import run_experiment
from pmsim.runtimes import RedoRuntime, get_mutant
from pmsim.workloads.kv import KV


class MyKV(KV):
    name = "my-kv"


def test_classes_and_instances_run_and_are_recorded_by_name_or_path() -> None:
    r = run_experiment(RedoRuntime, MyKV, txs=20, params={"keys": 8})
    assert (r.runtime, r.workload) == ("redo", f"{__name__}:MyKV")
    assert r.commits + r.aborts == 20 and r.params == {"keys": 8}
    r = run_experiment("undo", KV(keys=8, buckets=2), txs=10)
    assert r.workload == "kv" and r.params == {"keys": 8, "buckets": 2}
    r = run_experiment(get_mutant("redo:R2"), "kv", txs=5)
    assert r.runtime == "redo:R2"


def test_a_file_path_runs(tmp_path: Path) -> None:
    f = tmp_path / "wl.py"
    f.write_text("from pmsim.workloads.kv import KV\n\nclass FileKV(KV):\n    name = 'file-kv'\n")
    r = run_experiment("undo", f"{f}:FileKV", txs=10)
    assert r.workload == f"{f}:FileKV" and r.commits + r.aborts == 10


def test_a_class_with_unknown_parameters_fails() -> None:
    with pytest.raises(ConfigError, match="Known kv parameters"):
        run_experiment("undo", KV, txs=1, params={"nokeys": 3})


def test_demo_runs_every_protocol_on_one_machine() -> None:
    """`pmsim demo`'s second table: each seed paper's protocol and baselines, one row each."""
    from pmsim.experiments.compare import ALL_PROTOCOLS, protocols_table, run_protocols

    results = run_protocols(txs=20, warmup=5)
    assert [r.runtime for r in results] == [rt for rt, _ in ALL_PROTOCOLS]
    assert all(r.throughput > 0 and r.domain == "pdom1" for r in results)
    table = protocols_table(results)
    assert "Proteus" in table and "vs_best" in table


def test_runtime_facts_are_reported_as_they_are_not_as_a_change() -> None:
    """A runtime's facts (NV-HTM's real log size) sit beside its counters, whose change over
    the measured period is reported: a constant fact would otherwise read 0."""
    r = run_experiment("nvhtm[log_slots=2]", "bank", "nvhtm-xeon", threads=2, txs=10, warmup=5)
    slots = r.facts["nvhtm.log_slots"]  # raised to two of the largest transaction, in lines
    assert slots > 2 and slots % 4 == 0
    assert "nvhtm.log_slots" not in r.counters and r.row()["nvhtm.log_slots"] == slots
    assert r.counters["htm.commits"] > 0
