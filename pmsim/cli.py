"""The ``pmsim`` command line.

Exit status: 0 on success, 2 on bad input (with a one-line message saying what to fix), 130
on Ctrl-C, 141 when the reader of the output closed the pipe early (``pmsim presets | head -1``;
as a program killed by SIGPIPE).

A machine is ``--preset`` (default ``default``), then the fields of a ``--config`` file applied
over it, then ``--domain``/``--barrier``/``--barrier-ns``/``--cores``/``--seed``, then each
``--set FIELD=VALUE`` in order.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence

from .config import MachineConfig, describe
from .errors import PmsimError
from .interrupts import catching
from .presets import PRESETS, preset


def int_in(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """argparse type: an integer in ``lo..hi`` (``hi`` None: no upper bound)."""
    valid = f"an integer in {lo}..{hi}" if hi is not None else f"an integer >= {lo}"

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer; use {valid}") from None
        if v < lo or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"must be {valid}, got {v}")
        return v

    parse.__name__ = "int"
    return parse


positive_int = int_in(1)
"""argparse type: an integer >= 1."""


def number_in(lo: float, hi: float) -> Callable[[str], float]:
    """argparse type: a finite number in ``[lo, hi]``."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number; use a number in "
                                             f"[{lo:g}, {hi:g}]") from None
        if not math.isfinite(v) or not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"must be a number in [{lo:g}, {hi:g}], got {text}")
        return v

    parse.__name__ = "float"
    return parse


def add_machine_args(p: argparse.ArgumentParser) -> None:
    """Options shared by every command that builds a machine."""
    g = p.add_argument_group("machine", "The machine is --preset, then the fields of --config "
                             "applied over it, then the options below, then each --set in "
                             "order. `pmsim config` prints every field with its unit, help "
                             "and bounds.")
    g.add_argument("--preset", default="default", help="named machine (see `pmsim presets`)")
    g.add_argument("--config", help="a JSON/YAML machine config file; the fields it sets apply "
                   "over --preset (a full config from `pmsim config --format json` replaces it)")
    g.add_argument("--domain", choices=["pdom0", "pdom1", "pdom2"], help="persistence domain")
    g.add_argument("--barrier", choices=["modelled", "fixed"], help="persist-barrier cost model")
    g.add_argument("--barrier-ns", type=float, help="fixed persist-barrier latency (ns, at most "
                   "1e9)")
    g.add_argument("--cores", type=int, help="number of cores (1..64)")
    g.add_argument("--seed", type=int, help="seed for every random choice (0..2**64-1)")
    g.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override any config field, e.g. --set pm.wpq_entries=32 or "
                   "--set regions.0.size=67108864 (VALUE is JSON, else a string)")
    g.add_argument("--backend", choices=["c", "python"], help="engine backend (default: c if built)")


def machine_config(args: argparse.Namespace) -> MachineConfig:
    """The machine config an argparse namespace describes (see the module doc for the order)."""
    cfg = preset(args.preset)
    if args.config:
        cfg = MachineConfig.load(args.config, over=cfg)
    changes: dict[str, object] = {}
    for name in ("domain", "barrier", "cores", "seed"):
        v = getattr(args, name, None)
        if v is not None:
            changes[name] = v
    if getattr(args, "barrier_ns", None) is not None:
        changes["barrier_ns"] = args.barrier_ns
    for item in args.set:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise PmsimError(f"--set {item!r}: expected FIELD=VALUE, e.g. --set pm.read_ns=200 "
                             "(`pmsim config` lists the fields)")
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            value = raw
        changes[key] = value
    return cfg.replace(**changes) if changes else cfg


def _cmd_presets(args: argparse.Namespace) -> int:
    for name, (_, source) in PRESETS.items():
        print(f"{name:15s} {source}")
    return 0


def _cmd_config(args: argparse.Namespace) -> int:
    cfg = machine_config(args)
    if args.format == "json":
        print(cfg.to_json())
    elif args.format == "yaml":
        print(cfg.to_yaml(), end="")
    else:
        for name, value, unit, help_ in describe(cfg):
            print(f"{name:24s} {value!s:>14s} {unit:8s} {help_}")
    return 0


def _cmd_machine(args: argparse.Namespace) -> int:
    from .machine import Machine
    from .opstream import OpStream, run_opstream

    cfg = machine_config(args)
    spec = OpStream(ops=args.ops)
    need = spec.array_kib * 1024 + cfg.cores * (1 << 20)
    pm = cfg.pm_region
    if need > pm.size:
        i = cfg.regions.index(pm)
        raise PmsimError(f"the built-in op stream needs {need} bytes of PM ({spec.array_kib} KiB "
                         f"shared array + 1 MiB of log per core x {cfg.cores} cores), the PM "
                         f"region has {pm.size}; add --set regions.{i}.size={need} or use "
                         "fewer --cores")
    m = Machine(cfg, backend=args.backend)
    run_opstream(m, spec)
    print(f"# machine: {m.config.domain}, {m.config.cores} cores, barrier={m.config.barrier}, "
          f"backend={m.backend}, {args.ops} ops/thread (built-in op stream)")
    print(m.stats_table())
    return 0


COMMANDS: dict[str, tuple[str, object, object]] = {}
"""name -> (help, add_arguments(parser), run(args) -> int). Later modules register here."""


def register(name: str, help_: str, add_arguments: object, run: object) -> None:
    COMMANDS[name] = (help_, add_arguments, run)


def _add_config(p: argparse.ArgumentParser) -> None:
    add_machine_args(p)
    p.add_argument("--format", choices=["table", "json", "yaml"], default="table")


def _add_machine(p: argparse.ArgumentParser) -> None:
    add_machine_args(p)
    p.add_argument("--ops", type=int_in(1, 1_000_000), default=20000,
                   help="instructions per thread (1..1000000; addresses are drawn up front)")


register("presets", "list the named machine configurations", lambda p: None, _cmd_presets)
register("config", "print a resolved machine config (table, JSON or YAML)", _add_config,
         _cmd_config)
register("machine", "run the built-in op stream and print machine statistics", _add_machine,
         _cmd_machine)


def build_parser() -> argparse.ArgumentParser:
    _load_plugins()
    parser = argparse.ArgumentParser(
        prog="pmsim",
        description="Model, time and crash-fuzz durable transactions on persistent memory.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_, add, _) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        add(p)  # type: ignore[operator]
    return parser


def _load_plugins() -> None:
    """Import modules that register further commands (runtimes, experiments)."""
    import importlib

    for mod in ("pmsim.experiments.commands", "pmsim.experiments.reproduce"):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod and not mod.startswith(str(e.name)):
                raise


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _, _, run = COMMANDS[args.command]
    try:
        with catching():  # a Ctrl-C is recorded: told apart from user code raising one
            rc = int(run(args))  # type: ignore[operator]
        sys.stdout.flush()
        return rc
    except PmsimError as e:
        print(f"pmsim: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pmsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`
        return closed_pipe()
    except (Exception, SystemExit) as e:  # user code that raised or exited, named
        from .usercode import user_error

        err = user_error(e)
        if err is None:
            raise
        print(f"pmsim: error: {err}", file=sys.stderr)
        return 2


def closed_pipe() -> int:
    """The reader of stdout went away: send further output (and the flush at exit) to the
    null device and return 141, the status of a program killed by SIGPIPE."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (e.g. captured)
        pass
    return 141


if __name__ == "__main__":
    sys.exit(main())
