"""Runtime options in a name: ``"dudetx[persist_bw=4,vlog_entries=4096]"`` is the registered
``dudetx`` with those class attributes changed, so that a sweep, a CLI flag or a paper module
can vary a protocol's parameters without a registered variant per value.

Only public, non-callable, class-level settings of scalar type (int, float, bool, str) can be
set; each value is parsed as the type of the setting it replaces. The option set is part of
the name, so it survives a trip through a worker process or a saved finding.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, unknown

if TYPE_CHECKING:
    from .base import Runtime

_FORM = re.compile(r"^(?P<base>[^\[\]]+)\[(?P<opts>[^\[\]]*)\]$")
_FIXED = frozenset({"name", "family", "durable", "optimistic"})
"""What a runtime is, not how it is tuned: never an option."""
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def split(name: str) -> tuple[str, str] | None:
    """``(base, "k=v,...")`` for a name with options, else None."""
    m = _FORM.match(name.strip())
    return (m["base"].strip(), m["opts"]) if m else None


def _scalar(v: Any) -> bool:
    return isinstance(v, (bool, int, float, str)) and not isinstance(v, type)


def settable(cls: type[Runtime]) -> dict[str, Any]:
    """The class settings an option may change, with their current values: scalar class
    attributes, and ``attr.field`` for each scalar field of a dataclass-valued one (such as
    ``stm_config.access_ns``)."""
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        for k, v in vars(klass).items():
            if k.startswith("_") or k in _FIXED or callable(v):
                continue
            v = getattr(cls, k)
            if _scalar(v):
                out[k] = v
            elif dataclasses.is_dataclass(v) and not isinstance(v, type):
                for f in dataclasses.fields(v):
                    fv = getattr(v, f.name)
                    if _scalar(fv):
                        out[f"{k}.{f.name}"] = fv
    return out


def class_attrs(cls: type[Runtime], values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (as :func:`parse` returns them) as class attributes of a subclass of
    ``cls``: ``attr.field`` options become a replaced copy of the dataclass ``attr``, checked
    by its own validation."""
    out = {k: v for k, v in values.items() if "." not in k}
    nested: dict[str, dict[str, Any]] = {}
    for k, v in values.items():
        if "." in k:
            attr, fld = k.split(".", 1)
            nested.setdefault(attr, {})[fld] = v
    for attr, fields in nested.items():
        out[attr] = dataclasses.replace(getattr(cls, attr), **fields)
    return out


def _parse(value: str, old: Any, key: str, base: str) -> Any:
    v = value.strip()
    try:
        if isinstance(old, bool):
            if v.lower() in _TRUE:
                return True
            if v.lower() in _FALSE:
                return False
            raise ValueError
        if isinstance(old, (int, float)):
            num: int | float = int(v.replace("_", ""), 0) if isinstance(old, int) else float(v)
            if num != num or (old >= 0 and num < 0):
                raise ValueError
            return num
    except ValueError:
        raise ConfigError(f"runtime option {key}={value!r} of {base!r}: expected "
                          f"{'a non-negative ' if isinstance(old, (int, float)) and old >= 0 else ''}"
                          f"{type(old).__name__} (the default is {old!r})") from None
    return v


def parse(base: str, opts: str, cls: type[Runtime]) -> dict[str, Any]:
    """The option string ``"k=v,..."`` as ``{k: typed v}`` for ``cls`` (registered as
    ``base``); an unknown setting or a value of the wrong type raises ConfigError."""
    can = settable(cls)
    out: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in opts.split(","))):
        if "=" not in item:
            raise ConfigError(f"runtime option {item!r} of {base!r} has no value: write "
                              f"{base}[{item}=VALUE]")
        key, value = (s.strip() for s in item.split("=", 1))
        if key not in can:
            raise unknown(f"option of runtime {base!r}", key, can,
                          plural=f"options of {base!r}")
        out[key] = _parse(value, can[key], key, base)
    if not out:
        raise ConfigError(f"runtime {base}[] sets no option: write {base}[name=value,...] or "
                          f"just {base!r}")
    return out


def canonical(base: str, values: dict[str, Any]) -> str:
    """The one spelling of a runtime with options (sorted keys), so equal settings share a
    class and a cache entry."""
    items = (f"{k}={values[k]!r}" if isinstance(values[k], str) else f"{k}={values[k]}"
             for k in sorted(values))
    return f"{base}[{','.join(items)}]"


def with_options(name: str, values: dict[str, Any]) -> str:
    """``name`` with ``values`` set on top of any options it already has (later wins)."""
    if not values:
        return name
    parts = split(name)
    base, raw = parts if parts else (name, "")
    merged = {k.strip(): v.strip() for k, _, v in (i.partition("=") for i in raw.split(","))
              if k.strip()}
    merged.update({k: str(v) for k, v in values.items()})
    return f"{base}[{','.join(f'{k}={merged[k]}' for k in sorted(merged))}]"


__all__ = ["canonical", "class_attrs", "parse", "settable", "split", "with_options"]
