"""The robustness oracle: acceptable states are the recovered strict-persistency cuts; a
violation names the store pair and a fix; transaction runtimes run under it too."""

from __future__ import annotations

import pytest

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from crashfuzz.robust import Cut, RobustOracle, violation
from pmsim.programs import PM, PMProgram, operation


class Pair(PMProgram):
    """x and y in two lines, set together: ``fenced`` orders x before y."""

    size = 128
    fenced = True

    @operation(args=lambda rng: (int(rng.integers(1, 100)),))
    def put(self, pm: PM, v: int) -> None:
        pm.store(0, v)
        if self.fenced:
            pm.persist(0, step="put.x")
        pm.store(64, v)
        pm.persist(0, step="put.flush-x")
        pm.persist(64, step="put.y")

    def state(self, pm: PM) -> tuple[int, int]:
        return pm.load(0), pm.load(64)


class UnfencedPair(Pair):
    fenced = False


class LazyCounter(Pair):
    """y is a hint recovery recomputes from x: the reordering is harmless, so the program is
    robust although its images are not prefixes."""

    def recover(self, pm: PM) -> None:
        pm.store(64, pm.load(0))
        pm.persist(64, step="recover.y")


class LazyUnfenced(LazyCounter):
    fenced = False


def test_a_fenced_program_is_robust_and_an_unfenced_one_is_not() -> None:
    assert fuzz(FuzzConfig(txs=6), runtime=Pair).ok
    rep = fuzz(FuzzConfig(txs=6, stop_at_first=True), runtime=UnfencedPair)
    f = rep.failures[0]
    assert f.kind == "data" and f.message.startswith("not robust")
    assert "offset 0x40" in f.message and "offset 0x0" in f.message
    assert f.fix is not None and f.fix[0][0] == f.fix[1][0] == "Pair.put"
    assert f.fix[0][1] < f.fix[1][1]  # the store of x, then the store of y
    assert any(e.startswith("strict persistency, the first") for e in f.expected)


def test_robustness_is_judged_on_recovered_states_not_raw_images() -> None:
    """PSan's robustness: what recovery reads and makes of the image, not every word."""
    assert fuzz(FuzzConfig(txs=6), runtime=LazyUnfenced).ok


def test_the_oracle_accepts_exactly_the_recovered_prefixes() -> None:
    camp = crashfuzz.Campaign(FuzzConfig(txs=2), runtime=UnfencedPair)
    assert isinstance(camp.oracle, RobustOracle)
    ix = camp.model.index
    n = ix.stores_before(len(camp.trace))
    assert n == 4
    cands = camp.oracle.candidates(len(camp.trace))
    v1, v2 = (camp.session.workload.executed[t][1][0] for t in camp.history.commit_order)
    assert {exp for _, exp in cands} == {(0, 0), (v1, 0), (v1, v1), (v2, v1), (v2, v2)}
    assert all(isinstance(k, Cut) for k, _ in cands)


def test_violation_names_the_later_store_and_the_earlier_one() -> None:
    camp = crashfuzz.Campaign(FuzzConfig(txs=1), runtime=UnfencedPair)
    model, k = camp.model, len(camp.trace)
    ix = model.index
    img = ix.image_at(ix.counts_of_prefix(0)).copy()
    base = camp.trace.pm_base
    y = camp.session.runtime.region_base + 64
    v = camp.session.workload.executed[camp.history.commit_order[0]][1][0]
    img.view("<u8")[(y - base) >> 3] = v  # y persisted, x did not
    got = violation(model, k, img)
    assert got is not None and got.later_addr == y and got.earlier_addr == y - 64
    assert violation(model, k, ix.image_at(ix.counts_of_prefix(1))) is None


@pytest.mark.parametrize("runtime", ["undo", "redo", "cow"])
def test_the_transaction_runtimes_are_robust(runtime: str) -> None:
    """A correct durable transaction recovers to the state after a prefix of transactions,
    which some strict-persistency cut recovers to as well."""
    rep = fuzz(FuzzConfig(runtime=runtime, workload="array", txs=6, oracle="robust"))
    assert rep.ok, crashfuzz.format_report(rep)


def test_the_robustness_oracle_kills_a_runtime_mutant_without_the_model() -> None:
    rep = fuzz(FuzzConfig(runtime="undo:U1", workload="array", txs=6, oracle="robust",
                          stop_at_first=True))
    assert not rep.ok and "not robust" in rep.failures[0].message


class PublishFirst(PMProgram):
    """Publishes a pointer to a block before filling it; state() follows the pointer and raises
    on a zero block."""

    size = 64
    heap_per_op = 64

    @operation(args=lambda rng: (int(rng.integers(1, 100)),))
    def push(self, pm: PM, v: int) -> None:
        b = pm.alloc(16)
        pm.store(0, b)
        pm.persist(0, step="publish")
        pm.store(b, 8 * v)
        pm.persist(b, step="fill")

    def state(self, pm: PM) -> int | None:
        b = pm.load(0)
        return pm.load(pm.load(b) - 8) if b else None


def test_a_recovery_that_raises_on_a_strict_prefix_is_no_correct_state() -> None:
    rep = fuzz(FuzzConfig(txs=4), runtime=PublishFirst)
    assert not rep.ok and rep.failures[0].kind == "crash"


class Oscillating(PMProgram):
    """y, then a busy flag x set and cleared (back to 0), then z; one flush for all."""

    size = 192

    @operation()
    def op(self, pm: PM) -> None:
        pm.store(0, 5)
        pm.store(64, 1)
        pm.store(128, 7)
        pm.store(64, 0)
        pm.flush(0, 192, step="f")
        pm.sfence(step="s")

    def state(self, pm: PM) -> tuple[int, int, int]:
        return pm.load(0), pm.load(64), pm.load(128)


def test_a_value_that_recurs_does_not_mislead_the_pair() -> None:
    camp = crashfuzz.Campaign(FuzzConfig(txs=1, depth=1), runtime=Oscillating)
    model, k = camp.model, len(camp.trace)
    ix = model.index
    assert violation(model, k, ix.image_at(ix.counts_of_prefix(0))) is None  # a strict cut
    img = ix.image_at(ix.counts_of_prefix(0)).copy()
    rb, base = camp.session.runtime.region_base, camp.trace.pm_base
    img.view("<u8")[(rb + 128 - base) >> 3] = 7  # z persisted, y did not, x reads 0
    v = violation(model, k, img)
    assert (v.earlier_addr - rb, v.later_addr - rb) == (0, 128)


class ThreeWords(PMProgram):
    size = 192

    @operation(args=lambda rng: (int(rng.integers(1, 100)),))
    def put(self, pm: PM, v: int) -> None:
        pm.store(0, v)
        pm.store(64, v)
        pm.store(128, v)
        pm.flush(0, 192, step="put.flush")
        pm.sfence(step="put.fence")

    def state(self, pm: PM) -> tuple[int, int, int]:
        return pm.load(0), pm.load(64), pm.load(128)


def test_repairs_chain_through_a_repaired_store() -> None:
    """The second fix's earlier store is the first fix's later one: its site is still found."""
    res = crashfuzz.repair_program(ThreeWords, txs=3, depth=1)
    assert res.ok and len(res.fixes) == 2, res.summary()
    assert res.fixes[0][1] == res.fixes[1][0]
