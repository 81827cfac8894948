"""Calibration of the DIMM model's write-stream contention on the DIMMs' own counters.

The two constants of ``DIMMConfig`` that set how a DIMM's buffer loses partly written lines to
concurrent write streams (``combine_writers``, ``contention``) are the only ones fitted to
FAST'20's data beyond its idle latencies (Fig. 2) and one DIMM's peak rates, which the presets
read off. They are fitted to one series, the effective write
ratio (EWR) the DIMM's counters reported for random 256 B ntstores at 1-12 threads (the authors'
raw sweeps; ``data/optane-fast20/sweep-ewr-1dimm.csv``): the pair on a grid whose simulated EWR
is nearest in the sum of squared log ratios. Every other series of ``pmsim validate`` is a
prediction of the fitted model. ``pmsim validate --calibrate`` reruns the fit."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import bench, published

SERIES = "Write(ntstore) random"
"""The EWR series the constants are fitted to."""
WRITERS = tuple(range(3, 7))
"""Grid of ``combine_writers``."""
CHANCES = tuple(round(0.10 + 0.02 * i, 2) for i in range(12))
"""Grid of ``contention``: 0.10 to 0.32."""


@dataclass(frozen=True)
class Fit:
    """One grid point: its constants, its error and its simulated EWR per thread count."""

    combine_writers: int
    contention: float
    error: float
    ewr: tuple[tuple[int, float], ...]


def fit(one_dimm: str = "optane-1dimm", seed: int = 1, quick: bool = False,
        writers: Sequence[int] = WRITERS, chances: Sequence[float] = CHANCES,
        progress: Callable[[str], None] | None = None) -> list[Fit]:
    """Every grid point's fit to the calibration series, best (smallest error) first."""
    series = next(s for s in published.effective_write_ratio() if s.name == SERIES)
    kind = SERIES.split()[0]
    per_thread = 64 * 1024 * (1 if quick else 4)
    fits = []
    for w in writers:
        for q in chances:
            changes = {"pm.dimm.combine_writers": w, "pm.dimm.contention": q}
            sim = tuple((int(x), bench.write_ratio(one_dimm, kind, int(x), 256, per_thread, seed,
                                                   changes=changes)) for x in series.x)
            err = sum(math.log(v / series.at(x)) ** 2 for x, v in sim)
            fits.append(Fit(w, q, err, sim))
            if progress is not None:
                progress(f"combine_writers={w} contention={q}: error {err:.4f}")
    return sorted(fits, key=lambda f: (f.error, f.combine_writers, f.contention))


def table(fits: Sequence[Fit], top: int = 10) -> str:
    """The best ``top`` grid points as a Markdown table, with the published series."""
    series = next(s for s in published.effective_write_ratio() if s.name == SERIES)
    xs = [x for x, _ in fits[0].ewr]
    head = ("| combine_writers | contention | error | "
            + " | ".join(f"EWR at {x}" for x in xs) + " |")
    rows = [head, "|" + "---:|" * (3 + len(xs)),
            "| published | | | " + " | ".join(f"{series.at(x):.3f}" for x in xs) + " |"]
    for f in fits[:top]:
        rows.append(f"| {f.combine_writers} | {f.contention:.2f} | {f.error:.4f} | "
                    + " | ".join(f"{v:.3f}" for _, v in f.ewr) + " |")
    return "\n".join(rows)
