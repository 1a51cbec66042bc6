"""The type check runs with the tests: mypy over the scope pyproject.toml's [tool.mypy] lists (the
pure cores and the services) must find nothing, so `./desk test` fails on a type error as it does
on a failing test. Deselect the mypy runs with ``-m "not types"`` when iterating on something else.

mypy keeps its cache in var/mypy-cache, so a run after the first rechecks only what changed.

Where the types meet the database (text columns) and settings (JSON), the pure code's words are
reached through narrowings that refuse anything else; the last tests hold them to that.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from decimal import Decimal
from pathlib import Path

import pytest

from tests.architecture.graph import ROOT
from vocabulary.costs import CostModel, as_side
from vocabulary.fills import as_fill_policy, reference_price
from vocabulary.trade import as_direction

# A cold run (no cache) takes well under a minute; this only stops a hung process.
TIMEOUT_SECONDS = 600

# Code a careless hand might write: a direction the desk does not have, a price as text, a field
# no model has. If the check still passes on this, it checks nothing.
CARELESS_CODE = '''
from decimal import Decimal

from trading.models import Position
from vocabulary.fills import entry_side


def side_of_a_flat_trade() -> str:
    return entry_side("FLAT")


def entry_of(position: Position) -> Decimal:
    return position.entry_price_text


def risk_amount() -> Decimal:
    return "1500.00"
'''


def _mypy(*arguments: str) -> subprocess.CompletedProcess[str]:
    """The venv's mypy, from the repository root so that pyproject.toml's [tool.mypy] applies. It
    inherits this process's environment: the Django plugin loads config.settings, which reads it."""
    return subprocess.run(
        [sys.executable, "-m", "mypy", *arguments],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )


@pytest.mark.types
def test_the_typed_scope_has_no_type_errors() -> None:
    result = _mypy()
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "Success" in output, (
        "mypy found type errors in the typed scope (pyproject.toml, [tool.mypy] files). Fix the types "
        "(annotations, narrowing); a `# type: ignore[code]` needs a one-line reason.\n" + output
    )


@pytest.mark.types
def test_the_check_catches_careless_code(tmp_path: Path) -> None:
    careless = tmp_path / "careless.py"
    careless.write_text(CARELESS_CODE)
    result = _mypy(str(careless))
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert '"entry_side" has incompatible type "Literal[\'FLAT\']"' in output, output
    assert '"Position" has no attribute "entry_price_text"' in output, output  # the Django plugin is on
    assert 'Incompatible return value type (got "str", expected "Decimal")' in output, output


def test_the_check_cannot_be_switched_off_in_the_config() -> None:
    """An error silenced for everything or a package skipped wholesale would turn the check above
    into a formality; missing stubs are ignored per third-party package, by name."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["files"], "[tool.mypy] files lists the typed scope"
    assert config.get("follow_imports", "normal") in ("normal", "silent")
    for option in ("ignore_missing_imports", "ignore_errors"):
        assert not config.get(option), f"[tool.mypy] {option} = true would hide errors everywhere"
    for override in config.get("overrides", []):
        modules = override["module"] if isinstance(override["module"], list) else [override["module"]]
        assert not override.get("ignore_errors"), f"ignore_errors on {modules}"
        assert override.get("follow_imports", "normal") != "skip", f"follow_imports = skip on {modules}"
        if override.get("ignore_missing_imports"):
            ours = ("config", "reviews", "research", "trading", "agents", "security", "vocabulary")
            assert not any(module.split(".")[0] in ours for module in modules), f"our own code in {modules}"


@pytest.mark.parametrize(
    ("narrow", "words", "careless"),
    [
        (as_direction, ("LONG", "SHORT"), ("FLAT", "long", " LONG", "", "BUY")),
        (as_side, ("BUY", "SELL"), ("HOLD", "buy", "SELL ", "", "LONG")),
        (as_fill_policy, ("next_open", "last_price"), ("vwap", "NEXT_OPEN", "", "last price")),
    ],
)
def test_stored_text_becomes_a_word_of_the_vocabulary_only_when_it_is_one(narrow, words, careless) -> None:
    for word in words:
        assert narrow(word) == word
    for value in careless:
        with pytest.raises(ValueError, match=re.escape(repr(value))):
            narrow(value)


def test_cost_overrides_that_are_not_a_mapping_are_refused_with_an_example() -> None:
    with pytest.raises(ValueError, match=re.escape('e.g. {"brokerage_flat": "20"}; got')):
        CostModel.from_mapping(["brokerage_flat", "20"])
    assert CostModel.from_mapping({"brokerage_flat": "20"}).brokerage_flat == 20


def test_a_last_price_order_waits_while_the_instrument_has_no_close() -> None:
    assert reference_price("last_price", last_close=None, next_open=Decimal("101.5")) is None
    assert reference_price("next_open", last_close=None, next_open=Decimal("101.5")) == Decimal("101.5")
