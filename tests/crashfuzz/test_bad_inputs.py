"""Every bad input to crashfuzz gets a clear error: the `crashfuzz` CLI, litmus files, saved
findings, and the public API (FuzzConfig, fuzz, litmus, replay).

Each case asserts exit status 2 (CLI) or a PmsimError (API) whose message names the bad value
or option and says what would be valid, without a traceback. Cases whose fix belongs to code
another engineer owns are strict xfails naming the owner. The pmsim side is
tests/test_bad_inputs.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crashfuzz import FuzzConfig, fuzz, load_finding, replay, save_findings
from crashfuzz.campaign import Campaign
from crashfuzz.cli import main
from crashfuzz.litmus import load_litmus, parse_litmus, run_litmus
from pmsim.errors import PmsimError
from pmsim.workloads.base import WORKLOADS, get_workload

from ..badinput import DIR, Case, assert_clean_error, assert_error_names, make_files, params, run_cli

U64 = str((1 << 64) - 1)
GOOD_LITMUS = "T0: x:=1\nexpect (0) (1)\n"
INTERLEAVED = "".join(f"T{t}: " + "; ".join(f"x:={t * 3 + i + 1}" for i in range(3)) + "\n"
                      for t in range(3)) + "expect (0)\n"
"""Three threads of three stores: 1,680 interleavings."""
WIDE = ("lines " + " ".join(f"x{j}={64 * j}" for j in range(24)) + "\nT0: "
        + "; ".join(f"x{j}:=1" for j in range(24)) + "\ncrash end\nobserve x0\nexpect (0) (1)\n")
"""24 unflushed stores to 24 lines: 2**24 crash images at the end."""


def _run(*argv: str) -> list[str]:
    return ["run", "--findings", "", *argv]


# -- the crashfuzz command line -------------------------------------------------------------------
CLI = [
    # run
    Case("run-runtime-abs-path", _run("--runtime", "/abs/path"), ["'/abs/path'", "Known runtimes"]),
    Case("run-runtime-file-missing", _run("--runtime", "{d}/mine.py:MyRuntime"),
         ["mine.py", "no such file"]),
    Case("run-runtime-unknown-mutant", _run("--runtime", "undo:U99"),
         ["'undo:U99'", "Did you mean"]),
    Case("run-workload-alloc_x", _run("--workload", "alloc_x"), ["'alloc_x'", "'alloc-x'"]),
    Case("run-seed-negative", _run("--seed", "-1"), ["--seed", "-1", f"0..{U64}"]),
    Case("run-seed-text", _run("--seed", "x"), ["--seed", "'x'", "integer"]),
    Case("run-jobs-0", _run("--jobs", "0"), ["--jobs", "got 0", "1..256"]),
    Case("run-jobs-negative", _run("--jobs", "-3"), ["--jobs", "-3", "1..256"]),
    Case("run-jobs-huge", _run("--jobs", "100000"), ["--jobs", "100000", "1..256"]),
    Case("run-threads-0", _run("--threads", "0"), ["--threads", "got 0", "1..64"]),
    Case("run-threads-65", _run("--threads", "65"), ["--threads", "65", "1..64"]),
    Case("run-txs-0", _run("--txs", "0"), ["--txs", "got 0", "1..100000"]),
    Case("run-txs-fraction", _run("--txs", "2.5"), ["--txs", "'2.5'", "1..100000"]),
    Case("run-txs-10**15", _run("--txs", str(10**15)), ["--txs", str(10**15), "1..100000"]),
    Case("run-budget-0", _run("--budget", "0"), ["--budget", "got 0", ">= 1"]),
    Case("run-samples-0", _run("--samples", "0"), ["--samples", "got 0", "1..1000000"]),
    Case("run-samples-huge", _run("--samples", "10000000000"),
         ["--samples", "10000000000", "1..1000000"]),
    Case("run-sampled-points-0", _run("--points", "sampled", "--sampled-points", "0"),
         ["--sampled-points", "got 0", ">= 1"]),
    Case("run-idempotence-negative", _run("--idempotence", "-1"), ["--idempotence", "-1", ">= 0"]),
    Case("run-domain", _run("--domain", "pdom3"), ["--domain", "'pdom3'", "pdom1"]),
    Case("run-order", _run("--order", "tso"), ["--order", "'tso'", "px86"]),
    Case("run-points", _run("--points", "some"), ["--points", "'some'", "reduced"]),
    Case("run-param-nan", _run("--param", "write_pct=NaN", "--txs", "2"),
         ["write_pct=nan", "finite number"]),
    Case("run-param-fraction-for-int", _run("--param", "slot_words=2.7", "--txs", "2"),
         ["slot_words", "2.7", "integer"]),
    Case("run-param-huge", _run("--param", "slots=10000000000", "--txs", "2"),
         ["slots=10000000000", "slots <= "]),
    Case("run-param-no-equals", _run("--param", "bogus"), ["'bogus'", "NAME=VALUE"]),
    Case("run-param-unknown", _run("--param", "slotz=4"), ["'slotz'", "Did you mean 'slots'"]),
    Case("run-param-kv-get-pct", _run("--workload", "kv", "--param", "get_pct=150"),
         ["get_pct=150", "[0, 100]"]),
    Case("run-json-missing-dir", _run("--txs", "2", "--json", "{d}/no/such/r.json"),
         ["--json", "r.json", "does not exist"]),
    Case("run-findings-is-a-file", ["run", "--txs", "2", "--findings", "{d}/f"],
         ["--findings", "not a directory"], {"f": "x"}),
    # mutants
    Case("mutants-unknown", ["mutants", "--mutant", "undo:U99"], ["'undo:U99'", "Known mutants"]),
    Case("mutants-txs-0", ["mutants", "--txs", "0"], ["--txs", "got 0", ">= 1"]),
    Case("mutants-seed-negative", ["mutants", "--seed", "-2"], ["--seed", "-2", f"0..{U64}"]),
    Case("mutants-domain", ["mutants", "--domain", "adr"], ["--domain", "'adr'", "pdom1"]),
    # ablate
    Case("ablate-runtime-unknown", ["ablate", "--runtime", "redoo"], ["'redoo'", "Did you mean"]),
    Case("ablate-step-unknown", ["ablate", "--step", "undo.nope"], ["'undo.nope'", "undo."]),
    Case("ablate-txs-0", ["ablate", "--txs", "0"], ["--txs", "got 0", ">= 1"]),
    Case("ablate-depth-0", ["ablate", "--depth", "0"], ["--depth", "got 0", ">= 1"]),
    Case("ablate-budget-0", ["ablate", "--budget", "0"], ["--budget", "got 0", ">= 1"]),
    Case("ablate-samples-huge", ["ablate", "--samples", "2000000"], ["--samples", "2000000", "1..1000000"]),
    Case("ablate-seed-negative", ["ablate", "--seed", "-1"], ["--seed", "-1", f"0..{U64}"]),
    Case("ablate-domain", ["ablate", "--domain", "eadr"], ["--domain", "'eadr'", "pdom2"]),
    # litmus files
    Case("litmus-missing", ["litmus", "{d}/nope.litmus"], ["nope.litmus", "does not exist"]),
    Case("litmus-directory", ["litmus", "{d}/suite"], ["suite", "is a directory", "*.litmus"],
         {"suite": DIR}),
    Case("litmus-not-utf8", ["litmus", "{d}/t.litmus"], ["t.litmus", "not UTF-8"],
         {"t.litmus": b"T0: x:=1\n# \xff\xfe\nexpect (0) (1)\n"}),
    Case("litmus-value-2**64", ["litmus", "{d}/t.litmus"],
         [str(1 << 64), "64 bits", "0..2**64-1"], {"t.litmus": f"T0: x:={1 << 64}\nexpect (0)\n"}),
    Case("litmus-hex-value-too-big", ["litmus", "{d}/t.litmus"], ["0x1ffffffffffffffff", "64 bits"],
         {"t.litmus": "T0: x:=0x1ffffffffffffffff\nexpect (0)\n"}),
    Case("litmus-value-negative", ["litmus", "{d}/t.litmus"], ["-1", "0..2**64-1"],
         {"t.litmus": "T0: x:=-1\nexpect (0)\n"}),
    Case("litmus-bad-number", ["litmus", "{d}/t.litmus"], ["'1z'", "not a number", "0x2a"],
         {"t.litmus": "T0: x:=1z\nexpect (0)\n"}),
    Case("litmus-unknown-instruction", ["litmus", "{d}/t.litmus"],
         ["unknown instruction 'clflsh x'", "clflushopt x"],
         {"t.litmus": "T0: x:=1; clflsh x\nexpect (0) (1)\n"}),
    Case("litmus-expect-bad-number", ["litmus", "{d}/t.litmus"], ["'1x'", "not a number"],
         {"t.litmus": "T0: x:=1\nexpect (0) (1x)\n"}),
    Case("litmus-expect-too-big", ["litmus", "{d}/t.litmus"], ["99999999999999999999999", "64 bits"],
         {"t.litmus": "T0: x:=1\nexpect (0) (99999999999999999999999)\n"}),
    Case("litmus-expect-unclosed", ["litmus", "{d}/t.litmus"], ["'(0) (1'", "(0,1) (1,1)"],
         {"t.litmus": "T0: x:=1\nexpect (0) (1\n"}),
    Case("litmus-lines-not-a-number", ["litmus", "{d}/t.litmus"], ["'abc'", "not a number"],
         {"t.litmus": "lines x=abc\nT0: x:=1\nexpect (0) (1)\n"}),
    Case("litmus-lines-huge", ["litmus", "{d}/t.litmus"], ["'x=1099511627776'", "below 0x100000"],
         {"t.litmus": "lines x=1099511627776\nT0: x:=1\nexpect (0) (1)\n"}),
    Case("litmus-lines-unaligned", ["litmus", "{d}/t.litmus"], ["'x=3'", "8-byte aligned"],
         {"t.litmus": "lines x=3\nT0: x:=1\nexpect (0) (1)\n"}),
    Case("litmus-empty", ["litmus", "{d}/t.litmus"], ["no thread programs", "T0: x:=1"],
         {"t.litmus": ""}),
    Case("litmus-thread-gap", ["litmus", "{d}/t.litmus"], ["T0, T1", "without gaps"],
         {"t.litmus": "T0: x:=1\nT2: y:=1\nexpect (0,0)\n"}),
    Case("litmus-image-arity", ["litmus", "{d}/t.litmus"], ["(0, 1)", "2 values but 1 locations"],
         {"t.litmus": "T0: x:=1\nexpect (0,1)\n"}),
    Case("litmus-unclosed-brace", ["litmus", "{d}/t.litmus"], ["expected '}'", "end of line"],
         {"t.litmus": "T0: r:=x; if r=1 { y:=1\nexpect (0,0)\n"}),
    Case("litmus-if-on-location", ["litmus", "{d}/t.litmus"], ["`if x...`", "register", "r:=x"],
         {"t.litmus": "T0: if x=1 { y:=1 }\nexpect (0,0)\n"}),
    Case("litmus-mode", ["litmus", "{d}/t.litmus"], ["'tso'", "line or px86"],
         {"t.litmus": "mode tso\n" + GOOD_LITMUS}),
    Case("litmus-domain", ["litmus", "{d}/t.litmus"], ["'adr'", "pdom0, pdom1, pdom2"],
         {"t.litmus": "domain adr\n" + GOOD_LITMUS}),
    Case("litmus-crash", ["litmus", "{d}/t.litmus"], ["'sometimes'", "'anywhere' or 'end'"],
         {"t.litmus": "crash sometimes\n" + GOOD_LITMUS}),
    Case("litmus-unknown-line", ["litmus", "{d}/t.litmus"], ["'expected'", "expect"],
         {"t.litmus": "T0: x:=1\nexpected (0) (1)\n"}),
    Case("litmus-too-many-interleavings", ["litmus", "--max-states", "500", "{d}/t.litmus"],
         ["'t'", "too large", "interleavings exceed 500 states", "--max-states"],
         {"t.litmus": INTERLEAVED}),
    Case("litmus-too-many-crash-images", ["litmus", "{d}/t.litmus"],
         ["'t'", "too large", "crash images exceed 200,000 states", "--max-states"],
         {"t.litmus": WIDE}),
    Case("litmus-max-states-0", ["litmus", "--max-states", "0"], ["--max-states", "got 0"]),
    Case("litmus-second-file-bad", ["litmus", "{d}/a.litmus", "{d}/b.litmus"],
         ["b", "no `expect` line"], {"a.litmus": GOOD_LITMUS, "b.litmus": "T0: x:=1\n"}),
    # the program itself
    Case("replay-no-files", ["replay"], ["findings"]),
    Case("no-command", [], ["command"]),
]


@pytest.mark.parametrize("case", params(CLI))
def test_crashfuzz_cli_bad_input(case: Case, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    make_files(tmp_path, case.files)
    argv = [a.replace("{d}", str(tmp_path)) for a in case.argv]
    rc, out, err = run_cli(main, argv, capsys)
    assert_clean_error(rc, out, err, "crashfuzz", case.needles)
    if argv and argv[0] == "litmus":
        assert "ok " not in out, "a test ran although a file was bad"


def test_run_help_names_every_registered_workload(capsys: pytest.CaptureFixture[str]) -> None:
    get_workload("array")
    rc, out, _ = run_cli(main, ["run", "--help"], capsys)
    assert rc == 0
    text = " ".join(out.split())
    assert "alloc_x" not in text
    for name in WORKLOADS:
        assert name in text, name


# -- saved findings -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def finding(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finding of undo:U1 that still fails."""
    d = tmp_path_factory.mktemp("findings")
    rep = fuzz(FuzzConfig(runtime="undo:U1", txs=4, stop_at_first=True, depth=1))
    assert not rep.ok
    return Path(save_findings(rep, d)[0])


