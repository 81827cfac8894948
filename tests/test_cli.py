"""The pmsim command line: output of presets/config/machine, and exit status 2 on bad input."""

from __future__ import annotations

import importlib.util
import json
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
    if backend == "c" and importlib.util.find_spec("pmsim.hw.native_engine") is None:
        pytest.skip("the C engine module pmsim.hw.native_engine does not exist yet")


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
