"""Calibration of the DIMM model's stream contention on the DIMMs' own counters.

The three constants of ``DIMMConfig`` that set how a DIMM's buffer loses lines to concurrent
streams (``combine_writers``, ``contention`` for writes, ``read_contention`` for reads) are the
only ones fitted to FAST'20's data beyond its idle latencies (Fig. 2) and one DIMM's peak rates,
which the presets read off. Each is fitted to one series of the authors' raw sweeps, never to
the bandwidths it is judged by: ``combine_writers`` and ``contention`` to the effective write
ratio (EWR) the DIMM's counters reported for random 256 B ntstores at 1-12 threads
(``data/optane-fast20/sweep-ewr-1dimm.csv``), ``read_contention`` (with the write fit's
``combine_writers``) to the effective read ratio (ERR) they reported for sequential 256 B reads
at 1-8 threads (``sweep-err-1dimm.csv``). The fit is the grid point whose simulated ratios are
nearest in the sum of squared log ratios. Every other series of ``pmsim validate`` is a
prediction of the fitted model. ``pmsim validate --calibrate`` reruns both fits."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import bench, published

SERIES = "Write(ntstore) random"
"""The EWR series the write constants are fitted to."""
READ_SERIES = "Read sequential"
"""The ERR series ``read_contention`` is fitted to."""
WRITERS = tuple(range(3, 7))
"""Grid of ``combine_writers``."""
CHANCES = tuple(round(0.10 + 0.02 * i, 2) for i in range(12))
"""Grid of ``contention``: 0.10 to 0.32."""
READ_CHANCES = tuple(round(0.002 + 0.001 * i, 3) for i in range(19))
"""Grid of ``read_contention``: 0.002 to 0.020."""


@dataclass(frozen=True)
class Fit:
    """One grid point: its constants (``chance``: ``contention`` for the write fit,
    ``read_contention`` for the read fit), its error and its simulated ratio per thread
    count."""

    combine_writers: int
    chance: float
    error: float
    ratios: tuple[tuple[int, float], ...]


def _grid(series: published.Series, points: Sequence[tuple[int, float]],
          ratio: Callable[[int, dict[str, float]], float], field: str,
          progress: Callable[[str], None] | None) -> list[Fit]:
    fits = []
    for w, q in points:
        changes = {"pm.dimm.combine_writers": w, f"pm.dimm.{field}": q}
        sim = tuple((int(x), ratio(int(x), changes)) for x in series.x)
        err = sum(math.log(v / series.at(x)) ** 2 for x, v in sim)
        fits.append(Fit(w, q, err, sim))
        if progress is not None:
            progress(f"combine_writers={w} {field}={q}: error {err:.4f}")
    return sorted(fits, key=lambda f: (f.error, f.combine_writers, f.chance))


def fit(one_dimm: str = "optane-1dimm", seed: int = 1, quick: bool = False,
        writers: Sequence[int] = WRITERS, chances: Sequence[float] = CHANCES,
        progress: Callable[[str], None] | None = None) -> list[Fit]:
    """Every write grid point's fit to the EWR series, best (smallest error) first."""
    series = next(s for s in published.effective_write_ratio() if s.name == SERIES)
    kind = SERIES.split()[0]
    per_thread = 64 * 1024 * (1 if quick else 4)
    return _grid(series, [(w, q) for w in writers for q in chances],
                 lambda x, ch: bench.write_ratio(one_dimm, kind, x, 256, per_thread, seed,
                                                 changes=ch), "contention", progress)


def fit_reads(one_dimm: str = "optane-1dimm", seed: int = 1, quick: bool = False,
              combine_writers: int | None = None, chances: Sequence[float] = READ_CHANCES,
              progress: Callable[[str], None] | None = None) -> list[Fit]:
    """Every ``read_contention`` on the grid, fitted to the ERR series with ``combine_writers``
    (default: the preset's, which the write fit sets), best first."""
    from ..presets import preset

    w = preset(one_dimm).pm.dimm.combine_writers if combine_writers is None else combine_writers
    series = next(s for s in published.effective_read_ratio() if s.name == READ_SERIES)
    per_thread = 64 * 1024 * (1 if quick else 4)
    return _grid(series, [(w, q) for q in chances],
                 lambda x, ch: bench.read_ratio(one_dimm, x, 256, per_thread, seed,
                                                sequential=True, changes=ch),
                 "read_contention", progress)


def table(fits: Sequence[Fit], top: int = 10, reads: bool = False) -> str:
    """The best ``top`` grid points as a Markdown table, with the published series."""
    if reads:
        series = next(s for s in published.effective_read_ratio() if s.name == READ_SERIES)
        field, ratio = "read_contention", "ERR"
    else:
        series = next(s for s in published.effective_write_ratio() if s.name == SERIES)
        field, ratio = "contention", "EWR"
    xs = [x for x, _ in fits[0].ratios]
    head = (f"| combine_writers | {field} | error | "
            + " | ".join(f"{ratio} at {x}" for x in xs) + " |")
    rows = [head, "|" + "---:|" * (3 + len(xs)),
            "| published | | | " + " | ".join(f"{series.at(x):.3f}" for x in xs) + " |"]
    for f in fits[:top]:
        rows.append(f"| {f.combine_writers} | {f.chance:g} | {f.error:.4f} | "
                    + " | ".join(f"{v:.3f}" for _, v in f.ratios) + " |")
    return "\n".join(rows)
