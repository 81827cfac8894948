"""Machine configuration: frozen dataclasses with units and help text, presets, JSON/YAML I/O.

Every field is declared with ``param(default, unit, help)``; ``describe()`` prints them the way
gem5 prints its parameters. Configs validate themselves on construction and raise
:class:`~pmsim.errors.ConfigError` with a message saying which field is wrong and how to fix it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from .errors import ConfigError, unknown

LINE = 64
"""Cache-line size in bytes (fixed: every model in pmsim works on 64-byte lines)."""
ATOM = 8
"""Persist-atomic unit in bytes: aligned 8-byte stores never tear."""

Domain = Literal["pdom0", "pdom1", "pdom2"]
BarrierMode = Literal["modelled", "fixed"]
RegionKind = Literal["pm", "dram"]

DOMAINS: tuple[str, ...] = get_args(Domain)


def param(default: Any, unit: str, help: str) -> Any:
    """Declare a config field with its unit and one-line help."""
    if isinstance(default, (list, dict, set)):
        raise TypeError("use a tuple or a frozen dataclass for defaults")
    if is_dataclass(default):
        return field(default_factory=lambda: default, metadata={"unit": unit, "help": help})
    return field(default=default, metadata={"unit": unit, "help": help})


def _fail(obj: Any, name: str, problem: str, fix: str) -> ConfigError:
    cls = type(obj).__name__
    return ConfigError(f"{cls}.{name}: {problem}. {fix}")


def _check_nonneg(obj: Any, *names: str) -> None:
    for n in names:
        v = getattr(obj, n)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
            raise _fail(obj, n, f"must be a number >= 0 and finite, got {v!r}",
                        "Use a non-negative value.")


def _check_posint(obj: Any, *names: str) -> None:
    for n in names:
        v = getattr(obj, n)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise _fail(obj, n, f"must be a positive integer, got {v!r}", "Use an integer >= 1.")


@dataclass(frozen=True)
class CacheLevel:
    """One set-associative, write-back, write-allocate, LRU cache level."""

    size_kib: int = param(32, "KiB", "capacity")
    ways: int = param(8, "ways", "associativity")
    latency_ns: float = param(1.5, "ns", "load-to-use latency of a hit at this level")

    def __post_init__(self) -> None:
        _check_posint(self, "size_kib", "ways")
        _check_nonneg(self, "latency_ns")
        lines = self.size_kib * 1024 // LINE
        if lines % self.ways:
            raise _fail(self, "ways", f"{self.size_kib} KiB is not divisible into {self.ways} ways",
                        "Pick ways so that size_kib*1024/64 is a multiple of ways.")
        sets = lines // self.ways
        if sets & (sets - 1):
            raise _fail(self, "size_kib", f"gives {sets} sets, not a power of two",
                        "Choose size_kib and ways so that size/(64*ways) is a power of two.")

    @property
    def sets(self) -> int:
        """Number of sets."""
        return self.size_kib * 1024 // (LINE * self.ways)


@dataclass(frozen=True)
class CacheConfig:
    """Per-core L1 and L2, and a last-level cache shared by all cores."""

    l1: CacheLevel = param(CacheLevel(32, 8, 1.5), "", "private L1 data cache")
    l2: CacheLevel = param(CacheLevel(256, 8, 5.0), "", "private L2")
    llc: CacheLevel = param(CacheLevel(8192, 16, 15.0), "", "shared last-level cache")


@dataclass(frozen=True)
class PMConfig:
    """Persistent-memory media and the memory controller's write-pending queue (WPQ)."""

    read_ns: float = param(300.0, "ns", "media read latency added to an LLC miss")
    write_ns: float = param(500.0, "ns", "time one line write occupies a media bank")
    banks: int = param(16, "banks", "independent media banks draining the WPQ in parallel")
    wpq_entries: int = param(64, "entries", "write-pending-queue capacity; full => write-backs stall")
    to_wpq_ns: float = param(30.0, "ns", "time for a write-back or flush to reach the WPQ")

    def __post_init__(self) -> None:
        _check_nonneg(self, "read_ns", "write_ns", "to_wpq_ns")
        _check_posint(self, "banks", "wpq_entries")


@dataclass(frozen=True)
class DRAMConfig:
    """Volatile DRAM."""

    latency_ns: float = param(90.0, "ns", "DRAM latency added to an LLC miss")

    def __post_init__(self) -> None:
        _check_nonneg(self, "latency_ns")


