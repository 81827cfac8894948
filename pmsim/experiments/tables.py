"""Tables of records as Markdown, CSV, LaTeX or plain text (no pandas needed).

A table is a list of dicts and the :class:`Column` s to show::

    cols = (Column("runtime"), Column("lat_p50", "p50 (ns)", num))
    print(render(rows, cols, "md"))

Markdown and LaTeX cells are formatted (``Column.fmt``) and escaped; CSV cells hold the raw
values (full precision), so a CSV file reads back into the same numbers.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ConfigError
from ..stats import num

Format = Literal["md", "csv", "latex", "text"]
FORMATS: tuple[str, ...] = ("md", "csv", "latex", "text")


def ratio(v: Any) -> str:
    """A ratio such as ``1.25x``."""
    return "-" if v is None else f"{num(v)}x"


@dataclass(frozen=True)
class Column:
    """One column: the record ``key``, its ``header`` (default: the key) and how cells are
    formatted for people (``fmt``: a callable or a ``str.format`` pattern)."""

    key: str
    header: str = ""
    fmt: Callable[[Any], str] | str = num
    align: Literal["l", "r"] = "l"
    width: str = ""
    """LaTeX: a paragraph column of this width (``"4cm"``) for long text."""

    @property
    def title(self) -> str:
        return self.header or self.key

    def cell(self, row: Mapping[str, Any]) -> str:
        v = row.get(self.key)
        if v is None:
            return "-"
        if callable(self.fmt):
            return self.fmt(v)
        return self.fmt.format(v)


def columns_of(rows: Sequence[Mapping[str, Any]]) -> tuple[Column, ...]:
    """A column per key, in order of first appearance; numbers right-aligned."""
    keys: dict[str, bool] = {}
    for r in rows:
        for k, v in r.items():
            numeric = isinstance(v, int | float) and not isinstance(v, bool)
            keys[k] = keys.get(k, True) and (numeric or v is None)
    return tuple(Column(k, align="r" if n else "l") for k, n in keys.items())


_MD = str.maketrans({"|": r"\|", "\n": " ", "\r": " "})

_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
          "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
          "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
          "\n": " ", "×": r"$\times$", "≈": r"$\approx$", "≤": r"$\leq$", "≥": r"$\geq$",
          "–": "--", "—": "---", "µ": r"$\mu$", "→": r"$\rightarrow$", "±": r"$\pm$",
          "∈": r"$\in$", "✗": r"$\times$", "²": r"$^2$", "·": r"$\cdot$"}


def md_escape(text: str) -> str:
    """A Markdown table cell: pipes escaped, line breaks flattened."""
    return text.translate(_MD)


def latex_escape(text: str) -> str:
    """LaTeX text: the special characters (``& % $ # _ { } ~ ^ \\ < >``) escaped and common
    symbols (×, ≈, ≤, ≥, µ, dashes) spelt in LaTeX."""
    return "".join(_LATEX.get(c, c) for c in text)


def render(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column] | None = None,
           fmt: str = "md", caption: str = "") -> str:
    """``rows`` as a table in ``fmt`` (md, csv, latex, text). ``caption`` titles the LaTeX
    table and is ignored by the other formats."""
    cols = tuple(columns) if columns else columns_of(rows)
    if fmt == "md":
        return render_md(rows, cols)
    if fmt == "csv":
        return render_csv(rows, cols)
    if fmt == "latex":
        return render_latex(rows, cols, caption)
    if fmt == "text":
        return render_text(rows, cols)
    raise ConfigError(f"unknown table format {fmt!r}; use one of {', '.join(FORMATS)}")


def render_md(rows: Sequence[Mapping[str, Any]], cols: Sequence[Column]) -> str:
    head = "| " + " | ".join(md_escape(c.title) for c in cols) + " |"
    rule = "|" + "|".join("---:" if c.align == "r" else "---" for c in cols) + "|"
    body = ["| " + " | ".join(md_escape(c.cell(r)) for c in cols) + " |" for r in rows]
    return "\n".join([head, rule, *body]) + "\n"


def _raw(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, float) and not math.isfinite(v):
        return "" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, list | tuple):
        return ";".join(str(x) for x in v)
    return v


def render_csv(rows: Sequence[Mapping[str, Any]], cols: Sequence[Column]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([c.key for c in cols])
    for r in rows:
        w.writerow([_raw(r.get(c.key)) for c in cols])
    return buf.getvalue()


def render_latex(rows: Sequence[Mapping[str, Any]], cols: Sequence[Column],
                 caption: str = "") -> str:
    """A ``booktabs`` tabular (needs ``\\usepackage{booktabs}``) in a table environment."""
    spec = "".join(f"p{{{c.width}}}" if c.width else "r" if c.align == "r" else "l"
                   for c in cols)
    lines = [r"\begin{table}[t]", r"\centering", r"\small"]
    if caption:
        lines.append(rf"\caption{{{latex_escape(caption)}}}")
    lines += [rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
              " & ".join(latex_escape(c.title) for c in cols) + r" \\", r"\midrule"]
    lines += [" & ".join(latex_escape(c.cell(r)) for c in cols) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def render_text(rows: Sequence[Mapping[str, Any]], cols: Sequence[Column]) -> str:
    cells = [[c.cell(r) for c in cols] for r in rows]
    widths = [max(len(c.title), *(len(row[i]) for row in cells)) if cells else len(c.title)
              for i, c in enumerate(cols)]

    def line(vals: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if c.align == "r" else v.ljust(w)
                         for v, w, c in zip(vals, widths, cols, strict=True)).rstrip()

    return "\n".join([line([c.title for c in cols]), line(["-" * w for w in widths]),
                      *(line(row) for row in cells)]) + "\n"
