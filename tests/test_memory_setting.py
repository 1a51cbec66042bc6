"""TRADING_MEMORY: the hybrid index is the only memory backend; anything else stops start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _start(tmp_path: Path, value: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DESK_DATA_DIR": str(tmp_path)}
    env.pop("TRADING_MEMORY", None)
    if value is not None:
        env["TRADING_MEMORY"] = value
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("value", ["chroma", "faiss"])
def test_a_memory_backend_other_than_hybrid_stops_start_up_with_the_reason(tmp_path, value):
    started = _start(tmp_path, value)

    assert started.returncode != 0
    assert "ImproperlyConfigured" in started.stderr
    assert f"TRADING_MEMORY='{value}' is not a memory backend" in started.stderr


@pytest.mark.parametrize("value", [None, "hybrid", " Hybrid "])
def test_the_hybrid_memory_starts_whether_named_or_not(tmp_path, value):
    assert _start(tmp_path, value).returncode == 0