@dataclass(frozen=True)
class Region:
    """A range of the simulated physical address space."""

    name: str = param("pm", "", "a label for the range")
    base: int = param(0, "bytes", "first address (64-byte aligned)")
    size: int = param(1 << 24, "bytes", "length (a multiple of 64)")
    kind: RegionKind = param("pm", "", "'pm' (persistent) or 'dram' (volatile)")

    def __post_init__(self) -> None:
        if self.kind not in get_args(RegionKind):
            raise _fail(self, "kind", f"unknown kind {self.kind!r}", "Use 'pm' or 'dram'.")
        if not isinstance(self.base, int) or self.base < 0 or self.base % LINE:
            raise _fail(self, "base", f"{self.base!r} is not a 64-byte aligned address",
                        "Use a non-negative multiple of 64.")
        if not isinstance(self.size, int) or self.size <= 0 or self.size % LINE:
            raise _fail(self, "size", f"{self.size!r} is not a positive multiple of 64",
                        "Round the size up to whole cache lines.")

    @property
    def end(self) -> int:
        return self.base + self.size


@dataclass(frozen=True)
class CostConfig:
    """Instruction and computation costs that are not memory accesses."""

    store_ns: float = param(1.0, "ns", "issue cost of a store that hits in L1 (stores are buffered)")
    flush_ns: float = param(2.0, "ns", "issue cost of clwb/clflushopt/clflush")
    fence_ns: float = param(5.0, "ns", "base cost of sfence/mfence beyond waiting for flushes")
    rmw_ns: float = param(20.0, "ns", "base cost of a locked read-modify-write (CAS, xchg)")
    pcommit_ns: float = param(5.0, "ns", "issue cost of pcommit")
    lock_ns: float = param(20.0, "ns", "cost of acquiring or releasing an uncontended lock")
    snoop_ns: float = param(15.0, "ns", "cost of taking a line from another core's private cache")

    def __post_init__(self) -> None:
        _check_nonneg(self, *(f.name for f in fields(self)))


@dataclass(frozen=True)
class MachineConfig:
    """The whole simulated machine."""

    cores: int = param(2, "cores", "number of cores (one simulated thread per core)")
    cache: CacheConfig = param(CacheConfig(), "", "cache hierarchy")
    pm: PMConfig = param(PMConfig(), "", "persistent memory and WPQ")
    dram: DRAMConfig = param(DRAMConfig(), "", "volatile memory")
    costs: CostConfig = param(CostConfig(), "", "non-memory instruction costs")
    regions: tuple[Region, ...] = param(
        (Region("pm", 0, 1 << 24, "pm"), Region("dram", 1 << 30, 1 << 22, "dram")),
        "", "address map: which ranges are PM and which DRAM")
    domain: Domain = param("pdom1", "", "persistence domain: pdom0 (media only), "
                           "pdom1 (ADR: media + WPQ), pdom2 (eADR: everything)")
    barrier: BarrierMode = param("modelled", "", "persist barrier cost: 'modelled' waits on "
                                 "real flush/WPQ state, 'fixed' charges barrier_ns")
    barrier_ns: float = param(100.0, "ns", "cost of one persist barrier in 'fixed' mode")
    quantum_ns: float = param(1000.0, "ns", "most a thread runs ahead of the others "
                              "before yielding to the scheduler")
    seed: int = param(0, "", "seed for every random choice")

    def __post_init__(self) -> None:
        _check_posint(self, "cores")
        if self.cores > 64:
            raise _fail(self, "cores", f"{self.cores} cores", "pmsim supports at most 64 cores.")
        if self.domain not in DOMAINS:
            raise _fail(self, "domain", f"unknown domain {self.domain!r}",
                        f"Use one of {', '.join(DOMAINS)}.")
        if self.barrier not in get_args(BarrierMode):
            raise _fail(self, "barrier", f"unknown mode {self.barrier!r}",
                        "Use 'modelled' or 'fixed'.")
        _check_nonneg(self, "barrier_ns")
        q = self.quantum_ns
        if not isinstance(q, (int, float)) or isinstance(q, bool) or not math.isfinite(q) or q <= 0:
            raise _fail(self, "quantum_ns", f"must be > 0, got {self.quantum_ns!r}",
                        "Use a positive number of nanoseconds.")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise _fail(self, "seed", f"must be an integer, got {self.seed!r}", "Use an int.")
        if not self.regions:
            raise _fail(self, "regions", "is empty", "Declare at least one 'pm' region.")
        if not any(r.kind == "pm" for r in self.regions):
            raise _fail(self, "regions", "has no 'pm' region", "Add a Region(kind='pm').")
        ordered = sorted(self.regions, key=lambda r: r.base)
        for a, b in zip(ordered, ordered[1:], strict=False):
            if a.end > b.base:
                raise _fail(self, "regions",
                            f"{a.name!r} [{a.base:#x}, {a.end:#x}) overlaps {b.name!r} at {b.base:#x}",
                            "Move one of the ranges so that they do not overlap.")
        names = [r.name for r in self.regions]
        if len(set(names)) != len(names):
            raise _fail(self, "regions", f"duplicate names {names}", "Give each region a unique name.")

    # -- conveniences -------------------------------------------------------------------------
    @property
    def pm_region(self) -> Region:
        """The first PM region (the one runtimes and the crash model use by default)."""
        return next(r for r in self.regions if r.kind == "pm")

    @property
    def dram_region(self) -> Region | None:
        """The first DRAM region, if any."""
        return next((r for r in self.regions if r.kind == "dram"), None)

    def replace(self, **changes: Any) -> MachineConfig:
        """A copy with fields changed; dotted names reach into nested configs (``pm.read_ns``)."""
        return _replace_nested(self, changes)

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), indent=2, **kw)

    def to_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MachineConfig:
        return from_dict(cls, data)

    @classmethod
    def from_json(cls, text: str) -> MachineConfig:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"config is not valid JSON: {e}. Fix the file and retry.") from None
        return from_dict(cls, data)

    @classmethod
    def from_yaml(cls, text: str) -> MachineConfig:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ConfigError(f"config is not valid YAML: {e}. Fix the file and retry.") from None
        return from_dict(cls, data)

    @classmethod
    def load(cls, path: str | Path) -> MachineConfig:
        """Read a ``.json``, ``.yaml`` or ``.yml`` file."""
        p = Path(path)
        if not p.is_file():
            what = "is a directory" if p.is_dir() else "does not exist"
            raise ConfigError(f"config file {str(p)!r} {what}. Give the path of a .json or .yaml file.")
        try:
            text = p.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"cannot read config file {str(p)!r}: {e}") from None
        if p.suffix in (".yaml", ".yml"):
            return cls.from_yaml(text)
        if p.suffix == ".json":
            return cls.from_json(text)
        raise ConfigError(f"config file {str(p)!r}: unknown extension {p.suffix!r}. "
                          "Use .json, .yaml or .yml.")


