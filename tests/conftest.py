"""Shared pytest options: --runslow for long campaigns, and the backend fixture."""

from __future__ import annotations

import os

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
