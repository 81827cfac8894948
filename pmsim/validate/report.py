"""``pmsim validate``: run the FAST'20 microbenchmarks and compare them with the published data.

Every point is listed with the published value, pmsim's and their ratio; a point is within
tolerance when the ratio is in [0.75, 1.25]. Shape checks compare ratios the paper's
conclusions rest on (random vs sequential reads, small vs full-line writes, the write
amplification either side of the buffer's size, write bandwidth and the effective write ratio
falling with threads).
Points pmsim does not model are listed with the reason, never dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import bench, published

TOLERANCE = 0.25
"""A point is within tolerance when pmsim / published is within 1 +- this."""


@dataclass(frozen=True)
class Point:
    """One published value beside pmsim's."""

    figure: str
    series: str
    x: float
    published: float
    pmsim: float | None
    unit: str
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return None if self.pmsim is None else self.pmsim / self.published

    @property
    def within(self) -> bool | None:
        r = self.ratio
        return None if r is None else abs(r - 1.0) <= TOLERANCE


@dataclass(frozen=True)
class Shape:
    """A shape the published data shows, and whether pmsim reproduces it."""

    name: str
    published: float
    pmsim: float
    holds: bool
    rule: str


@dataclass
class Report:
    preset: str
    quick: bool
    points: list[Point] = field(default_factory=list)
    shapes: list[Shape] = field(default_factory=list)

    @property
    def modelled(self) -> list[Point]:
        return [p for p in self.points if p.pmsim is not None]

    def summary(self) -> str:
        m = self.modelled
        ok = sum(1 for p in m if p.within)
        shapes = sum(1 for s in self.shapes if s.holds)
        return (f"{ok} of {len(m)} points within +-{TOLERANCE:.0%} of the published value "
                f"({len(self.points) - len(m)} not modelled); {shapes} of {len(self.shapes)} "
                "shapes hold")

    def table(self) -> str:
        """The comparison as a Markdown table."""
        rows = ["| figure | series | x | published | pmsim | ratio | within |",
                "|---|---|---:|---:|---:|---:|---|"]
        for p in self.points:
            if p.pmsim is None:
                rows.append(f"| {p.figure} | {p.series} | {p.x:g} | {p.published:.3g} {p.unit} "
                            f"| - | - | not modelled: {p.note} |")
                continue
            mark = "yes" if p.within else "**no**"
            rows.append(f"| {p.figure} | {p.series} | {p.x:g} | {p.published:.3g} | "
                        f"{p.pmsim:.3g} | {p.ratio:.2f} | {mark} |")
        return "\n".join(rows)

    def shape_table(self) -> str:
        rows = ["| shape | published | pmsim | holds | rule |", "|---|---:|---:|---|---|"]
        for s in self.shapes:
            rows.append(f"| {s.name} | {s.published:.3g} | {s.pmsim:.3g} | "
                        f"{'yes' if s.holds else '**no**'} | {s.rule} |")
        return "\n".join(rows)

    def to_json(self) -> str:
        return json.dumps({"preset": self.preset, "quick": self.quick,
                           "points": [asdict(p) for p in self.points],
                           "shapes": [asdict(s) for s in self.shapes]}, indent=1)


QUICK_THREADS = (1, 2, 4, 8, 16, 24)
QUICK_SIZES = (64, 128, 256, 1024, 4096)
QUICK_REGIONS = (4096, 16384, 20480, 24576, 32768, 65536)
QUICK_INTERVALS = (64, 256, 1024, 4096, 65536)
MAX_INTERVAL = 1 << 22
"""Fence intervals above 4 MiB are not run: the curves are flat from 4 KiB on, and a point
writes at least the interval."""


def _series_points(report: Report, series: published.Series, xs: list[float],
                   run: Callable[[float], float], name: str | None = None) -> None:
    for x in xs:
        report.points.append(Point(series.figure, name or series.name, x, series.at(x), run(x),
                                   series.unit))


