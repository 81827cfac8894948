"""pmsim.options: output paths checked before any work, --jobs bounds, lists naming nothing."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from pmsim.errors import ConfigError
from pmsim.options import (
    MAX_JOBS,
    check_jobs,
    check_output_dir,
    check_output_file,
    jobs_arg,
    name_list,
)


def test_output_file(tmp_path: Path) -> None:
    check_output_file("--out", None)
    check_output_file("--out", str(tmp_path / "new.md"))
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="is a directory"):
        check_output_file("--out", str(tmp_path / "d"))
    with pytest.raises(ConfigError, match="does not exist"):
        check_output_file("--out", str(tmp_path / "no" / "t.md"))
    check_output_file("--md", str(tmp_path / "no" / "t.md"), create_parents=True)
    with pytest.raises(ConfigError, match="is not a directory"):
        check_output_file("--out", str(tmp_path / "f" / "t.md"))
    with pytest.raises(ConfigError, match="'.*f' is a file, so directory"):
        check_output_file("--md", str(tmp_path / "f" / "a" / "t.md"), create_parents=True)
    assert not (tmp_path / "no").exists(), "a check creates nothing"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_output_file_not_writable(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(ConfigError, match="cannot write in directory"):
            check_output_file("--out", str(ro / "t.md"))
    finally:
        ro.chmod(0o700)


def test_output_dir(tmp_path: Path) -> None:
    check_output_dir("--out", str(tmp_path / "a" / "b"))
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="is a file, not a directory"):
        check_output_dir("--out", str(tmp_path / "f"))
    with pytest.raises(ConfigError, match="cannot be created"):
        check_output_dir("--out", str(tmp_path / "f" / "sub"))


def test_jobs() -> None:
    assert jobs_arg("1") == 1 and jobs_arg(str(MAX_JOBS)) == MAX_JOBS
    for bad in ("0", str(MAX_JOBS + 1), "x", "2.5"):
        with pytest.raises(argparse.ArgumentTypeError, match=f"1..{MAX_JOBS}"):
            jobs_arg(bad)
    check_jobs(None)
    check_jobs(4)
    for bad in (0, MAX_JOBS + 1, True, 2.0):
        with pytest.raises(ConfigError, match=f"1..{MAX_JOBS}"):
            check_jobs(bad)


def test_name_list() -> None:
    assert name_list("--x", None) is None
    assert name_list("--x", ["a,b", "c", " d , "]) == ["a", "b", "c", "d"]
    for empty in ([""], [",", " "], []):
        with pytest.raises(ConfigError, match="names nothing"):
            name_list("--x", empty, "a")
