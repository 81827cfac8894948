"""The schema of measured rows and of saved results: checked wherever they are read back.

A row (one measured point, :func:`~.claims.measure`) names its ``paper``, ``experiment``,
``runtime``, ``workload`` and ``domain`` and carries the metrics of
:data:`~.run.METRICS`: finite numbers >= 0 (NaN where a run has none), below
:data:`MAX_METRIC`. A results file (``pmsim reproduce``'s ``results.json``) holds ``meta``,
``papers`` (paper name -> rows) and optionally ``unified`` (``rows``). A file edited by hand or
damaged fails here with the field that is wrong, instead of a traceback or a silently wrong
table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from .run import METRICS

MAX_METRIC = 1e18
"""Largest metric value a row may hold (a day of simulated time is 8.64e13 ns)."""

ROW_TEXT: tuple[str, ...] = ("runtime", "workload", "domain")
"""Row fields that must be non-empty strings."""
ROW_LABELS: tuple[str, ...] = ("paper", "experiment")
"""Row fields that must be strings (empty for a point outside any paper)."""
ROW_NUMBERS: tuple[str, ...] = (*(m[0] for m in METRICS), "tx_per_wall_s")
"""Row fields that must be numbers in [0, MAX_METRIC] or NaN."""
ROW_COUNTS: tuple[str, ...] = ("threads", "txs")
"""Row fields that must be integers >= 1 when present."""

META_TEXT: tuple[str, ...] = ("command", "version", "backend", "scale", "workers", "out")
META_NUMBERS: tuple[str, ...] = ("points", "seconds")


def _kind(v: Any) -> str:
    return "null" if v is None else type(v).__name__


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def check_row(row: Any, where: str, fix: str = "") -> None:
    """ConfigError naming ``where`` and the field, unless ``row`` is a valid measured row;
    ``fix`` ('; ...') says how to repair it."""
    if not isinstance(row, Mapping):
        raise ConfigError(f"{where} is a {_kind(row)}, not a row (a mapping of field: value){fix}")
    for k in ROW_TEXT:
        v = row.get(k)
        if not isinstance(v, str) or not v:
            raise ConfigError(f"{where}: field {k!r} = {v!r} ({_kind(v)}) must be a non-empty "
                              "string" + (" (it is missing)" if k not in row else "") + fix)
    for k in ROW_LABELS:
        if not isinstance(row.get(k), str):
            v = row.get(k)
            raise ConfigError(f"{where}: field {k!r} = {v!r} ({_kind(v)}) must be a string"
                              + (" (it is missing)" if k not in row else "") + fix)
    for k in ROW_NUMBERS:
        if k not in row:
            raise ConfigError(f"{where}: field {k!r} is missing; a measured row has every "
                              f"metric ({', '.join(ROW_NUMBERS)}){fix}")
        v = row[k]
        if not _is_number(v) or not (math.isnan(v) or 0 <= v <= MAX_METRIC):
            raise ConfigError(f"{where}: field {k!r} = {v!r} ({_kind(v)}) must be a number in "
                              f"[0, {MAX_METRIC:g}] (or NaN where a run has none){fix}")
    for k in ROW_COUNTS:
        v = row.get(k, 1)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ConfigError(f"{where}: field {k!r} = {v!r} ({_kind(v)}) must be an integer "
                              f">= 1{fix}")


def check_results(doc: Any, path: str) -> None:
    """ConfigError naming the field, unless ``doc`` is a valid results document."""
    fix = ("; fix the field or regenerate the file with the command in its meta "
           "(`pmsim reproduce PAPER --out DIR`)")
    if not isinstance(doc, Mapping):
        raise ConfigError(f"{path!r} holds a JSON {_kind(doc)}, not a results file written by "
                          "`pmsim reproduce` (an object with meta and papers)")
    meta = doc.get("meta")
    if not isinstance(meta, Mapping):
        raise ConfigError(f"{path!r}: 'meta' = {meta!r} ({_kind(meta)}) must be a mapping ("
                          f"command, version, backend, ...){fix}")
    for k in META_TEXT:
        v = meta.get(k)
        if not isinstance(v, str):
            raise ConfigError(f"{path!r}: meta.{k} = {v!r} ({_kind(v)}) must be a string{fix}")
    for k in META_NUMBERS:
        v = meta.get(k)
        if not _is_number(v) or not math.isfinite(v) or v < 0:
            raise ConfigError(f"{path!r}: meta.{k} = {v!r} ({_kind(v)}) must be a number >= 0"
                              f"{fix}")
    only = meta.get("only", [])
    if not isinstance(only, list) or not all(isinstance(x, str) for x in only):
        raise ConfigError(f"{path!r}: meta.only = {_short(only)} ({_kind(only)}) must be a list "
                          f"of experiment names{fix}")
    papers = doc.get("papers", {})
    if not isinstance(papers, Mapping):
        raise ConfigError(f"{path!r}: 'papers' = {_short(papers)} ({_kind(papers)}) must be a "
                          f"mapping of paper name to its rows{fix}")
    for name, rows in papers.items():
        if not isinstance(rows, list):
            raise ConfigError(f"{path!r}: papers.{name} = {_short(rows)} ({_kind(rows)}) must be "
                              f"a list of rows{fix}")
        for i, r in enumerate(rows):
            check_row(r, f"{path!r}: papers.{name}[{i}]", fix)
            if r["paper"] != name:
                raise ConfigError(f"{path!r}: papers.{name}[{i}]: field 'paper' = "
                                  f"{r['paper']!r} is not {name!r}, the paper it is filed "
                                  f"under{fix}")
    uni = doc.get("unified")
    if uni is None:
        return
    if not isinstance(uni, Mapping) or not isinstance(uni.get("rows"), list):
        raise ConfigError(f"{path!r}: 'unified' = {_short(uni)} ({_kind(uni)}) must be a mapping "
                          f"with a list of rows under 'rows'{fix}")
    for i, r in enumerate(uni["rows"]):
        check_row(r, f"{path!r}: unified.rows[{i}]", fix)


def _short(v: Any, limit: int = 60) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[:limit] + "..."
