"""A workload as a name, a class, an instance or a factory: the same rules at every entry point."""

from __future__ import annotations

import pytest

from crashfuzz.campaign import FUZZ_PARAMS
from pmsim import watchdog
from pmsim.errors import ConfigError, PmsimError, UnknownNameError
from pmsim.runtimes.registry import get_runtime
from pmsim.workloads import Session, Workload
from pmsim.workloads.array import Array, ArrayRAW
from pmsim.workloads.base import build_workload, fuzz_defaults, non_default_params, reference
from pmsim.workloads.empty import Empty
from pmsim.workloads.kv import KV


class MyArray(Array):
    """Unregistered subclass: inherits Array's fuzzing defaults."""


class Tiny(KV):
    fuzz_params = {"buckets": 2, "keys": 3, "nosuch": 1}


class Bare(Workload):
    name = "bare"


def test_names_and_classes_build_the_same_workload() -> None:
    a = build_workload("kv", threads=2, seed=3, txs=5, params={"keys": 8})
    b = build_workload(KV, threads=2, seed=3, txs=5, params={"keys": 8})
    assert type(a) is type(b) is KV and a.p == b.p and (a.threads, a.seed, a.txs) == (2, 3, 5)


def test_unknown_parameters_are_rejected_with_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match="Known kv parameters: buckets, get_ns, get_pct, keys"):
        build_workload(KV, params={"key": 8})
    with pytest.raises(UnknownNameError, match="unknown kv parameter 'key'"):
        build_workload(KV(keys=8), params={"key": 8})  # an instance too: not ignored
    with pytest.raises(ConfigError, match="takes no parameters, got size=1"):
        build_workload(Bare, params={"size": 1})


def test_an_instance_is_used_as_built_and_params_must_agree() -> None:
    wl = KV(keys=8, buckets=2)
    assert build_workload(wl) is wl
    assert build_workload(wl, params={"keys": 8}) is wl
    with pytest.raises(ConfigError, match=r"keys=9 \(the instance has 8\)"):
        build_workload(wl, params={"keys": 9})
    with pytest.raises(ConfigError, match="built for 1 thread.*the run has 2"):
        build_workload(wl, threads=2)


def test_a_factory_is_called_like_a_class() -> None:
    wl = build_workload(lambda **kw: KV(**kw, keys=5), threads=1, seed=2)
    assert wl.p.keys == 5 and wl.seed == 2
    with pytest.raises(ConfigError, match="returned 3, not a Workload"):
        build_workload(lambda **kw: 3)
    with pytest.raises(ConfigError, match="not 3"):
        build_workload(3)  # type: ignore[arg-type]


def test_fuzzing_defaults_are_those_of_the_class_name_or_own() -> None:
    assert fuzz_defaults(Array, FUZZ_PARAMS) == FUZZ_PARAMS["array"]
    assert fuzz_defaults(MyArray, FUZZ_PARAMS) == FUZZ_PARAMS["array"]  # inherited
    assert fuzz_defaults(ArrayRAW, FUZZ_PARAMS) == {}  # registered: what its name gets
    assert fuzz_defaults(Tiny, FUZZ_PARAMS) == {"buckets": 2, "keys": 3}  # own, filtered
    assert fuzz_defaults(Bare, FUZZ_PARAMS) == {}


def test_session_create_takes_a_class_or_an_instance() -> None:
    by_class = Session.create("undo", KV, threads=1, seed=1, params={"keys": 8})
    by_class.run(5)
    assert by_class.check()
    wl = KV(keys=8)
    by_instance = Session.create("redo", wl)
    by_instance.run(5)
    assert by_instance.workload is wl and by_instance.check()
    with pytest.raises(ConfigError, match="disagree"):
        Session.create("undo", wl, params={"keys": 9})


def test_reference_and_non_default_params() -> None:
    assert reference(KV) == ("kv", "")
    assert reference(MyArray) == (f"{__name__}:MyArray", "")
    assert non_default_params(KV(keys=8)) == {"keys": 8}


class _SlowFirst(Empty):
    """A body that runs a second of CPU time before its first commit (ticks of the
    watchdog's CPU timer, not wall-clock time)."""

    def body(self, tx: object, op: object) -> bool:
        if not self.executed or len(self.executed) == 1:
            t0 = watchdog._ticks
            while watchdog._ticks - t0 < 20:
                pass
        return True


def test_a_run_whose_background_threads_progress_is_not_a_stall() -> None:
    """The stall bound counts the background threads' finished work with the commits: a
    worker kept waiting while a background thread works (NV-HTM's workers for a checkpoint) is
    not stuck; the same wait with no background work is."""
    undo = get_runtime("undo")

    class Working(undo):  # type: ignore[misc, valid-type]
        calls = 0

        def background_progress(self) -> int:
            Working.calls += 1
            return Working.calls

    Session.create(Working, _SlowFirst, threads=1, txs=2).run(2, stall_seconds=0.3)
    with pytest.raises(PmsimError, match=r"within 0\.3 s of CPU time"):
        Session.create(undo, _SlowFirst, threads=1, txs=2).run(2, stall_seconds=0.3)
