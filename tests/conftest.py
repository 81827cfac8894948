"""Shared pytest options: --runslow for long campaigns, and the backend fixture."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=False
)
settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                          derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run tests marked slow (long fuzz campaigns, benchmarks)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow (or `make fuzz-long`)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def _backends() -> list[str]:
    from pmsim.cache import native

    return ["python", "c"] if native.available() else ["python"]


@pytest.fixture(params=_backends())
def backend(request: pytest.FixtureRequest) -> str:
    """Each engine backend that is available ('python' always, 'c' when built)."""
    return request.param


@pytest.fixture
def default_signal_handlers() -> Iterator[None]:
    """Python's own SIGINT and SIGTERM handlers, as in a terminal: a suite run as a background
    job of a shell without job control starts with SIGINT ignored, which
    ``pmsim.interrupts.catching`` rightly leaves alone (so it cannot tell a real Ctrl-C from a
    KeyboardInterrupt that user code raised)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    old_term = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGINT, old)
    signal.signal(signal.SIGTERM, old_term)
