"""Parallel test processes (pytest-xdist) keep apart: each has its own data folder (SQLite test
database, embedded broker, channel relay, secret key) and its own Redis key prefix, set before the
settings load and inherited by the workers and servers its tests start."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings

from tests.processes import xdist_worker_environment

ROOT = Path("/srv/desk")


def test_an_xdist_worker_gets_a_folder_under_the_runs_and_a_key_prefix_of_its_own(tmp_path):
    environ = {"PYTEST_XDIST_WORKER": "gw3", "DESK_DATA_DIR": str(tmp_path)}

    assert xdist_worker_environment(environ, ROOT) == {
        "DESK_DATA_DIR": str(tmp_path / "gw3"),
        "REDIS_KEY_PREFIX": "gw3:",
    }


def test_without_a_folder_the_worker_takes_one_under_var_and_keeps_a_prefix_already_set():
    environ = {"PYTEST_XDIST_WORKER": "gw0", "REDIS_KEY_PREFIX": "ci-"}

    assert xdist_worker_environment(environ, ROOT) == {
        "DESK_DATA_DIR": str(ROOT / "var" / "gw0"),
        "REDIS_KEY_PREFIX": "ci-gw0:",
    }


def test_a_serial_run_changes_nothing(tmp_path):
    assert xdist_worker_environment({"DESK_DATA_DIR": str(tmp_path)}, ROOT) == {}


def test_this_process_reads_the_folder_and_prefix_it_was_given():
    """Whatever this run is (serial or a worker), the settings took the environment's values, and
    every Redis user (broker, results, channel layer, throttle cache) carries the prefix."""
    assert Path(os.environ.get("DESK_DATA_DIR", settings.BASE_DIR / "var")).resolve() == settings.DATA_DIR
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        assert settings.DATA_DIR.name == worker
        assert settings.REDIS_KEY_PREFIX.endswith(f"{worker}:")
    prefix = settings.REDIS_KEY_PREFIX
    if settings.REDIS_URL:
        assert settings.CACHES["throttle"]["KEY_PREFIX"] == f"{prefix}desk"
        assert settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"] == f"{prefix}asgi"
        if prefix:
            assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] == prefix
            assert settings.CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS["global_keyprefix"] == prefix
    else:
        assert Path(settings.DATABASES["default"]["NAME"]).parent == settings.DATA_DIR
        assert Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]).is_relative_to(settings.DATA_DIR)
        assert Path(settings.CHANNEL_LAYERS["default"]["CONFIG"]["path"]).parent == settings.DATA_DIR
