"""The import graph between the desk's top-level packages, read by grimp from the source (imports
inside functions included). Print it with:

    .venv/bin/python -m tests.architecture.graph          # one line per dependency: count of imports
    .venv/bin/python -m tests.architecture.graph -v       # ... and every module-to-module import
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("config", "reviews", "research", "trading", "agents", "security", "vocabulary")
TRADING_CONCEPTS = ("strategies", "pipeline", "book", "market")


def module_graph() -> grimp.ImportGraph:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def package_imports(graph: grimp.ImportGraph, depth: int = 1) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """Every import between two different packages cut at ``depth`` dotted parts, with the
    module-to-module imports that make it up. Migrations are left out: they are generated."""
    edges: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for importer in graph.modules:
        if ".migrations" in importer:
            continue
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = ".".join(importer.split(".")[:depth]), ".".join(imported.split(".")[:depth])
            if a != b:
                edges[(a, b)].add((importer, imported))
    return dict(edges)


def _reachable(start: str, out: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in out.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The groups of packages that reach each other through imports: each group is a cycle."""
    out: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        out[a].add(b)
    reach = {node: _reachable(node, out) for node in sorted({n for edge in out.items() for n in (edge[0], *edge[1])})}
    groups = {tuple(sorted(n for n in reach if n in reach[node] and node in reach[n])) for node in reach}
    return sorted(list(group) for group in groups if len(group) > 1)


def main(argv: list[str]) -> None:
    edges = package_imports(module_graph())
    for (a, b), imports in sorted(edges.items()):
        print(f"{a} -> {b}: {len(imports)}")
        if "-v" in argv:
            for importer, imported in sorted(imports):
                print(f"    {importer} -> {imported}")
    print(f"cycles: {cycles(edges) or 'none'}")


if __name__ == "__main__":
    main(sys.argv[1:])
