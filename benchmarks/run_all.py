"""Run every ``benchmarks/bench_*.py`` in turn (``make bench``); fail if any of them fails."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    """Run each benchmark script with this interpreter, passing ``argv`` on (e.g. --quick)."""
    here = Path(__file__).resolve().parent
    scripts = sorted(here.glob("bench_*.py"))
    if not scripts:
        print(f"no bench_*.py scripts in {here.name}/")
        return 1
    failed = []
    for script in scripts:
        print(f"== {script.name}", flush=True)
        t = time.perf_counter()
        rc = subprocess.call([sys.executable, str(script), *argv])
        print(f"-- {script.name}: {'ok' if rc == 0 else f'FAILED (exit {rc})'} "
              f"in {time.perf_counter() - t:.1f} s\n", flush=True)
        if rc:
            failed.append(script.name)
    if failed:
        print(f"{len(failed)} benchmark(s) failed: {', '.join(failed)}")
        return 1
    print(f"{len(scripts)} benchmark(s) ran")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
