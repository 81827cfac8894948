"""The C core's build stamp: a current build imports, a stale one fails loudly at import."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from pmsim.cache import native
from pmsim.cache.stamp import CSRC, source_stamp
from pmsim.errors import BuildError

pytestmark = pytest.mark.ccore
needs_core = pytest.mark.skipif(not native.available(), reason="the C core is not built")


@needs_core
def test_built_stamp_matches_the_sources() -> None:
    built = native.ffi.string(native.lib.pmcore_stamp()).decode()
    assert built == source_stamp()


@needs_core
def test_stale_build_raises_build_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "_source_stamp", lambda: "0123456789abcdef")
    with pytest.raises(BuildError, match="stale.*Reinstall pmsim") as err:
        native._load()
    assert isinstance(err.value, ImportError)  # `except ImportError` callers still see it


def test_stamp_follows_every_source_file(tmp_path: Path) -> None:
    csrc = tmp_path / "csrc"
    shutil.copytree(CSRC, csrc)
    first = source_stamp(csrc)
    assert source_stamp(csrc) == first
    c_file = csrc / "machine.c"
    c_file.write_text(c_file.read_text() + "\n/* edited */\n")
    second = source_stamp(csrc)
    assert second != first
    (csrc / "extra.h").write_text("int pm_extra(void);\n")
    assert source_stamp(csrc) != second


@needs_core
def test_every_declared_machine_function_is_exported() -> None:
    header = (CSRC / "machine.h").read_text()
    names = set(re.findall(r"\b(pm_\w+)\s*\(", header))
    assert {"pm_machine_new", "pm_run_batch", "pm_load", "pm_trace_copy"} <= names
    missing = sorted(n for n in names if not hasattr(native.lib, n))
    assert not missing, f"declared in machine.h but not in the built core: {missing}"
