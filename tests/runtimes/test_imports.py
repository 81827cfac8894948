"""pmsim.runtimes and pmsim.hw import each other without a circle, and each module imports alone.

The graph is read from the source with :mod:`ast`, not by importing it: an edge is an import
statement of a module (``import a.b``, ``from a import b``, ``from . import b``, ``from ..b
import c``, inside ``if TYPE_CHECKING:`` too) to a module of pmsim. Statements at module or
class level run when the module is imported; those inside a function run when it is called
(lazy). The frame (the top level of pmsim.runtimes) must not reach a protocol family, a family
must not reach another family that reaches it back, and no module-level circle may pass through
pmsim.runtimes or pmsim.hw. A lazy import may close a circle only where it is listed in
:data:`LAZY`, with the reason it cannot be avoided.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WATCHED = ("pmsim.runtimes", "pmsim.hw")
"""Packages no circle may pass through."""

LAZY: dict[tuple[str, str], str] = {
    ("pmsim.runtimes.base", "pmsim.runtimes.registry"):
        "a runtime refused in a domain suggests registered alternatives, and the registry holds "
        "Runtime classes",
    ("pmsim.runtimes.mutation", "pmsim.runtimes.registry"):
        "a Mutant names its base runtime by any name the registry resolves, and the registry "
        "builds Mutants",
    ("pmsim.runtimes.registry", "pmsim.programs.adapt"):
        "a PM program named where a runtime is expected runs as its adapter runtime, which is "
        "a Runtime subclass",
    ("pmsim.workloads.base", "pmsim.programs.adapt"):
        "a PM program named where a workload is expected runs as its adapter workload, which "
        "is a Workload subclass",
    ("pmsim.programs.adapt", "pmsim.workloads.session"):
        "a program's persist steps are found by a short session of its operations, and a "
        "session builds runtimes through the registry",
}
"""Function-level imports allowed to close a circle: (importer, imported) -> why."""


def module_files() -> dict[str, Path]:
    """Every module of the pmsim package by dotted name (a package by its own name)."""
    out = {}
    for path in sorted((ROOT / "pmsim").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = module_files()


def _statements(body: list[ast.stmt], lazy: bool) -> Iterator[tuple[ast.stmt, bool]]:
    """The statements of ``body`` and of the blocks in it; inside a function they are lazy."""
    for node in body:
        yield node, lazy
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                yield from _statements(inner, lazy or isinstance(
                    node, ast.FunctionDef | ast.AsyncFunctionDef))
        if isinstance(node, ast.Match):
            for case in node.cases:
                yield from _statements(case.body, lazy)


def imports(name: str) -> set[tuple[str, bool]]:
    """``(module, lazy)`` for each module of pmsim that module ``name`` imports."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[tuple[str, bool]] = set()
    for node, lazy in _statements(ast.parse(path.read_text(encoding="utf-8")).body, False):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                       for a in node.names]
        for t in targets:
            while t and t not in MODULES:  # `import pmsim.x.y` of a name inside a module
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add((t, lazy))
    return out


GRAPH = {name: imports(name) for name in MODULES}


def watched(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in WATCHED)


