"""Human-readable failure reports, saved findings and their replay.

A finding is saved as ``<dir>/<runtime>-<hash>.json`` (the campaign config, the crash point,
what went wrong) plus ``.npy`` (the crash image). ``replay(path)`` redoes the deterministic
crash-free run, loads the image, recovers and re-checks it: a runnable reproducer. A finding
of kind ``crash-free`` (wrong before any crash) holds the image the run ended with, and its
replay checks the crash-free run again.
"""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from pmsim.errors import ConfigError, PmsimError
from pmsim.usercode import user_error

from .campaign import Campaign, Failure, FuzzConfig, Report, workload_label
from .model import image_hash

DEFAULT_DIR = ".crashfuzz/findings"


def format_failure(f: Failure, cfg: FuzzConfig, path: str | None = None) -> str:
    """A failure in full, ending with how to reproduce it: the replay of its saved finding
    (``path``), or a line of Python that re-runs the campaign, with every non-default
    FuzzConfig field and user classes as import paths (``f.config``); where the campaign ran
    code FuzzConfig cannot name (a class from ``__main__``), it says so."""
    lines = [f"FAILURE [{f.kind}] {f.message}",
             "  found before any crash, in the crash-free run or its clean restart: no crash "
             "point was checked, since the data the crash images are judged by are wrong",
             f"  last event of the run: {f.event}"] if f.kind == "crash-free" else [
        f"FAILURE [{f.kind}] {f.message}",
        *([f"  depth {f.depth}: {f.origin}; then crashed that run"] if f.depth > 1 else []),
        f"  crash point: after event {f.point - 1} (points ({f.since}, {f.point}], {f.reason}), "
        f"t = {f.time_ns:.1f} ns" + (f", in persist step {f.step}" if f.step else ""),
        f"  last event before the crash: {f.event}",
        "  persisted:",
        *(f"    {p}" for p in f.persisted[:24]),
        *([f"    ... {len(f.persisted) - 24} more lines"] if len(f.persisted) > 24 else []),
        f"  recovered data: {f.recovered}",
        "  acceptable outcomes:",
        *(f"    {e}" for e in f.expected[:8]),
    ]
    c = f.config or cfg
    if f.unreproducible:
        lines.append(f"  reproduce: this report alone cannot, because {f.unreproducible}. With "
                     "the same objects at hand:")
        extra = "".join(f", {w}=..." for w in ("runtime", "workload", "machine")
                        if w in f.unreproducible and (w != "machine" or not path))
        lines.append(f"    {reproducer(c, extra)}" if not path else
                     f"    crashfuzz.replay('{path}'{extra})")
    elif path:
        lines += ["  reproduce:", f"    python -c \"import crashfuzz; crashfuzz.replay('{path}')\""]
    else:
        lines += ["  reproduce (re-runs the campaign; raises AssertionError with its failures):",
                  f"    {reproducer(c)}"]
    return "\n".join(lines)


def reproducer(cfg: FuzzConfig, extra: str = "") -> str:
    """One line of Python that re-runs the campaign of ``cfg`` (every non-default field; the
    same campaign, so the same failures) and raises AssertionError with its report."""
    default = FuzzConfig()
    args = ", ".join(f"{fl.name}={getattr(cfg, fl.name)!r}" for fl in fields(cfg)
                     if getattr(cfg, fl.name) != getattr(default, fl.name))
    return (f"import crashfuzz; crashfuzz.check_failures(crashfuzz.fuzz(crashfuzz.FuzzConfig("
            f"{args}){extra}))")


def format_report(report: Report, paths: list[str] | None = None, show: int = 3) -> str:
    """The summary and the first ``show`` failures in full."""
    out = [report.summary()]
    for i, f in enumerate(report.failures[:show]):
        out.append(format_failure(f, report.config, paths[i] if paths and i < len(paths) else None))
    if report.failure_count > show:
        more = report.failure_count - min(show, len(report.failures))
        saved = f" ({len(paths)} saved)" if paths else ""
        out.append(f"... and {more} more failures{saved}")
    return "\n\n".join(out)


