"""The import graph between the desk's top-level packages, read by grimp from the source (imports
inside functions included). Print it with:

    .venv/bin/python -m tests.architecture.graph          # one line per dependency: count of imports
    .venv/bin/python -m tests.architecture.graph -v       # ... and every module-to-module import
"""

from __future__ import annotations

import sys
from collections import defaultdict
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


def cycles(edges: dict[tuple[str, str], set[tuple[str, str]]]) -> list[list[str]]:
    """The strongly connected groups of more than one package (Tarjan): each is an import cycle."""
    nodes = sorted({n for edge in edges for n in edge})
    out: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        out[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in out[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in nodes:
        if node not in index:
            visit(node)
    return groups


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