def _copy(finding: Path, d: Path, name: str = "f") -> tuple[dict[str, Any], Path, Path]:
    """A copy of the finding in ``d``: (its document, JSON path, image path)."""
    doc = json.loads(finding.read_text())
    img = d / f"{name}.npy"
    shutil.copy(finding.parent / doc["image"], img)
    doc["image"] = img.name
    return doc, d / f"{name}.json", img


def _write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def _with(**changes: Any) -> Callable[[dict[str, Any], Path, Path], Path]:
    def make(doc: dict[str, Any], js: Path, img: Path) -> Path:
        return _write(js, {**doc, **changes})
    return make


def _without(key: str) -> Callable[[dict[str, Any], Path, Path], Path]:
    def make(doc: dict[str, Any], js: Path, img: Path) -> Path:
        return _write(js, {k: v for k, v in doc.items() if k != key})
    return make


def _config(**changes: Any) -> Callable[[dict[str, Any], Path, Path], Path]:
    def make(doc: dict[str, Any], js: Path, img: Path) -> Path:
        return _write(js, {**doc, "config": {**doc["config"], **changes}})
    return make


def _image(arr: Any, allow_pickle: bool = False) -> Callable[[dict[str, Any], Path, Path], Path]:
    def make(doc: dict[str, Any], js: Path, img: Path) -> Path:
        np.save(img, arr, allow_pickle=allow_pickle)
        return _write(js, doc)
    return make


