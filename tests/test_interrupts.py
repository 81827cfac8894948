"""pmsim.interrupts: a Ctrl-C whose exception Python drops is still seen by raise_pending."""

from __future__ import annotations

import gc
import os
import signal

import pytest

from pmsim.interrupts import Terminated, active, catching, raise_pending, requested, stopped_by_sigterm


class _SignalsInDel:
    """An object whose finalizer receives the signal: Python prints and drops the exception."""

    def __init__(self, sig: int) -> None:
        self.sig = sig

    def __del__(self) -> None:
        os.kill(os.getpid(), self.sig)
        for _ in range(1000):  # the handler runs at a bytecode boundary, inside __del__
            pass


pytestmark = pytest.mark.usefixtures("default_signal_handlers")


def _lose(sig: int) -> None:
    obj = _SignalsInDel(sig)
    ref = [obj]
    ref.append(ref)  # a cycle: the collector runs the finalizer
    del obj, ref
    gc.collect()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_dropped_interrupt_is_raised_at_the_next_check() -> None:
    with catching():
        _lose(signal.SIGINT)  # no exception reaches us here
        with pytest.raises(KeyboardInterrupt):
            raise_pending()
    raise_pending()  # outside the block nothing is pending


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_sigterm_is_told_apart() -> None:
    with catching(sigterm=True):
        _lose(signal.SIGTERM)
        with pytest.raises(Terminated) as info:
            raise_pending()
    assert stopped_by_sigterm(info.value)
    try:
        try:
            raise Terminated("t")
        except Terminated as e:
            raise KeyboardInterrupt from e
    except KeyboardInterrupt as outer:
        assert stopped_by_sigterm(outer) and not stopped_by_sigterm(KeyboardInterrupt())


def test_handlers_are_restored_and_an_ignored_sigint_stays_ignored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with catching(sigterm=True):
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with catching():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        with catching(force=True):
            assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, old)


def test_a_second_signal_is_recorded_not_raised() -> None:
    """Ctrl-C twice: the second must not interrupt the saving of what the first stopped."""
    with catching():
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10**6):  # the handler runs at a bytecode boundary
                pass
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10**5):
            pass  # no exception here
        assert requested()
        with pytest.raises(KeyboardInterrupt):
            raise_pending()
    assert not requested()


def test_a_keyboard_interrupt_raised_by_user_code_is_told_apart() -> None:
    assert not active()
    with catching():
        assert active() and not requested()
        with catching():  # nested blocks share the record
            assert active()
        assert active()
    assert not active()