T = TypeVar("T")


def to_dict(obj: Any) -> Any:
    """Plain JSON-able data from a (nested) config dataclass."""
    if is_dataclass(obj):
        return {f.name: to_dict(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, tuple):
        return [to_dict(x) for x in obj]
    return obj


def from_dict(cls: type[T], data: Any, path: str = "") -> T:
    """Build a config dataclass from plain data, rejecting unknown keys with a suggestion."""
    where = path or cls.__name__
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}. "
                          "Write the section as key: value pairs.")
    hints = get_type_hints(cls)
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in names:
            raise unknown(f"field of {where}", key, names)
        kwargs[key] = _convert(hints[key], value, f"{where}.{key}")
    return cls(**kwargs)


def _convert(tp: Any, value: Any, path: str) -> Any:
    if is_dataclass(tp) and isinstance(value, tp):  # type: ignore[arg-type]
        return value
    if is_dataclass(tp):
        return from_dict(tp, value, path)
    if get_origin(tp) is tuple:
        (inner, _ellipsis) = get_args(tp)
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{path}: expected a list, got {value!r}.")
        return tuple(_convert(inner, v, f"{path}[{i}]") for i, v in enumerate(value))
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp is int and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _replace_nested(obj: Any, changes: dict[str, Any]) -> Any:
    direct: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    names = {f.name for f in fields(obj)}
    for key, value in changes.items():
        head, _, rest = key.partition(".")
        if head not in names:
            raise unknown(f"field of {type(obj).__name__}", head, names)
        if rest:
            nested.setdefault(head, {})[rest] = value
        else:
            direct[head] = value
    hints = get_type_hints(type(obj))
    where = type(obj).__name__
    for head, value in list(direct.items()):
        direct[head] = _convert(hints[head], value, f"{where}.{head}")
    for head, sub in nested.items():
        direct[head] = _replace_nested(direct.get(head, getattr(obj, head)), sub)
    return dataclasses.replace(obj, **direct)


def describe(obj: Any, prefix: str = "") -> list[tuple[str, Any, str, str]]:
    """Rows of (dotted name, value, unit, help) for every leaf field."""
    rows: list[tuple[str, Any, str, str]] = []
    for f in fields(obj):
        v = getattr(obj, f.name)
        name = prefix + f.name
        if is_dataclass(v):
            rows.extend(describe(v, name + "."))
        else:
            rows.append((name, v, f.metadata.get("unit", ""), f.metadata.get("help", "")))
    return rows
