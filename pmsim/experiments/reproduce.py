"""Reproduce papers' claims and the unified comparison; write tables, figures and results.md.

CLI commands (registered with :func:`pmsim.cli.register`):

* ``pmsim reproduce marathe|all [--quick] [--out DIR]``: run the paper's experiments (and for
  ``all`` every registered paper plus the unified comparison) through
  :func:`~.sweep.run_sweep`; write ``DIR/results.json`` (every row), the scoreboards, tables
  (Markdown, CSV, LaTeX), figures (PNG, PDF) and ``DIR/results.md``.
* ``pmsim compare [--runtimes ...] [--workloads ...] [--domains ...] [--format md|csv|latex]``:
  the unified comparison, printed.
* ``pmsim table DIR``: re-render saved results (scoreboards are re-evaluated from the saved
  rows) without rerunning anything; ``--write`` regenerates every file in DIR.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..cli import positive_int, register
from ..errors import ConfigError, PmsimError, unknown
from ..options import check_output_dir, check_output_file, name_list
from .claims import Paper, get_paper, paper_names, run_points, scoreboard, summary, tally
from .explain import TOGGLES, counterfactual_cell, entries, explain
from .plots import DOMAIN_TITLES, draw
from .rows import check_results
from .sweep import add_sweep_args, sweep_options
from .tables import FORMATS, Column, num, render
from .unified import COLUMNS as UNIFIED_COLUMNS
from .unified import FIGURES as UNIFIED_FIGURES
from .unified import MACHINES, Unified, run_unified

RESULTS = "results.json"
EXT = {"md": "md", "csv": "csv", "latex": "tex", "text": "txt"}

SCOREBOARD_COLUMNS: tuple[Column, ...] = (
    Column("claim"), Column("status", width="1.6cm"), Column("source", width="1.3cm"),
    Column("says", "paper says", width="3.6cm"), Column("test", "pmsim tests", width="3.6cm"),
    Column("measured", "pmsim measured", width="3.6cm"), Column("verdict", width="1.3cm"),
    Column("explanation", width="4.2cm"),
)

EXPERIMENT_COLUMNS: tuple[str, ...] = ("runtime", "domain", "threads")
METRIC_COLUMNS: tuple[Column, ...] = (
    Column("lat_p50", "p50 ns", align="r"), Column("lat_p99", "p99 ns", align="r"),
    Column("throughput", "ktx/s", lambda v: num(v / 1e3), "r"),
    Column("pb_per_tx", "PB/tx", align="r"), Column("flush_per_tx", "flush/tx", align="r"),
    Column("pm_bytes_per_tx", "PM B/tx", align="r"),
)


def experiment_columns(paper: Paper, name: str) -> tuple[Column, ...]:
    """Label columns (runtime, domain, threads, the experiment's axes) and the metrics."""
    exp = paper.experiment(name)
    axes: list[str] = []
    for axis, vals in exp.axes:
        keys = sorted({k for v in vals if isinstance(v, Mapping) for k in v}) or [axis]
        axes += keys
    return (*(Column(c) for c in EXPERIMENT_COLUMNS), *(Column(a, align="r") for a in axes),
            *METRIC_COLUMNS)


# -- running -------------------------------------------------------------------------------------

def run_papers(papers: Sequence[Paper], quick: bool, scale: float = 1.0,
               only: Sequence[str] | None = None, **sweep: Any) -> dict[str, list[dict[str, Any]]]:
    """Rows per paper: one sweep over the points of every paper's experiments."""
    points = []
    for p in papers:
        names = [n for n in only if n in {e.name for e in p.experiments}] if only else None
        if only and not names:
            continue
        points += p.points(quick, scale, names)
    rows = run_points(points, label="experiments", **sweep)
    out: dict[str, list[dict[str, Any]]] = {p.name: [] for p in papers}
    for r in rows:
        out[r["paper"]].append(r)
    return out


def save_results(out: Path, doc: Mapping[str, Any]) -> Path:
    path = out / RESULTS
    try:
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1, default=str) + "\n")  # columns keep their order
    except OSError as e:
        raise ConfigError(f"cannot write the results to {str(out)!r} ({e.strerror or e}); give "
                          "--out a writable directory") from None
    return path


