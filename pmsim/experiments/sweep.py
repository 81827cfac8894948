"""Sweeps that scale: run a point function over many points on local processes or Dask.

``run_sweep(fn, points)`` calls ``fn(point)`` for every point and returns the rows in point
order, whichever executor ran them:

* ``"serial"``: one after another in this process (for debugging; a crash is not survived);
* ``None`` / ``"local"``: a pool of ``jobs`` local worker processes (default: every CPU);
* ``"dask:local"``: a Dask ``LocalCluster`` of ``jobs`` single-threaded worker processes,
  started and closed here; ``"dask:tcp://HOST:PORT"``: a running Dask scheduler;
* any :class:`concurrent.futures.Executor`, e.g. ``distributed.Client.get_executor()``.

**Cache.** With ``cache=DIR`` every finished point is written at once, atomically (temporary
file, fsync, rename), to ``DIR/<fn module>.<fn qualname>/<key>.json``: the row, the point,
the key, the pmsim version and the seed. A rerun, or a sweep resumed after an interruption,
loads those and computes only the missing points. The key (:func:`point_key`) hashes the
function's import name, the canonical JSON of the point, the pmsim version and a digest of
the code (:func:`code_fingerprint`: pmsim's and crashfuzz's sources, and the point function's
own module), so a change to the code recomputes everything rather than mixing rows of two
codes. Rows are written and returned as plain JSON data, so a row
read back from the cache equals the row computed.

A cached row is input like any other and is checked before it is used: the file must be
valid JSON, name the key it is filed under, and hold the row with the sha256 of its canonical
JSON written beside it (``row_sha256``), so a row edited or damaged after it was computed
(a NaN, ``1e308`` or ``"fast"`` as a latency, an empty row) is caught whatever the point
function. Such a row is **recomputed, not used, and reported** on stderr (which file, why, and
that deleting the cache directory starts afresh); the file is overwritten with the new row.
Recomputing rather than refusing the run: the cache only saves time, the point it holds is
known, so recomputing gives the right row with no action from the user and loses nothing
(every other cached row is still used, and a bad row was worthless); refusing would only make
the user delete the file by hand to get the same result.

**Worker deaths.** A point whose worker process dies (segfault, ``os._exit``, out of memory)
costs a retry, not the sweep. Local processes: the broken pool is rebuilt and the points that
were in flight (at most ``2 * jobs``) are resubmitted, each charged a death. As a death
beside other points does not say whose it was, a point with no retry left runs alone after
all the others; if it kills its worker again it is convicted, and once every other point has
finished, a PmsimError names it. Dask: tasks are submitted with ``retries=`` and the scheduler
reschedules the tasks of a lost worker; on a cluster started here it gives up
(``KilledWorker``, reported naming the point) after ``retries + 1`` deaths; a remote
scheduler applies its own ``distributed.scheduler.allowed-failures``. An exception raised by
``fn`` is a result, not a death: it stops the sweep (Dask retries it first) and is re-raised
with a note naming the point.

**Interrupts.** On Ctrl-C (or any error) pending work is cancelled, worker processes are
terminated and joined (no orphans), finished points stay in the cache, and the exception
is re-raised. Local workers ignore SIGINT (the parent stops them) and, on Linux, die with
the parent even when it is killed outright.

**Determinism.** Rows must not depend on the executor. The exception is wall-clock fields
(:data:`WALL_CLOCK_FIELDS`, e.g. ``wall_s`` of :class:`~pmsim.experiments.run.RunResult`):
they are kept, but measure the machine that ran the point; compare rows with
:func:`without_wall_clock`.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import ctypes
import dataclasses
import hashlib
import json
import os
import pickle
import signal
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import (
    FIRST_COMPLETED,
    CancelledError,
    Executor,
    Future,
    ProcessPoolExecutor,
    wait,
)
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from ..errors import ConfigError, PmsimError
from ..interrupts import catching, raise_pending
from ..options import check_jobs

PointFn = Callable[[dict[str, Any]], dict[str, Any]]

WALL_CLOCK_FIELDS: tuple[str, ...] = ("wall_s", "tx_per_wall_s")
"""Row fields that measure wall-clock time: kept in rows, but they differ between runs."""

DASK_SCHEMES = ("tcp", "tls", "ws", "wss")
"""Transports a Dask scheduler address may name."""

DASK_CONNECT_TIMEOUT_S = 10.0
"""How long to try to reach a remote Dask scheduler before giving up."""

WAKE_S = 1.0
"""Seconds the sweep waits for a point before checking for a stop request (see
:mod:`pmsim.interrupts`)."""

_PR_SET_PDEATHSIG = 1
"""prctl option: the signal a process gets when its parent dies (Linux)."""

_EXECUTOR_FORMS = ("'serial', 'local', 'dask:local', 'dask:tcp://HOST:PORT' or a "
                   "concurrent.futures.Executor")


@dataclass(frozen=True)
class ExecutorSpec:
    """A parsed executor string: ``kind`` serial/local/dask; for dask, ``address`` is
    ``"local"`` or a scheduler URL such as ``tcp://10.0.0.5:8786``."""

    kind: Literal["serial", "local", "dask"]
    address: str = ""

    def __str__(self) -> str:
        return f"dask:{self.address}" if self.kind == "dask" else self.kind


