"""Human-readable failure reports, saved findings and their replay.

A finding is saved as ``<dir>/<runtime>-<hash>.json`` (the campaign config, the crash point,
what went wrong) plus ``.npy`` (the crash image). ``replay(path)`` redoes the deterministic
crash-free run, loads the image, recovers and re-checks it: a runnable reproducer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from pmsim.errors import ConfigError

from .campaign import Campaign, Failure, FuzzConfig, Report
from .model import image_hash

DEFAULT_DIR = ".crashfuzz/findings"


def format_failure(f: Failure, cfg: FuzzConfig, path: str | None = None) -> str:
    lines = [
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
        "  reproduce:",
    ]
    if path:
        lines.append(f"    python -c \"import crashfuzz; crashfuzz.replay('{path}')\"")
    else:
        args = ", ".join(f"{k}={v!r}" for k, v in cfg.to_dict().items()
                         if v != FuzzConfig.__dataclass_fields__[k].default and k != "params")
        if cfg.params:
            args += f", params={cfg.params!r}"
        lines.append(f"    crashfuzz.fuzz(crashfuzz.FuzzConfig({args}), stop_at_first=True)")
    return "\n".join(lines)


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


def save_findings(report: Report, directory: str | Path = DEFAULT_DIR) -> list[str]:
    """Write each failure of ``report`` to ``directory``; return the JSON paths."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in report.failures:
        stem = (f"{report.runtime.replace(':', '_')}-{f.image_hash[0]:016x}-{f.point}"
                + (f"-d{f.depth}" if f.depth > 1 else ""))
        np.save(d / f"{stem}.npy", f.image)
        doc = {"config": report.config.to_dict(), "runtime": report.runtime, "kind": f.kind,
               "point": f.point, "since": f.since, "reason": f.reason, "event": f.event,
               "message": f.message, "recovered": f.recovered, "expected": f.expected,
               "persisted": f.persisted, "image": f"{stem}.npy", "depth": f.depth,
               "origin": f.origin, "lineage": list(f.lineage), "step": f.step}
        (d / f"{stem}.json").write_text(json.dumps(doc, indent=2))
        paths.append(str(d / f"{stem}.json"))
    return paths


def load_finding(path: str | Path) -> tuple[dict[str, Any], np.ndarray]:
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
        img = np.load(p.parent / doc["image"])
    except (OSError, ValueError, KeyError) as e:
        raise ConfigError(f"{p}: not a readable crashfuzz finding ({e}). Re-run the campaign "
                          "to regenerate it.") from None
    return doc, img


def replay(path: str | Path, runtime: Any = None, workload: Any = None,
           verbose: bool = True) -> Failure | None:
    """Re-check a saved finding; returns the failure if it still fails, else None."""
    doc, img = load_finding(path)
    cfg = FuzzConfig.from_dict(doc["config"])
    camp = Campaign(cfg, runtime, workload)
    if img.shape != camp.trace.base.shape:
        raise ConfigError(f"{path}: image has {img.size} bytes but this build's PM layout has "
                          f"{camp.trace.base.size}; the finding is from another version")
    rep = Report(cfg, camp.rt_name, camp.session.workload.name)
    h = (0, 0)
    if int(doc.get("depth", 1)) > 1:
        stage = camp.stage_for([int(k) for k in doc.get("lineage", [])])
        point = stage.model.point(int(doc["point"]), int(doc["since"]))
        failure = camp.check_deep_image(stage, point, image_hash(img), img, rep)
    else:
        point = camp.model.point(int(doc["point"]), int(doc["since"]))
        failure = camp._check_image(point, h, img, rep)
        if failure is None and cfg.idempotence:
            failure = camp._check_idempotence(point, h, img, np.random.default_rng(cfg.seed), rep)
    if verbose:
        print(format_failure(failure, cfg, str(path)) if failure else
              f"{path}: recovery now passes (the finding no longer reproduces)")
    return failure
