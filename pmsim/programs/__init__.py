"""PM programs: crash-test hand-written persistent-memory code, not only transactions.

Write a data structure against the machine's instructions (:class:`PM`), mark its operations
with :func:`operation`, and give it a ``recover``, a ``state`` and optionally a ``check`` and a
``model`` (:class:`PMProgram`); ``crashfuzz.fuzz_program`` and the ``crashfuzz program`` command
test it. The gallery (:mod:`pmsim.programs.gallery`) holds classic persistent structures written
this way, each with deliberately broken variants.
"""

from .adapt import (
    ProgramRuntime,
    ProgramWorkload,
    is_program_class,
    program_of,
    program_runtime,
    program_workload,
)
from .api import PM, PMProgram, ProgramError, WrongResult, operation

__all__ = ["PM", "PMProgram", "ProgramError", "ProgramRuntime", "ProgramWorkload", "WrongResult",
           "is_program_class", "operation", "program_of", "program_runtime", "program_workload"]
