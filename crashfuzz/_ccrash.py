"""Python side of the crash-state C core (``pmsim/cache/csrc/crash.h``).

:class:`CKernel` mirrors :class:`crashfuzz.states.PyKernel` call for call; both work on the
same NumPy tables and caller-owned buffers, one cffi call per batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pmsim.cache import native
from pmsim.errors import BuildError

from .model import DOMAIN_CODE, TraceIndex, sweep_capacity


def _lib() -> tuple[Any, Any]:
    if native.lib is None or not hasattr(native.lib, "crash_walk"):
        raise BuildError("the crash-state C core is not built: run `pip install -e .` (or "
                         "`python setup.py build_ext --inplace`), or use backend='python'")
    return native.ffi, native.lib


def _ptr(ffi: Any, ctype: str, arr: np.ndarray | None) -> Any:
    if arr is None:
        return ffi.NULL
    return ffi.cast(ctype, ffi.from_buffer(arr, require_writable=False))


def _wptr(ffi: Any, ctype: str, arr: np.ndarray | None) -> Any:
    if arr is None:
        return ffi.NULL
    return ffi.cast(ctype, ffi.from_buffer(arr, require_writable=True))


def _check(ret: int, what: str) -> None:
    if ret < 0:
        raise RuntimeError(f"crash core: {what} rejected its arguments (code {ret}); this is a bug "
                           "in crashfuzz, please report it with the trace")


def sweep_c(ix: TraceIndex, domain: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """C version of :func:`crashfuzz.model.sweep_python`."""
    ffi, lib = _lib()
    cap = sweep_capacity(ix, domain)
    out = [np.zeros(cap, np.int64) for _ in range(3)]
    table = np.ascontiguousarray(ix.line_table, np.int64)
    ret = lib.crash_sweep(
        _ptr(ffi, "uint8_t *", ix.kind), _ptr(ffi, "uint16_t *", ix.tid),
        _ptr(ffi, "uint8_t *", ix.drained), _ptr(ffi, "int64_t *", ix.chain), _ptr(ffi, "int64_t *", ix.frow),
        _ptr(ffi, "int64_t *", table), len(table), ix.n, ix.nchains, ix.nthreads,
        DOMAIN_CODE[domain], *(_wptr(ffi, "int64_t *", o) for o in out), cap)
    _check(ret, "crash_sweep")
    return out[0][:ret].copy(), out[1][:ret].copy(), out[2][:ret].copy()


def hash_words_c(words: np.ndarray) -> tuple[int, int]:
    """C version of :func:`crashfuzz.model.image_hash` (on a uint64 word view)."""
    ffi, lib = _lib()
    w = np.ascontiguousarray(words, np.uint64)
    out = np.zeros(2, np.uint64)
    lib.crash_hash_words(_ptr(ffi, "uint64_t *", w), len(w), _wptr(ffi, "uint64_t *", out))
    return int(out[0]), int(out[1])


class CKernel:
    """Odometer and walk over one trace's store tables in C."""

    name = "c"

    def __init__(self, ix: TraceIndex) -> None:
        ffi, lib = self.ffi, self.lib = _lib()
        self._keep = [np.ascontiguousarray(a) for a in
                      (ix.off, ix.st_word, ix.st_val, ix.st_old, ix.st_d1, ix.st_d2)]
        t = ffi.new("crash_tables *")
        t.off = _ptr(ffi, "int64_t *", self._keep[0])
        t.word = _ptr(ffi, "int64_t *", self._keep[1])
        t.val = _ptr(ffi, "uint64_t *", self._keep[2])
        t.old = _ptr(ffi, "uint64_t *", self._keep[3])
        t.d1 = _ptr(ffi, "uint64_t *", self._keep[4])
        t.d2 = _ptr(ffi, "uint64_t *", self._keep[5])
        t.nchains, t.nstores, t.nwords = ix.nchains, len(ix.st_word), ix.nwords
        self.t = t
        _check(lib.crash_tables_check(t), "crash_tables_check")

    def odometer(self, fchain: np.ndarray, rep_off: np.ndarray, reps: np.ndarray, digit: np.ndarray,
                 img: np.ndarray, h: np.ndarray, count: int, out_h: np.ndarray | None) -> None:
        ffi = self.ffi
        ret = self.lib.crash_odometer(
            self.t, len(fchain), _ptr(ffi, "int64_t *", fchain), _ptr(ffi, "int64_t *", rep_off),
            _ptr(ffi, "int64_t *", reps), _wptr(ffi, "int64_t *", digit),
            _wptr(ffi, "uint64_t *", img), _wptr(ffi, "uint64_t *", h), count,
            _wptr(ffi, "uint64_t *", out_h))
        _check(ret, "crash_odometer")

    def stepper(self, fchain: np.ndarray, rep_off: np.ndarray, reps: np.ndarray, digit: np.ndarray,
                img: np.ndarray, h: np.ndarray) -> Callable[[], None]:
        """A no-argument call advancing the odometer by one state (buffers wrapped once)."""
        ffi = self.ffi
        # the cdata from ffi.from_buffer keep the arrays alive as long as ``args`` lives
        args = (self.t, len(fchain), _ptr(ffi, "int64_t *", fchain), _ptr(ffi, "int64_t *", rep_off),
                _ptr(ffi, "int64_t *", reps), _wptr(ffi, "int64_t *", digit),
                _wptr(ffi, "uint64_t *", img), _wptr(ffi, "uint64_t *", h), 1, ffi.NULL)
        fn = self.lib.crash_odometer

        def step() -> None:
            if fn(*args) < 0:
                _check(-1, "crash_odometer")

        return step

    def walk(self, fchain: np.ndarray, x: np.ndarray, targets: np.ndarray, img: np.ndarray,
             h: np.ndarray, out_h: np.ndarray | None) -> None:
        ffi = self.ffi
        tg = np.ascontiguousarray(targets, np.int64)
        ret = self.lib.crash_walk(
            self.t, len(fchain), _ptr(ffi, "int64_t *", fchain), _wptr(ffi, "int64_t *", x),
            _ptr(ffi, "int64_t *", tg), len(tg), _wptr(ffi, "uint64_t *", img),
            _wptr(ffi, "uint64_t *", h), _wptr(ffi, "uint64_t *", out_h))
        _check(ret, "crash_walk")
