"""run_sweep: the same rows on every executor, a cache that resumes, worker deaths retried,
interrupts that leave no orphans, and clear errors for bad specs."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pmsim
from pmsim import preset
from pmsim.errors import ConfigError, PmsimError
from pmsim.experiments import sweep
from pmsim.experiments.sweep import (
    add_sweep_args,
    parse_executor,
    point_key,
    run_sweep,
    sweep_options,
    to_frame,
    without_wall_clock,
)

from .sweep_points import calls, not_a_row, work

ROOT = Path(__file__).resolve().parents[2]


def simple(d: Path, n: int, extra: dict[int, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Points ``i = 0..n-1`` of ``work`` that record their calls in ``d``; ``extra[i]`` adds
    options to point ``i``."""
    return [{"i": i, "calls": str(d), **(extra or {}).get(i, {})} for i in range(n)]


def cached_points(cache: Path) -> set[int]:
    """The ``i`` of every point in the cache of ``work``."""
    files = (cache / f"{work.__module__}.work").glob("*.json")
    return {json.loads(f.read_text())["point"]["i"] for f in files}


def called(d: Path, n: int) -> list[int]:
    return [calls(d, i) for i in range(n)]


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A real Dask cluster: two single-threaded worker processes."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as c:
        yield c


# -- same rows everywhere -------------------------------------------------------------------------

def experiment_points() -> list[dict[str, Any]]:
    out = []
    for i, (rt, dom) in enumerate([("undo", "pdom0"), ("redo", "pdom1"), ("cow", "pdom2"),
                                   ("redo", "pdom0")]):
        cfg = preset(f"marathe-{dom}").replace(cores=1, seed=10 + i)
        out.append({"i": i, "runtime": rt, "config": cfg, "seed": 10 + i})
    return out


def test_every_executor_gives_the_same_rows(cluster: Any) -> None:
    from distributed import Client

    pts = experiment_points()
    serial = run_sweep(work, pts, executor="serial")
    assert [(r["i"], r["runtime"]) for r in serial] == [(0, "undo"), (1, "redo"), (2, "cow"),
                                                        (3, "redo")]
    for r, p in zip(serial, pts, strict=True):
        assert r["config"] == p["config"].to_dict() and r["seed"] == p["seed"]
        assert r["version"] == pmsim.__version__ and r["commits"] > 0
    expected = without_wall_clock(serial)
    assert without_wall_clock(run_sweep(work, pts, jobs=2)) == expected
    assert without_wall_clock(run_sweep(work, pts, executor=f"dask:{cluster.scheduler_address}")) \
        == expected
    with Client(cluster, set_as_default=False) as client:
        rows = run_sweep(work, pts, executor=client.get_executor())
    assert without_wall_clock(rows) == expected


def test_an_executor_passed_in_is_used_and_left_open(tmp_path: Path) -> None:
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    pts = simple(tmp_path, 3)
    with ThreadPoolExecutor(2) as ex:
        assert run_sweep(work, pts, executor=ex) == run_sweep(work, pts, executor="serial")
        assert ex.submit(abs, -1).result() == 1
    with ProcessPoolExecutor(1) as ex, pytest.raises(PmsimError, match="point 1 .*cannot be "
                                                                      "rebuilt"):
        run_sweep(work, simple(tmp_path, 2, {1: {"die": "once"}}), executor=ex)


