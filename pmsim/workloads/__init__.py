"""Workloads written once against the runtime object API: Array, Array-RAW, Alloc-X, KV, Bank.

``get_workload(name)(threads=..., seed=..., **params)`` builds one; :class:`Session` wires a
machine, a runtime and a workload together for runs and recovery.
"""

from __future__ import annotations

from .alloc_x import AllocX
from .array import Array, ArrayRAW
from .bank import Bank
from .base import WORKLOADS, Model, Workload, get_workload, register_workload
from .kv import KV
from .session import Recovered, Session

__all__ = ["KV", "WORKLOADS", "AllocX", "Array", "ArrayRAW", "Bank", "Model", "Recovered",
           "Session", "Workload", "get_workload", "register_workload"]