def load_results(where: str | Path) -> dict[str, Any]:
    """Saved results: a directory holding results.json, or the file itself."""
    p = Path(where)
    path = p / RESULTS if p.is_dir() else p
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"no saved results at {str(path)!r}; run `pmsim reproduce PAPER --out "
                          f"{where}` first") from None
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot read saved results {str(path)!r}: {e}") from None
    check_results(doc, str(path))
    papers = doc.get("papers")
    if isinstance(papers, dict):  # the registry's order (the file's keys are sorted)
        doc["papers"] = _in_registry_order(papers)
    return doc


def _in_registry_order(papers: Mapping[str, Any]) -> dict[str, Any]:
    order = {n: i for i, n in enumerate(paper_names())}
    return dict(sorted(papers.items(), key=lambda kv: order.get(kv[0], len(order))))


# -- writing -------------------------------------------------------------------------------------

def _write_tables(out: Path, stem: str, rows: Sequence[Mapping[str, Any]],
                  cols: Sequence[Column], caption: str) -> None:
    for fmt in ("md", "csv", "latex"):
        (out / f"{stem}.{EXT[fmt]}").write_text(render(rows, cols, fmt, caption))


def write_outputs(doc: Mapping[str, Any], out: Path, figures: bool = True,
                  markdown: Path | None = None) -> Path:
    """Tables, figures and results.md for saved results ``doc`` into ``out``; also write the
    Markdown report to ``markdown`` (links made relative to it). Returns results.md."""
    out.mkdir(parents=True, exist_ok=True)
    figdir = out / "figures"
    sections: list[tuple[str, list[str]]] = []
    for name, rows in doc.get("papers", {}).items():
        paper = get_paper(name)
        board = scoreboard(paper, rows)
        saved = doc.get("explain", {}).get(name)
        why = _counterfactuals(doc, paper, rows, saved)
        if why is not None:
            for r in board:
                r["counterfactual"] = counterfactual_cell(paper, r, why, saved)
        _write_tables(out, f"scoreboard-{name}", board,
                      (*SCOREBOARD_COLUMNS, *([Column("counterfactual")] if why is not None
                                              else [])),
                      f"{paper.title}: claims checked by pmsim")
        (out / f"rows-{name}.csv").write_text(render(rows, None, "csv"))
        figs, tables = [], []
        for exp in paper.experiments:
            erows = [r for r in rows if r.get("experiment") == exp.name]
            if not erows:
                continue
            stem = f"{name}-{exp.name}"
            _write_tables(out, stem, erows, experiment_columns(paper, exp.name),
                          f"{exp.title} ({exp.source})")
            tables.append((exp, stem, len(erows)))
            if figures:
                for fig in exp.figures:
                    if draw(fig, erows, figdir):
                        figs.append(fig)
        if figures and paper.figures:
            frows = paper.figure_data(rows)
            figs.extend(fig for fig in paper.figures if draw(fig, frows, figdir))
        sections.append((name, _paper_section(paper, board, figs, tables, why)))
    uni = doc.get("unified")
    if uni:
        rows = uni["rows"]
        _write_tables(out, "unified", rows, UNIFIED_COLUMNS,
                      "Every protocol on the same machine, workloads and domains")
        figs = [f for f in UNIFIED_FIGURES if figures and draw(f, rows, figdir)]
        sections.append(("unified", _unified_section(uni, figs)))
    text = _document(doc, sections)
    path = out / "results.md"
    path.write_text(_relink(text, out, out))
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(_relink(text, out, markdown.parent))
    return path


