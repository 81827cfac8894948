"""The unified comparison: every registered protocol on the same machine, workloads and domains.

What no paper did: undo, redo, COW and every variant (``undo-2pb``, ``-eager``, ``-eadr``, and
each protocol registered later) run the same workloads on one machine in PDOM-0/1/2, measured
the same way (:func:`~.claims.measure`), and crash-fuzzed:

* **crash fuzz**: a small exhaustive ``crashfuzz.fuzz`` campaign per (runtime, workload,
  domain) (``FUZZ``; a point over the state budget is sampled, and the table says so);
* **mutants killed**: for each (runtime, domain), how many of the runtime's registered card
  mutants the fuzzer kills, out of those that are bugs there, from
  :func:`crashfuzz.mutants.kill_matrix` (``kills="compute"``) or from the committed
  ``docs/kill-matrix.txt`` (``kills="file"``, the quick default: the matrix takes minutes).
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError, unknown
from .claims import run_points
from .plots import Figure
from .tables import Column, num

DOMAINS = ("pdom0", "pdom1", "pdom2")
MACHINES: dict[str, dict[str, str]] = {
    "optane": {"pdom0": "pdom0", "pdom1": "optane-adr", "pdom2": "eadr"},
    "marathe": {d: f"marathe-{d}" for d in DOMAINS},
}
"""Machine families: the preset used for each domain. Any other preset name is a family of
its own, with the domain replaced."""

WORKLOADS = ("array", "kv", "bank")
WORKLOAD_PARAMS: dict[str, dict[str, Any]] = {
    "array": {"slots": 100_000, "slot_words": 4, "write_pct": 50.0},
    "array-raw": {"slots": 100_000, "slot_words": 4, "write_pct": 50.0},
    "kv": {"keys": 256, "buckets": 64},
}
"""Workload parameters of the comparison (others run with their defaults)."""

KILL_MATRIX_FILE = Path(__file__).resolve().parents[2] / "docs" / "kill-matrix.txt"

FUZZ: dict[str, Any] = {"txs": 2, "idempotence": 1, "depth_runs": 1, "budget": 16384,
                        "max_failures": 3}
"""The small campaign of the crash-fuzz column (crash depth 2, reduced crash points)."""


@dataclass(frozen=True)
class Unified:
    """What the comparison runs. ``runtimes`` empty: every registered runtime that is not a
    mutant or a fuzzing variant (``-fine``, ``-tiny``). ``machine``: a family of
    :data:`MACHINES` or a preset name. ``kills``: where the mutant column comes from ("file",
    "compute" or "off")."""

    runtimes: tuple[str, ...] = ()
    workloads: tuple[str, ...] = WORKLOADS
    domains: tuple[str, ...] = DOMAINS
    machine: str = "optane"
    threads: int = 1
    txs: int = 1000
    warmup: int = 100
    seed: int = 1
    fuzz: bool = True
    kills: Literal["file", "compute", "off"] = "compute"

    @classmethod
    def quick(cls, **kw: Any) -> Unified:
        """The quick scale: 150 transactions, the kill matrix read from the committed file."""
        return cls(**{"txs": 150, "warmup": 20, "kills": "file", **kw})

    def __post_init__(self) -> None:
        for name in ("runtimes", "workloads", "domains"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        bad = [d for d in self.domains if d not in DOMAINS]
        if bad:
            raise unknown("domain", bad[0], DOMAINS)
        if self.kills not in ("file", "compute", "off"):
            raise ConfigError(f"kills={self.kills!r}: use 'file', 'compute' or 'off'")
        if self.threads < 1 or self.txs < 1 or self.warmup < 0:
            raise ConfigError("threads and txs must be >= 1 and warmup >= 0")

    def resolved(self) -> Unified:
        """This comparison with names checked and ``runtimes`` filled in (UnknownNameError
        lists the known names)."""
        from ..presets import PRESETS
        from ..runtimes.registry import MUTANTS, RUNTIMES, get_runtime, is_fuzz_variant
        from ..usercode import is_import_path
        from ..workloads.base import WORKLOADS as KNOWN
        from ..workloads.base import get_workload

        get_runtime("undo")
        names = [r for r in RUNTIMES if r not in MUTANTS]
        families = list(dict.fromkeys(["undo", "redo", "cow", *(n.split("-")[0] for n in names)]))
        protocols = sorted(names, key=lambda n: (families.index(n.split("-")[0]), n != n.split("-")[0],
                                                 names.index(n)))
        for r in self.runtimes:  # a user's runtime by path ('file.py:Class'), not a mutant
            if r not in protocols and (r in MUTANTS or not (is_import_path(r) and get_runtime(r))):
                raise unknown("runtime", r, protocols)
        protocols = [r for r in protocols if not is_fuzz_variant(r)]
        get_workload("array")
        for w in self.workloads:
            if w not in KNOWN and not (is_import_path(w) and get_workload(w)):
                raise unknown("workload", w, KNOWN)
        if self.machine not in MACHINES and self.machine not in PRESETS:
            raise unknown("machine", self.machine, [*MACHINES, *PRESETS])
        out = replace(self, runtimes=self.runtimes or tuple(protocols))
        if out.runtimes and not any(_supports(r, d) for r in out.runtimes for d in out.domains):
            get_runtime(out.runtimes[0]).check_domain(out.domains[0])
        return out

    def skipped(self) -> list[str]:
        """One note per domain naming the runtimes not run there because they do not support
        it (e.g. ``pmem`` and ``proteus`` in PDOM-0, see ``supported_domains``)."""
        by: dict[str, list[str]] = {}
        for d in self.domains:
            for rt in self.runtimes:
                if not _supports(rt, d):
                    by.setdefault(d, []).append(rt)
        return [f"not run in {d}, which they do not support: {', '.join(rts)}"
                for d, rts in by.items()]

    def preset(self, domain: str) -> tuple[str, dict[str, Any]]:
        """The preset and machine overrides of ``domain``."""
        family = MACHINES.get(self.machine)
        if family is not None:
            return family[domain], {}
        return self.machine, {"domain": domain}

    def points(self) -> list[dict[str, Any]]:
        """Points for :func:`~.claims.measure`, one per (runtime, workload, domain)."""
        out = []
        for rt in self.runtimes:
            for wl in self.workloads:
                for d in self.domains:
                    if not _supports(rt, d):
                        continue
                    pre, machine = self.preset(d)
                    out.append({"paper": "", "experiment": "unified", "runtime": rt,
                                "workload": wl, "preset": pre, "threads": self.threads,
                                "txs": self.txs, "warmup": self.warmup, "seed": self.seed,
                                "params": dict(WORKLOAD_PARAMS.get(wl, {})),
                                "machine": machine})
        return out

    def fuzz_points(self) -> list[dict[str, Any]]:
        """Campaigns for the durable runtimes (a volatile baseline has nothing to fuzz)."""
        return [{"runtime": rt, "workload": wl, "domain": d, "threads": 1, "seed": self.seed,
                 **FUZZ} for rt in self.runtimes if _durable(rt) for wl in self.workloads
                for d in self.domains if _supports(rt, d)]

    def describe(self) -> str:
        fam = MACHINES.get(self.machine)
        where = (", ".join(f"{d}: {fam[d]}" for d in self.domains) if fam
                 else f"{self.machine} with the domain replaced")
        params = "; ".join(f"{w} {', '.join(f'{k}={v:g}' for k, v in WORKLOAD_PARAMS[w].items())}"
                           for w in self.workloads if w in WORKLOAD_PARAMS)
        skipped = "".join(f"; {note}" for note in self.skipped())
        return (f"machine {self.machine} ({where}); {self.threads} thread(s), {self.txs} "
                f"measured transactions per thread after {self.warmup} warm-up; {params}"
                f"{skipped}")


def _durable(runtime: str) -> bool:
    from ..runtimes.registry import get_runtime

    return get_runtime(runtime).durable


def _supports(runtime: str, domain: str) -> bool:
    """Whether the protocol is defined in ``domain`` (Proteus and ATOM need ADR or eADR)."""
    from ..runtimes.registry import get_runtime

    return domain in get_runtime(runtime).supported_domains


def fuzz_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """One small crash-fuzz campaign (a :func:`~.sweep.run_sweep` point function)."""
    from crashfuzz import FuzzConfig, fuzz

    cfg = FuzzConfig(**{k: v for k, v in point.items()})
    rep = fuzz(cfg)
    gc.collect()  # free the campaign's machines (reference cycles) before the next point
    return {"runtime": cfg.runtime, "workload": cfg.workload, "domain": cfg.domain,
            "fuzz_ok": rep.ok, "fuzz_failures": rep.failure_count,
            "fuzz_states": rep.states_checked, "fuzz_points": rep.points,
            "fuzz_sampled": rep.points_sampled + rep.deep_points_sampled,
            "fuzz_first": rep.failures[0].summary()[:160] if rep.failures else "",
            "fuzz_seconds": rep.seconds}


def fuzz_verdict(row: Mapping[str, Any]) -> str:
    """``clean (N states)``, ``clean, k sampled``, ``FAILS (k)``, or ``volatile`` for a
    baseline without persistence."""
    if row.get("fuzz_ok") is None:
        return "volatile" if "runtime" in row and not _durable(row["runtime"]) else "-"
    if not row["fuzz_ok"]:
        return f"FAILS ({row['fuzz_failures']})"
    extra = f", {row['fuzz_sampled']} pts sampled" if row.get("fuzz_sampled") else ""
    return f"clean ({num(row['fuzz_states'])} states{extra})"


def kill_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """One (mutant, domain) of the kill matrix at its default base config."""
    from crashfuzz.mutants import kill_matrix

    (row,) = kill_matrix([point["mutant"]], [point["domain"]])
    return {"mutant": row.mutant, "domain": row.domain, "killed": row.killed,
            "expected_kill": row.expected_kill, "workload": row.workload,
            "ok": row.as_expected, "base": row.base}


def read_kill_matrix(path: str | Path = KILL_MATRIX_FILE) -> list[dict[str, Any]]:
    """The rows of a kill-matrix table as ``crashfuzz mutants`` prints it (docs/kill-matrix.txt):
    mutant, domain, killed, expected_kill, workload, ok (as expected) and base (``passes``, ``refuses``,
    ``fails`` or ``-``; ``-`` also for a table written before the base was checked)."""
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except OSError as e:
        raise ConfigError(f"cannot read the kill matrix {p.name} ({e.strerror or e}); "
                          "compute it instead (--kills compute)") from None
    head = next((i for i, ln in enumerate(lines) if ln.split()[:3] == ["mutant", "domain",
                                                                          "killed"]), None)
    if head is None or head + 1 >= len(lines):
        raise ConfigError(f"{p.name} has no 'mutant domain killed expected' header; regenerate "
                          "it with `crashfuzz mutants > docs/kill-matrix.txt`")
    names = lines[head].replace("first point", "first_point").split()
    out = []
    for ln in lines[head + 2:]:
        if not ln.strip():
            break
        f = dict(zip(names, ln.split(maxsplit=len(names) - 1), strict=False))
        if ":" not in f.get("mutant", "") or f.get("domain") not in DOMAINS:
            continue
        expected = f.get("expected") == "kill"
        killed = f.get("killed") == "yes"
        out.append({"mutant": f["mutant"], "domain": f["domain"], "killed": killed,
                    "expected_kill": expected, "workload": f.get("workload", "-"),
                    "ok": f.get("ok", "ok" if killed == expected else "") == "ok",
                    "base": f.get("base", "-")})
    return out


def kill_counts(kill_rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, int]]:
    """Per (runtime, domain): mutants that are bugs there (``bugs``), how many of them the
    fuzzer killed, and how many rows went against expectation (``unexpected``: a base that
    fails the campaign that failed on its mutant counts as one)."""
    from ..runtimes.registry import MUTANTS, get_runtime

    get_runtime("undo")
    out: dict[tuple[str, str], dict[str, int]] = {}
    for r in kill_rows:
        m = MUTANTS.get(r["mutant"])
        base = m.base_name if m is not None else r["mutant"].partition(":")[0]
        c = out.setdefault((base, r["domain"]), {"bugs": 0, "killed": 0, "unexpected": 0})
        if r["expected_kill"]:
            c["bugs"] += 1
            c["killed"] += int(r["killed"])
        c["unexpected"] += int(not r.get("ok", r["killed"] == r["expected_kill"]))
    return out


def kills_text(c: Mapping[str, int] | None) -> str:
    if not c:
        return "no mutants"
    text = f"{c['killed']}/{c['bugs']}"
    return text + (f" ({c['unexpected']} unexpected)" if c["unexpected"] else "")


def run_unified(u: Unified, **sweep: Any) -> tuple[list[dict[str, Any]], str]:
    """Measure, fuzz and count kills; returns the rows and where the kill counts come from."""
    u = u.resolved()
    rows = run_points(u.points(), label="unified", **sweep)
    if u.fuzz:
        fz = run_points(u.fuzz_points(), fuzz_point, label="crash fuzz", **sweep)
        by = {(f["runtime"], f["workload"], f["domain"]): f for f in fz}
        for r in rows:
            r.update(by.get((r["runtime"], r["workload"], r["domain"]), {}))
    source = "off"
    if u.kills != "off":
        from ..runtimes.registry import MUTANTS, get_runtime

        get_runtime("undo")
        if u.kills == "file":
            kill_rows = read_kill_matrix()
            source = (f"read from docs/{KILL_MATRIX_FILE.name} (committed `crashfuzz mutants` "
                      "output), not recomputed")
        else:
            names = sorted(m for m, mm in MUTANTS.items() if mm.base_name in u.runtimes)
            pts = [{"mutant": m, "domain": d} for m in names for d in u.domains
                   if _supports(MUTANTS[m].base_name, d)]
            kill_rows = run_points(pts, kill_point, label="kill matrix", **sweep)
            source = "computed by crashfuzz.mutants.kill_matrix (default base config) in this run"
        counts = kill_counts(kill_rows)
        for r in rows:
            r["mutants_killed"] = kills_text(counts.get((r["runtime"], r["domain"])))
    for r in rows:
        r["crash_fuzz"] = fuzz_verdict(r) if u.fuzz else "not run"
    return rows, source


COLUMNS: tuple[Column, ...] = (
    Column("runtime"), Column("workload"), Column("domain"),
    Column("throughput", "ktx/s", lambda v: num(v / 1e3), "r"),
    Column("lat_p50", "p50 ns", align="r"), Column("lat_p90", "p90 ns", align="r"),
    Column("lat_p99", "p99 ns", align="r"),
    Column("pb_per_tx", "PB/tx", align="r"), Column("flush_per_tx", "flush/tx", align="r"),
    Column("fence_per_tx", "fence/tx", align="r"),
    Column("pm_bytes_per_tx", "PM B/tx", align="r"),
    Column("crash_fuzz", "crash fuzz"), Column("mutants_killed", "mutants killed"),
)

FIGURES: tuple[Figure, ...] = (
    Figure("unified-throughput", "Every protocol on the same machine: throughput", x="workload",
           y="throughput", xlabel="workload", ylabel="throughput (Mtx/s, log)", yscale=1e-6,
           kind="bar", logy=True),
    Figure("unified-pm-writes", "PM bytes written per transaction, relative to undo",
           x="workload", y="pm_bytes_per_tx", xlabel="workload", ylabel="PM bytes / undo's",
           kind="bar", normalise="undo"),
)
