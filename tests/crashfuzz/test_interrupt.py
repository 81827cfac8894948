"""An interrupted campaign keeps what it found: ``fuzz`` raises Interrupted with a partial
report; ``crashfuzz run`` stops its workers, saves the findings, prints and writes the partial
report and exits 130 (SIGINT) or 143 (SIGTERM)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from crashfuzz import FuzzConfig, fuzz
from crashfuzz.campaign import CHUNK_POINTS, Interrupted

# undo:U1 fails in the first chunk of crash points (about 1 s of CPU); all of it takes minutes
LONG = ["run", "--runtime", "undo:U1", "--txs", "200", "--budget", "100000", "--no-replay"]


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state is [0], ppid [1], session [3])."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _related(pid: int) -> list[int]:
    """Processes in ``pid``'s session (it leads one) or whose parent is ``pid``, but ``pid``."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != pid:
            st = _stat(int(d))
            if st is not None and (int(st[3]) == pid or int(st[1]) == pid):
                out.append(int(d))
    return out


def _cpu(pid: int) -> float:
    st = _stat(pid)
    return 0.0 if st is None else (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")


def _interrupt(tmp: Path, jobs: int, sig: signal.Signals, group: bool) -> tuple[int, str, str]:
    """Start the long campaign, signal it once the first chunk must have finished (judged by
    CPU time, not wall time: the machine may be busy), and return (exit code, out, err)."""
    p = subprocess.Popen([sys.executable, "-m", "crashfuzz", *LONG, "--jobs", str(jobs),
                          "--findings", str(tmp / "findings"), "--json", str(tmp / "r.json")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.1)
            workers = _related(p.pid)
            if jobs == 1 and _cpu(p.pid) > 2.5:
                break
            if jobs > 1 and len(workers) >= jobs and min(map(_cpu, workers)) > 1.6:
                break
        assert p.poll() is None, "the campaign ended before it was interrupted"
        assert len(_related(p.pid)) >= (jobs if jobs > 1 else 0)
        (os.killpg if group else os.kill)(p.pid, sig)
        out, err = p.communicate(timeout=120)  # a bound for hangs; a busy machine is slow
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    leftover = _related(p.pid)
    for pid in leftover:
        os.kill(pid, signal.SIGKILL)
    assert not leftover, f"processes of the interrupted run remain: {leftover}"
    return p.returncode, out, err


def _assert_partial_and_saved(tmp: Path, out: str, err: str) -> None:
    assert "Traceback" not in err, err
    assert "PARTIAL: interrupted after" in out and "FAILURE [" in out, out[-2000:]
    doc = json.loads((tmp / "r.json").read_text())
    assert doc["partial"] is True and doc["failure_count"] > 0
    assert CHUNK_POINTS <= doc["points"] < doc["points_planned"]
    saved = sorted((tmp / "findings").glob("*.json"))
    assert saved and len(saved) == len(list((tmp / "findings").glob("*.npy")))
    assert json.loads(saved[0].read_text())["kind"]


def test_sigint_saves_findings_and_a_partial_report(tmp_path: Path) -> None:
    rc, out, err = _interrupt(tmp_path, 1, signal.SIGINT, group=False)
    assert rc == 130, err
    _assert_partial_and_saved(tmp_path, out, err)


def test_sigterm_stops_the_workers_and_keeps_the_findings(tmp_path: Path) -> None:
    rc, out, err = _interrupt(tmp_path, 2, signal.SIGTERM, group=False)
    assert rc == 143, err
    _assert_partial_and_saved(tmp_path, out, err)


def test_ctrl_c_to_the_whole_process_group(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches the workers too: they leave it to the parent."""
    rc, out, err = _interrupt(tmp_path, 2, signal.SIGINT, group=True)
    assert rc == 130, err
    _assert_partial_and_saved(tmp_path, out, err)


@pytest.mark.parametrize("shards", [1, 2])
def test_fuzz_raises_interrupted_with_what_finished(shards: int) -> None:
    cfg = FuzzConfig(runtime="redo:R2", workload="array", txs=8, depth=1, idempotence=0)
    seen: list[int] = []

    def progress(done: int, total: int) -> None:
        seen.append(done)
        if done >= 2:  # two shards may finish in one wait: 1 -> 3
            raise KeyboardInterrupt

    with ThreadPoolExecutor(2) as ex, pytest.raises(Interrupted) as info:
        fuzz(cfg, executor=ex, shards=shards, progress=progress)
    rep = info.value.report
    assert isinstance(info.value, KeyboardInterrupt)
    assert rep.partial and not rep.ok and rep.failures
    assert rep.points == seen[-1] * CHUNK_POINTS < rep.points_planned
    assert f"PARTIAL: interrupted after {rep.points} of" in rep.summary()
