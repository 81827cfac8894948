"""Table renderers: Markdown, CSV and LaTeX escape their cells; CSV keeps full precision."""

from __future__ import annotations

import csv
import io

import pytest

from pmsim.errors import ConfigError
from pmsim.experiments.tables import Column, latex_escape, md_escape, num, render

ROWS = [{"name": "a|b", "value": 1234.5678, "note": "50% & $5_x {y} ~ ^ \\ #1"},
        {"name": "c,d \"q\"", "value": None, "note": "≈ 2× ≤ 3 – µs ∈ ✗"}]
COLS = (Column("name"), Column("value", "value (ns)", align="r"), Column("note"))


def test_num() -> None:
    assert num(1234.5678) == "1,235"
    assert num(0.012345) == "0.0123"
    assert num(12) == "12" and num(1_000_000) == "1,000,000"
    assert num(None) == "-" and num(float("nan")) == "-" and num("x") == "x"
    assert num(0.0) == "0"


def test_markdown_escapes_pipes_and_aligns_numbers() -> None:
    md = render(ROWS, COLS, "md")
    lines = md.splitlines()
    assert lines[0] == "| name | value (ns) | note |"
    assert lines[1] == "|---|---:|---|"
    assert lines[2].startswith(r"| a\|b | 1,235 |")
    assert "| - |" in lines[3]
    assert md_escape("x\ny|z") == r"x y\|z"


def test_csv_keeps_raw_values_and_quotes() -> None:
    text = render(ROWS, COLS, "csv")
    back = list(csv.DictReader(io.StringIO(text)))
    assert back[0]["name"] == "a|b" and float(back[0]["value"]) == 1234.5678
    assert back[1]["name"] == 'c,d "q"' and back[1]["value"] == ""
    assert text.splitlines()[0] == "name,value,note"


def test_latex_escapes_specials() -> None:
    tex = render(ROWS, COLS, "latex", caption="A & B_1")
    assert r"\caption{A \& B\_1}" in tex
    assert r"50\% \& \$5\_x \{y\} \textasciitilde{} \textasciicircum{} \textbackslash{} \#1" in tex
    assert r"$\approx$ 2$\times$ $\leq$ 3 -- $\mu$s $\in$ $\times$" in tex
    assert r"\begin{tabular}{lrl}" in tex and r"\toprule" in tex and tex.count(r"\\") >= 3
    assert latex_escape("a_b") == r"a\_b"
    wide = render(ROWS, (Column("note", width="4cm"),), "latex")
    assert r"\begin{tabular}{p{4cm}}" in wide


def test_text_and_default_columns() -> None:
    text = render([{"a": 1, "b": "x"}], None, "text")
    assert text.splitlines()[0].split() == ["a", "b"]


def test_unknown_format() -> None:
    with pytest.raises(ConfigError, match="md, csv, latex, text"):
        render(ROWS, COLS, "html")


def test_the_results_schema_accepts_what_reproduce_writes() -> None:
    """The committed results (every paper and the unified comparison, as `pmsim reproduce
    all` wrote them) pass the schema `pmsim table` checks, row by row."""
    import json
    from pathlib import Path

    from pmsim.experiments.rows import check_results

    path = Path(__file__).resolve().parents[2] / "docs" / "reproduce" / "results.json"
    doc = json.loads(path.read_text())
    check_results(doc, str(path))
    assert sum(len(r) for r in doc["papers"].values()) > 100 and doc["unified"]["rows"]


def test_a_measured_row_passes_the_row_schema() -> None:
    from pmsim.experiments.claims import measure
    from pmsim.experiments.rows import check_row

    row = measure({"runtime": "undo", "workload": "array", "preset": "default", "txs": 3,
                   "paper": "marathe", "experiment": "e"})
    check_row(row, "row")
    with pytest.raises(ConfigError, match="'lat_p50' = 'fast'"):
        check_row({**row, "lat_p50": "fast"}, "row")
