"""The Proteus family's hardware (card ``papers/proteus.md``): :mod:`.proteus` (log registers,
the LogQ, the LLT and the LPQ, the log entry format and its decoding) and :mod:`.atom` (ATOM,
the hardware baseline, undo logging at the memory controller). The software side is
:mod:`pmsim.runtimes.proteus`."""
