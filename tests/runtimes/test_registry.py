"""Which classes a runtime's crash_irrelevant() declaration applies to."""

from __future__ import annotations

from typing import Any

from crashfuzz import FuzzConfig
from crashfuzz.campaign import Campaign
from pmsim.runtimes import Mutant, RedoRuntime, drop, get_runtime, variant
from pmsim.runtimes.registry import RUNTIMES, declares_crash_irrelevant


class Subclass(RedoRuntime):
    """May read the writers words its parent declared irrelevant: no reduction inherited."""


class Redeclared(RedoRuntime):
    def crash_irrelevant(self) -> list[int]:
        return super().crash_irrelevant()


def test_a_declaration_applies_to_its_class_switches_and_mutants() -> None:
    assert declares_crash_irrelevant(RedoRuntime)
    assert declares_crash_irrelevant(get_runtime("redo-eadr"))  # a switch (variant)
    assert declares_crash_irrelevant(get_runtime("redo:R2"))  # a registered mutant
    assert declares_crash_irrelevant(Mutant("redo:x", "redo", [drop("redo.commit.pb2")]).build())
    assert not declares_crash_irrelevant(Subclass)
    assert declares_crash_irrelevant(Redeclared)
    switch = variant(Subclass, "test-subclass-switch")
    try:
        assert not declares_crash_irrelevant(switch)  # a switch of an undeclared class
    finally:
        del RUNTIMES["test-subclass-switch"]


def test_campaigns_leave_out_only_declared_words() -> None:
    cfg = FuzzConfig(runtime="redo", workload="array", txs=2, depth=1, idempotence=0)

    def ignored(runtime: Any) -> int:
        return len(Campaign(cfg, runtime=runtime).ignored)

    assert ignored(None) > 0 and ignored(Redeclared) == ignored(None)
    assert ignored(Subclass) == 0
