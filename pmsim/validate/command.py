"""The ``pmsim validate`` command."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..cli import register
from ..errors import PmsimError
from ..presets import PRESETS


def _add(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default="optane-adr",
                   help="the six-DIMM machine to validate (default optane-adr)")
    p.add_argument("--one-dimm", default="optane-1dimm",
                   help="its one-DIMM variant, for the non-interleaved figures (default "
                        "optane-1dimm)")
    p.add_argument("--quick", action="store_true",
                   help="fewer points and shorter runs (about a minute)")
    p.add_argument("--seed", type=int, default=1, help="seed of the benchmarks' addresses")
    p.add_argument("--plots", type=Path, default=None, metavar="DIR",
                   help="write one PNG per figure into DIR (needs matplotlib)")
    p.add_argument("--markdown", type=Path, default=None, metavar="FILE",
                   help="write the summary, shape checks, every point and the plots as Markdown")
    p.add_argument("--json", type=Path, default=None, metavar="FILE",
                   help="write every point and shape check as JSON")


def _run(args: argparse.Namespace) -> int:
    from .report import markdown, plot, save, validate

    for name in (args.preset, args.one_dimm):
        if name not in PRESETS:
            from ..errors import unknown

            raise unknown("preset", name, PRESETS)
    for path in (args.markdown, args.json):
        if path is not None and not path.parent.exists():
            raise PmsimError(f"cannot write {path}: the folder {path.parent} does not exist; "
                             "create it first")

    def say(msg: str) -> None:
        print(f"# {msg}", file=sys.stderr, flush=True)

    r = validate(args.preset, args.one_dimm, quick=args.quick, seed=args.seed, progress=say)
    print(f"# pmsim validate: {r.summary()}")
    print(r.shape_table())
    print()
    print(r.table())
    files = plot(r, args.plots) if args.plots is not None else []
    if args.json is not None:
        save(r, args.json)
    if args.markdown is not None:
        rel = args.markdown.parent.resolve()
        args.markdown.write_text(markdown(r, [f.resolve() for f in files], rel) + "\n")
    return 0


register("validate", "compare the timing model with measured Optane hardware (FAST'20 "
         "figures): every point, its ratio, the shape checks, plots", _add, _run)