def _raw(text: bytes) -> Callable[[dict[str, Any], Path, Path], Path]:
    def make(doc: dict[str, Any], js: Path, img: Path) -> Path:
        js.write_bytes(text)
        return js
    return make


def _image_bytes(data: bytes) -> Callable[[dict[str, Any], Path, Path], Path]:
    def make(doc: dict[str, Any], js: Path, img: Path) -> Path:
        img.write_bytes(data)
        return _write(js, doc)
    return make


def _image_dir(doc: dict[str, Any], js: Path, img: Path) -> Path:
    img.unlink()
    img.mkdir()
    return _write(js, doc)


def _image_gone(doc: dict[str, Any], js: Path, img: Path) -> Path:
    img.unlink()
    return _write(js, doc)


def _missing(doc: dict[str, Any], js: Path, img: Path) -> Path:
    return js.parent / "nope.json"


def _directory(doc: dict[str, Any], js: Path, img: Path) -> Path:
    (js.parent / "dir.json").mkdir()
    return js.parent / "dir.json"


FINDINGS: list[tuple[str, Callable[[dict[str, Any], Path, Path], Path], list[str]]] = [
    ("missing-file", _missing, ["nope.json", "no such finding file"]),
    ("a-directory", _directory, ["dir.json", "is a directory", "*.json"]),
    ("not-json", _raw(b"{not json"), ["invalid JSON"]),
    ("not-utf8", _raw(b"\x93NUMPY\xff\xfe"), ["not UTF-8"]),
    ("json-list", _raw(b"[1, 2]"), ["a JSON list", "config, point, since and image"]),
    ("point-string", _with(point="abc"), ["'point'", "an integer >= 0", "'abc'"]),
    ("point-numeric-string", _with(point="37"), ["'point'", "an integer >= 0", "'37'"]),
    ("point-negative", _with(point=-5), ["'point'", "-5", ">= 0"]),
    ("point-bool", _with(point=True), ["'point'", "True", "integer"]),
    ("point-beyond-trace", _with(point=10**9), ["crash point 1000000000", "outside the trace",
                                                 "another version"]),
    ("point-missing", _without("point"), ["'point'", "missing"]),
    ("since-float", _with(since=1.5), ["'since'", "1.5", ">= -1"]),
    ("since-after-point", _with(since=10**9), ["since=1000000000", "must be in -1.."]),
    ("config-list", _with(config=[1, 2]), ["'config'", "mapping of FuzzConfig fields", "list"]),
    ("config-string", _with(config="undo"), ["'config'", "mapping", "'undo'"]),
    ("config-unknown-field", _config(runtim="undo"), ["config", "'runtim'", "known:"]),
    ("config-txs-string", _config(txs="4"), ["config", "txs", "'4'", ">= 1"]),
    ("config-domain", _config(domain="pdom7"), ["config", "'pdom7'", "pdom0"]),
    ("config-params-not-pairs", _config(params=5), ["config", "params", "(name, value)"]),
    ("config-runtime-unknown", _config(runtime="undo:U99"), ["'undo:U99'", "Known runtimes"]),
    ("image-field-missing", _without("image"), ["'image'", "missing"]),
    ("image-not-a-string", _with(image=5), ["'image'", "file name of the crash image", "5"]),
    ("image-is-a-directory", _image_dir, ["f.npy", "is a directory", ".npy file"]),
    ("image-file-missing", _image_gone, ["f.npy", "does not exist"]),
    ("image-float-dtype", _image(np.zeros(1 << 16, dtype=np.float64)),
     ["float64", "1-D uint8", "not cast"]),
    ("image-2d", _image(np.zeros((2, 8), dtype=np.uint8)), ["shape (2, 8)", "1-D uint8"]),
    ("image-wrong-size", _image(np.zeros(64, dtype=np.uint8)), ["64 bytes", "another version"]),
    ("image-pickled-objects", _image(np.array([object()]), allow_pickle=True),
     ["f.npy", "not a readable .npy"]),
    ("image-not-npy", _image_bytes(b"hello"), ["f.npy", "not a readable .npy"]),
    ("depth-zero", _with(depth=0), ["'depth'", ">= 1", "0"]),
    ("config-txs-10**15", _config(txs=10**15), ["config", "txs", "at most 100,000",
                                                 "1,000,000,000,000,000"]),
    ("config-new-tx-huge", _config(new_tx=10**9), ["config", "new_tx", "at most 100,000"]),
    ("config-threads-1000", _config(threads=1000), ["config", "threads", "at most 64"]),
    ("lineage-text", _with(depth=2, lineage="abc"), ["'lineage'", "list of crash points", "'abc'"]),
]


