"""Torn stores: a store declared tearable persists as its pieces, and recovery reading a
partial value is reported as a persistency race."""

from __future__ import annotations

import crashfuzz
from crashfuzz import FuzzConfig, fuzz
from pmsim.programs import PM, PMProgram, operation

STEP = 0x100000001  # both 32-bit halves change on every bump


class Seq(PMProgram):
    """A 64-bit sequence number bumped in place."""

    size = 128

    @operation()
    def bump(self, pm: PM) -> int:
        v = pm.load(0) + STEP
        pm.store(0, v, step="bump.store")
        pm.persist(0, step="bump.persist")
        return v

    def state(self, pm: PM) -> int:
        return pm.load(0)


class TornSeq(Seq):
    """The compiler may split the 64-bit store into two 32-bit halves (a 32-bit target)."""

    tearable = {"bump.store": 4}


class GuardedSeq(TornSeq):
    """The torn word is written to a shadow slot and published by an atomic flag: recovery reads
    the shadow only when the flag says it is whole."""

    @operation()
    def bump(self, pm: PM) -> int:
        cur = pm.load(64) if pm.load(8) else pm.load(0)
        v = cur + STEP
        pm.store(64, v, step="bump.store")  # the torn store, into the shadow
        pm.persist(64, step="bump.persist")
        pm.store(8, 1, step="bump.flag")
        pm.persist(8, step="bump.flag-persist")
        pm.store(0, v)
        pm.persist(0, step="bump.home")
        pm.store(8, 0)
        pm.persist(8, step="bump.unflag")
        return v

    def recover(self, pm: PM) -> None:
        if pm.load(8):
            pm.store(0, pm.load(64))
            pm.persist(0, step="recover.copy")
            pm.store(8, 0)
            pm.persist(8, step="recover.unflag")


def test_an_atomic_store_never_tears() -> None:
    assert fuzz(FuzzConfig(txs=4), runtime=Seq).ok


def test_a_torn_store_read_by_recovery_is_a_race() -> None:
    rep = fuzz(FuzzConfig(txs=4, stop_at_first=True), runtime=TornSeq)
    f = rep.failures[0]
    assert f.kind == "torn" and "persistency race" in f.message
    assert "first 32 bits" in f.message and "Seq.bump line" in f.message


def test_a_torn_store_under_a_flag_is_no_race() -> None:
    rep = fuzz(FuzzConfig(txs=4, oracle="robust"), runtime=GuardedSeq)
    assert rep.ok, crashfuzz.format_report(rep)


def test_torn_pieces_are_what_the_crash_model_sees() -> None:
    camp = crashfuzz.Campaign(FuzzConfig(txs=1), runtime=TornSeq)
    stores = [int(v) for k, v in zip(camp.trace.events["kind"], camp.trace.events["value"],
                                     strict=True) if k == 1]
    assert stores == [0x1, STEP]  # the low half first, then the whole word


class Pair16(PMProgram):
    """A 16-byte record (two words) stored with one store_bytes the program assumes atomic."""

    size = 64
    atomic = frozenset({"set.record"})

    @operation(args=lambda rng: (int(rng.integers(1, 1 << 30)),))
    def set(self, pm: PM, v: int) -> None:
        pm.store_bytes(0, v.to_bytes(8, "little") * 2, step="set.record")
        pm.persist(0, 16, step="set.persist")

    def state(self, pm: PM) -> tuple[int, int]:
        return pm.load(0), pm.load(8)


class Pair16Unchecked(Pair16):
    atomic = frozenset()


class Unaligned(PMProgram):
    """An 8-byte value at offset 4: two words, each merged with its neighbours' bytes."""

    size = 64

    @operation(args=lambda rng: (int(rng.integers(1, 1 << 62)),))
    def set(self, pm: PM, v: int) -> None:
        pm.store_bytes(4, v.to_bytes(8, "little"), step="set.value")
        pm.persist(0, 16, step="set.persist")

    def state(self, pm: PM) -> int:
        return int.from_bytes(pm.load(0).to_bytes(8, "little")[4:]
                              + pm.load(8).to_bytes(8, "little")[:4], "little")


def test_a_wide_store_declared_atomic_read_partly_persisted_is_a_race() -> None:
    rep = fuzz(FuzzConfig(txs=3, stop_at_first=True), runtime=Pair16)
    f = rep.failures[0]
    assert f.kind == "torn" and "2-word store" in f.message and "declared atomic" in f.message
    # undeclared, the torn record is an ordinary robustness violation (no model: robust)
    rep = fuzz(FuzzConfig(txs=3, stop_at_first=True), runtime=Pair16Unchecked)
    assert rep.failures[0].kind == "data"


def test_an_unaligned_store_is_issued_as_the_words_it_covers() -> None:
    camp = crashfuzz.Campaign(FuzzConfig(txs=1), runtime=Unaligned)
    ev = camp.trace.events
    stores = [int(a) - camp.session.runtime.region_base for a, k in zip(ev["addr"], ev["kind"],
                                                                         strict=True) if k == 1]
    assert stores == [0, 8]
    v = camp.session.workload.executed[camp.history.commit_order[0]][1][0]
    assert camp.session.workload.read_data(camp.session.runtime) == v


class TornCounter(PMProgram):
    """0 -> 0xFFFFFFFF -> 0x1_0000_0000: the second store's low half alone reads 0."""

    size = 64
    tearable = {"set": 4}
    script = (("set", 0xFFFFFFFF), ("set", 0x1_0000_0000))

    @operation(args=lambda rng: (0xFFFFFFFF,))
    def set(self, pm: PM, v: int) -> None:
        pm.store(0, v, step="set")
        pm.persist(0, step="set.persist")

    def state(self, pm: PM) -> int:
        return pm.load(0)


class GuardedCounter(TornCounter):
    """The torn word read only under a valid flag persisted after it; then set to 0, which is
    also the first tear's partial value: no race, the value is the later store's."""

    size = 128
    script = (("set", 0xFFFFFFFF), ("set", 0x1_0000_0000), ("set", 0))

    @operation(args=lambda rng: (0,))
    def set(self, pm: PM, v: int) -> None:
        pm.store(64, 0)
        pm.persist(64, step="set.invalidate")
        pm.store(0, v, step="set")
        pm.persist(0, step="set.persist")
        pm.store(64, 1)
        pm.persist(64, step="set.validate")

    def state(self, pm: PM) -> int | None:
        return pm.load(0) if pm.load(64) else None


def test_a_tear_is_reported_after_its_piece_not_before() -> None:
    rep = fuzz(FuzzConfig(txs=2, depth=1), runtime=TornCounter)
    assert not rep.ok and {f.kind for f in rep.failures} == {"torn"}
    camp = crashfuzz.Campaign(FuzzConfig(txs=2, depth=1), runtime=TornCounter)
    first_piece = camp.session.runtime.torn_stores[1][5][0][0]
    assert min(f.point for f in rep.failures) > first_piece


def test_a_value_a_later_store_wrote_is_not_a_tear() -> None:
    rep = fuzz(FuzzConfig(txs=3, depth=1), runtime=GuardedCounter)
    assert rep.ok, crashfuzz.format_report(rep)