def cycles(edges: dict[str, set[str]]) -> list[tuple[list[str], list[str]]]:
    """``(a cycle a -> ... -> a, all modules of its strongly connected component)`` for each
    component of the graph that has a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan; the graph is small, recursion is fine
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [(_shortest_cycle(edges, set(c)), c) for c in comps]


def _shortest_cycle(edges: dict[str, set[str]], comp: set[str]) -> list[str]:
    """A shortest cycle through the first module of a strongly connected component (BFS)."""
    start = min(comp)
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges.get(v, set()) & comp):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [*reversed(path), start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start}")


def circles(edges: dict[str, set[str]]) -> str:
    """The cycles that pass through pmsim.runtimes or pmsim.hw, one line each."""
    return "\n".join(" -> ".join(cycle) + (f" (all of: {', '.join(comp)})" if len(comp) > 2 else "")
                     for cycle, comp in cycles(edges) if any(watched(m) for m in comp))


def test_no_module_level_circle() -> None:
    found = circles({m: {t for t, lazy in ts if not lazy} for m, ts in GRAPH.items()})
    assert not found, f"import circles (module level):\n{found}"


def test_lazy_imports_close_no_circle_but_the_listed_ones() -> None:
    found = circles({m: {t for t, _ in ts} - {t for (f, t) in LAZY if f == m}
                     for m, ts in GRAPH.items()})
    assert not found, f"import circles (lazy imports included):\n{found}"
    for (importer, imported), why in LAZY.items():
        assert (imported, True) in GRAPH[importer], f"{importer} no longer imports {imported} " \
            f"lazily; drop it from LAZY ({why})"


def test_the_cycle_finder_names_a_circle() -> None:
    edges = {"pmsim.runtimes.a": {"pmsim.runtimes.b"}, "pmsim.runtimes.b": {"pmsim.runtimes.c"},
             "pmsim.runtimes.c": {"pmsim.runtimes.a"}, "pmsim.x": {"pmsim.y"}, "pmsim.y": {"pmsim.x"}}
    assert circles(edges) == ("pmsim.runtimes.a -> pmsim.runtimes.b -> pmsim.runtimes.c -> "
                              "pmsim.runtimes.a (all of: pmsim.runtimes.a, pmsim.runtimes.b, "
                              "pmsim.runtimes.c)")


FRAME = sorted(m for m in MODULES if m.startswith("pmsim.runtimes.") and m.count(".") == 2
               and not (MODULES[m].name == "__init__.py"))
FAMILIES = sorted(m for m in MODULES if m.startswith("pmsim.runtimes.") and m.count(".") == 2
                  and MODULES[m].name == "__init__.py")


def reach(start: str, lazy: bool) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        v = todo.pop()
        for t, is_lazy in GRAPH[v]:
            if (lazy or not is_lazy) and t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def test_every_family_is_registered_and_imports_its_modules() -> None:
    """A family subpackage is one entry of BUILTIN, and importing it imports (so registers)
    every module in its folder."""
    from pmsim.runtimes.registry import BUILTIN

    assert sorted(BUILTIN) == sorted(f.rpartition(".")[2] for f in FAMILIES)
    for family in FAMILIES:
        members = {m for m in MODULES if m.startswith(family + ".")}
        assert members <= reach(family, lazy=False), (family, sorted(members - reach(family, False)))


def test_the_frame_imports_no_protocol_family() -> None:
    assert FAMILIES, "the protocol families are subpackages of pmsim.runtimes"
    bad = {m: sorted(t for t in reach(m, lazy=True) if any(t == f or t.startswith(f + ".")
                                                           for f in FAMILIES))
           for m in [*FRAME, "pmsim.runtimes"]}
    assert not {m: ts for m, ts in bad.items() if ts}, bad


@pytest.mark.parametrize("order", [
    ("pmsim.runtimes.base",),
    ("pmsim.runtimes.steps", "pmsim.runtimes.base"),
    ("pmsim.runtimes.alloclog",),
    ("pmsim.runtimes.mutation",),
    ("pmsim.runtimes.registry", "pmsim.runtimes"),
    ("pmsim.runtimes.options",),
    ("pmsim.runtimes.labels",),
    ("pmsim.runtimes.nvhtm.mutants", "pmsim.runtimes.nvhtm"),
    ("pmsim.runtimes.dudetx.mutants",),
    ("pmsim.runtimes.proteus.atom", "pmsim.hw.proteus"),
    ("pmsim.hw.proteus.atom",),
    ("pmsim.hw.engines.native_engine",),
    ("pmsim.runtimes.dudetx.locks", "pmsim.runtimes.volatile.locks"),
])
def test_modules_import_alone_in_any_order(order: tuple[str, ...]) -> None:
    """Each module imports first in a fresh interpreter (no other module of pmsim loaded
    before it by the test), then a name resolves through the registry."""
    code = "; ".join(f"import {m}" for m in order) + (
        "; from pmsim.runtimes import get_runtime, UndoRuntime; "
        "assert get_runtime('undo') is UndoRuntime and get_runtime('dudetx:M1')")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
