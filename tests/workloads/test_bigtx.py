"""The large-transaction microbenchmark (Proteus Table 3): it matches its model on lock-based,
optimistic and hardware runtimes, recovery gives the model's data, every element of one node
is written per transaction, a torn node or a broken list is reported, crash fuzzing passes on
undo (and finds U1), and bad parameters are clear ConfigErrors."""

from __future__ import annotations

from typing import Any

import pytest

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from pmsim import preset
from pmsim.errors import ConfigError
from pmsim.workloads import BigTx, Session, get_workload
from pmsim.workloads.base import MASK64, fuzz_defaults
from pmsim.workloads.bigtx import ELEMS, NEXT, BigTxModel, initial

SMALL = {"elements": 40, "nodes": 4}


def session(runtime: str, threads: int = 1, seed: int = 3, txs: int = 8,
            **params: Any) -> Session:
    cfg = preset("marathe-pdom1").replace(cores=threads)
    return Session.create(runtime, "bigtx", cfg, threads=threads, seed=seed, txs=txs,
                          params={**SMALL, **params})


@pytest.mark.parametrize(("runtime", "threads"), [
    ("undo", 1), ("undo", 2), ("redo", 2), ("cow", 2), ("swal", 2), ("nvml", 1),
    ("dudetx", 2), ("htm", 2), ("loc", 1), ("hwal", 1),
])
def test_matches_reference_and_recovers(runtime: str, threads: int) -> None:
    s = session(runtime, threads)
    s.run(8)
    rt, wl = s.runtime, s.workload
    assert rt.commits == 8 * threads
    got = wl.app_data(rt)
    assert got == wl.expected(rt.commit_order)
    assert got != wl.expected([])
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == []
    assert rec.data == wl.expected(rt.commit_order)


@pytest.mark.parametrize("runtime", ["locks", "stm"])
def test_volatile_baselines_run_it(runtime: str) -> None:
    s = session(runtime, 2)
    s.run(6)
    assert s.check()


def test_element_words_and_same_data_on_every_runtime() -> None:
    snaps = set()
    for runtime in ("undo", "redo", "cow", "swal"):
        s = session(runtime, seed=5, element_words=3, elements=7)
        s.run(10)
        snaps.add(s.workload.app_data(s.runtime))
    assert len(snaps) == 1


def test_a_transaction_writes_every_element_of_one_node() -> None:
    s = session("undo", elements=24, element_words=2)
    wl, rt = s.workload, s.runtime
    calls: list[tuple[int, int, int]] = []
    orig = type(rt).run

    def spy(self, cpu, body, locks=(), on_begin=None):  # type: ignore[no-untyped-def]
        def counted(tx):  # type: ignore[no-untyped-def]
            write = tx.write_words

            def w(obj, field, values):  # type: ignore[no-untyped-def]
                calls.append((obj, field, len(values)))
                write(obj, field, values)
            tx.write_words = w
            return body(tx)
        return (yield from orig(self, cpu, counted, locks, on_begin))

    type(rt).run = spy  # type: ignore[method-assign]
    try:
        s.run(1)
    finally:
        type(rt).run = orig  # type: ignore[method-assign]
    (key, _), = wl.executed.values()
    arr = rt.peek(rt.static("node", key), ELEMS)
    assert calls == [(arr, 2 * e, 2) for e in range(24)]
    spec = wl.spec()
    assert (spec.max_tx_writes, spec.max_tx_words, spec.max_tx_objects) == (24, 48, 1)


def test_model() -> None:
    m = BigTxModel(3)
    m.apply((2, 5))
    m.apply((2, MASK64))
    m.apply((3, 7))
    assert m.snapshot() == (0, 4, 7)


def test_torn_node_and_broken_list_are_reported() -> None:
    s = session("undo")
    s.run(4)
    wl, rt = s.workload, s.runtime
    assert isinstance(wl.read_data(rt), tuple)
    arr = rt.static("elems", 1)
    old = rt.peek(arr, 17)
    rt.init_words(arr, 17, [old + 1])
    assert wl.read_data(rt) == ("torn", 2, 17)
    rt.init_words(arr, 17, [old])
    rt.init_words(rt.static("node", 2), NEXT, [rt.static("node", 4)])
    got = wl.app_data(rt)
    assert isinstance(got, tuple) and got[0] == "corrupt"


def test_initial_data_and_padding() -> None:
    s = session("undo", elements=5)
    wl, rt = s.workload, s.runtime
    assert wl.read_data(rt) == (0, 0, 0, 0)
    assert wl.words == 8  # padded to a whole line
    assert list(rt.peek_static("elems")[3, :5]) == initial(4, 5)


def test_paper_sizes_build_and_run() -> None:
    wl = get_workload("bigtx")()
    assert (wl.p.elements, wl.p.element_words) == (1024, 1)
    for n in (2048, 4096, 8192):
        assert get_workload("bigtx")(elements=n).spec().max_tx_writes == n
    s = Session.create("cow", "bigtx", preset("marathe-pdom1"), txs=1,
                       params={"elements": 8192, "nodes": 2})
    s.run(1)
    assert s.check()


def test_registered_with_small_fuzzing_parameters() -> None:
    assert get_workload("bigtx") is BigTx
    small = fuzz_defaults(BigTx, crashfuzz.FUZZ_PARAMS)
    assert small == {"elements": 16, "nodes": 3}
    assert BigTx(**small).spec().max_tx_writes <= 32


def test_crash_fuzzing_passes_on_undo_and_finds_a_mutant() -> None:
    rep = fuzz(FuzzConfig(runtime="undo", workload="bigtx", txs=6, depth=1, idempotence=2))
    assert rep.ok, rep
    bad = fuzz(FuzzConfig(runtime="undo:U1", workload="bigtx", txs=6, stop_at_first=True,
                          depth=1))
    assert not bad.ok


@pytest.mark.parametrize(("params", "match"), [
    ({"elements": 0}, "elements=0 must be >= 1"),
    ({"elements": -3}, "elements"),
    ({"elements": 8193}, "elements=8193 is too large.*use elements <= 8192"),
    ({"elements": 4096, "element_words": 3}, "use elements <= 2730"),
    ({"element_words": 0}, "element_words"),
    ({"nodes": 0}, "nodes=0 must be >= 1"),
    ({"elements": 8192, "nodes": 9000}, "nodes=9000 is too large"),
    ({"elements": 2.5}, "elements"),
    ({"elements": "many"}, "elements"),
    ({"element": 4}, "element"),
])
def test_bad_parameters(params: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        get_workload("bigtx")(**params)


def test_cli_strings_convert() -> None:
    wl = get_workload("bigtx")(elements="2048", nodes="1e1")
    assert (wl.p.elements, wl.p.nodes) == (2048, 10)
    assert isinstance(wl.p.elements, int) and isinstance(wl.p.nodes, int)
