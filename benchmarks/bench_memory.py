"""Peak memory of full-scale points: the resident set size (RSS) one sweep worker reaches.

Each paper's largest full-scale point (the most memory, threads or data) runs in a fresh
process, which prints its peak RSS (``getrusage``'s ``ru_maxrss``) and wall time. The speed
issue's bound is 2 GiB per worker: a ``--jobs N`` sweep needs about N times the largest.

Run ``python benchmarks/bench_memory.py`` (``--quick``: a tenth of each point's transactions;
the data sets, and so most of the memory, stay full size).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from pmsim.stats import format_table

POINTS: tuple[tuple[str, str, dict[str, object]], ...] = (
    # (paper, experiment, fields the point must have)
    ("marathe", "array-slot4", {"runtime": "cow", "preset": "marathe-pdom0", "write_pct": 100}),
    ("dudetx", "fig3-tpcc", {"runtime": "dudetx"}),
    ("nvhtm", "fig4-ht-high", {"runtime": "pstm", "threads": 27}),
    ("proteus", "table3", {"runtime": "pmem", "elements": 8192}),
    ("loc", "fig6-btree", {"runtime": "loc"}),
)
GIB = 1 << 30

CHILD = """
import json, resource, sys, time
from pmsim.experiments.claims import measure
point = json.loads(sys.argv[1])
t = time.perf_counter()
row = measure(point)
print(json.dumps({"wall_s": time.perf_counter() - t,
                  "rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "commits": row.get("commits")}))
"""


def _point(paper: str, experiment: str, want: dict[str, object], scale: float) -> dict:
    from pmsim.experiments.claims import get_paper

    for p in get_paper(paper).points(False, scale, [experiment]):
        flat = {**p, **(p.get("params") or {})}
        if all(flat.get(k) == v for k, v in want.items()):
            return p
    raise SystemExit(f"{paper}/{experiment}: no full-scale point with {want}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="a tenth of the transactions")
    args = ap.parse_args()
    rows = []
    for paper, exp, want in POINTS:
        point = _point(paper, exp, want, 0.1 if args.quick else 1.0)
        out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(point)],
                             capture_output=True, text=True)
        if out.returncode:
            print(out.stderr[-2000:], file=sys.stderr)
            raise SystemExit(f"{paper}/{exp} failed")
        got = json.loads(out.stdout.strip().splitlines()[-1])
        rss = got["rss_kib"] * 1024
        rows.append({"paper": paper, "point": f"{exp} {point['runtime']} "
                     f"{point['threads']}t", "commits": got["commits"],
                     "wall_s": got["wall_s"], "peak_rss_mib": rss / (1 << 20),
                     "under_2_gib": rss < 2 * GIB})
        print(f"  {paper}: {rss / (1 << 20):,.0f} MiB", flush=True)
    print(format_table(rows))


if __name__ == "__main__":
    main()
