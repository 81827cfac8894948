"""What ``pmsim runtimes`` and ``pmsim workloads`` list: every registered runtime and workload
with what a user needs to choose one, derived from the code (never typed by hand).

A runtime: its family, the papers whose experiments run it (from the registered papers'
points), whether it is durable, a fuzzing variant or a mutant, whether it re-executes bodies
(optimistic), the application threads it supports (the machine's 64 cores less its background
threads), the persistence domains it is defined for (``supported_domains``) and its tuning
options (:func:`pmsim.runtimes.options.settable`). A workload: its help and the fields of its
``Params`` dataclass with their defaults, units and help.
"""

from __future__ import annotations

import dataclasses
import inspect
from functools import cache
from typing import Any

from .errors import unknown

MAX_CORES = 64
"""Cores a machine has at most (MachineConfig.cores)."""


@cache
def _papers_of_runtimes() -> dict[str, tuple[str, ...]]:
    """Runtime name (options stripped) -> the papers whose experiments run it."""
    from .experiments.claims import PAPERS, get_paper
    from .runtimes.options import split

    get_paper("marathe")  # loads the built-in papers
    out: dict[str, set[str]] = {}
    for name, paper in PAPERS.items():
        for point in paper.points(quick=True):
            rt = str(point["runtime"])
            parts = split(rt)
            out.setdefault(parts[0] if parts else rt, set()).add(name)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def max_threads(cls: type) -> int:
    """The most application threads ``cls`` runs: each needs a core, and so does each of its
    background threads, out of MAX_CORES."""
    t = MAX_CORES
    while t > 1 and t + cls.extra_cores(t) > MAX_CORES:
        t -= 1
    return t


def runtime_info(name: str) -> dict[str, Any]:
    """What ``pmsim runtimes`` shows of the registered runtime ``name``."""
    from .runtimes.options import settable
    from .runtimes.registry import MUTANTS, get_runtime, is_fuzz_variant

    cls = get_runtime(name)
    papers = _papers_of_runtimes()
    family_papers = sorted({p for n, ps in papers.items() if n in _registered()
                            and _registered()[n].family == cls.family for p in ps})
    doc = (inspect.getdoc(cls) or "").strip().split("\n\n")[0]
    mutant = MUTANTS.get(name)
    return {
        "name": name,
        "family": cls.family,
        "papers": list(papers.get(name, ())),
        "family_papers": family_papers,
        "durable": bool(cls.durable),
        "fuzz_variant": is_fuzz_variant(name),
        "mutant_of": mutant.base.name if mutant is not None else None,
        "optimistic": bool(cls.optimistic),
        "threads": [1, max_threads(cls)],
        "background_cores": int(cls.extra_cores(1)),
        "domains": list(cls.supported_domains),
        "options": dict(settable(cls)),
        "summary": " ".join(doc.split()),
    }


def _registered() -> dict[str, type]:
    from .runtimes.registry import RUNTIMES, get_runtime

    get_runtime("undo")  # the built-in registrations
    return RUNTIMES


def runtime_names(mutants: bool = False) -> list[str]:
    """Registered runtimes in registration order (mutants, named ``base:Id``, on request)."""
    from .runtimes.registry import MUTANTS

    return [n for n in _registered() if mutants or n not in MUTANTS]


def runtimes_table(infos: list[dict[str, Any]]) -> str:
    """One line per runtime."""
    from .stats import format_table

    rows = []
    for i in infos:
        paper = ", ".join(i["papers"]) or (f"({', '.join(i['family_papers'])})"
                                           if i["family_papers"] else "-")
        kind = ("mutant of " + i["mutant_of"] if i["mutant_of"] else
                "fuzzing" if i["fuzz_variant"] else "durable" if i["durable"] else "volatile")
        rows.append({"runtime": i["name"], "family": i["family"], "paper": paper, "kind": kind,
                     "optimistic": "yes" if i["optimistic"] else "no",
                     "threads": f"{i['threads'][0]}..{i['threads'][1]}",
                     "domains": ",".join(d.replace("pdom", "") for d in i["domains"]),
                     "options": len(i["options"])})
    return format_table(rows, align_left=("runtime", "family", "paper", "kind", "optimistic",
                                          "domains"))


def runtime_detail(info: dict[str, Any]) -> str:
    """Everything about one runtime, its options with their defaults."""
    paper = ", ".join(info["papers"]) or "-"
    optimistic = ("yes (re-executes bodies: runs workloads that define body)"
                  if info["optimistic"] else "no")
    lines = [f"{info['name']}: {info['summary']}",
             f"  family          {info['family']} (papers running the family: "
             f"{', '.join(info['family_papers']) or '-'})",
             f"  papers          {paper}",
             f"  durable         {'yes' if info['durable'] else 'no (a volatile baseline)'}",
             f"  fuzzing variant {'yes' if info['fuzz_variant'] else 'no'}",
             f"  mutant of       {info['mutant_of'] or '-'}",
             f"  optimistic      {optimistic}",
             f"  threads         {info['threads'][0]}..{info['threads'][1]}"
             + (f" (+{info['background_cores']} background cores)" if info["background_cores"]
                else ""),
             f"  domains         {', '.join(info['domains'])}",
             f"  options         {len(info['options'])}, set as {info['name']}[NAME=VALUE,...]:"]
    width = max((len(k) for k in info["options"]), default=0)
    lines += [f"    {k:{width}s}  {v!r}" for k, v in sorted(info["options"].items())]
    return "\n".join(lines)


def workload_info(name: str) -> dict[str, Any]:
    """What ``pmsim workloads`` shows of the registered workload ``name``."""
    from .workloads.base import get_workload

    cls = get_workload(name)
    params = []
    for f in dataclasses.fields(cls.Params):
        default = (f.default if f.default is not dataclasses.MISSING else
                   f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        params.append({"name": f.name, "default": default, "unit": f.metadata.get("unit", ""),
                       "help": f.metadata.get("help", "")})
    doc = cls.help or " ".join((inspect.getdoc(cls) or "").split("\n\n")[0].split())
    return {"name": name, "class": f"{cls.__module__}:{cls.__qualname__}", "help": doc,
            "params": params}


def workload_names() -> list[str]:
    from .workloads.base import WORKLOADS, get_workload

    get_workload("array")
    return list(WORKLOADS)


def workloads_text(infos: list[dict[str, Any]]) -> str:
    """Each workload with its help, then one line per parameter."""
    out = []
    for i in infos:
        out.append(f"{i['name']}: {i['help']}")
        if not i["params"]:
            out.append("    (no parameters)")
        width = max((len(p["name"]) for p in i["params"]), default=0)
        for p in i["params"]:
            unit = f" {p['unit']}" if p["unit"] else ""
            out.append(f"    -p {p['name']:{width}s} = {p['default']!s}{unit}: {p['help']}")
    return "\n".join(out)


def select(names: list[str], wanted: list[str], kind: str) -> list[str]:
    """``wanted`` (all of ``names`` if empty), each checked: an unknown name is an error."""
    for w in wanted:
        if w not in names:
            raise unknown(kind, w, names)
    return list(wanted) or names


__all__ = ["max_threads", "runtime_detail", "runtime_info", "runtime_names", "runtimes_table",
           "select", "workload_info", "workload_names", "workloads_text"]
