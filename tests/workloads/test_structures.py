"""The structure workloads: hashtable, hashmap, btree, rbtree and avl.

Runs on undo, redo and COW with 1, 2 and 4 threads match the reference model; the structural
checks of ``read_data`` hold after every run and catch broken structures; no transaction
exceeds the per-transaction bounds of its PMSpec; crash fuzzing passes; and, single-threaded,
each structure agrees with a Python dict over random operation sequences (Hypothesis).
"""

from __future__ import annotations

import random
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import crashfuzz
from crashfuzz import fuzz_machine
from pmsim import preset
from pmsim.errors import ConfigError, PmsimError
from pmsim.machine import Machine
from pmsim.runtimes import fit_pm, get_runtime
from pmsim.workloads import Session, Workload, get_workload
from pmsim.workloads.base import fuzz_defaults
from pmsim.workloads.structures import (
    DELETE,
    INSERT,
    LOOKUP,
    avl_height,
    btree_height,
    drive,
    rb_height,
)

STRUCTS = ("avl", "btree", "hashmap", "hashtable", "rbtree")
RUNTIMES = ("undo", "redo", "cow")
TREE = {"keys": 40, "initial": 15, "value_words": 2, "insert_pct": 45.0, "delete_pct": 40.0,
        "ops_per_tx": 2}
SMALL: dict[str, dict[str, Any]] = {
    "hashtable": {"slots": 64, "keys": 200, "initial": 20, "probe_limit": 6, "lock_stripe": 8,
                  "insert_pct": 50.0, "delete_pct": 30.0, "ops_per_tx": 2, "value_words": 2},
    "hashmap": {"maps": 3, "buckets": 4, "keys": 30, "initial": 10, "stripes": 2,
                "value_words": 2, "insert_pct": 45.0, "delete_pct": 40.0, "ops_per_tx": 2},
    "btree": {"trees": 3, "node_keys": 3, **TREE},
    "rbtree": {"trees": 3, **TREE},
    "avl": {"trees": 3, **TREE},
}


def session(runtime: str, workload: str, threads: int, seed: int = 1, txs: int = 20,
            **params: Any) -> Session:
    cfg = preset("marathe-pdom1").replace(cores=threads)
    return Session.create(runtime, workload, cfg, threads=threads, seed=seed, txs=txs,
                          params={**SMALL[workload], **params})


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("workload", STRUCTS)
def test_matches_reference(workload: str, runtime: str, threads: int) -> None:
    s = session(runtime, workload, threads)
    s.run(20)
    rt, wl = s.runtime, s.workload
    assert rt.commits == 20 * threads
    data = wl.app_data(rt)  # the structural checks run here: a broken structure is "corrupt"
    assert data == wl.expected(rt.commit_order)
    assert data != wl.expected([])
    rec = s.recover(s.machine.pm_image())
    assert rec.errors == []
    assert rec.data == data


@pytest.mark.parametrize("workload", STRUCTS)
def test_same_data_on_every_runtime(workload: str) -> None:
    snaps = set()
    for runtime in RUNTIMES:
        s = session(runtime, workload, 1, seed=7)
        s.run(30)
        snaps.add(s.workload.app_data(s.runtime))
    assert len(snaps) == 1


@pytest.mark.parametrize("workload", STRUCTS)
def test_default_parameters_run(workload: str) -> None:
    cfg = preset("marathe-pdom1").replace(cores=2)
    s = Session.create("redo", workload, cfg, threads=2, seed=3, txs=5)
    s.run(5)
    assert s.workload.app_data(s.runtime) == s.workload.expected(s.runtime.commit_order)


