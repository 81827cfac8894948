"""pytest plugin (registered through the ``pytest11`` entry point): the ``crashfuzz`` fixture."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def crashfuzz() -> Any:
    """The crashfuzz API (``crashfuzz.fuzz``, ``FuzzConfig``...) for use inside tests."""
    import crashfuzz as api

    return api
