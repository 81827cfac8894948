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
from typing import Any

from .config import MachineConfig, describe
from .errors import PmsimError
from .interrupts import catching, ignore_further, requested
from .presets import PRESETS, preset


def int_in(lo: int, hi: int | None = None, span: str = "") -> Callable[[str], int]:
    """argparse type: an integer in ``lo..hi`` (``hi`` None: no upper bound); ``span`` words
    the range in messages instead of ``lo..hi``."""
    valid = (f"an integer in {span or f'{lo}..{hi}'}" if hi is not None else
             f"an integer >= {lo}")

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
seed_int = int_in(0, (1 << 64) - 1, f"0..{(1 << 64) - 1} (0..2**64-1)")
"""argparse type: a seed."""


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


MACHINE_OPTIONS = ("preset", "config", "domain", "barrier", "barrier_ns", "cores", "seed", "set",
                   "backend")
"""The options :func:`add_machine_args` can add, as argparse destinations."""


def add_machine_args(p: argparse.ArgumentParser, omit: Sequence[str] = (),
                     preset_default: str | None = "default") -> None:
    """The machine options, the same (names, help, checks) for every command that builds a
    machine: ``pmsim run|config|machine`` and ``crashfuzz run``. ``omit`` leaves some out
    (destinations as in MACHINE_OPTIONS); ``preset_default`` None makes ``--preset`` optional,
    for a command with a machine of its own (``crashfuzz run`` fuzzes a small one unless told)."""
    unknown_opts = set(omit) - set(MACHINE_OPTIONS)
    if unknown_opts:
        raise ValueError(f"add_machine_args: unknown options {sorted(unknown_opts)}")
    base = (f"--preset (default {preset_default})" if preset_default else
            "--preset (default: the command's own machine)")
    g = p.add_argument_group("machine", f"The machine is {base}, then the fields of --config "
                             "applied over it, then the options below, then each --set in "
                             "order. `pmsim config` prints every field with its unit, help "
                             "and bounds.")

    def add(dest: str, *flags: str, **kw: Any) -> None:
        if dest not in omit:
            g.add_argument(*flags, **kw)

    add("preset", "--preset", default=preset_default, help="named machine (see `pmsim presets`)")
    add("config", "--config", help="a JSON/YAML machine config file; the fields it sets apply "
        "over --preset (a full config from `pmsim config --format json` replaces it)")
    add("domain", "--domain", choices=["pdom0", "pdom1", "pdom2"], help="persistence domain")
    add("barrier", "--barrier", choices=["modelled", "fixed"], help="persist-barrier cost model")
    add("barrier_ns", "--barrier-ns", type=float, help="fixed persist-barrier latency (ns, at "
        "most 1e9)")
    add("cores", "--cores", type=int, help="number of cores (1..64)")
    add("seed", "--seed", type=seed_int, help="seed for every random choice (0..2**64-1)")
    add("set", "--set", action="append", default=[], metavar="FIELD=VALUE",
        help="override any config field, e.g. --set pm.wpq_entries=32 or "
        "--set regions.0.size=67108864 (VALUE is JSON, else a string)")
    add("backend", "--backend", choices=["c", "python"],
        help="engine backend (default: c if built)")


def machine_given(args: argparse.Namespace) -> bool:
    """Whether any machine option that shapes the machine itself was given (--preset,
    --config, --barrier, --barrier-ns, --cores or --set; not --domain or --seed)."""
    return bool(getattr(args, "preset", None) or getattr(args, "config", None)
                or getattr(args, "set", None)
                or any(getattr(args, n, None) is not None for n in ("barrier", "barrier_ns",
                                                                      "cores")))


def machine_config(args: argparse.Namespace, base: MachineConfig | None = None) -> MachineConfig:
    """The machine config an argparse namespace describes (see the module doc for the order);
    ``base`` replaces the default preset when ``--preset`` was not given."""
    name = getattr(args, "preset", None)
    cfg = preset(name) if name or base is None else base
    if getattr(args, "config", None):
        cfg = MachineConfig.load(args.config, over=cfg)
    changes: dict[str, object] = {}
    for name in ("domain", "barrier", "cores", "seed"):
        v = getattr(args, name, None)
        if v is not None:
            changes[name] = v
    if getattr(args, "barrier_ns", None) is not None:
        changes["barrier_ns"] = args.barrier_ns
    for item in getattr(args, "set", None) or ():
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