# -- a functional harness: transactions driven directly on an untimed machine -----------------------
class Counter:
    """A transaction proxy that counts what the body does, as the PMSpec bounds count it."""

    def __init__(self, tx: Any) -> None:
        self.tx, self.rt = tx, tx.rt
        self.writes = self.words = self.allocs = 0
        self.objects: set[int] = set()

    def read(self, obj: int, field: int) -> int:
        return int(self.tx.read(obj, field))

    def read_words(self, obj: int, field: int, n: int) -> list[int]:
        return list(self.tx.read_words(obj, field, n))

    def write(self, obj: int, field: int, value: int) -> None:
        self.write_words(obj, field, [value])

    def write_words(self, obj: int, field: int, values: list[int]) -> None:
        self.writes += 1
        self.words += len(values)
        self.objects.add(obj)
        self.tx.write_words(obj, field, values)

    def alloc(self, words: int) -> int:
        self.allocs += 1
        return int(self.tx.alloc(words))

    def free(self, obj: int) -> None:
        self.allocs += 1
        self.objects.add(obj)
        self.tx.free(obj)

    def pause(self) -> Any:
        return self.tx.pause()


def counting(name: str) -> type[Workload]:
    """The workload ``name`` with the largest per-transaction counts recorded in ``most``."""
    cls = get_workload(name)

    class Counting(cls):  # type: ignore[valid-type, misc]
        most = [0, 0, 0, 0]

        def body(self, tx: Any, op: Any) -> Generator[Any, Any, Any]:
            c = Counter(tx)
            res = yield from super().body(c, op)
            now = (c.writes, c.words, c.allocs, len(c.objects))
            self.most[:] = [max(a, b) for a, b in zip(self.most, now, strict=True)]
            return res

    return Counting


def functional(runtime: str, wl: Workload) -> tuple[Any, Any]:
    """A formatted runtime on an untimed machine holding ``wl``'s initial data, and a CPU."""
    rt_cls = get_runtime(runtime)
    base = fuzz_machine("pdom1", 1, 0)
    layout = rt_cls.plan(wl.spec(), 1, base.pm_region.base)
    m = Machine(fit_pm(base, layout.end - base.pm_region.base), timed=False)
    rt = rt_cls(m, layout)
    rt.format()
    wl.setup(rt)
    return rt, m.cpu(0)


def run_ops(wl: Workload, rt: Any, cpu: Any, ops: list[Any]) -> None:
    for op in ops:
        drive(wl.transaction(cpu, rt, op))


def ops_of(kinds_keys: list[tuple[int, int, int]], k: int) -> list[Any]:
    """Transactions of ``k`` operations from (kind, instance, key) triples."""
    ops = [(kind, t, key, (key * 7919 + i) % (1 << 60) + 1 if kind == INSERT else 0)
           for i, (kind, t, key) in enumerate(kinds_keys)]
    return [tuple(ops[i:i + k]) for i in range(0, len(ops), k)]


def patterns(keys: int, n: int, instances: int) -> dict[str, list[tuple[int, int, int]]]:
    """Operation sequences that stress rebalancing: ascending and descending runs of inserts
    then deletes, and a random mix."""
    rng = random.Random(5)
    asc = [(INSERT, 0, k) for k in range(1, keys + 1)] + [(DELETE, 0, k) for k in range(1, keys + 1)]
    desc = [(kind, t, keys + 1 - k) for kind, t, k in asc]
    mixed = [(rng.choice((INSERT, INSERT, DELETE, LOOKUP)), rng.randrange(instances),
              rng.randint(1, keys)) for _ in range(n)]
    return {"ascending": asc, "descending": desc, "random": mixed}


BOUNDS = {
    "hashtable": {"slots": 48, "keys": 60, "initial": 10, "probe_limit": 8},
    "hashmap": {"maps": 2, "buckets": 3, "keys": 40, "initial": 5},
    "btree": {"trees": 2, "keys": 120, "initial": 0, "node_keys": 2},
    "rbtree": {"trees": 2, "keys": 120, "initial": 0, "value_words": 1},
    "avl": {"trees": 2, "keys": 120, "initial": 0, "value_words": 1},
}


