"""How DATABASE_URL and DB_POOL_* become DATABASES: read in a fresh interpreter, as a process
starting up would (the settings module is read once per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PRINT_DEFAULT_DB = (
    "import django, json; django.setup(); from django.conf import settings; "
    "db = settings.DATABASES['default']; print(json.dumps({'max_age': db['CONN_MAX_AGE'], "
    "'pool': db.get('OPTIONS', {}).get('pool'), 'app': db.get('OPTIONS', {}).get('application_name'), "
    "'sqlite': {'timeout': db['OPTIONS'].get('timeout'), 'transaction_mode': db['OPTIONS'].get('transaction_mode'), "
    "'wal': 'journal_mode=WAL' in db['OPTIONS'].get('init_command', '')} if 'sqlite' in db['ENGINE'] else None}))"
)


def _database_settings(tmp_path: Path, **env: str) -> dict:
    environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("DB_POOL_") and key not in {"DATABASE_URL", "REQUIRE_SERVICES"}
    }
    environ |= {"DJANGO_SETTINGS_MODULE": "config.settings", "DESK_DATA_DIR": str(tmp_path), **env}
    done = subprocess.run(
        [sys.executable, "-c", PRINT_DEFAULT_DB], cwd=ROOT, env=environ, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_postgresql_is_pooled_per_process_with_no_persistent_connections(tmp_path):
    db = _database_settings(tmp_path, DATABASE_URL="postgres://desk@db.example:5432/desk?application_name=web")

    assert db["max_age"] == 0
    assert db["pool"] == {"min_size": 2, "max_size": 10, "timeout": 10.0, "max_idle": 600.0}
    assert db["app"] == "web"  # options in the URL survive


def test_the_pool_size_and_wait_come_from_the_environment(tmp_path):
    db = _database_settings(
        tmp_path,
        DATABASE_URL="postgres://desk@db.example:5432/desk",
        DB_POOL_MIN_SIZE="4",
        DB_POOL_MAX_SIZE="3",
        DB_POOL_TIMEOUT="2.5",
    )

    assert db["pool"] == {"min_size": 3, "max_size": 3, "timeout": 2.5, "max_idle": 600.0}


def test_a_pool_size_of_zero_means_one_connection_per_request(tmp_path):
    db = _database_settings(tmp_path, DATABASE_URL="postgres://desk@db.example:5432/desk", DB_POOL_MAX_SIZE="0")

    assert db["max_age"] == 0 and db["pool"] is None


def test_sqlite_is_never_pooled(tmp_path):
    db = _database_settings(tmp_path, DATABASE_URL=f"sqlite:///{tmp_path / 'desk.sqlite3'}")

    assert db["pool"] is None


def test_a_sqlite_url_takes_the_write_lock_up_front_like_the_default_file(tmp_path):
    """A worker pointed at a SQLite file by URL (as the worker tests do) waits for the write lock
    instead of failing with "database is locked" when another thread committed first."""
    by_url = _database_settings(tmp_path, DATABASE_URL=f"sqlite:///{tmp_path / 'desk.sqlite3'}")
    default = _database_settings(tmp_path)

    assert by_url["sqlite"] == default["sqlite"]
    assert by_url["sqlite"] == {"timeout": 30, "transaction_mode": "IMMEDIATE", "wal": True}
