"""Every notebook in notebooks/ executes top to bottom without error (they assert their findings)."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    # the kernel is local and short-lived: keep its start-up notices (e.g. that it listens on
    # localhost TCP without encryption) out of the test output
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     extra_arguments=["--IPKernelApp.log_level=ERROR"],
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