@pytest.mark.parametrize(("runtime", "ops_per_tx"), [("undo", 1), ("cow", 3)])
@pytest.mark.parametrize("workload", STRUCTS)
def test_transactions_stay_within_the_spec(workload: str, runtime: str, ops_per_tx: int) -> None:
    """Splits and merges cascading, rotations up the tree: every transaction's writes, words,
    alloc/free calls and objects stay within the PMSpec bounds that size the logs (undo and
    COW also raise when one is exceeded)."""
    params = {**BOUNDS[workload], "ops_per_tx": ops_per_tx}
    for name, seq in patterns(params["keys"], 300, params.get("trees", params.get("maps", 1))).items():
        cls = counting(workload)
        wl = cls(**params)
        rt, cpu = functional(runtime, wl)
        run_ops(wl, rt, cpu, ops_of(seq, params["ops_per_tx"]))
        spec = wl.spec()
        bounds = [spec.max_tx_writes, spec.max_tx_words, spec.max_tx_allocs, spec.max_tx_objects]
        assert all(a <= b for a, b in zip(cls.most, bounds, strict=True)), (name, cls.most, bounds)
        assert cls.most[0] > 0
        assert wl.read_data(rt) == wl.expected(rt.commit_order)
        assert heap_errors(wl, rt) == []


def test_tree_height_bounds() -> None:
    assert [rb_height(n) for n in (0, 1, 2, 3, 6, 7)] == [0, 2, 2, 4, 4, 6]
    assert [avl_height(n) for n in (0, 1, 2, 3, 4, 6, 7, 12)] == [0, 1, 2, 2, 3, 3, 4, 5]
    # order 2: leaves of >= 1 key, inner nodes of >= 2 children
    assert [btree_height(n, 2) for n in (0, 1, 2, 3, 4, 8)] == [1, 1, 2, 2, 3, 4]
    assert btree_height(10**6, 200) == 3


# -- crash fuzzing ----------------------------------------------------------------------------------
FUZZ = [(w, rt, "pdom1") for w in STRUCTS for rt in RUNTIMES] + [
    ("hashtable", "undo", "pdom0"), ("hashmap", "cow", "pdom0"), ("btree", "redo", "pdom0"),
    ("rbtree", "redo", "pdom0"), ("avl", "undo", "pdom0")]


@pytest.mark.parametrize(("workload", "runtime", "domain"), FUZZ)
def test_crash_fuzzing(workload: str, runtime: str, domain: str) -> None:
    # COW's states are sampled at points over the budget, as in tests/crashfuzz; three runs
    # after recovery are crash-tested at depth 2
    rep = crashfuzz.fuzz(runtime=runtime, workload=workload, domain=domain, threads=2, txs=3,
                         idempotence=2, budget=2048 if runtime == "cow" else 65536, samples=64,
                         depth_runs=3)
    assert rep.ok, crashfuzz.format_report(rep)
    assert rep.states_checked > 0 and rep.recoveries > 0 and rep.transactions == 6


@pytest.mark.slow
@pytest.mark.parametrize(("workload", "runtime", "domain"), [
    (w, rt, d) for w in STRUCTS for rt in RUNTIMES for d in ("pdom0", "pdom1", "pdom2")])
def test_long_crash_fuzzing(workload: str, runtime: str, domain: str) -> None:
    rep = crashfuzz.fuzz(runtime=runtime, workload=workload, domain=domain, threads=2, txs=12)
    assert rep.ok, crashfuzz.format_report(rep)


# -- Hypothesis: each structure against a dict -------------------------------------------------------
PROPERTY = {
    # a window as large as the table and no more keys than slots: no insert ever fails
    "hashtable": {"slots": 12, "keys": 12, "initial": 3, "probe_limit": 12},
    "hashmap": {"maps": 2, "buckets": 3, "keys": 12, "initial": 3, "value_words": 2},
    "btree": {"trees": 2, "keys": 24, "initial": 3, "node_keys": 2},
    "rbtree": {"trees": 2, "keys": 24, "initial": 3, "value_words": 1},
    "avl": {"trees": 2, "keys": 24, "initial": 3, "value_words": 1},
}