def validate(preset: str = "optane-adr", one_dimm: str = "optane-1dimm", quick: bool = False,
             seed: int = 1, progress: Callable[[str], None] | None = None) -> Report:
    """Run every figure's benchmark on ``preset`` (six DIMMs) and ``one_dimm`` (one)."""
    say = progress or (lambda _msg: None)
    r = Report(preset, quick)
    scale = 1 if quick else 4
    # Fig. 2
    say("Fig. 2: idle latency")
    lat = bench.idle_latency(preset, 500 * scale, seed)
    for (mem, access), value in published.idle_latency().items():
        if mem == "DRAM" and access.startswith("Write"):
            r.points.append(Point("Fig. 2", f"{mem} {access}", 0, value, None, "ns",
                                  "DRAM writes are untimed (volatile; no DRAM write queue)"))
            continue
        r.points.append(Point("Fig. 2", f"{mem} {access}", 0, value, lat[(mem, access)], "ns"))
    # Fig. 4
    for interleaved, name in ((False, one_dimm), (True, preset)):
        for s in published.bandwidth_threads(interleaved):
            say(f"{s.figure}: {s.name}")
            kind = s.name
            if interleaved and s.name.startswith("Write"):
                kind = "Write(ntstore)" if s.name == "Write(clwb)" else "Write(clwb)"
                label = f"{s.name} (run as {kind[6:-1]}: label in doubt)"
            else:
                label = s.name
            xs = bench.points(s.x, quick, QUICK_THREADS)
            _series_points(r, s, xs, lambda x, n=name, k=kind: bench.bandwidth(
                n, k, int(x), 256, 64 * 1024 * scale, seed), label)
    # the raw sweeps' effective write ratio, one DIMM
    for s in published.effective_write_ratio():
        say(f"{s.figure}: {s.name}")
        kind, order = s.name.split()
        _series_points(r, s, list(s.x), lambda x, k=kind, o=order: bench.write_ratio(
            one_dimm, k, int(x), 256, 64 * 1024 * scale, seed, sequential=o == "sequential"))
    for s in published.effective_read_ratio():
        say(f"{s.figure}: {s.name}")
        _series_points(r, s, list(s.x), lambda x: bench.read_ratio(
            one_dimm, int(x), 256, 64 * 1024 * scale, seed, sequential=True))
    for s in published.effective_write_ratio_six():
        say(f"{s.figure}: {s.name}")
        xs = bench.points(s.x, quick, QUICK_THREADS)
        _series_points(r, s, xs, lambda x: bench.write_ratio(
            preset, "Write(ntstore)", int(x), 1024, 64 * 1024 * scale, seed, sequential=True))
    # Fig. 5
    for s in published.bandwidth_size():
        say(f"{s.figure}: {s.name}")
        xs = [x for x in bench.points(s.x, quick, QUICK_SIZES) if x <= 65536]
        _series_points(r, s, xs, lambda x, k=s.name: bench.bandwidth(
            one_dimm, k, 4, int(x), max(int(x), 32 * 1024 * scale), seed))
    # Fig. 9
    s9 = published.write_amplification()
    say("Fig. 9: write amplification")
    xs = [x for x in bench.points(s9.x, quick, QUICK_REGIONS) if x <= 262144]
    _series_points(r, s9, xs, lambda x: bench.write_amplification(
        one_dimm, int(x), 2 + scale, seed), "WriteAmp")
    # Fig. 12
    for s in published.persist_latency():
        say(f"{s.figure}: {s.name}")
        xs = bench.points(s.x, quick, QUICK_SIZES)
        _series_points(r, s, xs, lambda x, k=s.name: bench.persist_latency(
            preset, k, int(x), 50 * scale, seed))
    for s in published.persist_bandwidth():
        say(f"{s.figure}: {s.name}")
        if s.name == "store":
            for x in s.x:
                r.points.append(Point(s.figure, s.name, x, s.at(x), None, s.unit,
                                      "write-back by eviction needs a steady state of the LLC "
                                      "that these short runs do not reach"))
            continue
        kind = "Write(ntstore)" if s.name == "ntstore" else "Write(clwb)"
        xs = bench.points(s.x, quick, QUICK_SIZES)
        _series_points(r, s, xs, lambda x, k=kind: bench.bandwidth(
            preset, k, 24, int(x), max(int(x), 16 * 1024 * scale), seed))
    # Fig. 13
    for s in published.fence_interval():
        say(f"{s.figure}: {s.name}")
        xs = [x for x in bench.points(s.x, quick, QUICK_INTERVALS) if x <= MAX_INTERVAL]
        _series_points(r, s, xs, lambda x, k=s.name: bench.fence_interval(
            one_dimm, k, int(x), 256 * 1024 * scale, seed))
    r.shapes = shapes(r)
    return r


def _get(r: Report, figure: str, series: str, x: float) -> tuple[float, float]:
    for p in r.points:
        if p.figure == figure and p.series.startswith(series) and p.x == x and p.pmsim is not None:
            return p.published, p.pmsim
    raise KeyError((figure, series, x))


def _ratio(name: str, top: tuple[float, float], bottom: tuple[float, float], rule: str) -> Shape:
    """A shape that is a ratio of two (published, pmsim) points; it holds within TOLERANCE."""
    pub, sim = top[0] / bottom[0], top[1] / bottom[1]
    return Shape(name, pub, sim, abs(sim - pub) <= TOLERANCE * pub, rule)