@pytest.mark.parametrize("make, needles", [pytest.param(m, n, id=i) for i, m, n in FINDINGS])
def test_replay_bad_finding(finding: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                            make: Callable[[dict[str, Any], Path, Path], Path],
                            needles: list[str]) -> None:
    path = make(*_copy(finding, tmp_path))
    with pytest.raises(PmsimError) as ei:
        replay(path, verbose=False)
    assert_error_names(ei.value, [str(path), *needles])
    rc, out, err = run_cli(main, ["replay", str(path)], capsys)
    line = assert_clean_error(rc, out, err, "crashfuzz", needles)
    assert str(path) in line
    assert out.startswith(f"{path}: unreadable: ")


def test_replay_checks_every_finding(finding: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A finding that still fails does not stop the others: one line each, 1 wins over 2."""
    doc, js, img = _copy(finding, tmp_path, "fixed")
    cfg = {**doc["config"], "runtime": "undo"}
    np.save(img, Campaign(FuzzConfig.from_dict(cfg)).trace.base)
    fixed = _write(js, {**doc, "config": cfg, "point": 0, "since": -1})
    missing = tmp_path / "missing.json"
    rc, out, err = run_cli(main, ["replay", str(finding), str(fixed), str(missing)], capsys)
    lines = out.splitlines()
    assert rc == 1
    assert lines[0].startswith(f"{finding}: still fails: [")
    assert lines[1] == f"{fixed}: now passes (the finding no longer reproduces)"
    assert lines[2].startswith(f"{missing}: unreadable: no such finding file")
    assert lines[3] == "3 finding(s): 1 still fail, 1 now pass, 1 unreadable"
    assert err.count("crashfuzz: error:") == 1 and "Traceback" not in err
    rc, out, _ = run_cli(main, ["replay", str(fixed), str(missing)], capsys)
    assert rc == 2
    rc, out, _ = run_cli(main, ["replay", str(fixed)], capsys)
    assert rc == 0
    rc, out, _ = run_cli(main, ["replay", "--verbose", str(finding)], capsys)
    assert rc == 1 and "FAILURE [" in out and "reproduce:" in out


def _run_over(findings: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return run_cli(main, ["run", "--runtime", "undo", "--txs", "2", "--idempotence", "0",
                          "--findings", str(findings)], capsys)


def test_run_reports_a_finding_claiming_10_15_transactions(
        finding: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`crashfuzz run` replays saved findings first: one claiming 10**15 transactions is
    reported unreadable (and why) instead of being run for ever; the new run goes on."""
    doc, js, _ = _copy(finding, tmp_path)
    _write(js, {**doc, "config": {**doc["config"], "runtime": "undo", "txs": 10**15}})
    rc, out, err = _run_over(tmp_path, capsys)
    assert rc == 0, err
    assert "replayed 1 saved findings: 0 still fail, 1 unreadable" in out
    assert f"{js} (unreadable: " in out and "at most 100,000" in out


@pytest.mark.parametrize("text, why", [
    (b'{"config": {"runtime": "undo", "tx', "invalid JSON"), (b"", "invalid JSON"),
    (b"\xff\xfe", "not UTF-8"), (b"[]", "a JSON list"), (b'{"config": 5}', "'config'"),
    (b'{"config": {}, "point": 1, "since": -1, "image": "x.npy"}', "x.npy' does not exist")],
    ids=["truncated", "empty", "not-utf8", "a-list", "config-not-mapping", "no-runtime"])
def test_run_reports_a_damaged_finding_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            text: bytes, why: str) -> None:
    """A damaged .json in the findings folder cannot say whose finding it is: it is not
    replayed, but it is named with the reason (it used to be skipped without a word)."""
    bad = tmp_path / "undo-0000-1.json"
    bad.write_bytes(text)
    rc, out, err = _run_over(tmp_path, capsys)
    assert rc == 0, err
    assert "replayed 0 saved findings: 0 still fail, 1 unreadable" in out
    line, = [ln for ln in out.splitlines() if str(bad) in ln]
    assert "(unreadable: " in line and why in line, line