def _property(workload: str, data: st.DataObject) -> None:
    params = PROPERTY[workload]
    k = data.draw(st.integers(1, 3))
    wl = get_workload(workload)(seed=data.draw(st.integers(0, 3)), ops_per_tx=k, **params)
    instances = params.get("trees", params.get("maps", 1))
    seq = data.draw(st.lists(st.tuples(st.sampled_from((INSERT, INSERT, DELETE, LOOKUP)),
                                       st.integers(0, instances - 1),
                                       st.integers(1, params["keys"])), max_size=60))
    rt, cpu = functional(data.draw(st.sampled_from(RUNTIMES)), wl)
    ref = [dict(items) for items in wl.initial_items()]
    for op in ops_of(seq, k):
        drive(wl.transaction(cpu, rt, op))
        for kind, t, key, value in op:
            if kind == INSERT:
                ref[t][key] = value
            elif kind == DELETE:
                ref[t].pop(key, None)
        assert wl.read_data(rt) == tuple(tuple(sorted(d.items())) for d in ref)
    assert heap_errors(wl, rt) == []


def heap_errors(wl: Workload, rt: Any) -> list[str]:
    """The allocator's invariants over the live objects (a descriptor is legitimately not IDLE
    between transactions: that part holds only after recovery)."""
    return [e for e in rt.check_invariants(wl.live_objects(rt)) if "descriptor" not in e]


