"""The import contracts (pyproject.toml, [tool.importlinter]) and the app graph they promise:
one-way layers, pure cores, research kept away from the book, the forecast kept away from sizing."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.architecture.graph import ROOT, TRADING_CONCEPTS, cycles, module_graph, package_imports

CONTRACTS = (
    "The apps depend one way",
    "Inside trading, concepts depend one way",
    "Pure cores import no framework",
    "Research reaches no order, approval, broker, pipeline or review code",
    "The price forecast never reaches risk, sizing or execution",
)
# Top to bottom; research sits beside reviews. A package may import only packages below it.
LAYERS = (("config",), ("reviews", "research"), ("trading",), ("agents",), ("security",), ("vocabulary",))


CONCEPTS_CONTRACT = "Inside trading, concepts depend one way"


def _ignored_concept_imports() -> set[tuple[str, str]]:
    """The imports the concepts contract lets through (pyproject.toml's ``ignore_imports``), so this
    test and lint-imports agree on one list."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    [contract] = [c for c in config["tool"]["importlinter"]["contracts"] if c["name"].startswith(CONCEPTS_CONTRACT)]
    return {tuple(part.strip() for part in line.split("->")) for line in contract.get("ignore_imports", [])}


@pytest.fixture(scope="module")
def graph():
    return module_graph()


def _rank(package: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if package in layer)


def test_the_import_contracts_are_kept():
    result = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )

    for name in CONTRACTS:
        assert name in result.stdout
    assert f"{len(CONTRACTS)} kept, 0 broken" in result.stdout, result.stdout + result.stderr
    assert result.returncode == 0


def test_imports_inside_functions_are_in_the_graph(graph):
    # trading.apps connects the strategy receivers inside ready(): a graph that missed it would
    # also miss a cycle hidden the same way.
    assert "trading.strategies.receivers" in graph.find_modules_directly_imported_by("trading.apps")


def test_no_import_cycle_between_the_apps(graph):
    assert cycles(package_imports(graph)) == []


def test_every_import_between_the_apps_points_down(graph):
    upward = sorted(
        f"{importer} -> {imported}"
        for (a, b), imports in package_imports(graph).items()
        if _rank(a) >= _rank(b)
        for importer, imported in imports
    )
    assert upward == []


def test_no_import_cycle_between_tradings_concepts(graph):
    ignored = _ignored_concept_imports()
    edges = {
        (a, b): kept
        for (a, b), imports in package_imports(graph, depth=2).items()
        if a.startswith("trading.") and b.startswith("trading.")
        if (kept := imports - ignored)
    }
    assert cycles(edges) == []
    concepts = [f"trading.{name}" for name in TRADING_CONCEPTS]
    for (a, b), imports in edges.items():
        if a in concepts and b in concepts:
            assert concepts.index(a) < concepts.index(b), sorted(imports)


def test_research_reads_only_market_data_from_trading(graph):
    allowed = (
        "trading.market.selectors",
        "trading.models.market",
        "trading.market.domain",
        "trading.market.research_signals",  # the registry through which the pipeline reads attached signals
        "trading.audit",  # who started, cancelled, attached: the desk's one audit log
        "trading.api.errors",  # refusals answered in the desk's one shape
        "trading.refusals",
    )
    reached = sorted(
        imported
        for (a, b), imports in package_imports(graph).items()
        if (a, b) == ("research", "trading")
        for _importer, imported in imports
        if not imported.startswith(allowed)
    )
    assert reached == []


def test_the_cycle_finder_finds_a_cycle():
    edges = {("a", "b"): set(), ("b", "c"): set(), ("c", "a"): set(), ("c", "d"): set()}
    assert cycles(edges) == [["a", "b", "c"]]