def _counterfactuals(doc: Mapping[str, Any], paper: Paper, rows: Sequence[Mapping[str, Any]],
                     saved: Any) -> list[dict[str, Any]] | None:
    """The Counterfactuals table of ``paper``: evaluated now on the saved toggled rows, so it
    follows today's predicates, or (results saved before the toggled rows were kept) the table
    as it was evaluated then."""
    if saved is None:
        return None
    if not isinstance(saved, Mapping):
        return list(saved)
    meta = doc.get("meta", {})
    return entries(paper, rows, saved, meta.get("scale") == "quick",
                   float(meta.get("txs_scale", 1.0)))


def _relink(text: str, out: Path, base: Path) -> str:
    """Links in ``text`` are relative to ``out`` (written as ``@OUT@/``); make them relative
    to ``base``."""
    rel = os.path.relpath(out.resolve(), base.resolve())
    prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
    return text.replace("@OUT@/", prefix)


def _md_table(rows: Sequence[Mapping[str, Any]], cols: Sequence[Column]) -> str:
    return render(rows, cols, "md")


def _paper_section(paper: Paper, board: Sequence[Mapping[str, Any]], figs: Sequence[Any],
                   tables: Sequence[tuple[Any, str, int]],
                   why: Sequence[Mapping[str, Any]] | None = None) -> list[str]:
    t = tally(board)
    lines = [f"## {paper.title}", "",
             f"{paper.citation} Spec card: `papers/{paper.card}` (§7 setup, §8 claims).", "",
             f"**{summary(t)}** of {len(board)} claims.", "", "### Scoreboard", "",
             _md_table(board, [c for c in SCOREBOARD_COLUMNS if c.key != "test"]
                       + ([Column("counterfactual")] if why is not None else [])),
             "What each claim was tested against (the criteria, with the tolerances of "
             "`pmsim.experiments.claims`):", ""]
    lines += [f"- **{r['claim']}**: {r['test']}" for r in board if r["test"] != "-"]
    lines.append("")
    if why is not None:
        lines += _counterfactual_section(why)
    if figs:
        lines += ["### Figures", ""]
        for f in figs:
            lines += [f"![{f.title}](@OUT@/figures/{f.name}.png)", "",
                      f"*{f.title}* ([PDF](@OUT@/figures/{f.name}.pdf))", ""]
    if tables:
        lines += ["### Experiments", "", "| experiment | figure | points | tables |",
                  "|---|---|---:|---|"]
        for exp, stem, n in tables:
            lines.append(f"| {exp.title} | {exp.source} | {n} | [md](@OUT@/{stem}.md), "
                         f"[csv](@OUT@/{stem}.csv), [tex](@OUT@/{stem}.tex) |")
        lines += ["", f"All rows: [rows-{paper.name}.csv](@OUT@/rows-{paper.name}.csv); "
                  f"scoreboard as [CSV](@OUT@/scoreboard-{paper.name}.csv) and "
                  f"[LaTeX](@OUT@/scoreboard-{paper.name}.tex).", ""]
    return lines


