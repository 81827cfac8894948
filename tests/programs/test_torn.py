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
