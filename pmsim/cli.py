"""The ``pmsim`` command line.

Exit status: 0 on success, 2 on bad input (with a message saying what to fix).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .config import MachineConfig, describe
from .errors import PmsimError
from .presets import PRESETS, preset


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def add_machine_args(p: argparse.ArgumentParser) -> None:
    """Options shared by every command that builds a machine."""
    g = p.add_argument_group("machine")
    g.add_argument("--preset", default="default", help="named machine (see `pmsim presets`)")
    g.add_argument("--config", help="a JSON/YAML machine config file (overrides --preset)")
    g.add_argument("--domain", choices=["pdom0", "pdom1", "pdom2"], help="persistence domain")
    g.add_argument("--barrier", choices=["modelled", "fixed"], help="persist-barrier cost model")
    g.add_argument("--barrier-ns", type=float, help="fixed persist-barrier latency (ns)")
    g.add_argument("--cores", type=int, help="number of cores")
    g.add_argument("--seed", type=int, help="seed for every random choice")
    g.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override any config field, e.g. --set pm.wpq_entries=32")
    g.add_argument("--backend", choices=["c", "python"], help="engine backend (default: c if built)")


def machine_config(args: argparse.Namespace) -> MachineConfig:
    """The machine config an argparse namespace describes."""
    cfg = MachineConfig.load(args.config) if args.config else preset(args.preset)
    changes: dict[str, object] = {}
    for name in ("domain", "barrier", "cores", "seed"):
        v = getattr(args, name, None)
        if v is not None:
            changes[name] = v
    if getattr(args, "barrier_ns", None) is not None:
        changes["barrier_ns"] = args.barrier_ns
    for item in args.set:
        key, sep, raw = item.partition("=")
        if not sep:
            raise PmsimError(f"--set {item!r}: expected FIELD=VALUE, e.g. --set pm.read_ns=200")
        try:
            changes[key] = json.loads(raw)
        except json.JSONDecodeError:
            changes[key] = raw
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

    m = Machine(machine_config(args), backend=args.backend)
    run_opstream(m, OpStream(ops=args.ops))
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
    p.add_argument("--ops", type=positive_int, default=20000, help="instructions per thread")


register("presets", "list the named machine configurations", lambda p: None, _cmd_presets)
register("config", "print a resolved machine config (table, JSON or YAML)", _add_config,
         _cmd_config)
register("machine", "run the built-in op stream and print machine statistics", _add_machine,
         _cmd_machine)
register("demo", "the built-in demonstration (what `make demo` runs)", _add_machine, _cmd_machine)


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

    for mod in ("pmsim.experiments.commands",):
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
        return int(run(args))  # type: ignore[operator]
    except PmsimError as e:
        print(f"pmsim: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pmsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
