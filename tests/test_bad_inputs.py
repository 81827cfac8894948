"""Every bad input to pmsim gets a clear error: the `pmsim` CLI, config files and `--set`, and
the public API (configs, Machine, Cpu, workloads, run_experiment).

Each case asserts exit status 2 (CLI) or a PmsimError (API) whose message names the bad value
or option and says what would be valid, without a traceback. The engine cases run on every
backend, timed and functional, and both backends must raise the same message and change
nothing. The crashfuzz side is tests/crashfuzz/test_bad_inputs.py.
"""

from __future__ import annotations

import fractions
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pmsim import (
    CacheConfig,
    CacheLevel,
    CostConfig,
    DRAMConfig,
    Machine,
    MachineConfig,
    PMConfig,
    PmsimError,
    Region,
    preset,
)
from pmsim.cache import native
from pmsim.cli import main
from pmsim.experiments import run_comparison, run_experiment
from pmsim.experiments.rows import ROW_NUMBERS
from pmsim.experiments.sweep import point_key, run_sweep, without_wall_clock
from pmsim.workloads.base import get_workload

from .badinput import DIR, Case, assert_clean_error, assert_error_names, make_files, params, run_cli

BACKENDS = ["python", "c"] if native.available() else ["python"]

TIB = str(1 << 40)
FULL = MachineConfig().to_json()

# a results file of `pmsim reproduce` with one row, and its damaged variants
ROW: dict[str, Any] = {"paper": "marathe", "experiment": "e", "runtime": "undo",
                       "workload": "array", "domain": "pdom1", "threads": 1, "txs": 10,
                       **dict.fromkeys(ROW_NUMBERS, 1.0)}
META: dict[str, Any] = {"command": "pmsim reproduce marathe", "version": "0", "backend": "c",
                        "scale": "quick", "workers": "1", "out": "r", "points": 1, "seconds": 1.0}


def results(**changes: Any) -> str:
    """results.json text: ``changes`` replace top-level keys; ``row`` entries replace fields of
    the one row."""
    row = {**ROW, **changes.pop("row", {})}
    return json.dumps({"meta": META, "papers": {"marathe": [row]}, **changes})


def table(name: str, needles: list[str], text: str) -> Case:
    return Case(f"table-{name}", ["table", "{d}/r"], ["results.json", *needles],
                {"r/results.json": text})


COMPARE = ["compare", "--quick", "--no-fuzz", "--kills", "off", "--runtimes", "undo",
           "--workloads", "array", "--domains", "pdom1", "--txs", "2", "--jobs", "1"]