def _file_safe(name: str) -> str:
    """``name`` as a file-name prefix (mutant names have ':', import paths '/' and '.')."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "runtime"


def findings_of(directory: str | Path, runtime: str,
                unreadable: list[str] | None = None) -> list[Path]:
    """The saved findings in ``directory`` of campaigns that fuzzed ``runtime`` (a registered
    name or an import path, as in FuzzConfig.runtime), sorted. A file that cannot say whose it
    is (truncated, not JSON, no config.runtime) is not replayed but never passed over in
    silence: ``"PATH (unreadable: why)"`` is appended to ``unreadable`` for the caller to
    report (a damaged finding must not cost the new run, nor go unnoticed)."""
    out = []
    for p in sorted(Path(directory).glob("*.json")):
        try:
            doc = json.loads(p.read_text())
            if doc["config"]["runtime"] == runtime:
                out.append(p)
        except (OSError, ValueError, KeyError, TypeError) as e:
            if unreadable is not None:
                unreadable.append(f"{p} (unreadable: {_why_unreadable(p, e)})")
    return out


def _why_unreadable(p: Path, e: Exception) -> str:
    """What :func:`load_finding` says about ``p``, else what reading its runtime raised."""
    try:
        load_finding(p)
    except ConfigError as err:
        return str(err).removeprefix(f"{p}: ")
    return (f"its config names no runtime ({type(e).__name__}: {e}); delete the file or "
            "re-run the campaign to regenerate it")


def save_findings(report: Report, directory: str | Path = DEFAULT_DIR) -> list[str]:
    """Write each failure of ``report`` to ``directory``; return the JSON paths. A finding's
    config is the failure's own (user classes as import paths), so ``replay`` rebuilds it."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in report.failures:
        stem = (f"{_file_safe(report.runtime)}-{f.image_hash[0]:016x}-{f.point}"
                + (f"-d{f.depth}" if f.depth > 1 else ""))
        np.save(d / f"{stem}.npy", f.image)
        doc = {"config": (f.config or report.config).to_dict(), "runtime": report.runtime,
               "unreproducible": f.unreproducible, "kind": f.kind,
               "point": f.point, "since": f.since, "reason": f.reason, "event": f.event,
               "message": f.message, "recovered": f.recovered, "expected": f.expected,
               "persisted": f.persisted, "image": f"{stem}.npy", "depth": f.depth,
               "origin": f.origin, "lineage": list(f.lineage), "step": f.step}
        (d / f"{stem}.json").write_text(json.dumps(doc, indent=2))
        paths.append(str(d / f"{stem}.json"))
    return paths


def _field(doc: dict[str, Any], p: Path, key: str, kind: str, lo: int | None = None,
           default: Any = None) -> Any:
    """``doc[key]`` checked to be ``kind`` ('int', 'dict', 'str' or 'list of int')."""
    if key not in doc:
        if default is not None:
            return default
        raise ConfigError(f"{p}: not a crashfuzz finding: the field {key!r} is missing. Re-run "
                          "the campaign to regenerate it.")
    v = doc[key]
    ok = {"int": lambda x: isinstance(x, int) and not isinstance(x, bool) and (lo is None or x >= lo),
          "dict": lambda x: isinstance(x, dict),
          "str": lambda x: isinstance(x, str) and bool(x),
          "list of int": lambda x: isinstance(x, list) and all(
              isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in x)}[kind](v)
    if not ok:
        want = f"an integer >= {lo}" if kind == "int" and lo is not None else {
            "int": "an integer", "dict": "a mapping of FuzzConfig fields",
            "str": "the file name of the crash image (.npy)",
            "list of int": "a list of crash points (integers >= 0)"}[kind]
        raise ConfigError(f"{p}: field {key!r} must be {want}, got {type(v).__name__} {v!r}. "
                          "Fix or regenerate the finding.")
    return v


