"""Computation costs the runtimes charge with ``cpu.work`` (card §9 defaults)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..config import param
from ..errors import ConfigError


@dataclass(frozen=True)
class RuntimeCosts:
    """Computation costs of the runtimes (card §9 defaults; calibrate against M4/M5)."""

    call_ns: float = param(2.0, "ns", "instrumentation of one TXN_READ/TXN_WRITE/TXN_OPEN call")
    checksum_ns_per_byte: float = param(0.25, "ns/B", "undo record checksum (Fletcher/xxHash-like)")
    hash_insert_ns: float = param(40.0, "ns", "redo: insert or update the per-transaction hash")
    hash_lookup_ns: float = param(30.0, "ns", "redo: look an object up in the hash on a read")
    chain_node_ns: float = param(5.0, "ns", "redo: visit one record of an object's chain")
    copy_ns_per_byte: float = param(0.0625, "ns/B", "copy cache-resident log data (redo write-back, "
                                    "undo rollback)")
    alloc_ns: float = param(20.0, "ns", "pm_alloc/pm_free volatile list work under the "
                            "superblock lock")
    open_ns: float = param(5.0, "ns", "COW: write-set check of TXN_OPEN")

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, (int, float)) or v < 0:
                raise ConfigError(f"RuntimeCosts.{f.name} must be a number >= 0, got {v!r}")