def test_litmus_max_states_raises_the_bound(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The bound refuses only what is over it: the same program runs under a larger one."""
    got = run_litmus(INTERLEAVED.replace("expect (0)", "crash end\nexpect (0)")).images
    images, = got.values()
    t = tmp_path / "t.litmus"
    t.write_text(INTERLEAVED.replace("expect (0)", "crash end\nexpect " + " ".join(
        f"({v})" for (v,) in sorted(images))))
    rc, out, err = run_cli(main, ["litmus", "--max-states", "100000", str(t)], capsys)
    assert (rc, out.splitlines()[-1]) == (0, "1 passed, 0 failed"), err


def test_load_finding_returns_the_image_unchanged(finding: Path) -> None:
    doc, img = load_finding(finding)
    assert img.dtype == np.uint8 and img.ndim == 1 and doc["point"] >= 0


# -- the public API -------------------------------------------------------------------------------
def _bad_litmus(text: str) -> Callable[[], Any]:
    return lambda: parse_litmus(text, "t")


API: list[tuple[str, Callable[[], Any], list[str], str]] = [
    ("FuzzConfig-seed-negative", lambda: FuzzConfig(seed=-1), ["seed", ">= 0", "-1"], ""),
    ("FuzzConfig-threads-0", lambda: FuzzConfig(threads=0), ["threads", ">= 1", "0"], ""),
    ("FuzzConfig-txs-float", lambda: FuzzConfig(txs=2.5), ["txs", ">= 1", "2.5"], ""),
    ("FuzzConfig-domain", lambda: FuzzConfig(domain="adr"), ["'adr'", "pdom1"], ""),
    ("FuzzConfig-order", lambda: FuzzConfig(order="tso"), ["'tso'", "px86"], ""),
    ("FuzzConfig-points", lambda: FuzzConfig(points="all"), ["'all'", "reduced"], ""),
    ("FuzzConfig-recovery", lambda: FuzzConfig(recovery="fast"), ["'fast'", "functional"], ""),
    ("FuzzConfig-params", lambda: FuzzConfig(params=5), ["params", "5", "(name, value)"], ""),
    ("FuzzConfig-reduce-text", lambda: FuzzConfig(reduce="no"), ["reduce", "'no'", "True or False"],
     ""),
    ("FuzzConfig-from_dict-unknown", lambda: FuzzConfig.from_dict({"txz": 4}), ["'txz'", "known"], ""),
    ("FuzzConfig-runtime-int", lambda: FuzzConfig(runtime=5), ["runtime", "5"], ""),
    ("fuzz-runtime-object", lambda: fuzz(runtime=object, txs=2), ["runtime", "Runtime subclass"], ""),
    ("fuzz-runtime-instance", lambda: fuzz(runtime=object(), txs=2), ["runtime", "Runtime subclass"],
     ""),
    ("fuzz-workload-object", lambda: fuzz(workload=object, txs=2), ["object", "Workload subclass"], ""),
    ("fuzz-workload-int", lambda: fuzz(workload=5, txs=2), ["5", "Workload subclass"], ""),
    ("fuzz-unknown-override", lambda: fuzz(txz=2), ["'txz'", "txs"], ""),
    ("fuzz-config-dict", lambda: fuzz({"txs": 2}), ["dict", "FuzzConfig"], ""),
    ("fuzz-machine-preset-name", lambda: fuzz(machine="optane-adr", txs=2),
     ["'optane-adr'", "MachineConfig"], ""),
    ("fuzz-shards-0", lambda: fuzz(txs=2, shards=0), ["shards", "0", ">= 1"], ""),
    ("load_litmus-missing", lambda: load_litmus("no-such.litmus"), ["no-such.litmus", "does not exist"],
     ""),
    ("parse_litmus-unknown-instruction", _bad_litmus("T0: fence\nexpect (0)"),
     ["unknown instruction 'fence'", "sfence"], ""),
    ("parse_litmus-value-too-big", _bad_litmus(f"T0: x:={1 << 64}\nexpect (0)"), ["64 bits"], ""),
    ("parse_litmus-xchg-without-value", _bad_litmus("T0: xchg x\nexpect (0)"), ["expected ','"], ""),
    ("parse_litmus-register-as-location", _bad_litmus("T0: clwb r1\nexpect (0)"),
     ["'r1' is a register", "memory location"], ""),
    ("run_litmus-nt-mode", lambda: run_litmus(GOOD_LITMUS, nt="buffered"),
     ["'buffered'", "'drain'", "'issue'"], ""),
    ("run_litmus-too-many-interleavings", lambda: run_litmus(INTERLEAVED, max_states=1000),
     ["too large", "interleavings exceed 1,000 states"], ""),
    ("run_litmus-too-many-crash-images", lambda: run_litmus(WIDE),
     ["too large", "crash images exceed 200,000"], ""),
    ("FuzzConfig-txs-10**15", lambda: FuzzConfig(txs=10**15), ["txs", "at most 100,000"], ""),
    ("FuzzConfig-threads-65", lambda: FuzzConfig(threads=65), ["threads", "at most 64"], ""),
    ("FuzzConfig-depth-txs-huge", lambda: FuzzConfig(depth_txs=10**6),
     ["depth_txs", "at most 100,000"], ""),
    ("replay-missing", lambda: replay("no-such-finding.json", verbose=False),
     ["no-such-finding.json", "no such finding file"], ""),
    ("load_finding-missing", lambda: load_finding("no-such-finding.json"),
     ["no-such-finding.json", "no such finding file"], ""),
]


@pytest.mark.parametrize("make, needles", [
    pytest.param(f, n, id=i, marks=[pytest.mark.xfail(strict=True, reason=x)] if x else [])
    for i, f, n, x in API])
def test_crashfuzz_api_bad_input(make: Callable[[], Any], needles: list[str]) -> None:
    with pytest.raises(PmsimError) as ei:
        make()
    assert_error_names(ei.value, needles)


# -- as a program: closed pipes and exit statuses ------------------------------------------------
def test_litmus_into_a_closed_pipe_is_quiet() -> None:
    """The reader closed the pipe before any output: no traceback, status 141 (SIGPIPE)."""
    p = subprocess.Popen([sys.executable, "-m", "crashfuzz", "litmus"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdout is not None
    p.stdout.close()
    _, err = p.communicate(timeout=300)
    assert p.returncode == 141
    assert err == b"", err.decode()


def test_litmus_head_of_a_pipe_is_quiet() -> None:
    p = subprocess.run(f"'{sys.executable}' -m crashfuzz litmus | head -1", shell=True,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.startswith("ok ") and len(p.stdout.splitlines()) == 1
    assert p.stderr == "", p.stderr


def test_replay_exit_status_as_a_program(finding: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    p = subprocess.run([sys.executable, "-m", "crashfuzz", "replay", str(bad)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2
    assert p.stderr.startswith(f"crashfuzz: error: {bad}: not a crashfuzz finding")
    assert p.stderr.count("\n") == 1
    p = subprocess.run([sys.executable, "-m", "crashfuzz", "replay", str(finding), str(bad)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "Traceback" not in p.stderr
