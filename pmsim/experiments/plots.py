"""Figures from measured rows, in the style of the papers' plots (matplotlib, Agg backend).

A :class:`Figure` is data: which column is the x axis, which metric the y axis, one panel per
value of ``panels`` (the persistence domain by default) and one line (or bar group) per value
of ``series`` (the runtime). :func:`draw` renders it to PNG and PDF. Colours are the
Okabe–Ito palette (distinguishable with every common colour-vision deficiency), and every
series also has its own marker and line style, so the figures read in greyscale too.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError

OKABE_ITO: tuple[str, ...] = ("#E69F00", "#56B4E9", "#009E73", "#D55E00", "#0072B2",
                              "#CC79A7", "#000000", "#F0E442")
"""Okabe & Ito (2008), "Color Universal Design": orange, sky blue, bluish green, vermillion,
blue, reddish purple, black and (last: faint on white) yellow."""

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">")
LINESTYLES = ("-", "--", "-.", ":")
HATCHES = ("", "//", "..", "xx", "\\\\")

DOMAIN_TITLES = {"pdom0": "PDOM-0", "pdom1": "PDOM-1", "pdom2": "PDOM-2"}


@dataclass(frozen=True)
class Figure:
    """A figure over rows: ``y`` against ``x``, a panel per ``panels`` value, a series per
    ``series`` value. ``where`` selects rows (column, value) pairs, a tuple value any of its
    values; ``yscale`` multiplies y (1e-3 shows ns as µs); ``normalise`` divides each y by
    that series' y at the same panel and x (e.g. PM bytes relative to undo); ``kind`` "line"
    or "bar" (x is categorical).
    ``published`` holds the paper's own values, ``(series, x, y)`` in the rows' units, drawn
    as stars in the series' colour beside pmsim's lines, so the gap shows at a glance.
    ``share_of`` draws a rate instead of ``y``: ``y / (y + share_of)`` per row (e.g. LLT
    misses over all lookups, from the miss and hit counters)."""

    name: str
    title: str
    x: str
    y: str
    xlabel: str
    ylabel: str
    panels: str = "domain"
    series: str = "runtime"
    where: tuple[tuple[str, Any], ...] = ()
    kind: Literal["line", "bar"] = "line"
    yscale: float = 1.0
    logy: bool = False
    normalise: str | None = None
    order: tuple[str, ...] = field(default=())
    published: tuple[tuple[str, Any, float], ...] = ()
    share_of: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.where, Mapping):
            object.__setattr__(self, "where", tuple(self.where.items()))
        if self.kind not in ("line", "bar"):
            raise ConfigError(f"Figure {self.name!r}: kind must be 'line' or 'bar', not "
                              f"{self.kind!r}")

    def select(self, rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        return [r for r in rows if all(r.get(k) in v if isinstance(v, tuple) else r.get(k) == v
                                       for k, v in self.where)]

    def value(self, row: Mapping[str, Any]) -> float | None:
        """The y this figure draws for ``row`` (before ``normalise`` and ``yscale``); None
        when the row lacks it."""
        y = row.get(self.y)
        if y is None or y == "":
            return None
        if self.share_of is None:
            return float(y)
        rest = row.get(self.share_of)
        if rest is None or rest == "":
            return None
        total = float(y) + float(rest)
        return float(y) / total if total else None


def style(names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """A colour, marker, line style and hatch per series name, stable for a given list of
    names. Variants of one protocol (``undo``, ``undo-2pb``, ``undo-eager``) share a colour and
    differ in line style and hatch."""
    families: dict[str, int] = {}
    variants: dict[str, int] = {}
    out = {}
    for i, n in enumerate(names):
        fam = n.split("-")[0].split(":")[0]
        f = families.setdefault(fam, len(families))
        k = variants[fam] = variants.get(fam, -1) + 1
        out[n] = {"color": OKABE_ITO[f % len(OKABE_ITO)], "marker": MARKERS[i % len(MARKERS)],
                  "linestyle": LINESTYLES[k % len(LINESTYLES)], "hatch": HATCHES[k % len(HATCHES)]}
    return out


def _ordered(values: Sequence[Any], preferred: Sequence[Any] = (), sort: bool = True) -> list[Any]:
    """The distinct values: ``preferred`` ones first in that order, then the rest sorted (or in
    order of first appearance)."""
    seen = list(dict.fromkeys(values))
    first = [v for v in preferred if v in seen]
    rest = [v for v in seen if v not in first]
    if sort:
        try:
            rest.sort()
        except TypeError:
            pass
    return first + rest


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _within(x: Any, xs: Sequence[Any]) -> bool:
    """Whether ``x`` lies within the range of the numeric ``xs`` (a line plot's x axis)."""
    nums = [v for v in xs if isinstance(v, int | float)]
    return bool(nums) and isinstance(x, int | float) and min(nums) <= x <= max(nums)


def draw(fig: Figure, rows: Sequence[Mapping[str, Any]], out: str | Path,
         formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    """Render ``fig`` from ``rows`` into ``out/<name>.<format>``; returns the files written
    (none when no row matches ``fig.where``)."""
    sel = fig.select(rows)
    if not sel:
        return []
    plt = _pyplot()
    panels = _ordered([r.get(fig.panels) for r in sel], tuple(DOMAIN_TITLES))
    series = _ordered([str(r.get(fig.series)) for r in sel], fig.order, sort=False)
    styles = style(series)
    xs_fig = _ordered([r.get(fig.x) for r in sel])
    n_labels = len(series) + len({s for s, x, _ in fig.published if s in styles and (
        x in xs_fig if fig.kind == "bar" else _within(x, xs_fig))})
    w = 3.2 * len(panels) + 0.9
    ncol = max(1, min(n_labels, 6, int(w / 1.9)))  # a legend entry needs about 1.9 in
    legend_rows = -(-n_labels // ncol)
    title = textwrap.fill(fig.title, max(40, int(w * 11)))  # about 11 characters an inch
    extra = 0.17 * title.count("\n")
    h = 2.6 + 0.25 * legend_rows + (0.5 if fig.kind == "bar" else 0) + extra
    f, axes = plt.subplots(1, len(panels), figsize=(w, h), sharey=True, squeeze=False)
    # fixed margins in inches (no tight_layout: it costs a full extra draw per figure)
    bottom = 0.55 + 0.25 * legend_rows + (0.45 if fig.kind == "bar" else 0)
    f.subplots_adjust(left=0.75 / w, right=1 - 0.15 / w, top=1 - (0.55 + extra) / h,
                      bottom=bottom / h,
                      wspace=0.12)
    for ax, panel in zip(axes[0], panels, strict=True):
        prow = [r for r in sel if r.get(fig.panels) == panel]
        base: dict[Any, float] = {}
        if fig.normalise is not None:
            base = {r.get(fig.x): v for r in prow
                    if str(r.get(fig.series)) == fig.normalise and (v := fig.value(r))}
        xs_all = _ordered([r.get(fig.x) for r in prow])
        width = 0.8 / max(len(series), 1)
        for i, s in enumerate(series):
            pts = sorted(((r.get(fig.x), v) for r in prow
                          if str(r.get(fig.series)) == s and (v := fig.value(r)) is not None),
                         key=lambda p: xs_all.index(p[0]))
            if fig.normalise is not None:
                pts = [(x, y / base[x]) for x, y in pts if base.get(x)]
            if not pts:
                continue
            ys = [y * fig.yscale for _, y in pts]
            st = styles[s]
            if fig.kind == "bar":
                pos = [xs_all.index(x) + (i - (len(series) - 1) / 2) * width for x, _ in pts]
                ax.bar(pos, ys, width=width, color=st["color"], label=s, edgecolor="black",
                       linewidth=0.4, hatch=st["hatch"])
            else:
                ax.plot([x for x, _ in pts], ys, label=s, color=st["color"],
                        marker=st["marker"], linestyle=st["linestyle"], markersize=4,
                        linewidth=1.4)
        starred: set[str] = set()
        for s, x, y in fig.published:
            if s not in styles or (fig.kind == "bar" and x not in xs_all):
                continue
            if fig.kind == "line" and not _within(x, xs_all):
                continue  # a paper's point beyond the x range run (e.g. at the quick scale)
            px = (xs_all.index(x) + (series.index(s) - (len(series) - 1) / 2) * width
                  if fig.kind == "bar" else x)
            ax.plot([px], [y * fig.yscale], linestyle="none", marker="*", markersize=9,
                    color=styles[s]["color"], markeredgecolor="black", markeredgewidth=0.5,
                    label="_nolegend_" if s in starred else f"{s} (paper)", zorder=5)
            starred.add(s)
        if fig.kind == "line" and len(xs_all) <= 8 and all(
                isinstance(x, int | float) and float(x).is_integer() for x in xs_all):
            ax.set_xticks(xs_all)
        if fig.kind == "bar":
            ax.set_xticks(range(len(xs_all)))
            ax.set_xticklabels([str(x) for x in xs_all], rotation=30, ha="right")
        ax.set_title(DOMAIN_TITLES.get(str(panel), f"{fig.panels} = {panel}"), fontsize=10)
        ax.set_xlabel(fig.xlabel)
        if fig.logy:
            from matplotlib.ticker import FuncFormatter, NullFormatter

            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(NullFormatter())
        ax.grid(True, axis="y", linewidth=0.4, alpha=0.6)
        ax.tick_params(labelsize=8)
    axes[0][0].set_ylabel(fig.ylabel)
    handles, labels = axes[0][0].get_legend_handles_labels()
    for ax in axes[0][1:]:
        h, lab = ax.get_legend_handles_labels()
        for hh, ll in zip(h, lab, strict=True):
            if ll not in labels:
                handles.append(hh)
                labels.append(ll)
    f.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8,
             frameon=False, bbox_to_anchor=(0.5, 0.0))
    f.suptitle(title, fontsize=10)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for ext in formats:
        path = out / f"{fig.name}.{ext}"
        f.savefig(path, dpi=150 if ext == "png" else None,
                  metadata={"CreationDate": None} if ext == "pdf" else {"Software": None})
        written.append(path)
    plt.close(f)
    return written
