"""The published Optane measurements pmsim's timing model is validated against.

``data/optane-fast20/`` holds the figure data of J. Yang, J. Kim, M. Hoseinzadeh,
J. Izraelevitz, S. Swanson, "An Empirical Guide to the Behavior and Use of Scalable Persistent
Memory", USENIX FAST 2020 (the authors' released graph data, and a summary of their raw sweep
data: ``sweep-ewr-1dimm.csv``, see the folder's README): a two-socket Xeon Platinum 8260
(2.2 GHz) with six 256 GB first-generation Optane DIMMs per socket, App Direct mode, ADR.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "optane-fast20"
CITATION = ("Yang et al., 'An Empirical Guide to the Behavior and Use of Scalable Persistent "
            "Memory', FAST'20")


@dataclass(frozen=True)
class Series:
    """One published curve: y against x (a figure's column)."""

    figure: str
    name: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    x_label: str
    unit: str

    def at(self, x: float) -> float:
        return self.y[self.x.index(x)]


def _read(name: str) -> tuple[list[str], list[list[str]]]:
    with open(DATA / name, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def _columns(figure: str, name: str, x_label: str, unit: str) -> list[Series]:
    """One series a column; a blank cell is no point (the column was not measured there)."""
    head, rows = _read(name)
    out = []
    for j in range(1, len(head)):
        pts = [(float(r[0]), float(r[j])) for r in rows if r[j]]
        out.append(Series(figure, head[j], tuple(x for x, _ in pts), tuple(y for _, y in pts),
                          x_label, unit))
    return out


def idle_latency() -> dict[tuple[str, str], float]:
    """Fig. 2: {(memory, access): ns}, memory 'DRAM' or 'Optane'; access e.g. 'Read\\Random'."""
    head, rows = _read("02-best_case_latency.csv")
    out = {}
    for r in rows:
        for j, mem in enumerate(head):
            if mem in ("DRAM", "Optane"):
                out[(mem, r[0])] = float(r[j])
    return out


def bandwidth_threads(interleaved: bool) -> list[Series]:
    """Fig. 4: GB/s against threads, six interleaved DIMMs or one."""
    name = "04-bandwidth_thcount_optane.csv" if interleaved else "04-bandwidth_thcount_optane_ni.csv"
    return _columns("Fig. 4 (6 DIMMs)" if interleaved else "Fig. 4 (1 DIMM)", name, "threads",
                    "GB/s")


def bandwidth_size() -> list[Series]:
    """Fig. 5: GB/s against access size (bytes), one DIMM."""
    return _columns("Fig. 5 (1 DIMM)", "05-bandwidth_accesssize_optane_ni.csv", "access size (B)",
                    "GB/s")


def write_amplification() -> Series:
    """Fig. 9: media bytes / written bytes against the rewritten region's size (bytes)."""
    return _columns("Fig. 9", "09-infer_xpbuffer.csv", "region (B)", "ratio")[0]


def persist_latency() -> list[Series]:
    """Fig. 12 (left): ns to persist one write of the given size (ntstore, store + clwb)."""
    return _columns("Fig. 12 latency", "12-flush_instr_lat.csv", "write size (B)", "ns")


def persist_bandwidth() -> list[Series]:
    """Fig. 12 (right): GB/s persisting writes of the given size (six DIMMs)."""
    return _columns("Fig. 12 bandwidth", "12-flush_instr_bw.csv", "write size (B)", "GB/s")


def effective_write_ratio() -> list[Series]:
    """The raw sweeps' EWR against threads, one DIMM (written bytes over media bytes)."""
    return _columns("EWR (1 DIMM)", "sweep-ewr-1dimm.csv", "threads", "ratio")


def effective_read_ratio() -> list[Series]:
    """The raw sweeps' effective read ratio against threads, one DIMM, sequential 256 B reads
    (bytes read by the controller over bytes read from the media)."""
    return _columns("ERR (1 DIMM)", "sweep-err-1dimm.csv", "threads", "ratio")


def effective_write_ratio_six() -> list[Series]:
    """The raw sweeps' EWR against threads, six DIMMs, sequential 1 KiB ntstores (one run)."""
    return _columns("EWR (6 DIMMs)", "sweep-ewr-6dimm.csv", "threads", "ratio")


def fence_interval() -> list[Series]:
    """Fig. 13: GB/s against the bytes written between two fences."""
    return _columns("Fig. 13", "13-sfence_interval.csv", "bytes per fence", "GB/s")