def test_dask_local_starts_and_closes_its_cluster(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    pts = simple(tmp_path, 3)
    rows = run_sweep(work, pts, executor="dask:local", jobs=1)
    pid = int((tmp_path / "pid-0").read_text())
    assert pid != os.getpid()
    assert rows == run_sweep(work, pts, executor="serial")
    assert_gone({pid})


def test_rows_carry_version_seed_and_config_from_the_point(tmp_path: Path) -> None:
    cfg = preset("eadr")
    rows = run_sweep(work, [{"i": 2, "seed": 7, "config": cfg}], executor="serial")
    assert rows == [{"i": 2, "square": 4, "version": pmsim.__version__, "seed": 7,
                     "config": cfg.to_dict()}]


def test_duplicate_points_run_once_and_rows_are_not_shared(tmp_path: Path) -> None:
    pts = simple(tmp_path, 2)
    rows = run_sweep(work, [pts[1], pts[0], pts[1]], executor="serial")
    assert called(tmp_path, 2) == [1, 1]
    assert rows[0] == rows[2] and rows[0]["i"] == 1
    rows[0]["square"] = -1
    assert rows[2]["square"] == 1


# -- the cache ----------------------------------------------------------------------------------------

def test_point_key_is_canonical() -> None:
    cfg = preset("optane-adr")
    k = point_key(work, {"config": cfg, "n": 3, "xs": (1, 2)})
    assert len(k) == 64
    assert k == point_key(work, {"xs": [1, 2], "n": np.int64(3), "config": cfg.to_dict()})
    assert k != point_key(work, {"config": cfg.replace(seed=1), "n": 3, "xs": (1, 2)})
    assert k != point_key(not_a_row, {"config": cfg, "n": 3, "xs": (1, 2)})


def test_point_key_changes_with_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    k = point_key(work, {"i": 1})
    monkeypatch.setattr(pmsim, "__version__", "99.0")
    assert point_key(work, {"i": 1}) != k


def test_point_key_changes_with_pmsims_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache never hands back rows computed by other code: the key digests the sources."""
    k = point_key(work, {"i": 1})
    assert point_key(work, {"i": 1}) == k
    ident = sweep.point_identity(work, {"i": 1})
    monkeypatch.setattr(sweep, "_tree_digest", lambda root: "edited " + root)
    assert point_key(work, {"i": 1}) != k
    assert sweep.point_identity(work, {"i": 1}) == ident  # names in saved results stay valid


def test_point_key_changes_with_the_point_functions_module(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A researcher's own point function, edited, is recomputed too."""
    src = tmp_path / "my_points.py"
    src.write_text("def f(point):\n    return {'x': 1}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import my_points  # type: ignore[import-not-found]

    k = point_key(my_points.f, {"i": 1})
    src.write_text("def f(point):\n    return {'x': 2}\n")
    assert point_key(my_points.f, {"i": 1}) != k
    monkeypatch.delitem(sys.modules, "my_points")


def test_cache_files_hold_row_point_key_version_and_seed(tmp_path: Path) -> None:
    d, cache = tmp_path / "calls", tmp_path / "cache"
    d.mkdir()
    pts = simple(d, 3, {1: {"seed": 5}})
    rows = run_sweep(work, pts, executor="serial", cache=cache)
    files = sorted((cache / f"{work.__module__}.work").iterdir())
    assert len(files) == 3 and all(f.suffix == ".json" for f in files)  # no temporary files
    docs = {json.loads(f.read_text())["point"]["i"]: json.loads(f.read_text()) for f in files}
    assert docs[1]["key"] == point_key(work, pts[1])
    assert (cache / f"{work.__module__}.work" / f"{docs[1]['key']}.json").exists()
    assert docs[1]["seed"] == 5 and docs[0]["seed"] is None
    assert docs[1]["version"] == pmsim.__version__ and docs[1]["fn"].endswith(":work")
    assert [docs[i]["row"] for i in range(3)] == rows
    assert run_sweep(work, pts, jobs=2, cache=cache) == rows
    assert called(d, 3) == [1, 1, 1]


def test_a_corrupt_cache_file_is_recomputed(tmp_path: Path) -> None:
    d, cache = tmp_path / "calls", tmp_path / "cache"
    d.mkdir()
    pts = simple(d, 2)
    rows = run_sweep(work, pts, executor="serial", cache=cache)
    bad = cache / f"{work.__module__}.work" / f"{point_key(work, pts[1])}.json"
    bad.write_text('{"key": "tru')
    assert run_sweep(work, pts, executor="serial", cache=cache) == rows
    assert called(d, 2) == [1, 2]
    assert json.loads(bad.read_text())["row"] == rows[1]


@pytest.mark.parametrize("executor", ["serial", "local"])
def test_an_interrupted_sweep_resumes_from_the_cache(tmp_path: Path, executor: str) -> None:
    d, cache = tmp_path / "calls", tmp_path / "cache"
    d.mkdir()
    pts = simple(d, 6, {3: {"interrupt": True}})
    with pytest.raises(KeyboardInterrupt):
        run_sweep(work, pts, executor=executor, jobs=2, cache=cache)
    first = called(d, 6)
    done = cached_points(cache)
    assert 3 not in done
    if executor == "serial":
        assert done == {0, 1, 2}
    rows = run_sweep(work, pts, executor=executor, jobs=2, cache=cache)
    again = [n - m for n, m in zip(called(d, 6), first, strict=True)]
    assert [i for i in range(6) if again[i]] == sorted(set(range(6)) - done)
    assert rows == run_sweep(work, pts, executor="serial")


SCRIPT = """\
import json, signal, sys
from pmsim.experiments.sweep import run_sweep
from tests.experiments.sweep_points import work
if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    run_sweep(work, json.loads(sys.argv[1]), jobs=2, cache=sys.argv[2])
"""
"""The sweep as a terminal's foreground job runs it: with Python's Ctrl-C handler even when the
suite itself runs as a background job of a shell without job control, whose children start
with SIGINT ignored (and a sweep started so rightly keeps ignoring it)."""


def start_sweep(d: Path, cache: Path, pts: list[dict[str, Any]]) -> tuple[subprocess.Popen[bytes],
                                                                          set[int]]:
    """A sweep in a child process (its own process group; stderr to ``d/stderr``), once points
    0 and 1 are cached and both workers run points 2 and 3 (which sleep): the process and the
    worker pids."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with open(d / "stderr", "wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", SCRIPT, json.dumps(pts), str(cache)],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
    deadline = time.monotonic() + 600  # a bound for hangs only: a loaded machine is slow
    while not (cached_points(cache) == {0, 1} and (d / "pid-2").exists()
               and (d / "pid-3").exists()):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            proc.wait()
            raise AssertionError(f"the sweep did not start: {(d / 'stderr').read_text()}")
        time.sleep(0.05)
    return proc, {int((d / f"pid-{i}").read_text()) for i in (2, 3)}


def assert_gone(workers: set[int]) -> None:
    """Every worker ends (within a bound for hangs only, generous for a loaded machine);
    survivors are killed, then reported."""
    deadline = time.monotonic() + 120
    while any(alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    orphans = [p for p in workers if alive(p)]
    for p in orphans:
        os.kill(p, signal.SIGKILL)
    assert not orphans, "orphaned worker processes"


def test_sigint_stops_the_workers_and_keeps_finished_points(tmp_path: Path) -> None:
    d, cache = tmp_path / "calls", tmp_path / "cache"
    d.mkdir()
    pts = simple(d, 6, {i: {"sleep": 60} for i in range(2, 6)})
    proc, workers = start_sweep(d, cache, pts)
    os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C in a terminal: the parent and its workers
    try:
        proc.wait(timeout=600)  # a bound for hangs only; a busy machine is slow
    finally:
        proc.kill()
        proc.wait()
        assert_gone(workers)
    assert proc.returncode != 0 and "KeyboardInterrupt" in (d / "stderr").read_text()
    (d / "fast").touch()
    before = called(d, 6)
    rows = run_sweep(work, pts, jobs=2, cache=cache)
    assert [n - m for n, m in zip(called(d, 6), before, strict=True)] == [0, 0, 1, 1, 1, 1]
    assert rows == [{"i": i, "square": i * i, "version": pmsim.__version__} for i in range(6)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux")
def test_workers_die_with_a_killed_parent(tmp_path: Path) -> None:
    d, cache = tmp_path / "calls", tmp_path / "cache"
    d.mkdir()
    proc, workers = start_sweep(d, cache, simple(d, 4, {i: {"sleep": 60} for i in (2, 3)}))
    proc.kill()
    proc.wait()
    assert_gone(workers)


# -- worker deaths ------------------------------------------------------------------------------------

def test_a_killed_local_worker_costs_a_retry_not_a_result(tmp_path: Path) -> None:
    pts = simple(tmp_path, 6, {1: {"die": "once"}, 4: {"die": "once"}})
    # retries=2: point 4 may be in flight (submitted, not started) when point 1 kills the pool,
    # which costs it a retry by design; with retries=1 its own death would then convict it
    rows = run_sweep(work, pts, jobs=2, retries=2)
    assert [r["square"] for r in rows] == [i * i for i in range(6)]
    assert calls(tmp_path, 1) == calls(tmp_path, 4) == 2


def test_a_killed_dask_worker_costs_a_retry_not_a_result(tmp_path: Path, cluster: Any) -> None:
    pts = simple(tmp_path, 4, {2: {"die": "once"}})
    rows = run_sweep(work, pts, executor=f"dask:{cluster.scheduler_address}")
    assert [r["square"] for r in rows] == [0, 1, 4, 9]
    assert calls(tmp_path, 2) == 2


def test_dask_retries_a_point_that_raised(tmp_path: Path, cluster: Any) -> None:
    pts = simple(tmp_path, 2, {1: {"fail": "once"}})
    assert run_sweep(work, pts, executor=f"dask:{cluster.scheduler_address}", retries=1)[1] \
        == {"i": 1, "square": 1, "version": pmsim.__version__}
    assert calls(tmp_path, 1) == 2


def test_a_point_that_always_kills_its_worker_is_named_after_the_others(tmp_path: Path) -> None:
    d, cache = tmp_path / "calls", tmp_path / "cache"
    d.mkdir()
    # point 2 dies while point 3 is in flight beside it, so both lose their worker and neither
    # is charged; 4..7 still queue. Point 2 then runs alone, last, and dies again.
    slow = {i: {"sleep": 0.3} for i in range(3, 8)}
    pts = simple(d, 8, {**slow, 2: {"die": "always", "sleep": 0.1}})
    with pytest.raises(PmsimError, match=r"point 2 .* crashed its worker process .* with no "
                                         r"retry left \(retries=0\); the other points") as e:
        run_sweep(work, pts, jobs=2, retries=0, cache=cache)
    assert "point 3 " not in str(e.value)
    assert cached_points(cache) == {0, 1, 3, 4, 5, 6, 7}
    assert calls(d, 2) == 2


def test_dask_local_gives_up_after_retries_and_names_the_point(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    pts = simple(tmp_path, 1, {0: {"die": "always"}})
    with pytest.raises(PmsimError, match=r"point 0 .* crashed its worker process .* no retry "
                                         r"left \(retries=0\)"):
        run_sweep(work, pts, executor="dask:local", jobs=1, retries=0)
    assert calls(tmp_path, 0) == 1


# -- errors of the point function ---------------------------------------------------------------

@pytest.mark.parametrize("executor", ["serial", "local"])
def test_an_exception_in_a_point_is_reraised_naming_it(tmp_path: Path, executor: str) -> None:
    pts = simple(tmp_path, 3, {1: {"fail": True}})
    with pytest.raises(ValueError, match="fails on purpose") as e:
        run_sweep(work, pts, executor=executor, jobs=1, retries=3)
    assert any("point 1 " in n for n in e.value.__notes__)
    assert calls(tmp_path, 1) == 1


def test_a_point_function_must_return_a_dict(tmp_path: Path) -> None:
    with pytest.raises(PmsimError, match="returned a list for point 0.*returns a dict"):
        run_sweep(not_a_row, [{"i": 0}], executor="serial")


def test_an_unreachable_scheduler_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setattr(sweep, "DASK_CONNECT_TIMEOUT_S", 0.5)
    with pytest.raises(PmsimError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        run_sweep(work, [{"i": 0}], executor="dask:tcp://127.0.0.1:9")


# -- bad specs --------------------------------------------------------------------------------------

def nested_fn() -> Any:
    def inner(point: dict[str, Any]) -> dict[str, Any]:
        return {}
    return inner


@pytest.mark.parametrize("change,msg", [
    ({"executor": "threads"}, "unknown executor 'threads'"),
    ({"executor": "dask"}, "say which Dask cluster"),
    ({"executor": "dask:tcp://10.0.0.5"}, "HOST:PORT with a port"),
    ({"executor": "dask:tcp://10.0.0.5:99999"}, "HOST:PORT with a port"),
    ({"executor": "dask:udp://10.0.0.5:8786"}, "unknown transport 'udp'"),
    ({"executor": "tcp://10.0.0.5:8786"}, "needs the 'dask:' prefix"),
    ({"executor": 3}, "expected 'serial'"),
    ({"jobs": 0}, "jobs=0: use at least 1"),
    ({"jobs": 2, "executor": "dask:tcp://10.0.0.5:8786"}, "has its own workers"),
    ({"retries": -1}, "retries=-1"),
    ({"points": [7]}, "point 1 = 7 is not a mapping"),
    ({"points": {"i": 1}}, "sequence of mappings"),
    ({"points": [{"i": 1, "when": object()}]}, r"point 1: when = <object.*no JSON form"),
    ({"points": [{"i": 1, "xs": {2: 3}}]}, "point 1: key 2 of xs is not a string"),
    ({"fn": lambda p: p}, "cannot be pickled"),
    ({"fn": nested_fn()}, "cannot be pickled"),
    ({"cache": "FILE"}, "is a file; give a directory"),
])
def test_bad_specs_fail_before_any_work(tmp_path: Path, change: dict[str, Any], msg: str) -> None:
    kwargs: dict[str, Any] = {"executor": "serial", **change}
    fn, points = kwargs.pop("fn", work), kwargs.pop("points", [])
    if kwargs.get("cache") == "FILE":
        kwargs["cache"] = tmp_path / "file"
        kwargs["cache"].write_text("")
    first = {"i": 0, "calls": str(tmp_path)}
    points = [first, *points] if isinstance(points, list) else points
    with pytest.raises(ConfigError, match=msg):
        run_sweep(fn, points, **kwargs)
    assert calls(tmp_path, 0) == 0


def test_parse_executor_accepts_the_documented_forms() -> None:
    assert (parse_executor("serial").kind, parse_executor(" Local ").kind) == ("serial", "local")
    assert str(parse_executor("dask:local")) == "dask:local"
    assert parse_executor("dask:10.0.0.5:8786").address == "tcp://10.0.0.5:8786"
    assert str(parse_executor("dask:tls://sched.lab:8786")) == "dask:tls://sched.lab:8786"


# -- command line, progress, tables ------------------------------------------------------------------

def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_sweep_args(p)
    return p.parse_args(argv)


def test_sweep_args_give_run_sweep_options(tmp_path: Path) -> None:
    assert sweep_options(parse([])) == {"executor": None, "jobs": None, "cache": None,
                                        "progress": None}
    opts = sweep_options(parse(["--jobs", "3", "--dask", "local", "--cache", str(tmp_path),
                                "--no-progress"]))
    assert opts == {"executor": "dask:local", "jobs": 3, "cache": str(tmp_path),
                    "progress": False}
    assert sweep_options(parse(["--dask", "tcp://h:8786"]))["executor"] == "dask:tcp://h:8786"
    with pytest.raises(ConfigError, match="HOST:PORT"):
        sweep_options(parse(["--dask", "tcp://h"]))
    with pytest.raises(ConfigError, match="drop --jobs"):
        sweep_options(parse(["--dask", "h:8786", "--jobs", "2"]))
    with pytest.raises(SystemExit):
        parse(["--jobs", "0"])


def test_progress_bar_only_on_a_terminal_or_on_request(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def shown(**kw: Any) -> bool:
        run_sweep(work, simple(tmp_path, 3), executor="serial", label="my-sweep", **kw)
        err = capsys.readouterr().err
        return "my-sweep" in err and "3/3" in err

    assert shown(progress=True)
    assert not shown() and not shown(progress=False)  # captured stderr is not a terminal
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert shown() and not shown(progress=False)


def test_to_frame_is_a_tidy_table(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [{"a": 1}, {"b": 2, "a": 3}]
    monkeypatch.setitem(sys.modules, "pandas", None)
    assert to_frame(rows) == [{"a": 1, "b": None}, {"a": 3, "b": 2}]
    fake = types.ModuleType("pandas")
    fake.DataFrame = lambda data: ("frame", data)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pandas", fake)
    assert to_frame(iter(rows)) == ("frame", rows)
