"""The reproducer a failure prints (or its saved finding) reproduces that failure."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

import crashfuzz
from crashfuzz import FuzzConfig, fuzz, replay, save_findings
from crashfuzz.report import format_failure
from pmsim.runtimes import get_runtime
from pmsim.workloads import get_workload
from pmsim.workloads.kv import KV

USER = '''
from pmsim.runtimes import Mutant, UndoRuntime, drop
from pmsim.workloads.kv import KV


class FileKV(KV):
    fuzz_params = {"buckets": 2, "keys": 4}


no_pb = Mutant("undo:file-no-pb", UndoRuntime, [drop("undo.append.pb")], domains=("pdom1",))
'''


def reproduce(report: crashfuzz.Report) -> tuple[str, str]:
    """(the first failure as printed, the first failure the printed reproducer raises)."""
    text = format_failure(report.failures[0], report.config)
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith("  reproduce (re-runs"))
    with pytest.raises(AssertionError) as e:
        exec(lines[i + 1].strip(), {})  # noqa: S102 - the reproducer is code to run
    again = str(e.value)
    start = again.index("\n\nFAILURE [") + 2
    return "\n".join(lines[:i]), "\n".join(again[start:].splitlines()[:i])


def test_every_non_default_field_is_reproduced() -> None:
    cfg = FuzzConfig(runtime="undo:U1", workload="kv", domain="pdom0", txs=5, idempotence=1,
                     depth=1, reduce=False, params=(("keys", 4),), seed=3, new_tx=2)
    rep = fuzz(cfg)
    printed, again = reproduce(rep)
    assert printed == again
    assert "FuzzConfig(runtime='undo:U1', workload='kv', params=(('keys', 4),), domain='pdom0'" \
        in format_failure(rep.failures[0], cfg)


def test_user_classes_passed_as_objects_are_reproduced_by_path(tmp_path: Path) -> None:
    f = tmp_path / "user.py"
    f.write_text(textwrap.dedent(USER))
    rep = fuzz(FuzzConfig(txs=4, depth=1, idempotence=0), runtime=get_runtime(f"{f}:no_pb"),
               workload=get_workload(f"{f}:FileKV"))
    fail = rep.failures[0]
    assert (fail.config.runtime, fail.config.workload) == (f"{f}:no_pb", f"{f}:FileKV")
    printed, again = reproduce(rep)
    assert printed == again
    path = save_findings(rep, tmp_path / "findings")[0]
    assert replay(path, verbose=False).message == fail.message  # type: ignore[union-attr]


def test_an_instance_is_reproduced_by_its_class_and_parameters() -> None:
    rep = fuzz(FuzzConfig(runtime="redo:R1", txs=5, depth=1, idempotence=0), workload=KV(keys=4))
    assert rep.failures[0].config.workload == "kv"
    assert dict(rep.failures[0].config.params) == {"buckets": 16, "keys": 4}
    printed, again = reproduce(rep)
    assert printed == again


def _local_runtime() -> Any:
    class LocalNoPB(get_runtime("undo:U1")):  # type: ignore[misc,valid-type]
        name = "local-no-pb"
    return LocalNoPB


def test_code_without_an_import_path_is_said_so() -> None:
    main = type("NotebookKV", (KV,), {"__module__": "__main__"})
    rep = fuzz(FuzzConfig(txs=5, depth=1, idempotence=0), runtime=_local_runtime(), workload=main)
    text = format_failure(rep.failures[0], rep.config)
    assert "reproduce: this report alone cannot, because the runtime LocalNoPB is defined " \
           "inside a function" in text
    assert "the workload NotebookKV is defined in __main__" in text
    assert "runtime=..., workload=...))" in text
    assert "FuzzConfig(runtime='undo'" not in text  # never a reproducer of something else


def test_names_passed_beside_the_config_are_reproduced() -> None:
    rep = fuzz(FuzzConfig(txs=5, depth=1, idempotence=0), runtime="undo:U1", workload="kv")
    assert (rep.failures[0].config.runtime, rep.failures[0].config.workload) == ("undo:U1", "kv")
    printed, again = reproduce(rep)
    assert printed == again
