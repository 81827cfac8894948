"""cffi build script for the C core (API mode, out of line; run by ``pip install``).

Declarations come from the headers ``csrc/*.h`` (one per concern: ``machine.h``, ``crash.h``,
...); every ``csrc/*.c`` is compiled in. Text between ``/* BEGIN_C_ONLY */`` and
``/* END_C_ONLY */`` in a header is for C only and hidden from cffi. The version stamp
is a hash of those sources, compiled into the library and checked at import (``native.py``).
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
CSRC = HERE / "csrc"

# stamp.py is loaded by path: the package itself is not importable while it is being built
_spec = importlib.util.spec_from_file_location("_pmsim_stamp", HERE / "stamp.py")
assert _spec and _spec.loader
_stamp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_stamp)
source_stamp = _stamp.source_stamp


def _cdef(header: str) -> str:
    """The header minus preprocessor lines and the parts marked private to C."""
    header = re.sub(r"/\* *BEGIN_C_ONLY *\*/.*?/\* *END_C_ONLY *\*/", "", header, flags=re.S)
    lines = [ln for ln in header.splitlines() if not ln.lstrip().startswith("#")]
    return "\n".join(lines)


ffibuilder = FFI()
HEADERS = sorted(CSRC.glob("*.h"))
for _h in HEADERS:
    ffibuilder.cdef(_cdef(_h.read_text()))
ffibuilder.cdef("const char *pmcore_stamp(void);")

_flags = ["-O2", "-std=c11"]
if os.environ.get("PMSIM_SANITIZE"):
    _flags = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
              "-fno-sanitize-recover=undefined"]

ffibuilder.set_source(
    "pmsim.cache._pmcore",
    "".join(f'#include "{h.name}"\n' for h in HEADERS)
    +
    f'const char *pmcore_stamp(void) {{ return "{source_stamp()}"; }}\n',
    sources=[str(p.relative_to(HERE.parent.parent)) for p in sorted(CSRC.glob("*.c"))],
    include_dirs=[str(CSRC.relative_to(HERE.parent.parent))],
    extra_compile_args=_flags,
    extra_link_args=["-fsanitize=address,undefined"] if os.environ.get("PMSIM_SANITIZE") else [],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
