"""Hardware: the machine engines apart from the hardware the protocols add.

* :mod:`.engines`: the machine engines (the pure-Python reference and the C engine): caches,
  coherence, the memory controller and its WPQ, persistence domains;
* :mod:`.htm`: hardware transactional memory, the rules both engines follow;
* protocol hardware, named by protocol family as in :mod:`pmsim.runtimes`: :mod:`.loc` (LOC's
  Commit/Recovery Logic) and :mod:`.proteus` (Proteus's log registers, LogQ, LLT and LPQ, and
  ATOM).
"""