# -- the pmsim command line -------------------------------------------------------------------
CLI = [
    # seeds, counts and numbers
    Case("config-seed-negative", ["config", "--seed", "-1"], ["seed", "-1", "0..2**64-1"]),
    Case("config-seed-2**64", ["config", "--seed", str(1 << 64)], ["seed", str(1 << 64), "0..2**64-1"]),
    Case("config-seed-text", ["config", "--seed", "abc"], ["--seed", "'abc'"]),
    Case("config-cores-65", ["config", "--cores", "65"], ["cores", "65", "at most 64"]),
    Case("config-cores-0", ["config", "--cores", "0"], ["cores", "got 0", "1..64"]),
    Case("config-barrier-ns-1e308", ["config", "--barrier-ns", "1e308"],
         ["barrier_ns", "1e+308", "1e+09"]),
    Case("config-barrier-ns-negative", ["config", "--barrier-ns", "-5"], ["barrier_ns", "-5", ">= 0"]),
    Case("config-barrier-ns-nan", ["config", "--barrier-ns", "nan"], ["barrier_ns", "nan", ">= 0"]),
    Case("config-domain", ["config", "--domain", "pdom3"], ["--domain", "'pdom3'", "pdom0"]),
    Case("config-format", ["config", "--format", "xml"], ["--format", "'xml'", "json"]),
    Case("config-preset", ["config", "--preset", "optane-ard"],
         ["'optane-ard'", "Did you mean 'optane-adr'"]),
    # --set
    Case("set-scalar-as-section", ["config", "--set", "cores.x=1"],
         ["cores.x", "not a section", "cores=VALUE"]),
    Case("set-regions-index-out-of-range", ["config", "--set", "regions.5.size=64"],
         ["regions.5.size", "2 entries", "regions.0"]),
    Case("set-regions-index-not-a-number", ["config", "--set", "regions.pm.size=64"],
         ["regions.pm.size", "regions.0 .. regions.1"]),
    Case("set-regions-unknown-field", ["config", "--set", "regions.0.sise=64"],
         ["'sise'", "Did you mean 'size'"]),
    Case("set-regions-unaligned-size", ["config", "--set", "regions.0.size=100"],
         ["Region.size", "100", "multiple of 64"]),
    Case("set-banks-1e9", ["config", "--set", "pm.banks=1000000000"],
         ["banks", "1000000000", "1..4096"]),
    Case("set-wpq-2**32", ["config", "--set", "pm.wpq_entries=4294967296"],
         ["wpq_entries", "4294967296", "1..4096"]),
    Case("set-pm-region-1TiB", ["config", "--set", f"regions.0.size={TIB}"],
         ["Region.size", TIB, "4 GiB"]),
    Case("set-region-above-2**52", ["config", "--set", f"regions.1.base={1 << 60}"],
         ["Region.base", "2**52"]),
    Case("set-regions-total", ["config", "--set", f"regions.0.size={1 << 32}", "--set",
                               f"regions.1.size={1 << 32}", "--set", f"regions.1.base={1 << 33}",
                               "--set", "regions=" + json.dumps([
                                   {"name": n, "base": i << 32, "size": 1 << 32, "kind": "pm"}
                                   for i, n in enumerate("abc")])],
         ["regions", "12 GiB", "8 GiB"]),
    Case("set-regions-empty", ["config", "--set", "regions=[]"], ["regions", "empty", "'pm' region"]),
    Case("set-region-kind", ["config", "--set", "regions.0.kind=flash"],
         ["kind", "'flash'", "'pm' or 'dram'"]),
    Case("set-regions-not-a-list", ["config", "--set", "regions=5"], ["regions", "5", "list"]),
    Case("set-unknown-field", ["config", "--set", "corez=4"], ["'corez'", "Did you mean 'core', 'cores'"]),
    Case("set-unknown-nested", ["config", "--set", "pm.bankz=4"], ["'bankz'", "Did you mean 'banks'"]),
    Case("set-section-as-value", ["config", "--set", "pm=5"], ["pm", "mapping"]),
    Case("set-no-equals", ["config", "--set", "cores"], ["'cores'", "FIELD=VALUE"]),
    Case("set-empty-field", ["config", "--set", "=5"], ["'=5'", "FIELD=VALUE"]),
    Case("set-cores-text", ["config", "--set", "cores=abc"], ["cores", "'abc'", "1..64"]),
    Case("set-cores-fraction", ["config", "--set", "cores=2.5"], ["cores", "2.5", "1..64"]),
    Case("set-cores-bool", ["config", "--set", "cores=true"], ["cores", "True", "1..64"]),
    Case("set-latency-nan", ["config", "--set", "pm.read_ns=NaN"], ["read_ns", "nan", ">= 0"]),
    Case("set-latency-huge", ["config", "--set", "pm.read_ns=1e12"], ["read_ns", "1000000000000.0", "1e+09"]),
    Case("set-cache-size-cap", ["config", "--set", "cache.llc.size_kib=1048576"],
         ["size_kib", "1048576", "1..262144"]),
    Case("set-cache-not-power-of-two", ["config", "--set", "cache.l1.size_kib=48"],
         ["size_kib", "power of two"]),
    Case("set-cache-ways-0", ["config", "--set", "cache.l1.ways=0"], ["ways", "got 0", "1..1024"]),
    Case("set-cache-total", ["config", "--cores", "64", "--set", "cache.l2.size_kib=65536"],
         ["cache", "64 cores", "1 GiB"]),
    Case("set-quantum-0", ["config", "--set", "quantum_ns=0"], ["quantum_ns", "0", "> 0"]),
    Case("set-seed-negative", ["config", "--set", "seed=-3"], ["seed", "-3", "0..2**64-1"]),
    Case("set-pm-region-64-bytes", ["config", "--set", "regions.0.size=64"],
         ["regions[0]", "64 bytes", "4 KiB", "--set regions.0.size=4096"]),
    # --config files
    Case("config-file-missing", ["config", "--config", "{d}/nope.json"],
         ["nope.json", "does not exist", ".json or .yaml"]),
    Case("config-file-directory", ["config", "--config", "{d}/cfg.json"],
         ["cfg.json", "is a directory"], {"cfg.json": DIR}),
    Case("config-file-devnull", ["config", "--config", os.devnull],
         [os.devnull, "not a regular file"]),
    Case("config-file-extension", ["config", "--config", "{d}/cfg.txt"],
         ["cfg.txt", "'.txt'", ".json, .yaml or .yml"], {"cfg.txt": "cores: 2\n"}),
    Case("config-file-bad-json", ["config", "--config", "{d}/cfg.json"],
         ["cfg.json", "not valid JSON"], {"cfg.json": '{"cores": 2,'}),
    Case("config-file-bad-yaml", ["config", "--config", "{d}/cfg.yaml"],
         ["cfg.yaml", "not valid YAML"], {"cfg.yaml": "cores: [2\n"}),
    Case("config-file-empty", ["config", "--config", "{d}/cfg.yaml"],
         ["cfg.yaml", "is empty", "cores: 4"], {"cfg.yaml": "\n"}),
    Case("config-file-not-utf8", ["config", "--config", "{d}/cfg.json"],
         ["cfg.json", "not UTF-8"], {"cfg.json": b'{"cores": "\xff\xfe"}'}),
    Case("config-file-list", ["config", "--config", "{d}/cfg.json"],
         ["cfg.json", "mapping", "list"], {"cfg.json": "[1, 2]"}),
    Case("config-file-unknown-field", ["config", "--config", "{d}/cfg.yaml"],
         ["'corse'", "Did you mean 'core', 'cores'"], {"cfg.yaml": "corse: 4\n"}),
    Case("config-file-section-not-mapping", ["config", "--config", "{d}/cfg.yaml"],
         ["pm", "mapping", "int"], {"cfg.yaml": "pm: 5\n"}),
    Case("config-file-deeply-nested", ["config", "--config", "{d}/cfg.json"],
         ["cfg.json", "nested too deeply"], {"cfg.json": "[" * 100_000 + "]" * 100_000}),
    Case("config-file-1TiB-region", ["config", "--config", "{d}/cfg.yaml"],
         ["Region.size", TIB, "4 GiB"],
         {"cfg.yaml": f"regions:\n- {{name: pm, base: 0, size: {TIB}, kind: pm}}\n"}),
    Case("config-file-nan", ["config", "--config", "{d}/cfg.json"],
         ["barrier_ns", "nan"], {"cfg.json": '{"barrier_ns": NaN}'}),
    Case("config-file-yaml-nan", ["config", "--config", "{d}/cfg.yaml"],
         ["read_ns", "nan"], {"cfg.yaml": "pm: {read_ns: .nan}\n"}),
    Case("config-file-full-then-bad-set", ["config", "--config", "{d}/cfg.json", "--set",
                                           "pm.banks=0"], ["banks", "got 0"], {"cfg.json": FULL}),
    # pmsim machine
    Case("machine-ops-0", ["machine", "--ops", "0"], ["--ops", "got 0", "1..1000000"]),
    Case("machine-ops-huge", ["machine", "--ops", "100000000"], ["--ops", "100000000", "1..1000000"]),
    Case("machine-pm-too-small-for-cores", ["machine", "--cores", "64", "--ops", "10"],
         ["op stream", "--set regions.0.size=", "--cores"]),
    Case("machine-backend", ["machine", "--backend", "fortran"], ["--backend", "'fortran'", "'c'"]),
    # pmsim run
    Case("run-threads-above-cores", ["run", "--threads", "3", "--cores", "2", "--txs", "2"],
         ["--threads 3", "--cores 2", "--cores 3"]),
    Case("run-threads-above-preset-cores", ["run", "--threads", "3", "--txs", "2"],
         ["--threads 3", "--preset default", "2 cores", "--cores 3"]),
    Case("run-threads-above-preset-cores-named", ["run", "--threads", "5", "--preset",
                                                  "proteus-marss", "--txs", "2"],
         ["--threads 5", "--preset proteus-marss", "4 cores", "--cores 5"]),
    Case("run-threads-65", ["run", "--threads", "65"], ["--threads", "65", "1..64"]),
    Case("run-threads-0", ["run", "--threads", "0"], ["--threads", "got 0", "1..64"]),
    Case("run-txs-0", ["run", "--txs", "0"], ["--txs", "got 0", ">= 1"]),
    Case("run-txs-text", ["run", "--txs", "many"], ["--txs", "'many'", ">= 1"]),
    Case("run-warmup-negative", ["run", "--warmup", "-1"], ["--warmup", "-1", ">= 0"]),
    Case("run-runtime-unknown", ["run", "--runtime", "undoo"], ["'undoo'", "Did you mean 'undo'"]),
    Case("run-runtime-path", ["run", "--runtime", "/abs/path"], ["'/abs/path'", "Known runtimes"]),
    Case("run-workload-unknown", ["run", "--workload", "alloc_x"], ["'alloc_x'", "'alloc-x'"]),
    Case("run-param-no-equals", ["run", "-p", "slots"], ["'slots'", "KEY=VALUE"]),
    Case("run-param-unknown", ["run", "-p", "slotz=4"], ["'slotz'", "Did you mean 'slots'"]),
    Case("run-param-fraction-for-int", ["run", "-p", "slot_words=2.7", "--txs", "2"],
         ["slot_words", "2.7", "integer"]),
    Case("run-param-nan", ["run", "-p", "write_pct=nan", "--txs", "2"],
         ["write_pct", "nan", "finite number"]),
    Case("run-param-text-for-float", ["run", "-p", "write_pct=lots"], ["write_pct", "'lots'", "float"]),
    Case("run-param-list", ["run", "-p", "slots=[1]"], ["slots", "[1]", "integer"]),
    Case("run-param-huge-array", ["run", "-p", "slots=10000000000", "--txs", "2"],
         ["slots=10000000000", "2**28 words", "slots <= 67108864"]),
    Case("run-param-range", ["run", "-p", "write_pct=200"], ["write_pct=200", "[0, 100]"]),
    Case("run-param-kv-keys", ["run", "--workload", "kv", "-p", "keys=0"], ["keys=0", ">= 1"]),
    Case("run-param-bank-accounts", ["run", "--workload", "bank", "-p", "accounts=1000000000"],
         ["accounts=1000000000", "2**18"]),
    Case("run-param-alloc-x-max-bytes", ["run", "--workload", "alloc-x", "-p", "max_bytes=5000"],
         ["max_bytes=5000", "4096"]),
    Case("run-json-missing-dir", ["run", "--txs", "2", "--json", "{d}/no/such/r.json"],
         ["--json", "r.json", "does not exist"]),
    Case("run-csv-missing-dir", ["run", "--txs", "2", "--csv", "{d}/no/such/r.csv"],
         ["--csv", "r.csv", "does not exist"]),
    Case("run-json-is-directory", ["run", "--txs", "2", "--json", "{d}/out"],
         ["--json", "out", "is a directory"], {"out": DIR}),
    # pmsim compare / reproduce / table: lists that name nothing, --jobs, output paths first
    Case("compare-runtimes-empty", ["compare", "--runtimes", ""],
         ["--runtimes ''", "names nothing", "leave --runtimes out"]),
    Case("compare-workloads-only-commas", ["compare", "--workloads", ",", " "],
         ["--workloads", "names nothing"]),
    Case("compare-domains-empty", ["compare", "--domains", ""], ["--domains", "names nothing"]),
    Case("reproduce-only-empty", ["reproduce", "marathe", "--only", ""],
         ["--only ''", "names nothing"]),
    Case("compare-jobs-huge", ["compare", "--jobs", "100000"], ["--jobs", "100000", "1..256"]),
    Case("reproduce-jobs-huge", ["reproduce", "marathe", "--jobs", "100000"],
         ["--jobs", "100000", "1..256", "CPUs"]),
    Case("reproduce-jobs-0", ["reproduce", "marathe", "--jobs", "0"], ["--jobs", "got 0", "1..256"]),
    Case("compare-out-missing-dir", [*COMPARE, "--out", "{d}/no/such/t.md"],
         ["--out", "t.md", "does not exist"]),
    Case("compare-out-is-directory", [*COMPARE, "--out", "{d}/t"], ["--out", "is a directory"],
         {"t": DIR}),
    Case("compare-out-under-a-file", [*COMPARE, "--out", "{d}/f/t.md"],
         ["--out", "is not a directory"], {"f": "x"}),
    Case("reproduce-out-is-a-file", ["reproduce", "marathe", "--out", "{d}/f"],
         ["--out", "is a file"], {"f": "x"}),
    Case("reproduce-out-under-a-file", ["reproduce", "marathe", "--out", "{d}/f/res"],
         ["--out", "is a file", "cannot be created"], {"f": "x"}),
    Case("reproduce-markdown-is-directory", ["reproduce", "marathe", "--out", "{d}/res",
                                             "--markdown", "{d}/md"],
         ["--markdown", "is a directory"], {"md": DIR}),
    Case("reproduce-markdown-under-a-file", ["reproduce", "marathe", "--out", "{d}/res",
                                             "--markdown", "{d}/f/r.md"],
         ["--markdown", "is not a directory"], {"f": "x"}),
    Case("table-write-markdown-under-a-file", ["table", "{d}/r", "--write", "--markdown",
                                               "{d}/f/r.md"],
         ["--markdown", "is not a directory"], {"r/results.json": results(), "f": "x"}),
    # pmsim table: the results file is checked field by field
    table("not-an-object", ["JSON list", "meta and papers"], "[1, 2]"),
    table("meta-int", ["'meta' = 7", "mapping"], results(meta=7)),
    table("meta-field", ["meta.seconds", "'slow'", "number"],
          results(meta={**META, "seconds": "slow"})),
    table("meta-only", ["meta.only", "'fig4'", "list of experiment names"],
          results(meta={**META, "only": "fig4"})),
    table("papers-list", ["'papers'", "list", "mapping of paper name"], results(papers=[1])),
    table("paper-string", ["papers.marathe", "'abc'", "list of rows"],
          results(papers={"marathe": "abc"})),
    table("row-not-a-mapping", ["papers.marathe[0]", "int", "not a row"],
          results(papers={"marathe": [5]})),
    table("latency-string", ["papers.marathe[0]", "'lat_p50' = 'fast'", "number in [0, 1e+18]"],
          results(row={"lat_p50": "fast"})),
    table("latency-huge", ["'lat_p99' = 1e+308", "number in [0, 1e+18]"],
          results(row={"lat_p99": 1e308})),
    table("latency-negative", ["'throughput' = -1", "number"], results(row={"throughput": -1})),
    table("metric-missing", ["'sim_ns' is missing"], results(row={"sim_ns": None}).replace(
        '"sim_ns": null, ', "")),
    table("runtime-null", ["'runtime' = None", "non-empty string"], results(row={"runtime": None})),
    table("paper-field-int", ["'paper' = 3", "string"], results(row={"paper": 3})),
    table("paper-mismatch", ["'paper' = 'other'", "filed under"], results(row={"paper": "other"})),
    table("threads-zero", ["'threads' = 0", ">= 1"], results(row={"threads": 0})),
    table("unified-not-mapping", ["'unified'", "list of rows under 'rows'"], results(unified=3)),
    table("unified-row", ["unified.rows[0]", "'domain' = ''"],
          results(unified={"rows": [{**ROW, "domain": ""}]})),
    # pmsim demo
    Case("demo-txs-0", ["demo", "--txs", "0"], ["--txs", "got 0", ">= 1"]),
    Case("demo-txs-negative", ["demo", "--txs", "-5"], ["--txs", "-5", ">= 1"]),
    Case("demo-write-pct-200", ["demo", "--write-pct", "200"], ["--write-pct", "200", "[0, 100]"]),
    Case("demo-write-pct-nan", ["demo", "--write-pct", "nan"], ["--write-pct", "nan", "[0, 100]"]),
    Case("demo-backend", ["demo", "--backend", "gpu"], ["--backend", "'gpu'", "'python'"]),
    # the program itself
    Case("no-command", [], ["command"]),
    Case("unknown-command", ["simulate"], ["'simulate'", "presets"]),
]


