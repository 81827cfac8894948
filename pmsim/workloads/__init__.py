"""Workloads written once against the runtime object API, each with a sequential reference
model: Array, Array-RAW, Alloc-X, KV, Bank (Marathe et al.), and the other papers' hash table,
hash map, B+-tree, red-black and AVL trees, queues, swaps, TPC-C-, TATP- and YCSB-like mixes,
and STAMP's Genome, Intruder, K-means, Labyrinth, Yada, SSCA2 and Vacation (NV-HTM).

``get_workload(name)(threads=..., seed=..., **params)`` builds one; :class:`Session` wires a
machine, a runtime and a workload together for runs and recovery.
"""

from __future__ import annotations

from .alloc_x import AllocX
from .array import Array, ArrayRAW
from .avl import AVL
from .bank import Bank
from .base import FINISHED, WORKLOADS, Model, Workload, get_workload, register_workload
from .bigtx import BigTx
from .btree import BTree
from .empty import Empty
from .genome import Genome
from .hashmap import HashMap
from .hashtable import HashTable
from .intruder import Intruder
from .kmeans import Kmeans
from .kv import KV
from .labyrinth import Labyrinth
from .queue import Queue
from .rbtree import RBTree
from .session import Recovered, Session
from .ssca2 import Ssca2
from .swap import SPS, Swap
from .tatp import TATP
from .tpcc import TPCC
from .vacation import Vacation
from .yada import Yada
from .ycsb import YCSB, Zipfian

__all__ = ["FINISHED", "KV", "WORKLOADS", "AllocX", "Array", "ArrayRAW", "Bank", "Model", "Recovered",
           "Session", "Workload", "get_workload", "register_workload"]
__all__ += ["SPS", "TATP", "TPCC", "YCSB", "Queue", "Swap", "Zipfian"]
__all__ += ["AVL", "BigTx", "BTree", "Empty", "Genome", "HashMap", "HashTable", "Intruder",
            "Kmeans", "Labyrinth", "RBTree", "Ssca2", "Vacation", "Yada"]
