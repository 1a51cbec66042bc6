"""The import contracts: pure cores import no framework; research reaches no order code; the
forecast never reaches risk or sizing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_import_contracts_are_kept():
    result = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert "Pure cores import no framework" in result.stdout
    assert "Research reaches no order, approval or broker code" in result.stdout
    assert result.returncode == 0, result.stdout + result.stderr
    assert "The price forecast never reaches risk, sizing or execution" in result.stdout
    assert "3 kept, 0 broken" in result.stdout