@pytest.mark.parametrize("case", params(CLI))
def test_pmsim_cli_bad_input(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_files(tmp_path, case.files)
    argv = [a.replace("{d}", str(tmp_path)) for a in case.argv]
    rc, out, err = run_cli(main, argv, capsys)
    assert_clean_error(rc, out, err, "pmsim", case.needles)


def test_set_indexes_regions(capsys: pytest.CaptureFixture[str]) -> None:
    """`--set regions.N.field=VALUE` reaches into the address map (it used to crash)."""
    rc, out, _ = run_cli(main, ["config", "--format", "json", "--set", "regions.0.size=4096"],
                         capsys)
    assert rc == 0 and json.loads(out)["regions"][0]["size"] == 4096


def test_config_file_applies_over_preset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--config sets only its own fields over --preset (a full config replaces the preset)."""
    (tmp_path / "c.yaml").write_text("pm: {wpq_entries: 8}\ncores: 3\n")
    rc, out, _ = run_cli(main, ["config", "--preset", "optane-adr", "--config",
                                str(tmp_path / "c.yaml"), "--format", "json"], capsys)
    assert rc == 0
    want = preset("optane-adr").replace(**{"pm.wpq_entries": 8, "cores": 3})
    assert MachineConfig.from_dict(json.loads(out)) == want
    (tmp_path / "full.json").write_text(FULL)
    rc, out, _ = run_cli(main, ["config", "--preset", "optane-adr", "--config",
                                str(tmp_path / "full.json"), "--format", "json"], capsys)
    assert rc == 0 and MachineConfig.from_dict(json.loads(out)) == MachineConfig()


def test_config_table_documents_the_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(main, ["config"], capsys)
    assert rc == 0
    for bound in ("at most 4 GiB", "at most 4096", "at most 64", "0..2**64-1", "1e9 ns",
                  "262144"):
        assert bound in out, bound


# -- the public API -----------------------------------------------------------------------------
def _m(backend: str = "python", timed: bool = True) -> Machine:
    return Machine(MachineConfig(cores=2), backend=backend, timed=timed)


API: list[tuple[str, Callable[[], Any], list[str], str]] = [
    # MachineConfig and its parts
    ("MachineConfig-seed-negative", lambda: MachineConfig(seed=-1), ["seed", "-1", "0..2**64-1"], ""),
    ("MachineConfig-seed-float", lambda: MachineConfig(seed=1.5), ["seed", "1.5", "integer"], ""),
    ("MachineConfig-seed-bool", lambda: MachineConfig(seed=True), ["seed", "True"], ""),
    ("MachineConfig-cores-text", lambda: MachineConfig(cores="2"), ["cores", "'2'", "integer"], ""),
    ("MachineConfig-cores-65", lambda: MachineConfig(cores=65), ["cores", "65", "at most 64"], ""),
    ("MachineConfig-domain", lambda: MachineConfig(domain="pdom3"), ["'pdom3'", "pdom0"], ""),
    ("MachineConfig-barrier", lambda: MachineConfig(barrier="fast"), ["'fast'", "'fixed'"], ""),
    ("MachineConfig-barrier-ns-inf", lambda: MachineConfig(barrier_ns=math.inf),
     ["barrier_ns", "inf", ">= 0"], ""),
    ("MachineConfig-quantum-negative", lambda: MachineConfig(quantum_ns=-1.0),
     ["quantum_ns", "-1.0", "> 0"], ""),
    ("MachineConfig-pm-dict", lambda: MachineConfig(pm={"banks": 4}),
     ["MachineConfig.pm", "PMConfig", "dict"], ""),
    ("MachineConfig-cache-none", lambda: MachineConfig(cache=None),
     ["MachineConfig.cache", "CacheConfig", "NoneType"], ""),
    ("MachineConfig-regions-of-dicts", lambda: MachineConfig(regions=({"name": "pm"},)),
     ["regions[0]", "Region", "dict"], ""),
    ("MachineConfig-regions-none", lambda: MachineConfig(regions=None), ["regions", "None", "Region"],
     ""),
    ("MachineConfig-too-many-regions",
     lambda: MachineConfig(regions=tuple(Region(f"r{i}", i * 64, 64, "pm") for i in range(65))),
     ["regions", "65 regions", "at most 64"], ""),
    ("CacheConfig-level-tuple", lambda: CacheConfig(l1=(32, 8, 1.5)), ["l1", "CacheLevel", "tuple"], ""),
    ("CacheLevel-size-cap", lambda: CacheLevel(1 << 30, 8, 1.0), ["size_kib", str(1 << 30), "1..262144"],
     ""),
    ("CacheLevel-ways-above-lines", lambda: CacheLevel(1, 32, 1.0), ["ways", "32"], ""),
    ("CacheLevel-latency-nan", lambda: CacheLevel(32, 8, math.nan), ["latency_ns", "nan"], ""),
    ("PMConfig-banks-1e9", lambda: PMConfig(banks=10**9), ["banks", "1000000000", "1..4096"], ""),
    ("PMConfig-wpq-2**32", lambda: PMConfig(wpq_entries=1 << 32), ["wpq_entries", "1..4096"], ""),
    ("PMConfig-read-ns-text", lambda: PMConfig(read_ns="300"), ["read_ns", "'300'"], ""),
    ("DRAMConfig-latency-negative", lambda: DRAMConfig(-1.0), ["latency_ns", "-1.0", ">= 0"], ""),
    ("CostConfig-store-ns-huge", lambda: CostConfig(store_ns=1e20), ["store_ns", "1e+20", "1e+09"], ""),
    ("Region-1TiB", lambda: Region("pm", 0, 1 << 40, "pm"), ["size", TIB, "4 GiB"], ""),
    ("Region-base-negative", lambda: Region("pm", -64, 64, "pm"), ["base", "-64", "multiple of 64"], ""),
    ("Region-base-bool", lambda: Region("pm", True, 64, "pm"), ["base", "True"], ""),
    ("Region-size-float", lambda: Region("pm", 0, 4096.0, "pm"), ["size", "4096.0", "multiple of 64"],
     ""),
    ("Region-name-empty", lambda: Region("", 0, 64, "pm"), ["name", "''", "non-empty"], ""),
    ("Region-above-2**52", lambda: Region("pm", 1 << 60, 64, "pm"), ["base", "2**52"], ""),
    ("from_dict-not-a-mapping", lambda: MachineConfig.from_dict([1, 2]), ["mapping", "list"], ""),
    ("from_dict-unknown-nested", lambda: MachineConfig.from_dict({"pm": {"bankz": 3}}),
     ["'bankz'", "Did you mean 'banks'"], ""),
    ("from_json-invalid", lambda: MachineConfig.from_json("{"), ["not valid JSON"], ""),
    ("from_yaml-invalid", lambda: MachineConfig.from_yaml("a: [1"), ["not valid YAML"], ""),
    ("load-missing", lambda: MachineConfig.load("no-such-config.yaml"),
     ["no-such-config.yaml", "does not exist"], ""),
    ("replace-scalar-as-section", lambda: MachineConfig().replace(**{"seed.x": 1}),
     ["seed.x", "not a section"], ""),
    ("replace-region-index", lambda: MachineConfig().replace(**{"regions.9.size": 64}),
     ["regions.9.size", "2 entries"], ""),
    ("preset-unknown", lambda: preset("optane"), ["'optane'", "Known presets"], ""),
    ("preset-not-a-string", lambda: preset(5), ["5", "Known presets"], ""),
    # Machine
    ("Machine-unknown-preset-name", lambda: Machine("optane-ard"), ["'optane-ard'", "optane-adr"], ""),
    ("Machine-config-int", lambda: Machine(5), ["5", "MachineConfig or a preset name"], ""),
    ("Machine-config-dict", lambda: Machine({"cores": 2}), ["dict", "MachineConfig"], ""),
    ("Machine-backend", lambda: Machine(backend="gpu"), ["'gpu'", "'c' or 'python'"], ""),
    ("Machine-timed-text", lambda: Machine(timed="no"), ["timed", "'no'", "True or False"], ""),
    ("Machine-cpu-text", lambda: _m().cpu("0"), ["thread 0", "threads 0..1"], ""),
    ("Machine-cpu-out-of-range", lambda: _m().cpu(2), ["thread 2", "threads 0..1"], ""),
    ("Machine-cpu-negative", lambda: _m().cpu(-1), ["thread -1", "threads 0..1"], ""),
    ("Machine-cpu-float", lambda: _m().cpu(1.0), ["thread 1.0", "threads 0..1"], ""),
    ("Machine-cpu-bool", lambda: _m().cpu(True), ["thread True", "threads 0..1"], ""),
    ("Machine-peek-float", lambda: _m().peek(0.0), ["address 0.0", "integer"], ""),
    ("Machine-poke-float-value", lambda: _m().poke(0, 1.5), ["value 1.5", "0..2**64-1"], ""),
    ("Machine-poke-negative-value", lambda: _m().poke(0, -1), ["value -1", "0..2**64-1"], ""),
    ("Machine-pm-words-negative-n", lambda: _m().pm_words(0, -1), ["-1", "an int >= 0"], ""),
    ("Machine-peek-bytes-past-end", lambda: _m().peek_bytes((1 << 24) - 8, 64),
     ["peek_bytes", "past the end", "'pm'"], ""),
    ("Machine-load-pm-image-float",
     lambda: _m().load_pm_image(np.zeros(1 << 24, dtype=np.float64)), ["float64", "uint8"], ""),
    ("Machine-load-pm-image-list", lambda: _m().load_pm_image([0] * 8), ["list", "uint8"], ""),
    ("Machine-load-pm-image-size", lambda: _m().load_pm_image(np.zeros(64, dtype=np.uint8)),
     ["64 bytes", str(1 << 24)], ""),
    ("Machine-power-cycle-image", lambda: _m().power_cycle(np.zeros((2, 8), dtype=np.uint8)),
     ["shape (2, 8)", "1-D uint8"], ""),
    ("Machine-run-until-past", lambda: _m().run(until=-1), ["until=-1", "after the current time"], ""),
    ("Machine-run-until-nan", lambda: _m().run(until=math.nan), ["until=nan", "finite"], ""),
    ("Machine-spawn-not-generator", lambda: _m().spawn(lambda cpu: None, 0),
     ["returned NoneType", "generator"], ""),
    ("Machine-spawn-bad-thread", lambda: _m().spawn(lambda cpu: iter(()), 5), ["thread 5"], ""),
    ("Machine-count-unknown", lambda: _m().count("storez"), ["'storez'", "stores"], ""),
    ("Cpu-flush-range-kind", lambda: _m().cpu(0).flush_range(0, 64, "clean"),
     ["'clean'", "'clwb'"], ""),
    ("Cpu-flush-range-n-float", lambda: _m().cpu(0).flush_range(0, 6.4), ["6.4", "an int >= 0"], ""),
    ("Cpu-load-words-n-float", lambda: _m().cpu(0).load_words(0, 1.5), ["1.5", "an int >= 0"], ""),
    ("Cpu-store-bytes-text", lambda: _m().cpu(0).store_bytes(0, "abc"), ["str", "bytes"], ""),
    ("Cpu-load-bytes-negative", lambda: _m().cpu(0).load_bytes(0, -3), ["-3", "an int >= 0"], ""),
    # workloads' parameters
    ("array-write-pct-nan", lambda: get_workload("array")(write_pct=math.nan),
     ["write_pct=nan", "finite number"], ""),
    ("array-write-pct-inf", lambda: get_workload("array")(write_pct=math.inf),
     ["write_pct=inf", "finite number"], ""),
    ("array-slots-text", lambda: get_workload("array")(slots="many"), ["slots='many'", "int"], ""),
    ("array-slot-words-float", lambda: get_workload("array")(slot_words=2.7),
     ["slot_words", "2.7", "integer"], ""),
    ("array-slot-words-text-fraction", lambda: get_workload("array")(slot_words="2.7"),
     ["slot_words", "2.7", "integer"], ""),
    ("array-slots-huge", lambda: get_workload("array")(slots=10**10),
     ["slots=10000000000", "slots <= 67108864"], ""),
    ("array-per-tx-huge", lambda: get_workload("array")(slots=10**6, per_tx=10**6),
     ["per_tx=1000000", "per_tx <= 262144"], ""),
    ("array-locks-huge", lambda: get_workload("array")(slots=10**6, lock_stripe=1),
     ["lock_stripe=1", "lock_stripe >= 4"], ""),
    ("array-per-tx-0", lambda: get_workload("array")(per_tx=0), ["per_tx=0", ">= 1"], ""),
    ("kv-get-pct-inf", lambda: get_workload("kv")(get_pct=math.inf), ["get_pct=inf", "finite"], ""),
    ("kv-put-pct-over", lambda: get_workload("kv")(get_pct=80.0, put_pct=30.0),
     ["put_pct=30.0", "[0, 20.0]"], ""),
    ("kv-buckets-huge", lambda: get_workload("kv")(buckets=10**9), ["buckets=1000000000", "2**18"], ""),
    ("kv-keys-huge", lambda: get_workload("kv")(keys=10**9), ["keys=1000000000", "2**24"], ""),
    ("kv-keys-bool", lambda: get_workload("kv")(keys=True), ["keys", "True", "integer"], ""),
    ("bank-accounts-1", lambda: get_workload("bank")(accounts=1), ["accounts=1", ">= 2"], ""),
    ("bank-accounts-huge", lambda: get_workload("bank")(accounts=10**9),
     ["accounts=1000000000", "2**18"], ""),
    ("bank-max-amount-0", lambda: get_workload("bank")(max_amount=0), ["max_amount=0", "[1,"], ""),
    ("alloc-x-groups-huge", lambda: get_workload("alloc-x")(groups=10**9),
     ["groups=1000000000", "256 MiB", "groups <= "], ""),
    ("alloc-x-abort-pct-nan", lambda: get_workload("alloc-x")(abort_pct=math.nan),
     ["abort_pct=nan", "finite"], ""),
    ("alloc-x-x-0", lambda: get_workload("alloc-x")(x=0), ["x=0", "[1, 256]"], ""),
    ("workload-unknown-param", lambda: get_workload("bank")(acounts=4),
     ["'acounts'", "Did you mean 'accounts'"], ""),
    # run_experiment / run_comparison
    ("run_experiment-threads-0", lambda: run_experiment("undo", "array", threads=0),
     ["threads", "1..64", "got 0"], ""),
    ("run_experiment-txs-float", lambda: run_experiment("undo", "array", txs=2.5),
     ["txs", ">= 1", "2.5"], ""),
    ("run_experiment-warmup-negative", lambda: run_experiment("undo", "array", warmup=-1),
     ["warmup", ">= 0", "-1"], ""),
    ("run_experiment-seed-negative", lambda: run_experiment("undo", "array", seed=-1),
     ["seed", "-1", "0..18446744073709551615"], ""),
    ("run_experiment-config-unknown-preset", lambda: run_experiment("undo", "array", "optane"),
     ["'optane'", "Known presets"], ""),
    ("run_experiment-config-dict", lambda: run_experiment("undo", "array", {"cores": 1}),
     ["config", "MachineConfig or a preset name", "dict"], ""),
    ("run_experiment-params-text", lambda: run_experiment("undo", "array", params="slots=4"),
     ["params", "mapping", "'slots=4'"], ""),
    ("run_experiment-backend", lambda: run_experiment("undo", "array", txs=1, backend="gpu"),
     ["'gpu'", "'c' or 'python'"], ""),
    ("run_comparison-txs-0", lambda: run_comparison(txs=0), ["txs", ">= 1", "got 0"], ""),
    ("MachineConfig-pm-region-64-bytes", lambda: MachineConfig(regions=(Region("pm", 0, 64, "pm"),)),
     ["regions[0]", "64 bytes", "4 KiB"], ""),
    ("run_sweep-jobs-huge", lambda: run_sweep(sweep_point, [{"i": 0}], jobs=100_000),
     ["jobs=100000", "at most 256"], ""),
    ("run_sweep-jobs-float", lambda: run_sweep(sweep_point, [{"i": 0}], jobs=2.0),
     ["jobs=2.0", "1..256"], ""),
]


@pytest.mark.parametrize("make, needles", [
    pytest.param(f, n, id=i, marks=[pytest.mark.xfail(strict=True, reason=x)] if x else [])
    for i, f, n, x in API])
def test_pmsim_api_bad_input(make: Callable[[], Any], needles: list[str]) -> None:
    with pytest.raises(PmsimError) as ei:
        make()
    assert_error_names(ei.value, needles)


def test_a_valid_results_file_renders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The schema accepts what `pmsim reproduce` writes: the minimal file above and NaN
    metrics (a run with none)."""
    (tmp_path / "results.json").write_text(results(row={"ack_p99": math.nan}))
    rc, out, err = run_cli(main, ["table", str(tmp_path), "--what", "rows"], capsys)
    assert rc == 0, err
    assert "undo" in out


def test_compare_out_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The up-front check accepts a new file in an existing directory."""
    out = tmp_path / "t.md"
    rc, _, err = run_cli(main, [*COMPARE, "--format", "md", "--out", str(out)], capsys)
    assert rc == 0, err
    assert out.read_text().startswith("| runtime")


# -- the sweep cache: a cached row is input, checked before it is used ---------------------------
def sweep_point(point: dict[str, Any]) -> dict[str, Any]:
    """A point function that leaves a mark per call in ``point['d']`` (when given)."""
    if "d" in point:
        (Path(point["d"]) / f"call-{point['i']}-{os.getpid()}-{len(os.listdir(point['d']))}"
         ).touch()
    return {"runtime": "undo", "lat_p50": 100.0 + point["i"], "commits": point["i"]}


def _set_row(**fields: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda doc: doc["row"].update(fields)


TAMPER: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    ("latency-nan", _set_row(lat_p50=math.nan), "checksum"),
    ("latency-1e308", _set_row(lat_p50=1e308), "checksum"),
    ("latency-text", _set_row(lat_p50="fast"), "checksum"),
    ("empty-row", lambda doc: doc.update(row={}), "checksum"),
    ("row-a-list", lambda doc: doc.update(row=[1]), "list as its row"),
    ("no-checksum", lambda doc: doc.pop("row_sha256") and None, "checksum"),
    ("other-key", lambda doc: doc.update(key="0" * 64), "names another point"),
    ("truncated", lambda doc: "{\"key\": \"", "not valid JSON"),
    ("json-list", lambda doc: [doc], "holds a JSON list"),
]


@pytest.mark.parametrize("tamper, why", [pytest.param(t, w, id=i) for i, t, w in TAMPER])
def test_a_tampered_cache_row_is_recomputed_and_reported(
        tamper: Callable[[dict[str, Any]], Any], why: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A cached row that fails its checks is not used: the point is recomputed (the rows equal
    a fresh run's), the file is named on stderr with the reason and the fix, and it is
    overwritten; every other cached row is still used (nothing computed is lost)."""
    calls, cache = tmp_path / "calls", tmp_path / "cache"
    calls.mkdir()
    pts = [{"i": i, "d": str(calls)} for i in range(3)]
    rows = run_sweep(sweep_point, pts, executor="serial", cache=cache, progress=False)
    f = cache / f"{__name__}.sweep_point" / f"{point_key(sweep_point, pts[1])}.json"
    doc = json.loads(f.read_text())
    out = tamper(doc)
    f.write_text(out if isinstance(out, str) else json.dumps(doc if out is None else out))
    for c in calls.iterdir():
        c.unlink()
    capsys.readouterr()
    assert run_sweep(sweep_point, pts, executor="serial", cache=cache, progress=False) == rows
    err = capsys.readouterr().err
    assert [c.name.split("-")[1] for c in calls.iterdir()] == ["1"], "only the bad row reran"
    assert err.startswith("pmsim: warning: 1 cached row(s) not used, recomputed and overwritten")
    for needle in (str(f), why, f"Delete the cache directory '{f.parent}'"):
        assert needle in err, (needle, err)
    assert run_sweep(sweep_point, pts, executor="serial", cache=cache, progress=False) == rows
    assert capsys.readouterr().err == "", "the recomputed row was written back"


def test_an_empty_cached_row_of_a_paper_point_is_recomputed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`{}` cached under a valid key of a paper's point used to raise KeyError 'paper'."""
    from pmsim.experiments.claims import Paper, get_paper
    from pmsim.experiments.reproduce import run_papers

    paper = get_paper("marathe")
    exp = paper.experiments[0].name
    pts = paper.points(True, 0.01, [exp])[:1]
    monkeypatch.setattr(Paper, "points", lambda self, *a: pts)  # one point is enough
    kw: dict[str, Any] = {"executor": "serial", "cache": tmp_path, "progress": False}
    want = run_papers([paper], True, 0.01, [exp], **kw)
    f, = tmp_path.glob("*/*.json")
    f.write_text(json.dumps({**json.loads(f.read_text()), "row": {}}))
    capsys.readouterr()
    assert without_wall_clock(run_papers([paper], True, 0.01, [exp], **kw)["marathe"]) == \
        without_wall_clock(want["marathe"])
    assert str(f) in capsys.readouterr().err


def test_machine_takes_a_preset_name() -> None:
    assert Machine("optane-adr").config == preset("optane-adr")


# -- the engines: both backends, timed and functional, reject the same inputs alike -------------
PM = 0  # the default PM region starts at 0
ENGINE = [
    ("store-float-value", "store", (PM, 1.5), ["value 1.5", "not an integer", "0..2**64-1"]),
    ("store-integral-float-value", "store", (PM, 2.0), ["value 2.0", "not an integer"]),
    ("store-negative-value", "store", (PM, -1), ["value -1", "0..2**64-1", "mask"]),
    ("store-value-2**64", "store", (PM, 1 << 64), [f"value {1 << 64}", "0..2**64-1"]),
    ("store-text-value", "store", (PM, "5"), ["value '5'", "str"]),
    ("store-none-value", "store", (PM, None), ["value None", "NoneType"]),
    ("store-fraction-value", "store", (PM, fractions.Fraction(3, 2)), ["value Fraction(3, 2)"]),
    ("store-numpy-float-value", "store", (PM, np.float64(3.0)), ["not an integer"]),
    ("store-numpy-negative-value", "store", (PM, np.int64(-3)), ["value -3", "0..2**64-1"]),
    ("store-float-address", "store", (0.0, 1), ["address 0.0", "8-byte aligned int address"]),
    ("store-text-address", "store", ("0", 1), ["address '0'", "str"]),
    ("store-unaligned", "store", (PM + 3, 1), ["0x3", "8-byte aligned"]),
    ("store-outside-regions", "store", (1 << 70, 1), ["outside every region"]),
    ("store-negative-address", "store", (-8, 1), ["-0x8", "outside every region"]),
    ("store-bad-address-before-bad-value", "store", (PM + 4, 1.5), ["0x4", "8-byte aligned"]),
    ("ntstore-float-value", "ntstore", (PM, 0.5), ["value 0.5", "not an integer"]),
    ("cas-float-expected", "cas", (PM, 1.5, 2), ["expected value 1.5", "not an integer"]),
    ("cas-negative-new", "cas", (PM, 0, -1), ["value -1", "0..2**64-1"]),
    ("xchg-value-2**64", "xchg", (PM, 1 << 64), ["0..2**64-1"]),
    ("load-float-address", "load", (8.0,), ["address 8.0", "not an integer"]),
    ("load-unaligned", "load", (PM + 1,), ["0x1", "8-byte aligned"]),
    ("clwb-text-address", "clwb", ("x",), ["address 'x'", "str"]),
    ("clflush-outside", "clflush", (1 << 70,), ["outside every region"]),
    ("clflushopt-float", "clflushopt", (64.5,), ["address 64.5"]),
    ("work-negative", "work", (-100,), ["work(-100)", "[0, 1e+12]", "backwards"]),
    ("work-nan", "work", (math.nan,), ["work(nan)", "[0, 1e+12]"]),
    ("work-inf", "work", (math.inf,), ["work(inf)", "[0, 1e+12]"]),
    ("work-huge", "work", (1e300,), ["work(1e+300)", "[0, 1e+12]"]),
    ("work-huge-int", "work", (10**400,), ["[0, 1e+12]"]),
    ("work-text", "work", ("5",), ["work('5')", "number of ns", "str"]),
    ("work-none", "work", (None,), ["work(None)", "NoneType"]),
    ("work-bool", "work", (True,), ["work(True)", "bool"]),
    ("mark-code-2**32", "mark", (1 << 32, 1), ["marker code 4294967296", "0..2**32-1"]),
    ("mark-negative-value", "mark", (1, -1), ["marker value -1", "0..2**64-1"]),
    ("mark-float-code", "mark", (1.0, 1), ["marker code 1.0", "not an integer"]),
]


def _state(m: Machine) -> tuple[Any, ...]:
    return (m.pm_image().tobytes(), m.engine.trace().tobytes(), m.stats().tobytes())


def _engine_error(backend: str, timed: bool, method: str, args: tuple[Any, ...]) -> str:
    m = _m(backend, timed)
    cpu = m.cpu(0)
    cpu.store(PM + 64, 7)
    before = _state(m)
    with pytest.raises(PmsimError) as ei:
        getattr(cpu, method)(*args)
    assert _state(m) == before, "a rejected instruction changed the machine"
    assert cpu.clock == m.cpu(0).clock and math.isfinite(cpu.clock)
    return str(ei.value)


@pytest.mark.parametrize("timed", [True, False], ids=["timed", "functional"])
@pytest.mark.parametrize("method, args, needles", [pytest.param(m, a, n, id=i)
                                                   for i, m, a, n in ENGINE])
def test_engine_rejects_bad_operands(backend: str, timed: bool, method: str, args: tuple[Any, ...],
                                     needles: list[str]) -> None:
    msg = _engine_error(backend, timed, method, args)
    for n in needles:
        assert n in msg, f"{n!r} not in {msg!r}"


@pytest.mark.skipif(len(BACKENDS) < 2, reason="the C core is not built")
@pytest.mark.parametrize("method, args", [pytest.param(m, a, id=i) for i, m, a, _ in ENGINE])
def test_backends_raise_the_same_error(method: str, args: tuple[Any, ...]) -> None:
    msgs = {(b, t): _engine_error(b, t, method, args) for b in BACKENDS for t in (True, False)}
    assert len(set(msgs.values())) == 1, msgs


@pytest.mark.parametrize("value", [np.uint64(5), np.int32(5), True, 0, (1 << 64) - 1])
def test_backends_accept_the_same_integers(backend: str, value: Any) -> None:
    m = _m(backend)
    m.cpu(0).store(PM, value)
    m.cpu(0).work(np.float64(2.0))
    assert m.peek(PM) == int(value)


def test_work_at_the_bound_is_accepted(backend: str) -> None:
    m = _m(backend)
    m.cpu(0).work(1e12)
    assert m.cpu(0).clock == 1e12


# -- as a program: a closed pipe and the exit status ------------------------------------------
def test_closed_pipe_is_quiet() -> None:
    """The reader closed the pipe before any output: no traceback, no 'Exception ignored',
    status 141 (as a program killed by SIGPIPE)."""
    p = subprocess.Popen([sys.executable, "-m", "pmsim", "config"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdout is not None
    p.stdout.close()
    _, err = p.communicate(timeout=120)
    assert p.returncode == 141
    assert err == b"", err.decode()


def test_head_of_a_pipe_is_quiet() -> None:
    """`pmsim config | head -1` prints one line and nothing on stderr."""
    p = subprocess.run(f"'{sys.executable}' -m pmsim config | head -1", shell=True,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 1
    assert p.stderr == "", p.stderr


def test_bad_input_exits_2_as_a_program(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("regions:\n- {name: pm, base: 0, size: 1099511627776, kind: pm}\n")
    p = subprocess.run([sys.executable, "-m", "pmsim", "machine", "--config", str(cfg)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert p.stderr.startswith("pmsim: error: Region.size: 1099511627776 bytes (1 TiB)")
    assert p.stderr.count("\n") == 1 and p.stdout == ""


@pytest.mark.parametrize("ns", [-1.0, math.nan, math.inf, 2e12])
def test_batch_work_is_checked_like_work(ns: float) -> None:
    """A work op in a batch is rejected like cpu.work (the C core checks it too)."""
    from pmsim.hw.engines.reference import BATCH_DTYPE, OP_WORK

    ops = np.zeros(1, dtype=BATCH_DTYPE)
    ops[0]["op"] = OP_WORK
    ops[0]["arg"] = np.array(ns, np.float64).view(np.uint64)
    msgs = set()
    for b in BACKENDS:
        m = _m(b)
        with pytest.raises(PmsimError) as ei:
            m.engine.run_batch(ops)
        assert m.cpu(0).clock == 0.0
        msgs.add(str(ei.value))
    assert len(msgs) == 1 and "[0, 1e+12]" in msgs.pop()