def parse_executor(text: str) -> ExecutorSpec:
    """Validate an executor string (``--dask``/``--executor`` values) and say how to fix it."""
    if not isinstance(text, str):
        raise ConfigError(f"executor {text!r}: expected {_EXECUTOR_FORMS}")
    raw = text.strip()
    low = raw.lower()
    if low in ("serial", "local"):
        return ExecutorSpec("serial") if low == "serial" else ExecutorSpec("local")
    if low == "dask" or low == "dask:":
        raise ConfigError(f"executor {text!r}: say which Dask cluster, 'dask:local' (started on "
                          "this machine) or 'dask:tcp://HOST:PORT' (a running scheduler)")
    if low.startswith("dask:"):
        rest = raw[5:].strip()
        if rest.lower() == "local":
            return ExecutorSpec("dask", "local")
        return ExecutorSpec("dask", _dask_address(text, rest))
    if "://" in low:
        raise ConfigError(f"executor {text!r}: a scheduler address needs the 'dask:' prefix, "
                          f"e.g. 'dask:{raw}'")
    raise ConfigError(f"unknown executor {text!r}: use {_EXECUTOR_FORMS}")


def _dask_address(text: str, rest: str) -> str:
    """``tcp://host:port`` from ``rest`` (``host:port`` means tcp), or a ConfigError."""
    example = "e.g. 'dask:tcp://10.0.0.5:8786' (or 'dask:local' for a cluster on this machine)"
    url = rest if "://" in rest else f"tcp://{rest}"
    parts = urlsplit(url)
    if parts.scheme.lower() not in DASK_SCHEMES:
        raise ConfigError(f"executor {text!r}: unknown transport {parts.scheme!r}; use one of "
                          f"{', '.join(DASK_SCHEMES)}, {example}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None or port < 1 or parts.path not in ("", "/") \
            or parts.query or parts.fragment:
        raise ConfigError(f"executor {text!r}: a Dask scheduler address is "
                          f"TRANSPORT://HOST:PORT with a port in 1..65535, {example}")
    return f"{parts.scheme.lower()}://{parts.netloc}"


# -- points, rows and keys ----------------------------------------------------------------------

class _NotPlain(Exception):
    """A value that has no JSON form: where it is, and what it is."""

    def __init__(self, where: str, value: Any, is_key: bool = False) -> None:
        super().__init__(where, value)
        self.where, self.value, self.is_key = where, value, is_key

    def explain(self) -> str:
        if self.is_key:
            return (f"key {self.value!r}{f' of {self.where}' if self.where else ''} is not a "
                    "string (JSON keys are strings)")
        return (f"{self.where or 'the value'} = {self.value!r} ({type(self.value).__name__}) "
                "has no JSON form")


def _plain(value: Any, where: str) -> Any:
    """``value`` as JSON data: dataclasses (a MachineConfig) via ``to_dict()`` or
    ``dataclasses.asdict``, tuples as lists, NumPy scalars and arrays as Python numbers and
    lists, subclasses of int/float/str (enums) as their base type."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        to_dict = getattr(value, "to_dict", None)
        return _plain(to_dict() if callable(to_dict) else dataclasses.asdict(value), where)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise _NotPlain(where, k, is_key=True)
            out[k] = _plain(v, f"{where}.{k}" if where else k)
        return out
    if isinstance(value, list | tuple):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    tolist = getattr(value, "tolist", None)  # NumPy scalars and arrays
    if callable(tolist) and type(value).__module__ == "numpy":
        return _plain(tolist(), where)
    raise _NotPlain(where, value)


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def _fn_name(fn: Callable[..., Any]) -> str:
    """``module:qualname`` of a module-level function, or a ConfigError."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not callable(fn) or not module or not qualname:
        raise ConfigError(f"sweep function {fn!r} is not a module-level function; define "
                          "`def point_fn(point: dict) -> dict` at the top level of a module "
                          "and put fixed arguments into the points")
    return f"{module}:{qualname}"


def _version() -> str:
    import pmsim

    return str(pmsim.__version__)


CODE_SUFFIXES = (".py", ".c", ".h")
"""The files whose contents make up the code a cached row was computed by."""


def _tree_digest(root: str) -> str:
    """sha256 over the relative paths and contents of every code file below ``root``."""
    h = hashlib.sha256()
    base = Path(root)
    for f in sorted(p for p in base.rglob("*") if p.suffix in CODE_SUFFIXES and p.is_file()):
        h.update(str(f.relative_to(base)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def code_fingerprint(module: str | None = None) -> str:
    """A digest of the code a point function runs: pmsim's and crashfuzz's sources (Python and
    the C core's) and, for a point function defined outside them, its own module's file. Part
    of every cache key, so that a cache never hands back rows computed by other code."""
    import crashfuzz
    import pmsim

    parts = [_tree_digest(str(Path(m.__file__).parent)) for m in (pmsim, crashfuzz)]
    src = getattr(sys.modules.get(module or ""), "__file__", None)
    if module and src and module.split(".")[0] not in ("pmsim", "crashfuzz"):
        parts.append(hashlib.sha256(Path(src).read_bytes()).hexdigest())
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


def _point_key(name: str, canonical_point: dict[str, Any], code: str | None) -> str:
    """The key of a point; ``code``: :func:`code_fingerprint` of the function's module, read
    once per sweep (the files as they are when the sweep starts), or None for
    :func:`point_identity`."""
    doc = {"fn": name, "point": canonical_point, "version": _version()}
    if code is not None:
        doc["code"] = code
    return hashlib.sha256(_canonical(doc).encode()).hexdigest()


def _canonical_point(point: Any, where: str) -> dict[str, Any]:
    if not isinstance(point, Mapping):
        raise ConfigError(f"{where} = {point!r} is not a mapping; a point is a dict of JSON "
                          "values, e.g. {'runtime': 'undo', 'txs': 100}")
    try:
        return _plain(point, "")
    except _NotPlain as e:
        raise ConfigError(f"{where}: {e.explain()}; use str, int, float, bool, None, lists, "
                          "dicts with str keys, or a MachineConfig or other dataclass") from None


def point_key(fn: Callable[..., Any], point: Mapping[str, Any]) -> str:
    """The cache key of ``fn(point)``: sha256 over fn's ``module:qualname``, the canonical
    JSON of the point (dataclass values resolved to dicts), ``pmsim.__version__`` and
    :func:`code_fingerprint`."""
    name = _fn_name(fn)
    return _point_key(name, _canonical_point(point, "point"),
                      code_fingerprint(name.split(":")[0]))


def point_identity(fn: Callable[..., Any], point: Mapping[str, Any]) -> str:
    """A digest of ``fn(point)`` that, unlike :func:`point_key`, does not change with the code:
    for naming a point in saved results that later code re-reads."""
    return _point_key(_fn_name(fn), _canonical_point(point, "point"), None)


def without_wall_clock(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows without :data:`WALL_CLOCK_FIELDS`: what must not depend on who ran them."""
    return [{k: v for k, v in r.items() if k not in WALL_CLOCK_FIELDS} for r in rows]


def _describe(point: dict[str, Any], limit: int = 200) -> str:
    text = _canonical(point)
    return text if len(text) <= limit else text[:limit] + "..."


# -- the cache -------------------------------------------------------------------------------------

def _cache_dir(cache: str | Path, name: str) -> Path:
    """The existing, writable cache directory of ``fn`` (created), or a ConfigError."""
    root = Path(cache)
    if root.exists() and not root.is_dir():
        raise ConfigError(f"cache {str(cache)!r} is a file; give a directory (it is created "
                          "if missing), e.g. 'sweep-cache'")
    d = root / name.replace(":", ".")
    try:
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=d):
            pass
    except OSError as e:
        raise ConfigError(f"cache {str(cache)!r}: cannot write there ({e.strerror or e}); "
                          "choose a writable directory") from None
    return d


def _row_digest(row: Mapping[str, Any]) -> str:
    """sha256 of a row's canonical JSON: written with the row, checked when it is read back."""
    return hashlib.sha256(_canonical(row).encode()).hexdigest()


def _load_cached(path: Path, key: str) -> tuple[dict[str, Any] | None, str]:
    """``(row, "")`` for a valid cache file of ``key``; ``(None, "")`` if there is none; and
    ``(None, why)`` if the file is there but cannot be trusted (it is recomputed, overwritten
    and reported)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None, ""
    except (OSError, UnicodeDecodeError) as e:
        return None, f"cannot be read ({getattr(e, 'strerror', None) or e})"
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:
        return None, f"is not valid JSON ({e})"
    if not isinstance(doc, dict):
        return None, f"holds a JSON {type(doc).__name__}, not a cache entry"
    if doc.get("key") != key:
        return None, "names another point (its key is not its file name)"
    row = doc.get("row")
    if not isinstance(row, dict):
        return None, f"holds a {type(row).__name__} as its row, not a mapping"
    try:
        digest = _row_digest(row)
    except (TypeError, ValueError, RecursionError):
        digest = ""
    if doc.get("row_sha256") != digest:
        return None, ("its row does not match the checksum written with it (edited or damaged "
                      "after it was computed)")
    return row, ""


def _report_cache(cache_dir: Path, bad: Sequence[tuple[Path, str]], write: Callable[[str], Any]
                  ) -> None:
    """Say which cached rows were not used and why (at most 5 named)."""
    if not bad:
        return
    named = "; ".join(f"{p}: {why}" for p, why in bad[:5])
    more = f"; and {len(bad) - 5} more" if len(bad) > 5 else ""
    write(f"pmsim: warning: {len(bad)} cached row(s) not used, recomputed and overwritten: "
          f"{named}{more}. Delete the cache directory '{cache_dir}' (or run without --cache) to "
          "start afresh.")


def _write_atomic(path: Path, doc: dict[str, Any]) -> None:
    """Write JSON so that ``path`` holds either nothing or the whole document."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise PmsimError(f"cannot write the cache file '{path}': {e.strerror or e}; free "
                             "space or choose another cache directory") from None
        raise


# -- executors -------------------------------------------------------------------------------------

def _worker_init(parent: int) -> None:
    """Local workers leave Ctrl-C to the parent, which stops them, and on Linux die with the
    parent however it ends (a worker left behind would wait for work forever)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os._exit(1)


def _stop_pool(ex: ProcessPoolExecutor) -> None:
    """Cancel what has not started and terminate the workers, busy or idle: no orphans, and
    no waiting for work whose result is no longer wanted."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(5)
        if p.is_alive():
            p.kill()
            p.join()


class _LocalPool:
    """Local worker processes, rebuilt when one dies."""

    def __init__(self, fn: PointFn, workers: int) -> None:
        self.fn, self.workers = fn, workers
        self.window: int | None = 2 * workers  # bounds the points lost with a broken pool
        self.ex = self._new()

    def _new(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self.workers, initializer=_worker_init,
                                   initargs=(os.getpid(),))

    def submit(self, point: dict[str, Any]) -> Future[Any]:
        return self.ex.submit(self.fn, point)

    def rebuild(self) -> None:
        _stop_pool(self.ex)
        self.ex = self._new()

    def close(self, abort: bool) -> None:
        if abort:
            _stop_pool(self.ex)
        else:
            self.ex.shutdown(wait=True)


class _ExecutorPool:
    """An executor owned by someone else (or a Dask client that ``close`` disconnects)."""

    window: int | None = None

    def __init__(self, fn: PointFn, ex: Executor, submit_kwargs: dict[str, Any],
                 on_close: contextlib.ExitStack | None = None) -> None:
        self.fn, self.ex, self.kwargs, self.on_close = fn, ex, submit_kwargs, on_close

    def submit(self, point: dict[str, Any]) -> Future[Any]:
        return self.ex.submit(self.fn, point, **self.kwargs)

    def close(self, abort: bool) -> None:
        if self.on_close is not None:
            self.on_close.close()


def _dask_executor_type() -> type | None:
    mod = sys.modules.get("distributed.cfexecutor")
    return getattr(mod, "ClientExecutor", None)


def _dask_client_type() -> type | None:
    mod = sys.modules.get("distributed")
    return getattr(mod, "Client", None)


def _open_dask(spec: ExecutorSpec, fn: PointFn, workers: int, retries: int) -> _ExecutorPool:
    """A Dask client (and for ``dask:local`` the cluster) whose executor runs the points."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise ConfigError(f"executor '{spec}' needs Dask: pip install 'distributed' (or "
                          "pmsim[distributed]), or run on local processes") from None
    stack = contextlib.ExitStack()
    try:
        if spec.address == "local":
            with dask.config.set({"distributed.scheduler.allowed-failures": retries}):
                cluster = stack.enter_context(LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True,
                    dashboard_address=":0"))
            client = stack.enter_context(Client(cluster, set_as_default=False))
        else:
            try:
                client = stack.enter_context(Client(spec.address, timeout=DASK_CONNECT_TIMEOUT_S,
                                                    set_as_default=False))
            except (OSError, TimeoutError) as e:
                raise PmsimError(f"cannot reach the Dask scheduler at {spec.address} ({e}); "
                                 "start one (`dask scheduler`, then `dask worker ADDRESS`) or "
                                 "use --dask local") from None
    except BaseException:
        stack.close()
        raise
    return _ExecutorPool(fn, client.get_executor(), {"retries": retries, "pure": False}, stack)


# -- the sweep -------------------------------------------------------------------------------------

class _Sweep:
    """State of one run_sweep call: points by key, rows, cache, progress."""

    def __init__(self, fn: PointFn, name: str, label: str, points: list[dict[str, Any]],
                 canon: list[dict[str, Any]], keys: list[str], cache_dir: Path | None,
                 bar: Any) -> None:
        self.fn, self.name, self.label, self.bar, self.cache_dir = fn, name, label, bar, cache_dir
        self.point: dict[str, dict[str, Any]] = {}
        self.canon: dict[str, dict[str, Any]] = {}
        self.index: dict[str, int] = {}
        for i, (p, c, k) in enumerate(zip(points, canon, keys, strict=True)):
            if k not in self.point:
                self.point[k], self.canon[k], self.index[k] = p, c, i
        self.rows: dict[str, dict[str, Any]] = {}

    def where(self, key: str) -> str:
        return f"point {self.index[key]} {_describe(self.canon[key])}"

    def store(self, key: str, row: Any) -> None:
        """Check, complete and cache one finished row."""
        if not isinstance(row, Mapping):
            raise PmsimError(f"{self.label}: {self.name} returned a {type(row).__name__} for "
                             f"{self.where(key)}; a point function returns a dict (one row)")
        try:
            out = _plain(row, "")
        except _NotPlain as e:
            raise PmsimError(f"{self.label}: in the row of {self.where(key)}, {e.explain()}; "
                             f"make {self.name} return str, int, float, bool, None, lists and "
                             "dicts with str keys") from None
        canon = self.canon[key]
        out.setdefault("version", _version())
        for field in ("seed", "config"):
            if field not in out and field in canon:
                out[field] = copy.deepcopy(canon[field])
        if self.cache_dir is not None:
            _write_atomic(self.cache_dir / f"{key}.json", {
                "key": key, "fn": self.name, "version": _version(), "point": canon,
                "seed": out.get("seed", canon.get("seed")), "row": out,
                "row_sha256": _row_digest(out)})
        self.rows[key] = out
        self.bar.update(1)

    def failed(self, key: str, exc: BaseException) -> BaseException:
        """What to raise for a point whose result is an exception."""
        if isinstance(exc, BrokenProcessPool):
            err = PmsimError(f"{self.label}: a worker process of the executor passed in died "
                             f"while running {self.where(key)}, and such a pool cannot be "
                             "rebuilt; run with executor=None (local processes, rebuilt and "
                             "retried) or 'serial' to see why")
            err.__cause__ = exc
            return err
        exc.add_note(f"{self.label}: raised by {self.name} on {self.where(key)}")
        return exc

    def run_serial(self, pending: list[str]) -> None:
        for key in pending:
            try:
                row = self.fn(dict(self.point[key]))
            except Exception as e:
                raise self.failed(key, e) from None
            self.store(key, row)

    def run_pool(self, pool: _LocalPool | _ExecutorPool, pending: list[str], retries: int) -> None:
        """Keep the pool busy; when a local pool breaks, rebuild it and resubmit the points that
        were in flight (see :meth:`charge`). Points that kill their worker with no retry left
        (here, or Dask's KilledWorker) are reported together once everything else finished."""
        local = isinstance(pool, _LocalPool)
        todo, last = deque(pending), deque[str]()
        deaths: dict[str, int] = {}
        convicted: list[str] = []
        running: dict[Future[Any], str] = {}
        try:
            while todo or last or running:
                broken = False
                queue, limit = (todo, pool.window) if todo else (last, 1)
                while queue and (limit is None or len(running) < limit):
                    key = queue.popleft()
                    try:
                        running[pool.submit(dict(self.point[key]))] = key
                    except BrokenProcessPool as e:
                        if not local:
                            raise self.failed(key, e) from None
                        queue.appendleft(key)
                        broken = True
                        break
                done: set[Future[Any]] = set()
                while running and not done:  # wakes to notice a Ctrl-C whose exception was lost
                    done, _ = wait(running, timeout=WAKE_S, return_when=FIRST_COMPLETED)
                    raise_pending()
                if running:
                    if broken or any(isinstance(_outcome(f), BrokenProcessPool) for f in done):
                        broken = True
                        done, _ = wait(running)  # the rest of a broken pool fails with it
                suspects, error = [], None
                for f in sorted(done, key=lambda f: self.index[running[f]]):
                    key = running.pop(f)
                    exc = _outcome(f)
                    if exc is None:
                        self.store(key, f.result())
                    elif isinstance(exc, BrokenProcessPool) and local:
                        suspects.append(key)
                    elif type(exc).__name__ == "KilledWorker":
                        convicted.append(key)
                    elif error is None:
                        error = self.failed(key, exc)
                if error is not None:
                    raise error
                if broken and isinstance(pool, _LocalPool):
                    for key in suspects:
                        if self.charge(key, deaths, retries, alone=len(suspects) == 1):
                            convicted.append(key)
                        elif deaths[key] >= retries:
                            last.append(key)
                    todo.extendleft(reversed([k for k in suspects if deaths[k] < retries]))
                    pool.rebuild()
        except BaseException:
            for f in running:
                f.cancel()
            raise
        if convicted:
            raise PmsimError(
                f"{self.label}: {'; '.join(self.where(k) for k in sorted(convicted, key=self.index.get))}"
                f" crashed its worker process (a segfault, os._exit, out of memory?) with no "
                f"retry left (retries={retries}); the other points finished. Run it alone with "
                "executor='serial' to see why.")

    @staticmethod
    def charge(key: str, deaths: dict[str, int], retries: int, alone: bool) -> bool:
        """Count a worker death against a point that was in flight; True if that convicts it.

        Every point in flight loses its worker, but only a point that was alone in the pool
        is known to have killed it: a death beside others counts only up to ``retries``, and
        a point with no retry left runs alone, after all the others."""
        deaths[key] = deaths.get(key, 0) + 1
        if not alone:
            deaths[key] = min(deaths[key], retries)
        return deaths[key] > retries


def _outcome(f: Future[Any]) -> BaseException | None:
    """The exception of a finished future (a CancelledError if it was cancelled), or None."""
    if f.cancelled():
        return CancelledError("the executor cancelled this point")
    return f.exception()


def run_sweep(fn: PointFn, points: Sequence[Mapping[str, Any]], *,
              executor: str | Executor | None = None, jobs: int | None = None,
              cache: str | Path | None = None, progress: bool | None = None, retries: int = 2,
              label: str = "sweep") -> list[dict[str, Any]]:
    """Run fn(point) for every point; rows in point order.

    ``fn`` is a module-level function taking a dict and returning a dict of JSON values (a
    row); points are mappings of JSON values, MachineConfig and other dataclasses. Each row
    carries ``version`` (added if missing), and ``seed`` and ``config`` from the point when
    the row lacks them. See the module docstring for executors, the cache, retries and
    interrupts. Duplicate points run once."""
    from ..progress import Progress

    name = _fn_name(fn)
    try:
        pickle.dumps(fn)
    except (pickle.PicklingError, AttributeError, TypeError) as e:
        raise ConfigError(f"sweep function {name} cannot be pickled ({e}); define it at the top "
                          "level of an importable module (not a lambda, closure or method)") from None
    if isinstance(points, str | bytes | Mapping) or not isinstance(points, Iterable):
        raise ConfigError(f"points must be a sequence of mappings (one dict per point), got a "
                          f"{type(points).__name__}")
    given = list(points)
    canon = [_canonical_point(p, f"point {i}") for i, p in enumerate(given)]
    for i, p in enumerate(given):
        try:
            pickle.dumps(dict(p))
        except Exception as e:
            raise ConfigError(f"point {i} cannot be pickled ({e}); use plain values and "
                              "module-level dataclasses") from None
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigError(f"retries={retries!r}: use an integer >= 0 (re-runs of a point whose "
                          "worker died)")
    check_jobs(jobs)
    spec = _executor_spec(executor, jobs)
    code = code_fingerprint(name.split(":")[0])
    keys = [_point_key(name, c, code) for c in canon]
    cache_dir = _cache_dir(cache, name) if cache is not None else None
    with Progress(len(set(keys)), label, "pt", enabled=progress) as bar:
        sw = _Sweep(fn, name, label, [dict(p) for p in given], canon, keys, cache_dir, bar)
        pending = []
        bad: list[tuple[Path, str]] = []
        for key in sw.point:
            row, why = _load_cached(cache_dir / f"{key}.json", key) if cache_dir else (None, "")
            if why and cache_dir is not None:
                bad.append((cache_dir / f"{key}.json", why))
            if row is None:
                pending.append(key)
            else:
                sw.rows[key] = row
                bar.update(1)
        if cache_dir is not None:
            _report_cache(cache_dir, bad, bar.write)
        if pending:
            _run(sw, spec, executor, pending, jobs, retries)
    return [copy.deepcopy(sw.rows[k]) for k in keys]


def _executor_spec(executor: str | Executor | None, jobs: int | None) -> ExecutorSpec | None:
    """The parsed executor string (None for an Executor instance), checked against ``jobs``."""
    if executor is None:
        return ExecutorSpec("local")
    if isinstance(executor, str):
        spec = parse_executor(executor)
    elif isinstance(executor, Executor) or (
            (client := _dask_client_type()) is not None and isinstance(executor, client)):
        spec = None
    else:
        raise ConfigError(f"executor {executor!r}: expected {_EXECUTOR_FORMS}")
    if jobs is not None and (spec is None or (spec.kind == "dask" and spec.address != "local")):
        raise ConfigError(f"jobs={jobs} cannot size executor {str(spec or executor)!r}, which has "
                          "its own workers; drop jobs or use local processes / dask:local")
    return spec


def _run(sw: _Sweep, spec: ExecutorSpec | None, executor: Any, pending: list[str],
         jobs: int | None, retries: int) -> None:
    workers = min(jobs or os.cpu_count() or 1, len(pending))
    if spec is not None and spec.kind == "serial":
        sw.run_serial(pending)
        return
    pool: _LocalPool | _ExecutorPool
    if spec is None:
        client = _dask_client_type()
        ex = executor.get_executor() if client is not None and isinstance(executor, client) \
            else executor
        dask_ex = _dask_executor_type()
        kwargs = {"retries": retries, "pure": False} \
            if dask_ex is not None and isinstance(ex, dask_ex) else {}
        pool = _ExecutorPool(sw.fn, ex, kwargs)
    elif spec.kind == "dask":
        pool = _open_dask(spec, sw.fn, workers, retries)
    else:
        pool = _LocalPool(sw.fn, workers)
    ok = False
    try:
        with catching():
            sw.run_pool(pool, pending, retries)
        ok = True
    finally:
        pool.close(abort=not ok)


# -- command line --------------------------------------------------------------------------------

def add_sweep_args(p: argparse.ArgumentParser) -> None:
    """``--jobs``, ``--dask``, ``--cache`` and ``--no-progress`` for a command that sweeps."""
    from ..options import MAX_JOBS, jobs_arg
    from ..progress import add_progress_arg

    g = p.add_argument_group("sweep")
    g.add_argument("--jobs", type=jobs_arg, metavar="N",
                   help=f"worker processes, local or of --dask local (1..{MAX_JOBS}; default: one "
                        "per CPU)")
    g.add_argument("--dask", metavar="ADDRESS|local",
                   help="run the points on Dask: 'local' starts a cluster on this machine, "
                        "tcp://HOST:PORT uses a running scheduler")
    g.add_argument("--cache", metavar="DIR",
                   help="keep each finished point in DIR; a rerun computes only the missing ones "
                        "(and all of them after a change to pmsim's code)")
    add_progress_arg(g)


def sweep_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`run_sweep` that :func:`add_sweep_args` options give."""
    executor = None
    dask = getattr(args, "dask", None)
    jobs = getattr(args, "jobs", None)
    if dask is not None:
        text = dask.strip()
        spec = parse_executor(text if text.lower().startswith("dask:") else f"dask:{text}")
        executor = str(spec)
        if jobs is not None and spec.address != "local":
            raise ConfigError(f"--jobs {jobs} with --dask {dask}: a running Dask cluster has its "
                              "own workers; drop --jobs (it sizes local runs and --dask local)")
    return {"executor": executor, "jobs": jobs, "cache": getattr(args, "cache", None),
            "progress": False if getattr(args, "no_progress", False) else None}


def to_frame(rows: Iterable[Mapping[str, Any]]) -> Any:
    """The rows as a pandas DataFrame when pandas is installed, else as a list of dicts that
    all have the same columns (in order of first appearance; missing cells None)."""
    rows = list(rows)
    try:
        import pandas as pd
    except ImportError:
        columns: dict[str, None] = {}
        for r in rows:
            columns.update(dict.fromkeys(r))
        return [{c: r.get(c) for c in columns} for r in rows]
    return pd.DataFrame([dict(r) for r in rows])
