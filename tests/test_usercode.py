"""User code by import path: 'file.py:Class' and 'module:Class' wherever a name is taken."""

from __future__ import annotations

import multiprocessing
import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from pmsim.errors import ConfigError, UnknownNameError
from pmsim.runtimes import Mutant, RedoRuntime, get_mutant, get_runtime
from pmsim.usercode import display_name, import_path, is_import_path, module_name_for
from pmsim.workloads import get_workload
from pmsim.workloads.kv import KV

USER = '''
from pmsim.runtimes import Mutant, RedoRuntime, drop
from pmsim.workloads.kv import KV

LOADS = globals().get("LOADS", 0) + 1


class SmallKV(KV):
    name = "small-kv"
    fuzz_params = {"buckets": 2, "keys": 4}


class MyRedo(RedoRuntime):
    name = "my-redo"


no_pb2 = Mutant("redo:user-no-pb2", "redo", [drop("redo.commit.pb2")], domains=("pdom0", "pdom1"))
NOT_A_CLASS = 3
'''


def write(tmp_path: Path, name: str, code: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    return str(path)


def test_a_file_path_names_workloads_runtimes_and_mutants(tmp_path: Path) -> None:
    f = write(tmp_path, "user.py", USER)
    wl = get_workload(f"{f}:SmallKV")
    assert issubclass(wl, KV) and wl.name == "small-kv"
    rt = get_runtime(f"{f}:MyRedo")
    assert issubclass(rt, RedoRuntime)
    m = get_mutant(f"{f}:no_pb2")
    assert isinstance(m, Mutant) and m.name == "redo:user-no-pb2"
    built = get_runtime(f"{f}:no_pb2")  # a runtime path may name a Mutant: it is built
    assert issubclass(built, RedoRuntime) and built.mutations
    # loaded once per process, under a stable module name: the same objects every time
    assert get_workload(f"{f}:SmallKV") is wl and get_runtime(f"{f}:no_pb2") is built
    mod = sys.modules[module_name_for(Path(f))]
    assert mod.LOADS == 1 and wl.__module__ == mod.__name__


def test_a_module_path_names_classes() -> None:
    assert get_workload("pmsim.workloads.kv:KV") is KV
    assert get_runtime("pmsim.runtimes.marathe.redo:RedoRuntime") is RedoRuntime


def test_registered_names_win_over_paths() -> None:
    assert get_runtime("undo:U1").name == "undo:U1"
    with pytest.raises(UnknownNameError, match="Did you mean 'undo:U1'.*no module 'undo'"):
        get_runtime("undo:U19")


@pytest.mark.parametrize("code,spec,match", [
    (USER, "{f}:Nope", r"has no attribute 'Nope'; it defines MyRedo, SmallKV"),
    (USER, "{f}:MyRedo", r"not a workload: name a subclass of pmsim.workloads.Workload"),
    (USER, "{f}:NOT_A_CLASS", r"is 3, not a workload"),
    ("def broken(:\n    pass\n", "{f}:X", r"syntax error at line 1"),
    ("x = 1\nraise RuntimeError('no database')\n", "{f}:X",
     r"importing it raised RuntimeError: no database \(line 2\)"),
    (USER, "{f}", r"name the workload after a colon, e.g. '.*user.py:SmallKV'"),
])
def test_bad_workload_paths_are_clear_config_errors(tmp_path: Path, code: str, spec: str,
                                                    match: str) -> None:
    f = write(tmp_path, "user.py", code)
    with pytest.raises(ConfigError, match=match):
        get_workload(spec.format(f=f))


def test_a_missing_file_and_wrong_kinds(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="missing.py: no such file"):
        get_workload("missing.py:Stack")
    f = write(tmp_path, "user.py", USER)
    with pytest.raises(ConfigError, match="not a runtime"):
        get_runtime(f"{f}:SmallKV")
    with pytest.raises(ConfigError, match="not a mutant"):
        get_mutant(f"{f}:MyRedo")
    with pytest.raises(ConfigError, match="is a KV instance; name its class"):
        get_workload(write(tmp_path, "inst.py", "from pmsim.workloads.kv import KV\nwl = KV()\n")
                     + ":wl")


def test_import_path_finds_user_classes_back(tmp_path: Path) -> None:
    f = write(tmp_path, "user.py", USER)
    assert import_path(get_workload(f"{f}:SmallKV")) == (f"{f}:SmallKV", "")
    assert import_path(get_runtime(f"{f}:no_pb2")) == (f"{f}:no_pb2", "")
    assert import_path(KV) == ("pmsim.workloads.kv:KV", "")

    class Local(KV):
        pass

    path, why = import_path(Local)
    assert path is None and "inside a function" in why
    main = type("Nb", (KV,), {"__module__": "__main__"})
    path, why = import_path(main)
    assert path is None and "__main__" in why
    built = get_mutant("redo:R2").build()
    assert import_path(built)[0] is None and "built at run time" in import_path(built)[1]
    assert display_name("kv") == "kv" and display_name(KV) == "pmsim.workloads.kv:KV"


def test_is_import_path() -> None:
    assert is_import_path("a/b.py:Cls") and is_import_path("pkg.mod:Outer.Inner")
    assert not is_import_path("kv") and not is_import_path("C:\\x.py") and not is_import_path(":X")


def _resolve(spec: str) -> tuple[str, str]:
    cls = get_workload(spec)
    return cls.__module__, cls.name


def test_a_fresh_process_resolves_the_same_path_to_the_same_module(tmp_path: Path) -> None:
    f = write(tmp_path, "user.py", USER)
    here = _resolve(f"{f}:SmallKV")
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as ex:
        there = ex.submit(_resolve, f"{f}:SmallKV").result(timeout=120)
    assert there == here