def load_finding(path: str | Path) -> tuple[dict[str, Any], np.ndarray]:
    """The finding's JSON document and its crash image, checked: a ConfigError saying what is
    wrong for a missing, unreadable or malformed file or image."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: no such finding file. Give the .json path printed by "
                          "`crashfuzz run` (saved under .crashfuzz/findings by default).")
    if not p.is_file():
        raise ConfigError(f"{p}: is {'a directory' if p.is_dir() else 'not a regular file'}, "
                          "not a finding; give the finding's .json file"
                          + (f" (e.g. {str(p / '*.json')!r})" if p.is_dir() else ""))
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: not a crashfuzz finding (not UTF-8 text; the crash image is the "
                          ".npy file beside the .json)") from None
    except (json.JSONDecodeError, RecursionError) as e:
        raise ConfigError(f"{p}: not a crashfuzz finding (invalid JSON: {e}). Re-run the "
                          "campaign to regenerate it.") from None
    except OSError as e:
        raise ConfigError(f"{p}: cannot read the finding: {e.strerror or e}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{p}: not a crashfuzz finding (a JSON {type(doc).__name__}, not an "
                          "object with config, point, since and image). Re-run the campaign.")
    _field(doc, p, "config", "dict")
    _field(doc, p, "point", "int", 0)
    _field(doc, p, "since", "int", -1)
    doc["depth"] = _field(doc, p, "depth", "int", 1, default=1)
    doc["lineage"] = _field(doc, p, "lineage", "list of int", default=[])
    name = _field(doc, p, "image", "str")
    ip = p.parent / name
    if not ip.is_file():
        what = "is a directory" if ip.is_dir() else "does not exist"
        raise ConfigError(f"{p}: its crash image {str(ip)!r} {what}; the image is the .npy file "
                          "saved beside the .json. Re-run the campaign to regenerate both.")
    try:
        img = np.load(ip, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise ConfigError(f"{p}: its crash image {str(ip)!r} is not a readable .npy array ({e}). "
                          "Re-run the campaign to regenerate it.") from None
    if not isinstance(img, np.ndarray) or img.dtype != np.uint8 or img.ndim != 1:
        got = (f"a {img.dtype} array of shape {img.shape}" if isinstance(img, np.ndarray)
               else type(img).__name__)
        raise ConfigError(f"{p}: its crash image {str(ip)!r} must be a 1-D uint8 array (the PM "
                          f"bytes), got {got}; it is not cast. Re-run the campaign to "
                          "regenerate it.")
    return doc, img


def _point(model: Any, doc: dict[str, Any], path: str | Path) -> Any:
    try:
        return model.point(doc["point"], doc["since"])
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}; the finding does not match this campaign's trace (from "
                          "another version?). Re-run the campaign to regenerate it.") from None


def replay(path: str | Path, runtime: Any = None, workload: Any = None,
           verbose: bool = True) -> Failure | None:
    """Re-check a saved finding; returns the failure if it still fails, else None."""
    doc, img = load_finding(path)
    try:
        cfg = FuzzConfig.from_dict(doc["config"])
    except ConfigError as e:
        raise ConfigError(f"{path}: its config is not a valid FuzzConfig: {e}") from None
    try:
        camp = Campaign(cfg, runtime, workload)
    except PmsimError as e:
        raise ConfigError(f"{path}: cannot rebuild its campaign: {e}") from None
    except BaseException as e:
        err = user_error(e, f"rebuilding the campaign of {path}")
        if err is None:
            raise
        raise err from e
    if img.shape != camp.trace.base.shape:
        raise ConfigError(f"{path}: image has {img.size} bytes but this build's PM layout has "
                          f"{camp.trace.base.size}; the finding is from another version")
    rep = Report(cfg, camp.rt_name, workload_label(camp.session.workload))
    h = (0, 0)
    if doc.get("kind") == "crash-free":
        failure = camp.crash_free_failure
    elif doc["depth"] > 1:
        stage = camp.stage_for(doc["lineage"])
        point = _point(stage.model, doc, path)
        failure = camp.check_deep_image(stage, point, image_hash(img), img, rep)
    else:
        point = _point(camp.model, doc, path)
        failure = camp._check_image(point, h, img, rep)
        if failure is None and cfg.idempotence:
            failure = camp._check_idempotence(point, h, img, None, rep)
    if verbose:
        print(format_failure(failure, cfg, str(path)) if failure else
              f"{path}: recovery now passes (the finding no longer reproduces)")
    return failure