def shapes(r: Report) -> list[Shape]:
    """The issue's shape checks on the report's points."""
    out = [_ratio("random / sequential read latency", _get(r, "Fig. 2", "Optane Read\\Random", 0),
                  _get(r, "Fig. 2", "Optane Read\\Sequential", 0), "within 25% of 1.8"),
           _ratio("64 B / 256 B ntstore bandwidth", _get(r, "Fig. 5 (1 DIMM)", "Write(ntstore)", 64),
                  _get(r, "Fig. 5 (1 DIMM)", "Write(ntstore)", 256), "within 25% of 0.25")]
    small = [p for p in r.points if p.figure == "Fig. 9" and p.x <= 16384 and p.pmsim is not None]
    large = [p for p in r.points if p.figure == "Fig. 9" and p.x >= 32768 and p.pmsim is not None]
    worst_small = max(abs(p.pmsim - 1.0) for p in small)  # type: ignore[operator]
    worst_large = max(abs(p.pmsim - 2.0) for p in large)  # type: ignore[operator]
    out.append(Shape("write amplification up to 16 KB (worst |WA - 1|)", 0.2, worst_small,
                     worst_small <= 0.25, "every point within 0.25 of 1"))
    out.append(Shape("write amplification from 32 KB (worst |WA - 2|)", 0.2, worst_large,
                     worst_large <= 0.5, "every point within 0.5 of 2"))
    out.append(_ratio("1-DIMM random ntstore EWR at 8 threads / at 1 thread (the series the "
                      "contention constants are fitted to)",
                      _get(r, "EWR (1 DIMM)", "Write(ntstore) random", 8),
                      _get(r, "EWR (1 DIMM)", "Write(ntstore) random", 1), "within 25% of 0.67"))
    out.append(_ratio("1-DIMM random clwb EWR at 8 threads / at 1 thread",
                      _get(r, "EWR (1 DIMM)", "Write(clwb) random", 8),
                      _get(r, "EWR (1 DIMM)", "Write(clwb) random", 1), "within 25% of 0.69"))
    for series in ("Write(ntstore)", "Write(clwb)"):
        pts = [p for p in r.points if p.figure == "Fig. 4 (1 DIMM)" and p.series == series
               and p.pmsim is not None]
        peak_p = max(p.published for p in pts)
        peak_s = max(p.pmsim for p in pts)  # type: ignore[type-var]
        at24 = next(p for p in pts if p.x == 24)
        out.append(Shape(f"1-DIMM {series} bandwidth at 24 threads / peak",
                         at24.published / peak_p, at24.pmsim / peak_s,  # type: ignore[operator]
                         at24.pmsim / peak_s <= 0.75, "at most 0.75 (well below the peak)"))  # type: ignore[operator]
    return out


X_LABELS = {"Fig. 4": "threads", "EWR": "threads", "ERR": "threads", "Fig. 5": "access size (B)",
            "Fig. 9": "region (B)", "Fig. 12 latency": "write size (B)",
            "Fig. 12 bandwidth": "write size (B)", "Fig. 13": "bytes between fences"}


def plot(r: Report, out_dir: Path) -> list[Path]:
    """One PNG per figure: published values as points, pmsim's as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    figures: dict[str, list[Point]] = {}
    for p in r.points:
        if p.figure != "Fig. 2":
            figures.setdefault(p.figure, []).append(p)
    for fig_name, pts in figures.items():
        fig, ax = plt.subplots(figsize=(5.5, 3.6))
        for i, series in enumerate(dict.fromkeys(p.series for p in pts)):
            sp = [p for p in pts if p.series == series]
            color = f"C{i}"
            ax.plot([p.x for p in sp], [p.published for p in sp], "o", color=color,
                    label=f"{series} (FAST'20)")
            mp = [p for p in sp if p.pmsim is not None]
            if mp:
                ax.plot([p.x for p in mp], [p.pmsim for p in mp], "-", color=color,
                        label=f"{series} (pmsim)")
        xs = [p.x for p in pts]
        if max(xs) / max(min(xs), 1) >= 64:
            ax.set_xscale("log", base=2)
        ax.set_title(f"{fig_name}: FAST'20 (points) vs pmsim (lines)", fontsize=9)
        ax.set_ylabel(pts[0].unit)
        ax.set_xlabel(X_LABELS.get(fig_name.split(" (")[0], ""))
        ax.legend(fontsize=6)
        fig.tight_layout()
        path = out_dir / ("validate-" + "".join(c if c.isalnum() else "-" for c in fig_name.lower())
                          .strip("-").replace("--", "-") + ".png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)
    return files


def markdown(r: Report, plots: list[Path], rel: Path | None = None) -> str:
    """The docs' Validation page body: summary, shapes, every point, the plots."""
    parts = [f"Preset `{r.preset}`{' (quick)' if r.quick else ''}: {r.summary()}.", "",
             "### Shapes", "", r.shape_table(), "", "### Every point", "", r.table(), ""]
    for p in plots:
        name = p.relative_to(rel) if rel else p
        parts.append(f"![{p.stem}]({name})")
    return "\n".join(parts)


def save(r: Report, path: Path) -> None:
    path.write_text(r.to_json() + "\n")