def add_runtime_arg(p: argparse.ArgumentParser, default: str = "undo") -> None:
    """``--runtime``, the same in every command that runs one runtime."""
    p.add_argument("--runtime", default=default,
                   help="a registered runtime or mutant (`pmsim runtimes` lists them: undo, "
                        "redo, cow, undo:U1, ...), with tuning options as 'dudetx[persist_bw=4]',"
                        " or an import path 'file.py:Class'")


def add_workload_args(p: argparse.ArgumentParser, default: str = "array") -> None:
    """``--workload`` and ``--param``/``-p``, the same in every command that runs a workload."""
    from .workloads.base import WORKLOADS, get_workload

    get_workload("array")  # the built-in registrations
    p.add_argument("--workload", default=default,
                   help=f"a registered workload ({', '.join(WORKLOADS)}; `pmsim workloads` "
                        "lists their parameters) or an import path 'file.py:Class'")
    p.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                   help="workload parameter (repeatable), e.g. -p write_pct=100 -p slot_words=4")


def parse_params(items: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings -> a dict. A VALUE is read as JSON (``4``, ``2.7``, ``true``),
    else kept as a string; the workload checks it against the parameter's type, so
    ``slot_words=2.7`` is an error, not 2."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PmsimError(f"--param {item!r}: expected KEY=VALUE (NAME=VALUE of a workload "
                             "parameter; `pmsim workloads` lists them), e.g. --param "
                             "write_pct=100")
        try:
            out[key.strip()] = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            out[key.strip()] = value.strip()
    return out


def _cmd_presets(args: argparse.Namespace) -> int:
    if args.json:
        print(json.dumps([{"name": name, "source": source} for name, (_, source)
                          in PRESETS.items()], indent=2))
        return 0
    for name, (_, source) in PRESETS.items():
        print(f"{name:15s} {source}")
    return 0


def _add_listing(p: argparse.ArgumentParser, kind: str, extra: str = "") -> None:
    p.add_argument("names", nargs="*", metavar="NAME", help=f"only these {kind} (default: "
                   f"all){extra}")
    p.add_argument("--json", action="store_true", help="print the listing as JSON")


def _add_runtimes(p: argparse.ArgumentParser) -> None:
    _add_listing(p, "runtimes", "; one name prints it in full, with its options")
    p.add_argument("--mutants", action="store_true",
                   help="also list the registered mutants (base:Id, e.g. undo:U1)")


def _cmd_runtimes(args: argparse.Namespace) -> int:
    from .catalog import runtime_detail, runtime_info, runtime_names, runtimes_table, select

    names = select(runtime_names(mutants=True), args.names, "runtime")
    if not args.names:
        names = runtime_names(mutants=args.mutants)
    infos = [runtime_info(n) for n in names]
    if args.json:
        print(json.dumps(infos, indent=2))
    elif len(args.names) == 1:
        print(runtime_detail(infos[0]))
    else:
        print(runtimes_table(infos))
        if not args.names:
            print(f"\n{len(infos)} runtimes. domains: the persistence domains it is defined in "
                  "(0/1/2 = pdom0/1/2); options: tuning settings, `pmsim runtimes NAME` lists "
                  "them; paper in parentheses: only its family is in that paper's experiments"
                  + ("" if args.mutants else "; --mutants adds the mutants"))
    return 0


def _cmd_workloads(args: argparse.Namespace) -> int:
    from .catalog import select, workload_info, workload_names, workloads_text

    infos = [workload_info(n) for n in select(workload_names(), args.names, "workload")]
    print(json.dumps(infos, indent=2) if args.json else workloads_text(infos))
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


register("presets", "list the named machine configurations",
         lambda p: p.add_argument("--json", action="store_true", help="print them as JSON"),
         _cmd_presets)
register("runtimes", "list the runtimes: family, papers, durable or volatile, fuzzing variant, "
         "threads, persistence domains and tuning options", _add_runtimes, _cmd_runtimes)
register("workloads", "list the workloads with their parameters (defaults, units, help)",
         lambda p: _add_listing(p, "workloads"), _cmd_workloads)
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

    for mod in ("pmsim.experiments.commands", "pmsim.experiments.reproduce",
                "pmsim.validate.command"):
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
            stopped = requested()
        if stopped:
            ignore_further()
        sys.stdout.flush()
        return rc
    except PmsimError as e:
        print(f"pmsim: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        ignore_further()
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
