"""Per-thread machine statistics and their tidy-table form.

``STAT_FIELDS`` fixes the order and meaning of every counter; the C core's ``pm_stats`` struct
(``cache/csrc/pmcore.h``) has the same fields in the same order, so a NumPy view of the C array
and the pure-Python engine's records are interchangeable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

STAT_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("loads", "u8", "load instructions"),
    ("stores", "u8", "store instructions (8-byte atoms)"),
    ("ntstores", "u8", "non-temporal stores"),
    ("rmws", "u8", "locked read-modify-writes (CAS, xchg)"),
    ("l1_hits", "u8", "L1 hits"),
    ("l1_misses", "u8", "L1 misses"),
    ("l2_hits", "u8", "L2 hits"),
    ("l2_misses", "u8", "L2 misses"),
    ("llc_hits", "u8", "LLC hits"),
    ("llc_misses", "u8", "LLC misses"),
    ("snoops", "u8", "lines taken from or downgraded in another core's private cache"),
    ("writebacks", "u8", "dirty lines written back to memory (PM and DRAM) by eviction"),
    ("clflush", "u8", "clflush instructions"),
    ("clflushopt", "u8", "clflushopt instructions"),
    ("clwb", "u8", "clwb instructions"),
    ("sfence", "u8", "sfence instructions"),
    ("mfence", "u8", "mfence instructions"),
    ("pcommit", "u8", "pcommit instructions"),
    ("persist_barriers", "u8", "persist barriers issued by runtimes"),
    ("wpq_inserts", "u8", "lines inserted into the WPQ"),
    ("wpq_occ_sum", "u8", "sum of WPQ occupancy seen at each insert"),
    ("wpq_occ_max", "u8", "largest WPQ occupancy seen at an insert"),
    ("wpq_merged", "u8", "line writes merged into a queued WPQ write of the same line whose "
     "media write had not begun (no entry, no media write)"),
    ("pm_read_bytes", "u8", "bytes read from PM media"),
    ("pm_write_bytes", "u8", "bytes written to PM media"),
    ("dram_read_bytes", "u8", "bytes read from DRAM"),
    ("dram_write_bytes", "u8", "bytes written to DRAM"),
    ("htm_begins", "u8", "hardware transactions begun (xbegin: attempts, retries included)"),
    ("htm_commits", "u8", "hardware transactions committed (xend)"),
    ("htm_aborts_conflict", "u8", "hardware aborts by a conflicting access of another thread"),
    ("htm_aborts_capacity", "u8", "hardware aborts by a read or write set overflow"),
    ("htm_aborts_explicit", "u8", "hardware aborts by xabort (codes other than 0xFF)"),
    ("htm_aborts_flush", "u8", "hardware aborts by a flush inside the transaction"),
    ("htm_aborts_lock", "u8", "hardware aborts by xabort(0xFF): the fallback lock was taken"),
    ("htm_false_sharing", "u8", "conflict aborts on a line whose conflicting words did not "
     "overlap (counted on the aborted thread)"),
    ("pf_issued", "u8", "lines fetched by the hardware prefetchers"),
    ("pf_useful", "u8", "prefetched lines a demand access hit"),
    ("pf_late", "u8", "prefetched lines a demand access hit before they arrived (it waited)"),
    ("xpb_hits", "u8", "PM accesses (64 B writes from the WPQ, reads) that hit the on-DIMM buffer"),
    ("xpb_misses", "u8", "PM accesses that missed the on-DIMM buffer"),
    ("xpb_rmw", "u8", "partly written 256 B media lines evicted from the on-DIMM buffer "
     "(a read-modify-write)"),
    ("media_read_bytes", "u8", "bytes read from the DIMMs' media (256 B lines; DIMM model only)"),
    ("media_write_bytes", "u8", "bytes written to the DIMMs' media (256 B lines; DIMM model "
     "only; over pm_write_bytes: the write amplification)"),
    ("wpq_stall_ns", "f8", "time stalled because the WPQ was full (ns)"),
    ("sb_stall_ns", "f8", "time stalled because the store buffer was full, or waiting for it "
     "to drain at a fence or locked instruction (ns; ooo core only)"),
    ("barrier_stall_ns", "f8", "time stalled in fences and persist barriers (ns)"),
    ("work_ns", "f8", "time spent in work(ns) computation"),
    ("time_ns", "f8", "the thread's simulated clock (ns)"),
)

STATS_DTYPE = np.dtype([(n, t) for n, t, _ in STAT_FIELDS])
STAT_HELP = {n: h for n, _, h in STAT_FIELDS}


def empty_stats(threads: int) -> np.ndarray:
    return np.zeros(threads, dtype=STATS_DTYPE)


def derived(row: Any) -> dict[str, float]:
    """Ratios computed from one stats row (a thread or the total)."""
    ins = int(row["wpq_inserts"])
    return {"wpq_occ_mean": (int(row["wpq_occ_sum"]) / ins) if ins else 0.0}


def total(stats: np.ndarray) -> np.ndarray:
    """One row summing every thread (max for maxima and the clock)."""
    out = np.zeros(1, dtype=STATS_DTYPE)
    for name, _, _ in STAT_FIELDS:
        col = stats[name]
        out[name] = col.max() if name in ("wpq_occ_max", "time_ns") else col.sum()
    return out[0]


def records(stats: np.ndarray) -> list[dict[str, Any]]:
    """Tidy records: one per thread plus a ``thread='total'`` row, with derived columns."""
    rows: list[dict[str, Any]] = []
    for i, r in enumerate(stats):
        rows.append({"thread": i, **{n: r[n].item() for n in STATS_DTYPE.names}, **derived(r)})
    t = total(stats)
    rows.append({"thread": "total", **{n: t[n].item() for n in STATS_DTYPE.names}, **derived(t)})
    return rows


def num(v: Any, digits: int = 3) -> str:
    """A number for people: ``digits`` significant digits, thousands separators, no exponent
    below 1e15; ints as ints; NaN and None as a dash; anything else as ``str``."""
    if v is None:
        return "-"
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, int | float):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if math.isnan(v):
        return "-"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    if mag >= 15:
        return f"{v:.{digits - 1}e}"
    decimals = max(0, digits - 1 - mag)
    return f"{v:,.{decimals}f}"


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None,
                 floatfmt: str | None = None, align_left: Sequence[str] = ()) -> str:
    """A plain-text table of records (what the CLI prints). Integers print as they are, floats
    by :func:`num` with 4 significant digits (never in scientific notation below 1e15) unless
    ``floatfmt`` (a ``str.format`` pattern) is given; ``align_left`` columns are left-aligned,
    the others right-aligned."""
    if not rows:
        return "(no rows)"
    cols = list(columns) if columns else list(rows[0].keys())

    def fmt(v: Any) -> str:
        if not isinstance(v, float | np.floating):
            return str(v)
        return floatfmt.format(v) if floatfmt is not None else num(v, 4)

    cells = [[fmt(r.get(c, "")) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    left = set(align_left)

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) if c in left else v.rjust(w)
                         for c, v, w in zip(cols, values, widths, strict=True)).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(cols), sep, *(line(row) for row in cells)])


def transpose_table(rows: Sequence[dict[str, Any]], key: str = "thread") -> str:
    """Statistics with one row per counter and one column per thread (fits a terminal)."""
    if not rows:
        return "(no rows)"
    names = [k for k in rows[0] if k != key]
    out = [{"stat": n, **{str(r[key]): r[n] for r in rows}} for n in names]
    return format_table(out)


def to_pandas(rows: Sequence[dict[str, Any]]) -> Any:
    """A pandas DataFrame of the records (pandas is optional)."""
    try:
        import pandas as pd
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("to_pandas needs pandas: pip install pandas") from e
    return pd.DataFrame(list(rows))
