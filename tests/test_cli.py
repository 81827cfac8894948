"""The pmsim command line: output of presets/config/machine, and exit status 2 on bad input."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pmsim import Machine, MachineConfig, preset
from pmsim.cli import main
from pmsim.config import describe
from pmsim.opstream import OpStream, run_opstream
from pmsim.presets import PRESETS
from pmsim.stats import STAT_FIELDS


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _need(backend: str) -> None:
    if backend == "c" and importlib.util.find_spec("pmsim.hw.engines.native_engine") is None:
        pytest.skip("the C engine module pmsim.hw.engines.native_engine does not exist yet")


# -- as a program ------------------------------------------------------------------------------

def test_python_m_pmsim_help() -> None:
    p = subprocess.run([sys.executable, "-m", "pmsim", "--help"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: pmsim")
    for cmd in ("presets", "config", "machine"):
        assert cmd in p.stdout


def test_python_m_pmsim_bad_preset_exits_2_without_traceback() -> None:
    p = subprocess.run([sys.executable, "-m", "pmsim", "config", "--preset", "optane-ard"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert "pmsim: error: unknown preset 'optane-ard'" in p.stderr
    assert "Did you mean 'optane-adr'" in p.stderr
    assert "Traceback" not in p.stderr
    assert p.stdout == ""


# -- presets and config ------------------------------------------------------------------------

def test_presets_lists_every_name_with_its_source(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(capsys, "presets")
    assert rc == 0
    lines = out.splitlines()
    assert len(lines) == len(PRESETS)
    for line, (name, (_, source)) in zip(lines, PRESETS.items(), strict=True):
        assert line.split()[0] == name
        assert line.endswith(source)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_config_json_is_the_preset(capsys: pytest.CaptureFixture[str], name: str) -> None:
    rc, out, _ = cli(capsys, "config", "--preset", name, "--format", "json")
    assert rc == 0
    assert MachineConfig.from_dict(json.loads(out)) == preset(name)


def test_config_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(capsys, "config", "--preset", "pdom0", "--format", "yaml")
    assert rc == 0
    assert yaml.safe_load(out)["domain"] == "pdom0"
    assert MachineConfig.from_yaml(out) == preset("pdom0")


def test_config_table_lists_every_field_with_unit_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(capsys, "config")
    assert rc == 0
    lines = out.splitlines()
    rows = describe(MachineConfig())
    assert len(lines) == len(rows)
    for line, (name, value, unit, help_) in zip(lines, rows, strict=True):
        assert line.split()[0] == name
        assert str(value) in line
        assert line.rstrip().endswith(help_)
        if unit:
            assert f" {unit} " in line


def test_machine_options_override_the_preset(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(capsys, "config", "--format", "json", "--preset", "optane-adr",
                     "--domain", "pdom0", "--barrier", "fixed", "--barrier-ns", "250",
                     "--cores", "3", "--seed", "9",
                     "--set", "pm.wpq_entries=32", "--set", "cache.l1.latency_ns=2.5")
    assert rc == 0
    want = preset("optane-adr").replace(domain="pdom0", barrier="fixed", barrier_ns=250.0, cores=3,
                                        seed=9, **{"pm.wpq_entries": 32, "cache.l1.latency_ns": 2.5})
    assert MachineConfig.from_json(out) == want


def test_set_takes_plain_strings(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(capsys, "config", "--format", "json", "--set", "domain=pdom2")
    assert rc == 0
    assert json.loads(out)["domain"] == "pdom2"


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_config_file_overrides_preset(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                      suffix: str) -> None:
    cfg = MachineConfig(cores=4, seed=5).replace(**{"pm.read_ns": 222.0})
    f = tmp_path / f"m{suffix}"
    f.write_text(cfg.to_json() if suffix == ".json" else cfg.to_yaml())
    rc, out, _ = cli(capsys, "config", "--preset", "loc-gem5", "--config", str(f), "--format", "json")
    assert rc == 0
    assert MachineConfig.from_json(out) == cfg


# -- machine -----------------------------------------------------------------------------------

def _table(out: str) -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for line in out.splitlines()[3:]:
        parts = line.split()
        rows[parts[0]] = parts[1:]
    return rows


def test_machine_prints_a_statistics_table(capsys: pytest.CaptureFixture[str], backend: str) -> None:
    _need(backend)
    rc, out, err = cli(capsys, "machine", "--ops", "2000", "--backend", backend, "--seed", "4")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == (f"# machine: pdom1, 2 cores, barrier=modelled, backend={backend}, "
                        "2000 ops/thread (built-in op stream)")
    assert lines[1].split() == ["stat", "0", "1", "total"]
    rows = _table(out)
    for name, _, _ in STAT_FIELDS:
        assert name in rows and len(rows[name]) == 3
    assert "wpq_occ_mean" in rows
    # the same run through the API gives the same integer counters
    m = run_opstream(Machine(MachineConfig(seed=4), backend=backend), OpStream(ops=2000))
    recs = m.stats_records()
    for name, kind, _ in STAT_FIELDS:
        if kind == "u8":
            assert rows[name] == [str(r[name]) for r in recs], name
    assert int(rows["loads"][2]) > 0 and int(rows["clwb"][2]) > 0


def test_machine_with_options(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(capsys, "machine", "--ops", "500", "--backend", "python", "--cores", "1",
                     "--domain", "pdom0", "--barrier", "fixed", "--barrier-ns", "50")
    assert rc == 0
    assert out.startswith("# machine: pdom0, 1 cores, barrier=fixed, backend=python, 500 ops/thread")
    rows = _table(out)
    assert len(rows["pcommit"]) == 2  # one thread and the total
    assert rows["pcommit"][0] == rows["persist_barriers"][0] != "0"


def test_demo_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ei:
        main(["demo", "--help"])
    assert ei.value.code == 0
    assert "usage: pmsim demo" in capsys.readouterr().out


# -- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["config", "--preset", "optane-ard"], "Did you mean 'optane-adr'"),
    (["machine", "--preset", "nope", "--ops", "10"], "unknown preset 'nope'"),
    (["config", "--set", "pm.raed_ns=3"], "Did you mean 'read_ns'"),
    (["config", "--set", "colors=3"], "unknown MachineConfig field 'colors'"),
    (["config", "--set", "pm.read_ns"], "expected FIELD=VALUE"),
    (["config", "--set", "pm.banks=0"], "PMConfig.banks: must be a positive integer"),
    (["config", "--set", "pm.read_ns=fast"], "PMConfig.read_ns: must be a number >= 0"),
    (["config", "--cores", "0"], "MachineConfig.cores"),
    (["config", "--config", "no/such/machine.yaml"], "does not exist"),
])
def test_bad_input_exits_2_with_a_message(capsys: pytest.CaptureFixture[str], argv: list[str],
                                          message: str) -> None:
    rc, out, err = cli(capsys, *argv)
    assert rc == 2
    assert out == ""
    assert err.startswith("pmsim: error: ")
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize("text, suffix, message", [
    ("{not json", ".json", "not valid JSON"),
    ("pm: [1, 2\n", ".yaml", "not valid YAML"),
    ('{"pm": {"wpq_entrys": 4}}', ".json", "Did you mean 'wpq_entries'"),
    ("cores: 2\n", ".toml", "unknown extension"),
])
def test_bad_config_files_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str,
                                 suffix: str, message: str) -> None:
    f = tmp_path / f"m{suffix}"
    f.write_text(text)
    rc, _, err = cli(capsys, "config", "--config", str(f))
    assert rc == 2
    assert message in err


def test_op_stream_that_does_not_fit_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "small.json"
    f.write_text(json.dumps({"regions": [{"name": "pm", "base": 0, "size": 1 << 20, "kind": "pm"}]}))
    rc, _, err = cli(capsys, "machine", "--config", str(f), "--ops", "10", "--backend", "python")
    assert rc == 2
    assert "bytes of PM" in err


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["config", "--domain", "pdom7"],
                                  ["config", "--format", "xml"], ["machine", "--ops", "many"]])
def test_argparse_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as ei:
        main(argv)
    assert ei.value.code == 2
    assert "usage: pmsim" in capsys.readouterr().err


def test_config_path_that_is_a_directory_exits_2(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    d = tmp_path / "machine.json"
    d.mkdir()
    rc, _, err = cli(capsys, "config", "--config", str(d))
    assert rc == 2 and "machine.json" in err


def test_set_accepts_structured_values(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(capsys, "config", "--format", "json", "--set",
                     'regions=[{"name": "pm", "base": 0, "size": 8192, "kind": "pm"}]')
    assert rc == 0
    assert json.loads(out)["regions"] == [{"name": "pm", "base": 0, "size": 8192, "kind": "pm"}]


def test_negative_ops_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        rc = main(["machine", "--ops", "-5", "--backend", "python"])
    except SystemExit as e:  # rejecting it in argparse is fine too
        rc = e.code  # type: ignore[assignment]
    assert rc == 2 and "--ops" in capsys.readouterr().err


# -- runtimes, workloads, shared options, number format, progress, aborts ----------------------

def test_runtimes_lists_every_runtime_with_what_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    from pmsim.runtimes.registry import MUTANTS, RUNTIMES

    rc, out, _ = cli(capsys, "runtimes")
    assert rc == 0
    listed = {line.split()[0] for line in out.splitlines()[2:] if line and line[0] != " "}
    assert {n for n in RUNTIMES if n not in MUTANTS} <= listed
    assert not listed & set(MUTANTS)
    rc, out, _ = cli(capsys, "runtimes", "--json")
    info = {i["name"]: i for i in json.loads(out)}
    assert info["pmem"]["domains"] == ["pdom1", "pdom2"] and info["pmem"]["durable"]
    assert not info["stm"]["durable"] and info["stm"]["optimistic"]
    assert info["dudetx-fine"]["fuzz_variant"] and not info["dudetx"]["fuzz_variant"]
    assert info["dudetx"]["threads"] == [1, 62] and info["undo"]["threads"] == [1, 64]
    assert info["undo"]["papers"] == ["marathe"] and info["undo-eadr"]["papers"] == []
    assert info["undo-eadr"]["family_papers"] == ["marathe"]
    assert info["dudetx"]["options"]["persist_bw"] == 1.0
    rc, out, _ = cli(capsys, "runtimes", "--mutants", "--json")
    assert {i["name"]: i for i in json.loads(out)}["undo:U1"]["mutant_of"] == "undo"


def test_runtimes_name_prints_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(capsys, "runtimes", "dudetx")
    assert rc == 0
    assert "threads         1..62 (+2 background cores)" in out
    assert "persist_bw" in out and "dudetx[NAME=VALUE,...]" in out
    rc, _, err = cli(capsys, "runtimes", "nope")
    assert rc == 2 and "unknown runtime 'nope'" in err


def test_workloads_lists_parameters_with_defaults_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    from pmsim.workloads.base import WORKLOADS

    rc, out, _ = cli(capsys, "workloads")
    assert rc == 0
    assert {line.split(":")[0] for line in out.splitlines() if line[:1] != " "} == set(WORKLOADS)
    assert "-p slots       = 4096 slots: array length" in out
    rc, out, _ = cli(capsys, "workloads", "kv", "--json")
    (kv,) = json.loads(out)
    assert kv["class"] == "pmsim.workloads.kv:KV"
    assert [p["name"] for p in kv["params"]][:2] == ["buckets", "keys"]
    assert all(p["help"] for p in kv["params"])
    rc, out, _ = cli(capsys, "presets", "--json")
    assert [p["name"] for p in json.loads(out)] == list(PRESETS)


def test_help_points_to_the_listings_instead_of_listing_every_name() -> None:
    from pmsim.cli import build_parser
    from pmsim.runtimes.registry import RUNTIMES

    run = _subparser(build_parser(), "run")
    helps = {a.dest: a.help or "" for a in run._actions}
    assert "pmsim runtimes" in helps["runtime"] and "pmsim workloads" in helps["workload"]
    assert sum(name in helps["runtime"].split() for name in RUNTIMES) <= 6
    assert len(helps["runtime"]) < 250


def _subparser(parser: object, name: str) -> object:
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]  # type: ignore[attr-defined]
    return sub.choices[name]


def test_machine_and_workload_options_are_the_same_in_both_clis() -> None:
    from crashfuzz.cli import build_parser as crashfuzz_parser
    from pmsim.cli import build_parser as pmsim_parser

    def options(p: object) -> dict[str, tuple[str, ...] | str]:
        return {flag: (a.help or "").replace("--preset (default default)", "")
                for a in p._actions for flag in a.option_strings}  # type: ignore[attr-defined]

    ours = options(_subparser(pmsim_parser(), "run"))
    theirs = options(_subparser(crashfuzz_parser(), "run"))
    for flag in ("--runtime", "--workload", "--param", "-p", "--config", "--set", "--cores",
                 "--barrier", "--barrier-ns", "--domain", "--seed"):
        assert ours[flag] == theirs[flag], flag
    assert "--preset" in theirs


def test_tables_print_numbers_without_scientific_notation() -> None:
    from pmsim.stats import format_table

    table = format_table([{"metric": "throughput", "value": 15_626_543.2},
                          {"metric": "tiny", "value": 0.000123}, {"metric": "n", "value": 1200}])
    assert "e+" not in table and "e-" not in table
    assert "15,626,543" in table and "0.000123" in table and " 1200" in table


def test_run_of_an_htm_runtime_reports_hardware_aborts_by_cause(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_json = tmp_path / "r.json"
    rc, out, _ = cli(capsys, "run", "--runtime", "htm", "--workload", "array", "--threads", "4",
                     "--cores", "4", "--txs", "60", "-p", "slots=64", "-p", "per_tx=4", "-p", "lock_stripe=4",
                     "--json", str(out_json))
    assert rc == 0
    r = json.loads(out_json.read_text())
    causes = sum(r[f"hw.aborts.{c}"] for c in ("conflict", "capacity", "explicit", "flush",
                                                "lock"))
    assert r["hw.aborts"] == causes > 0 and r["hw.begins"] == r["hw.commits"] + r["hw.aborts"]
    line = next(x for x in out.splitlines() if x.startswith("# aborts:"))
    assert f"{int(r['hw.aborts']):,} hardware abort(s)" in line
    assert f"conflict {int(r['hw.aborts.conflict']):,}" in line
    assert "e+" not in out
    rc, out, _ = cli(capsys, "run", "--txs", "20")
    assert "# aborts: 0 transaction(s) given up\n" in out  # no HTM, no hardware line


def test_progress_bar_lines_or_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from pmsim.progress import Progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    plain = io.StringIO()
    with Progress(4, "demo", "unit", stream=plain, interval=0) as bar:
        bar.update(1)
        bar(3, 4)
    lines = plain.getvalue().splitlines()
    assert lines[0].startswith("demo: 1/4 units (25%)") and "ETA" in lines[0]
    assert lines[-1].startswith("demo: 3/4 units (75%)")
    quiet = io.StringIO()
    with Progress(4, "demo", stream=quiet, enabled=False) as bar:
        bar.update(4)
    assert quiet.getvalue() == ""
    short = io.StringIO()
    with Progress(4, "demo", stream=short) as bar:  # no line within the interval: none at all
        bar.update(4)
    assert short.getvalue() == ""
    tty = Tty()
    monkeypatch.setattr("os.get_terminal_size", lambda fd=0: os.terminal_size((100, 24)))
    monkeypatch.setattr(Tty, "fileno", lambda self: 2, raising=False)
    with Progress(5, "bar", "pt", stream=tty) as bar:
        assert bar.mode == "bar"
        bar.update(5)
    assert "5/5" in tty.getvalue()
    monkeypatch.setattr("os.get_terminal_size", lambda fd=0: os.terminal_size((0, 0)))
    assert Progress(5, "zero", stream=Tty(), enabled=False).mode == "off"
    assert Progress(5, "zero", stream=Tty()).mode == "lines"  # a zero-width terminal
