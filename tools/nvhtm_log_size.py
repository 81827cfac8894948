"""NV-HTM's 10x log against NLP as the run and its logs grow (docs/protocols/nvhtm/nvhtm.md).

Runs Fig. 4's low-contention Bank at the full scale's points for NLP and the 10x log, with the
run (transactions, warm-up) and the log multiplied by each factor, and prints a table row per
factor: the 10x log's slots a thread, its throughput over NLP's, the checkpointer's flushes per
logged entry and the workers' waits for log space. Each factor is two simulations; 100 takes
about 14 minutes on one core.

    python tools/nvhtm_log_size.py [--threads 14] [--factors 1,10,30,100]
"""

from __future__ import annotations

import argparse
from typing import Any

from pmsim.experiments.claims import get_paper, measure
from pmsim.experiments.explain import lengthened


def point(runtime: str, log: str, threads: int, factor: int) -> dict[str, Any]:
    """The full-scale fig4-low point of ``runtime`` (``log``: its 'small' 10x or 'big' log),
    its run and log ``factor`` times longer."""
    pts = [p for p in get_paper("nvhtm").points(False, 1.0, ["fig4-low"])
           if p["threads"] == threads and p["runtime"] == runtime]
    if not pts:
        raise SystemExit(f"fig4-low has no {runtime} point at {threads} threads")
    p = (min if log == "small" else max)(pts, key=lambda q: q["options"]["log_slots"])
    return {**p, **(lengthened(p, factor) or {})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=14)
    ap.add_argument("--factors", default="1,10,30,100")
    args = ap.parse_args()
    print("| run and logs | 10x log (slots a thread) | 10x / NLP throughput | checkpointer "
          "flushes per logged entry | log-space waits |")
    print("|---|---:|---:|---:|---:|")
    for k in (int(f) for f in args.factors.split(",")):
        nlp = measure(point("nvhtm-nlp", "big", args.threads, k))
        ten = measure(point("nvhtm", "small", args.threads, k))
        print(f"| {k}x | {ten['nvhtm.log_slots']:,.0f} | "
              f"{ten['throughput'] / nlp['throughput']:.2f} | "
              f"{ten['nvhtm.cp_flushes'] / ten['nvhtm.entries']:.2f} | "
              f"{ten['nvhtm.log_waits']:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
