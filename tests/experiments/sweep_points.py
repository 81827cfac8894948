"""Point functions for the sweep tests: module-level, so that worker processes import them.

``work(point)`` records every call as a file in ``point["calls"]`` (when given), then, as the
point asks, sleeps, kills its own process or raises, and returns a row:
a short ``run_experiment`` when the point names a runtime, else a small arithmetic row.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

from pmsim.experiments.run import run_experiment


def calls(directory: Path, i: int) -> int:
    """How many times ``work`` ran point ``i`` with ``calls=directory``."""
    return len(list(directory.glob(f"call-{i}-*")))


def work(point: dict[str, Any]) -> dict[str, Any]:
    """One sweep point; see the module docstring. Options, in this order: ``sleep``: seconds
    to sleep unless the file ``fast`` exists; ``die`` ('once' or 'always'): ``os._exit`` the
    worker (once: only while ``died-<i>`` is absent); ``interrupt``: raise KeyboardInterrupt
    while ``interrupted-<i>`` is absent; ``fail`` (True or 'once'): raise ValueError (once:
    only while ``failed-<i>`` is absent)."""
    i = point["i"]
    d = Path(point["calls"]) if "calls" in point else None
    if d is not None:
        (d / f"call-{i}-{os.getpid()}-{uuid.uuid4().hex}").touch()
        (d / f"pid-{i}").write_text(str(os.getpid()))
        if point.get("sleep") and not (d / "fast").exists():
            time.sleep(point["sleep"])
        died, interrupted = d / f"died-{i}", d / f"interrupted-{i}"
        if point.get("die") == "always" or (point.get("die") == "once" and not died.exists()):
            died.touch()
            os._exit(13)
        if point.get("interrupt") and not interrupted.exists():
            interrupted.touch()
            raise KeyboardInterrupt
    if point.get("fail") == "once" and d is not None and not (d / f"failed-{i}").exists():
        (d / f"failed-{i}").touch()
        raise ValueError(f"point {i} fails once on purpose")
    if point.get("fail") is True:
        raise ValueError(f"point {i} fails on purpose")
    if "runtime" not in point:
        return {"i": i, "square": i * i}
    r = run_experiment(point["runtime"], "array", point["config"], txs=point.get("txs", 6),
                       params={"slots": 64, "slot_words": 2}, seed=point.get("seed"))
    return {**r.row(), "i": i, "config": r.config}


def not_a_row(point: dict[str, Any]) -> Any:
    """A broken point function: returns a list."""
    return [point["i"]]