def _counterfactual_section(why: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["### Counterfactuals", "",
             "Each claim that differs, rerun with one mechanism of the model switched ("
             + "; ".join(f"*{t.name}*: {t.help}" for t in TOGGLES) + "). Time per committed "
             "transaction is thread time summed over the claim's rows, as run and toggled.", ""]
    if not why:
        return lines + ["No claim differs, or no toggle applies to the experiments of those "
                        "that do.", ""]
    cols = [Column("claim"), Column("toggle"), Column("verdict"), Column("measured"),
            Column("as run", "time as run"), Column("toggled", "time toggled")]
    return lines + [_md_table(why, cols)]


def _unified_section(uni: Mapping[str, Any], figs: Sequence[Any]) -> list[str]:
    rows = uni["rows"]
    fails = sorted({(r["runtime"], r["workload"], r["domain"]) for r in rows
                    if r.get("fuzz_ok") is False})
    lines = ["## Unified comparison", "",
             f"{uni.get('describe', '')}. Crash fuzz: {uni.get('fuzz', '')}. Mutants killed "
             f"(killed / mutants that are bugs in that domain): {uni.get('kills_source', '')}.",
             ""]
    if fails:
        lines += [f"**Crash-fuzz failures in {len(fails)} configurations**: "
                  + ", ".join(f"{a} / {b} / {DOMAIN_TITLES.get(c, c)}" for a, b, c in fails)
                  + ". Reproduce one with `crashfuzz run --runtime RT --workload WL --domain D "
                    "--txs 2`.", ""]
    lines += [_md_table(rows, UNIFIED_COLUMNS), "Also as [CSV](@OUT@/unified.csv) and "
              "[LaTeX](@OUT@/unified.tex).", ""]
    for f in figs:
        lines += [f"![{f.title}](@OUT@/figures/{f.name}.png)", "",
                  f"*{f.title}* ([PDF](@OUT@/figures/{f.name}.pdf))", ""]
    return lines


def _slug(title: str) -> str:
    """The anchor GitHub gives a heading."""
    keep = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return keep.replace(" ", "-")


def _document(doc: Mapping[str, Any], sections: Sequence[tuple[str, list[str]]]) -> str:
    meta = doc["meta"]
    lines = ["# pmsim results", "",
             f"Generated by `{meta['command']}` with pmsim {meta['version']} (engine backend "
             f"{meta['backend']}, {meta['scale']} scale, {meta['points']} measured points, "
             f"{meta['seconds']:.0f} s wall on {meta['workers']}). Do not edit by hand: "
             "rerun the command, or re-render the saved rows with "
             f"`pmsim table {meta['out']} --write`.", "",
             "Every verdict is computed from the measured rows by the claim's predicate "
             "(`pmsim/experiments/papers/`): **holds** means within the test's tolerance, "
             "**differs** means outside it (with one sentence on why), **scale-limited** means "
             "the run did not reach the regime the claim is about (so the test could not have "
             "failed; the sentence says what would reach it), **not modelled** means out of "
             "the model's reach, **not run** means its experiment was skipped; **self-check** "
             "rows check pmsim's own implementation and are not counted as reproduced claims. "
             "Tolerances: a ratio the paper gives as ~r holds if its excess over 1 is within a "
             "factor 1.5 of r-1 (~2x: [1.67, 2.5]); a range a-b is widened the same way; "
             "quantities the paper calls equal may differ by 10%; a runtime is 'best' within 5% "
             "of the fastest. Quick-scale numbers come from short runs (tens of transactions "
             "per point) and move by a few percent between scales.", ""]
    toc = [f"- [{body[0][3:]}](#{_slug(body[0][3:])})" for _, body in sections if body]
    lines += toc + [""]
    for _, body in sections:
        lines += body
    return "\n".join(lines).rstrip() + "\n"


# -- commands --------------------------------------------------------------------------------------

def _write(doc: Mapping[str, Any], out: Path, figures: bool, markdown: str | None) -> Path:
    try:
        return write_outputs(doc, out, figures, Path(markdown) if markdown else None)
    except OSError as e:
        raise PmsimError(f"cannot write {e.filename or out} ({e.strerror or e}); choose a "
                         "writable --out / --markdown") from None


def _names(option: str, values: Sequence[str] | None, example: str) -> list[str]:
    """Comma- or space-separated names from repeated/nargs options; [] when the option is not
    given (the default), an error when it is given but names nothing."""
    return name_list(option, values, example) or []


def _workers(sweep: Mapping[str, Any]) -> str:
    ex = sweep.get("executor")
    jobs = sweep.get("jobs") or os.cpu_count() or 1
    if ex is None or ex == "local":
        return f"{jobs} local worker process(es)"
    return str(ex)


def _add_reproduce(p: argparse.ArgumentParser) -> None:
    p.add_argument("paper", help="a registered paper (marathe, ...), several comma-separated "
                   "(marathe,dudetx), 'all' (every paper and the unified comparison), or "
                   "'unified' (the unified comparison alone)")
    p.add_argument("--quick", action="store_true", help="the quick scale: fewer transactions "
                   "and axis values, the same shape (marathe: under 2 minutes on 2 cores)")
    p.add_argument("--scale", type=float, default=1.0, metavar="F",
                   help="multiply every point's transactions by F (e.g. 0.2 for a smoke test)")
    p.add_argument("--only", action="append", metavar="EXP", help="run only these experiments "
                   "(comma-separated names; claims reading others are 'not run')")
    p.add_argument("--out", default="results", help="output directory (default: results)")
    p.add_argument("--markdown", metavar="PATH", help="also write the report here, with links "
                   "relative to it (e.g. docs/results.md)")
    p.add_argument("--no-figures", action="store_true", help="skip the matplotlib figures")
    p.add_argument("--no-unified", action="store_true", help="with 'all': skip the unified "
                   "comparison")
    p.add_argument("--explain", action="store_true", help="rerun the experiments of every "
                   "claim that differs with each modelled mechanism toggled (prefetchers, core "
                   "model, WPQ merging, DIMM buffer) and report which toggles flip the verdict")
    add_sweep_args(p)


def _cmd_reproduce(args: argparse.Namespace) -> int:
    known = paper_names()
    unified_only = args.paper == "unified"
    if unified_only and (args.no_unified or args.only or args.explain):
        raise ConfigError("`pmsim reproduce unified` runs the unified comparison alone: "
                          "--no-unified, --only and --explain select or explain papers' "
                          "experiments; drop them, or name papers")
    names = known if args.paper == "all" else [] if unified_only else [
        n.strip() for n in args.paper.split(",") if n.strip()]
    papers = [get_paper(n) for n in dict.fromkeys(names)]
    if not papers and not unified_only:
        raise ConfigError(f"no paper named in {args.paper!r}: name one of {', '.join(known)} "
                          "(comma-separated for several) or 'all'")
    if not (args.scale > 0 and args.scale < 1e6):
        raise ConfigError(f"--scale {args.scale}: use a number > 0")
    only = _names("--only", args.only, "scalability")
    for n in only:
        if not any(n in {e.name for e in p.experiments} for p in papers):
            exps = sorted({e.name for p in papers for e in p.experiments})
            raise unknown("experiment", n, exps)
    sweep = sweep_options(args)
    out = Path(args.out)
    check_output_dir("--out", args.out)
    check_output_file("--markdown", args.markdown, create_parents=True)
    t0 = time.perf_counter()
    rows = run_papers(papers, args.quick, args.scale, only or None, **sweep)
    doc: dict[str, Any] = {"papers": rows}
    n = sum(len(r) for r in rows.values())
    if args.explain:
        doc["explain"] = {p.name: explain(p, rows[p.name], args.quick, args.scale, **sweep)
                          for p in papers if rows.get(p.name)}
    if args.paper in ("all", "unified") and not args.no_unified:
        u = Unified.quick() if args.quick else Unified()
        u = u.resolved()
        if args.scale != 1.0:
            u = replace(u, txs=max(1, round(u.txs * args.scale)),
                        warmup=round(u.warmup * args.scale))
        urows, source = run_unified(u, **sweep)
        doc["unified"] = {"rows": urows, "kills_source": source, "describe": u.describe(),
                          "fuzz": _fuzz_text()}
        n += len(urows)
    secs = time.perf_counter() - t0
    from .. import __version__
    from ..machine import default_backend

    argv = ["pmsim", "reproduce", args.paper, *(["--quick"] if args.quick else []),
            *([f"--scale={args.scale:g}"] if args.scale != 1.0 else []),
            *(f"--only={x}" for x in only), *(["--explain"] if args.explain else []),
            f"--out={args.out}"]
    doc["meta"] = {"command": shlex.join(argv), "version": __version__,
                   "backend": default_backend(), "scale": "quick" if args.quick else "full",
                   "txs_scale": args.scale, "only": list(only), "points": n, "seconds": secs,
                   "workers": _workers(sweep), "out": args.out}
    save_results(out, doc)
    md = _write(doc, out, not args.no_figures, args.markdown)
    for name in rows:
        board = scoreboard(get_paper(name), rows[name])
        t = tally(board)
        print(f"# {name}: {summary(t)}")
        print(render(board, [Column("claim"), Column("verdict"), Column("measured")], "text"))
    print(f"# {n} points in {secs:.1f} s; wrote {md}", file=sys.stderr)
    return 0


def _fuzz_text() -> str:
    from .unified import FUZZ

    return ("a small campaign per (runtime, workload, domain): " + ", ".join(
        f"{k}={v}" for k, v in FUZZ.items()) + ", crash depth 2, reduced (complete) crash "
        "points; 'pts sampled' counts points above the state budget, checked on a uniform "
        "sample")


def _add_compare(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runtimes", nargs="+", metavar="RT", help="runtimes (default: every "
                   "registered one that is not a mutant); comma- or space-separated")
    p.add_argument("--workloads", nargs="+", metavar="WL", help="workloads (default: array kv "
                   "bank)")
    p.add_argument("--domains", nargs="+", metavar="D", help="persistence domains (default: "
                   "pdom0 pdom1 pdom2)")
    p.add_argument("--machine", default="optane", help=f"machine family ({', '.join(MACHINES)}) "
                   "or any preset (its domain is replaced)")
    p.add_argument("--threads", type=positive_int, default=1, help="application threads")
    p.add_argument("--txs", type=positive_int, help="measured transactions per thread "
                   "(default 1000, --quick 150)")
    p.add_argument("--quick", action="store_true", help="150 transactions; mutant kills read "
                   "from docs/kill-matrix.txt")
    p.add_argument("--no-fuzz", action="store_true", help="skip the crash-fuzz campaigns")
    p.add_argument("--kills", choices=["file", "compute", "off"],
                   help="mutant kill counts: read docs/kill-matrix.txt, compute the kill matrix "
                        "(minutes), or leave out (default: compute; file with --quick)")
    p.add_argument("--format", choices=FORMATS, default="text", help="table format")
    p.add_argument("--out", metavar="FILE", help="also write the table to FILE")
    add_sweep_args(p)


def _cmd_compare(args: argparse.Namespace) -> int:
    from .unified import DOMAINS, WORKLOADS

    check_output_file("--out", args.out)
    kw: dict[str, Any] = {"runtimes": tuple(_names("--runtimes", args.runtimes, "undo,redo")),
                          "workloads": tuple(_names("--workloads", args.workloads, "kv")
                                             or WORKLOADS),
                          "domains": tuple(_names("--domains", args.domains, "pdom1")
                                           or DOMAINS),
                          "machine": args.machine, "threads": args.threads,
                          "fuzz": not args.no_fuzz}
    if args.txs:
        kw["txs"] = args.txs
    if args.kills:
        kw["kills"] = args.kills
    u = (Unified.quick(**kw) if args.quick else Unified(**kw)).resolved()
    t0 = time.perf_counter()
    rows, source = run_unified(u, **sweep_options(args))
    text = render(rows, UNIFIED_COLUMNS, args.format,
                  "Every protocol on the same machine, workloads and domains")
    if args.format in ("md", "text"):
        print(f"# {u.describe()}; mutants killed: {source}")
    else:
        for note in u.skipped():
            print(f"# {note}", file=sys.stderr)
    print(text, end="")
    if args.out:
        try:
            Path(args.out).write_text(text)
        except OSError as e:
            raise PmsimError(f"cannot write --out {args.out!r} ({e.strerror or e}); the table "
                             "is printed above") from None
    print(f"# {len(rows)} configurations in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


def _add_table(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", help="a directory written by `pmsim reproduce` (or its "
                   "results.json)")
    p.add_argument("--what", choices=["scoreboard", "unified", "rows"], default="scoreboard",
                   help="which table (default: scoreboard)")
    p.add_argument("--paper", help="the paper (default: every paper in the results)")
    p.add_argument("--experiment", help="with --what rows: one experiment's rows")
    p.add_argument("--format", choices=FORMATS, default="text", help="table format")
    p.add_argument("--write", action="store_true", help="regenerate every table, figure and "
                   "results.md in the directory instead of printing")
    p.add_argument("--markdown", metavar="PATH", help="with --write: also write the report here")
    p.add_argument("--merge", metavar="OTHER", help="with --write: first fold the papers of "
                   "another `pmsim reproduce` run at the same scale (its directory or "
                   "results.json) into these results, replacing the same papers' rows and "
                   "counterfactuals (only the experiments it ran, if it ran with --only; and "
                   "its unified comparison, if it has one), and save them (the report's "
                   "header names both commands)")


def merge_results(doc: dict[str, Any], other: Mapping[str, Any], where: str) -> list[str]:
    """Fold ``other``'s papers (rows and counterfactuals) and its unified comparison, if any,
    into ``doc`` in place, replacing the same papers and the comparison; the meta names the
    commands that made them (the other run's directory called OTHER) and counts the points
    once. A run made with ``--only`` replaces only the experiments it ran (and their
    counterfactuals), so one figure can be refreshed without rerunning its paper. Returns what
    was merged. Both must be the same scale, pmsim version and engine: a page mixes no
    scales."""
    m, mo = doc["meta"], other.get("meta", {})
    for key in ("scale", "txs_scale", "version", "backend"):
        if m.get(key) != mo.get(key):
            raise ConfigError(f"--merge {where}: its {key} is {mo.get(key)!r}, these results' is "
                              f"{m.get(key)!r}; merge only runs of the same scale, pmsim version "
                              "and engine (rerun the paper with the same options)")
    names = list(other.get("papers", {}))
    if not names and not other.get("unified"):
        raise ConfigError(f"--merge {where}: it holds no paper's results and no unified "
                          "comparison")
    if other.get("unified"):
        m["points"] = (m["points"] - len((doc.get("unified") or {}).get("rows", []))
                       + len(other["unified"]["rows"]))
        doc["unified"] = other["unified"]
    only = set(mo.get("only") or ())
    merged = []
    for name in names:
        paper, old_rows = get_paper(name), doc["papers"].get(name, [])
        ran = ({e.name for e in paper.experiments} & only
               | {str(r.get("experiment")) for r in other["papers"][name]}) if only else None
        if ran == set():
            continue  # a paper of which the --only run ran nothing
        rows = _fold(old_rows, other["papers"][name], ran, paper)
        m["points"] = m["points"] - len(old_rows) + len(rows)
        doc["papers"][name] = rows
        ex = _fold_explain(doc.get("explain", {}).get(name), other.get("explain", {}).get(name),
                           ran, paper)
        if ex is None:
            doc.get("explain", {}).pop(name, None)  # counterfactuals of replaced rows: stale
        else:
            doc.setdefault("explain", {})[name] = ex
        merged.append(f"{name} ({', '.join(sorted(ran))})" if ran is not None else name)
        if ran is not None:
            split = [c.id for c in paper.claims
                     if set(c.experiments) & ran and not set(c.experiments) <= ran]
            if split:
                print(f"# {name}: {', '.join(split)} read experiments both rerun and kept; "
                      "their counterfactuals are dropped until their experiments are rerun "
                      "together (--only with all of them)", file=sys.stderr)
    doc["papers"] = _in_registry_order(doc["papers"])
    cmd = str(mo.get("command", "?")).replace(f"--out={mo.get('out')}", "--out=OTHER")
    step = f"; {cmd}; pmsim table {m.get('out')} --merge OTHER --write"
    m["command"] = str(m["command"]).replace(step, "") + step  # a rerun supersedes its step
    m["seconds"] = float(m.get("seconds", 0.0)) + float(mo.get("seconds", 0.0))
    return merged + (["the unified comparison"] if other.get("unified") else [])


def _fold(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]],
          ran: set[str] | None, paper: Paper) -> list[Any]:
    """``old`` rows with those of the experiments ``ran`` (all, if None) replaced by ``new``,
    in the order a run saves them: by toggle (counterfactual rows), then by experiment."""
    if ran is None:
        return list(new)
    order = {e.name: i for i, e in enumerate(paper.experiments)}
    toggles = {t.name: i for i, t in enumerate(TOGGLES)}
    rows = [r for r in old if r.get("experiment") not in ran] + list(new)
    return sorted(rows, key=lambda r: (toggles.get(r.get("counterfactual"), -1),
                                       order.get(r.get("experiment"), len(order))))


def _fold_explain(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None,
                  ran: set[str] | None, paper: Paper) -> dict[str, Any] | None:
    """The saved counterfactuals after a merge: ``new``'s, plus (for an ``--only`` run) those
    of ``old`` for the experiments it did not rerun; None where none are left."""
    if ran is None:
        return dict(new) if new is not None else None
    kept = set((old or {}).get("experiments", ())) - ran
    exps = sorted(kept | set((new or {}).get("experiments", ())))
    rows = _fold((old or {}).get("rows", ()), (new or {}).get("rows", ()), ran, paper)
    rows = [r for r in rows if r.get("experiment") in exps]
    return {"experiments": exps, "rows": rows} if exps or new is not None else None


def _cmd_table(args: argparse.Namespace) -> int:
    doc = load_results(args.results)
    if args.merge and not args.write:
        raise ConfigError("--merge folds another run into the saved results and rewrites them: "
                          "give --write too")
    if args.merge:
        names = merge_results(doc, load_results(args.merge), args.merge)
        where = Path(args.results)
        save_results(where if where.is_dir() else where.parent, doc)
        print(f"# merged {', '.join(names)} from {args.merge}", file=sys.stderr)
    if args.write:
        out = Path(args.results)
        out = out if out.is_dir() else out.parent
        check_output_dir("results", str(out))
        check_output_file("--markdown", args.markdown, create_parents=True)
        md = _write(doc, out, True, args.markdown)
        print(f"# wrote {md}", file=sys.stderr)
        return 0
    papers = doc.get("papers", {})
    if args.paper is not None and args.paper not in papers:
        raise unknown("paper", args.paper, papers)
    names = [args.paper] if args.paper else list(papers)
    if args.what == "unified":
        if not doc.get("unified"):
            raise PmsimError("these results have no unified comparison; run `pmsim reproduce "
                             "all` (or use `pmsim compare`)")
        print(render(doc["unified"]["rows"], UNIFIED_COLUMNS, args.format), end="")
        return 0
    for name in names:
        paper = get_paper(name)
        if args.what == "scoreboard":
            text = render(scoreboard(paper, papers[name]), SCOREBOARD_COLUMNS, args.format,
                          f"{paper.title}: claims checked by pmsim")
        else:
            rows = papers[name]
            cols = None
            if args.experiment:
                paper.experiment(args.experiment)
                rows = [r for r in rows if r.get("experiment") == args.experiment]
                cols = experiment_columns(paper, args.experiment)
            text = render(rows, cols, args.format)
        print(text, end="")
    return 0


register("reproduce", "run a paper's experiments, check its claims and write tables, figures "
         "and results.md (`all`: every paper plus the unified comparison)", _add_reproduce,
         _cmd_reproduce)
register("compare", "every protocol on the same machine, workloads and domains: throughput, "
         "latency, persistence costs, crash-fuzz verdict and mutants killed", _add_compare,
         _cmd_compare)
register("table", "re-render saved results of `pmsim reproduce` (scoreboard, unified "
         "comparison, rows) without rerunning", _add_table, _cmd_table)
