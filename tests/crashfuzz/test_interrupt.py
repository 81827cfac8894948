"""An interrupted campaign keeps what it found: ``fuzz`` raises Interrupted with a partial
report; ``crashfuzz run`` stops its workers, saves the findings, prints and writes the partial
report and exits 130 (SIGINT) or 143 (SIGTERM)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from crashfuzz import FuzzConfig, fuzz
from crashfuzz.campaign import CHUNK_POINTS, Interrupted

# undo:U1 fails in the first unit of crash points (a unit takes about 2 s of CPU at this
# budget); all 88 units take minutes
LONG = ["run", "--runtime", "undo:U1", "--txs", "200", "--budget", "1024", "--samples", "64",
        "--no-replay"]

SLOW = '''
import time
from pathlib import Path

from pmsim.workloads.array import Array


class SlowArray(Array):
    """Array whose data reader, once the file 'slow' beside this one exists, says so (the file
    'inside') and waits for a signal, which it swallows, as user code with `except
    BaseException` may; every later call then takes 1 s, so the unit of crash points it is in
    (hundreds of reads) would outlast the test's bound: a stop request checked within the unit
    ends the campaign after a few reads. (A later call that waited for a signal again would
    wait for ever when one crash image reads the data twice before the campaign's next check.)"""

    def read_data(self, rt):
        here = Path(__file__)
        if here.with_name("caught").exists():
            time.sleep(1)
        elif here.with_name("slow").exists():
            here.with_name("inside").touch()
            while True:
                try:
                    time.sleep(0.2)
                except BaseException:
                    here.with_name("caught").touch()
                    break
        return super().read_data(rt)
'''


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


def _read_until(fd: int, seen: list[bytes], done: Callable[[str], bool], p: Any) -> None:
    """Read the terminal ``fd`` into ``seen`` until ``done(text so far)`` or the process ends."""
    while not done(b"".join(seen).decode(errors="replace")):
        assert p.poll() is None, "the campaign ended before it was interrupted"
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            try:
                seen.append(os.read(fd, 65536))
            except OSError:
                return


def _units_done(text: str) -> int:
    """Units finished according to the last progress line (``... 3/75 ...``)."""
    found = re.findall(r"(\d+)/(\d+)", text)
    return int(found[-1][0]) if found else 0


def _interrupt(tmp: Path, jobs: int, sig: signal.Signals, group: bool,
               twice: bool = False) -> tuple[int, str, str]:
    """Start the long campaign with its progress on a terminal; once a unit has finished (so
    findings exist), make the data reader wait for a signal and swallow it, and once it waits
    (the campaign is inside a unit that can never end) send ``sig`` (``twice``: again 50 ms
    later); return (exit code, out, err). No step depends on the machine's speed: each waits for what the
    campaign printed, and only a hang meets the generous bound."""
    (tmp / "slow.py").write_text(SLOW)
    leader, term = pty.openpty()
    # a terminal of 24 x 100 (a new pty reports 0 columns, which turns the bar into plain lines
    # printed at most every 30 s)
    fcntl.ioctl(term, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    p = subprocess.Popen([sys.executable, "-m", "crashfuzz", *LONG, "--jobs", str(jobs),
                          "--workload", f"{tmp / 'slow.py'}:SlowArray",
                          "--findings", str(tmp / "findings"), "--json", str(tmp / "r.json")],
                         stdout=subprocess.PIPE, stderr=term, text=True,
                         start_new_session=True)
    os.close(term)
    seen: list[bytes] = []
    try:
        _read_until(leader, seen, lambda text: _units_done(text) >= 1, p)
        (tmp / "slow").touch()
        while not (tmp / "inside").exists():
            assert p.poll() is None, "the campaign ended before it was interrupted"
            time.sleep(0.1)
        if jobs > 1:
            assert len(_related(p.pid)) >= jobs
        (os.killpg if group else os.kill)(p.pid, sig)
        if twice:
            time.sleep(0.05)
            (os.killpg if group else os.kill)(p.pid, sig)
        out, _ = p.communicate(timeout=600)  # a bound for hangs only: a busy machine is slow
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        while select.select([leader], [], [], 0)[0]:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen.append(chunk)
        os.close(leader)
    leftover = _related(p.pid)
    for pid in leftover:
        os.kill(pid, signal.SIGKILL)
    assert not leftover, f"processes of the interrupted run remain: {leftover}"
    return p.returncode, out, b"".join(seen).decode(errors="replace")


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


@pytest.mark.parametrize("jobs", [1, 2])
def test_ctrl_c_twice_keeps_everything(tmp_path: Path, jobs: int) -> None:
    """A second Ctrl-C 50 ms after the first does not undo the first one's saving."""
    rc, out, err = _interrupt(tmp_path, jobs, signal.SIGINT, group=True, twice=True)
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