@pytest.mark.parametrize("workload", STRUCTS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_agrees_with_a_dict(workload: str, data: st.DataObject) -> None:
    _property(workload, data)


# -- structural checks catch broken structures -------------------------------------------------------
def built(workload: str, **params: Any) -> tuple[Workload, Any]:
    wl = get_workload(workload)(seed=1, **{**PROPERTY[workload], **params})
    rt, _ = functional("undo", wl)
    return wl, rt


def root_of(rt: Any) -> int:
    return int(rt.peek(rt.static("roots", 0), 0))


def corrupt(wl: Workload, rt: Any, match: str) -> None:
    got = wl.app_data(rt)
    assert got[0] == "corrupt" and match in got[1], got
    assert wl.live_objects(rt) == []


def test_rbtree_checks() -> None:
    wl, rt = built("rbtree", initial=10)
    root = root_of(rt)
    rt.init_words(root, 3, [1])  # a red root
    corrupt(wl, rt, "red")
    rt.init_words(root, 3, [0])
    left = rt.peek(root, 1)
    rt.init_words(left, 0, [rt.peek(root, 0) + 1])  # a left child above its parent
    corrupt(wl, rt, "out of order")


def test_rbtree_black_heights() -> None:
    wl, rt = built("rbtree", initial=10)
    x = rt.peek(root_of(rt), 1)
    while rt.peek(x, 3) != 0:  # a black node below the root
        x = rt.peek(x, 1)
    rt.init_words(x, 3, [1])  # painted red: a red parent, or one black node short on its paths
    corrupt(wl, rt, "")


def test_avl_checks() -> None:
    wl, rt = built("avl", initial=10)
    root = root_of(rt)
    rt.init_words(root, 3, [rt.peek(root, 3) + 1])
    corrupt(wl, rt, "height")
    rt.init_words(root, 3, [rt.peek(root, 3) - 1])
    rt.init_words(root, 1, [0])  # drop the left subtree: unbalanced (and leaked)
    corrupt(wl, rt, "unbalanced")


def test_btree_checks() -> None:
    wl, rt = built("btree", initial=12)
    root = root_of(rt)
    assert rt.peek(root, 0) < 1 << 32  # an inner root
    first = rt.peek(root, 1)
    while rt.peek(first, 0) < 1 << 32:
        first = rt.peek(first, 1)
    nxt = rt.peek(first, 1)
    rt.init_words(first, 1, [0])  # cut the leaf chain
    corrupt(wl, rt, "leaf links")
    rt.init_words(first, 1, [nxt])
    rt.init_words(first, 0, [1 << 32])  # an empty leaf below the root
    corrupt(wl, rt, "holds 0 keys")
    wl, rt = built("btree", initial=12)
    root = root_of(rt)
    rt.init_words(root, 3, [root])  # a cycle
    corrupt(wl, rt, "")


def test_hashmap_catches_a_torn_value() -> None:
    wl, rt = built("hashmap", value_words=3)
    heads = rt.peek_static("buckets")[:, 0]
    node = int(heads[heads.nonzero()[0][0]])
    rt.init_words(node, 3, [12345])
    corrupt(wl, rt, "torn")


def test_hashtable_checks() -> None:
    wl, rt = built("hashtable", probe_limit=2, slots=12)
    arr = rt.peek_static("slots")
    s = int(arr[:, 0].nonzero()[0][0])
    key = int(arr[s, 0])
    far = (wl.home(key) + 5) % 12
    rt.init_words(rt.static("slots", s), 0, [0])
    rt.init_words(rt.static("slots", far), 0, [key, 5])
    corrupt(wl, rt, "outside its window")


def test_hashmap_checks() -> None:
    wl, rt = built("hashmap")
    heads = rt.peek_static("buckets")[:, 0]
    b = int(heads.nonzero()[0][0])
    node = int(heads[b])
    rt.init_words(node, 1, [node])  # a cycle
    corrupt(wl, rt, "reachable twice")
    wl, rt = built("hashmap")
    node = int(rt.peek_static("buckets")[b, 0])
    rt.init_words(node, 0, [99])  # a key that hashes elsewhere (and is out of range)
    corrupt(wl, rt, "does not hash")


# -- the hash table's window and locks ---------------------------------------------------------------
def test_hashtable_insert_into_a_full_window_does_nothing() -> None:
    wl = get_workload("hashtable")(slots=8, keys=64, initial=0, probe_limit=2)
    rt, cpu = functional("redo", wl)
    home = {k: wl.home(k) for k in range(1, 65)}
    same = [k for k in range(1, 65) if home[k] == home[1]][:3]
    assert len(same) == 3
    ops = [((INSERT, 0, k, k),) for k in same]
    run_ops(wl, rt, cpu, ops)
    data = wl.read_data(rt)
    assert len(data[0]) == 2 and data == wl.expected(rt.commit_order)
    run_ops(wl, rt, cpu, [((DELETE, 0, same[0], 0),), ((INSERT, 0, same[2], 9),)])
    assert wl.read_data(rt) == wl.expected(rt.commit_order)  # the tombstone is reused
    assert dict(wl.read_data(rt)[0])[same[2]] == 9


def test_locks() -> None:
    ht = get_workload("hashtable")(threads=2, slots=16, initial=0, probe_limit=4, lock_stripe=4)
    key = next(k for k in range(1, 1000) if ht.home(k) == 14)  # a window wrapping round
    assert ht.nlocks() == 4
    assert list(ht.locks_of(((INSERT, 0, key, 1),))) == [0, 3]
    hm = get_workload("hashmap")(threads=2, maps=3, buckets=4, stripes=2)
    assert hm.nlocks() == 6
    assert all(0 <= i < 6 for i in hm.locks_of(((INSERT, 2, 5, 1), (DELETE, 0, 3, 0))))
    for name in ("btree", "rbtree", "avl"):
        tr = get_workload(name)(threads=2, trees=5)
        assert tr.nlocks() == 5
        assert list(tr.locks_of(((INSERT, 4, 1, 1), (LOOKUP, 1, 2, 0), (DELETE, 4, 2, 0)))) == [1, 4]
    assert get_workload("avl")(threads=1).nlocks() == 0


# -- parameters ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("workload", "params", "match"), [
    ("hashtable", {"probe_limit": 0}, "probe_limit"),
    ("hashtable", {"slots": 8, "initial": 0, "probe_limit": 9}, "probe_limit"),
    ("hashtable", {"slots": 8, "initial": 9}, "initial"),
    ("hashtable", {"lock_stripe": 0}, "lock_stripe"),
    ("hashmap", {"buckets": 4, "stripes": 5}, "stripes"),
    ("hashmap", {"maps": 0}, "maps"),
    ("hashmap", {"maps": 1024, "buckets": 8192}, "buckets"),
    ("btree", {"node_keys": 1}, "node_keys"),
    ("btree", {"node_keys": 5000, "value_words": 2}, "node_keys"),
    ("rbtree", {"keys": 10, "initial": 11}, "initial"),
    ("avl", {"insert_pct": 60, "delete_pct": 50}, "delete_pct"),
    ("avl", {"value_words": 0}, "value_words"),
    ("rbtree", {"ops_per_tx": 0}, "ops_per_tx"),
    ("btree", {"trees": 1 << 19, "initial": 0}, "trees"),
    ("avl", {"trees": 65, "initial": 1 << 16, "keys": 1 << 16}, "initial"),
    ("hashmap", {"keys": "many"}, "keys"),
])
def test_bad_parameters(workload: str, params: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        get_workload(workload)(**params)


@pytest.mark.parametrize("workload", STRUCTS)
def test_registered_with_small_fuzzing_parameters(workload: str) -> None:
    cls = get_workload(workload)
    small = fuzz_defaults(cls, crashfuzz.FUZZ_PARAMS)
    assert small and small == dict(cls.fuzz_params)
    spec = cls(threads=2, txs=3, **small).spec()
    assert spec.max_tx_writes <= 32


def test_read_data_rejects_a_foreign_pointer() -> None:
    wl, rt = built("avl")
    rt.init_words(rt.static("roots", 0), 0, [8])
    with pytest.raises(PmsimError, match="not a heap block"):
        wl.read_data(rt)


@pytest.mark.parametrize("runtime,workload,pre", [
    ("loc", "btree", "loc-gem5"), ("undo", "rbtree", "marathe-pdom1"),
    ("cow", "hashtable", "marathe-pdom0"), ("dudetx", "avl", "dudetx-xeon"),
    ("proteus", "btree", "proteus-marss")])
def test_a_remembered_build_runs_as_a_fresh_one(runtime: str, workload: str, pre: str) -> None:
    """The second setup of the same workload on the same runtime and image reuses the first
    build's words (``structures._BUILT``): the memory image and a run on it are identical to
    a build from scratch, and a different image (another seed) is built anew."""
    from pmsim.experiments import run_experiment
    from pmsim.workloads import structures

    params = {"keys": 512, "initial": 256}

    def run() -> tuple[Any, ...]:
        r = run_experiment(runtime, workload, preset(pre), threads=2 if runtime == "dudetx" else 1,
                           txs=30, warmup=5, params=params, seed=3)
        return (r.sim_ns, r.commits, r.aborts, r.lat_p50, r.lat_p99, r.pm_bytes_per_tx,
                r.flush_per_tx, r.llc_misses_per_tx, tuple(sorted(r.counters.items())))

    structures._BUILT.clear()
    fresh = run()
    (key,) = structures._BUILT
    assert run() == fresh and list(structures._BUILT) == [key]  # reused, not rebuilt
    s = Session.create(runtime, workload, preset(pre), params=params, seed=4)
    assert len(structures._BUILT) == 2 and list(structures._BUILT)[0] == key  # another build
    assert s.workload.read_data(s.runtime) == s.workload.model().snapshot()
    for seed in range(5, 5 + structures.BUILDS_KEPT):
        Session.create(runtime, workload, preset(pre), params=params, seed=seed)
    assert len(structures._BUILT) == structures.BUILDS_KEPT and key not in structures._BUILT
