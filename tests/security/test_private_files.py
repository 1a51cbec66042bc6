"""The data folder and the SQLite database in it are readable by the desk's user only."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from django.db import connection
from django.db.utils import ConnectionHandler

ROOT = Path(__file__).resolve().parents[2]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _start(data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DESK_DATA_DIR": str(data_dir)}
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_new_data_folder_is_created_private(tmp_path):
    data_dir = tmp_path / "fresh" / "var"

    assert _start(data_dir).returncode == 0
    assert _mode(data_dir) == 0o700


def test_an_existing_open_data_folder_is_made_private_at_start_up(tmp_path):
    data_dir = tmp_path / "var"
    data_dir.mkdir(mode=0o755)
    data_dir.chmod(0o755)

    assert _start(data_dir).returncode == 0
    assert _mode(data_dir) == 0o700


def test_a_sqlite_database_file_is_made_private_when_first_opened(tmp_path, django_db_blocker):
    path = tmp_path / "desk.sqlite3"
    path.touch(mode=0o644)
    path.chmod(0o644)
    handler = ConnectionHandler({"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path)}})
    with django_db_blocker.unblock():
        sqlite = handler["default"]
        try:
            with sqlite.cursor() as cursor:
                cursor.execute("CREATE TABLE t (x integer)")
        finally:
            sqlite.close()

    assert _mode(path) == 0o600


def test_the_suites_own_database_is_private_when_it_is_sqlite(db):
    if connection.vendor != "sqlite":
        return  # PostgreSQL keeps its files in its own data directory, under its own user
    connection.ensure_connection()
    assert _mode(Path(connection.settings_dict["NAME"])) == 0o600
