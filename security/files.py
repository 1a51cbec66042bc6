"""Files only the desk's user may read: the SQLite database (and its WAL and shared-memory files)."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper

PRIVATE_FILE = 0o600


def make_private(path: Path, mode: int = PRIVATE_FILE) -> bool:
    """Set ``path``'s permission bits to ``mode`` if it exists and they differ; True if changed."""
    try:
        current = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return False
    if current == mode:
        return False
    path.chmod(mode)
    return True


def sqlite_files(name: object) -> list[Path]:
    """The files of a SQLite database named ``name`` (none for an in-memory one)."""
    text = str(name or "")
    if not text or text == ":memory:" or text.startswith("file:"):
        return []
    database = Path(text)
    return [database, database.with_name(database.name + "-wal"), database.with_name(database.name + "-shm")]


def make_sqlite_private(sender: object, connection: BaseDatabaseWrapper, **kwargs: object) -> None:
    """connection_created: the file exists once SQLite has opened it; close it to everyone else
    before the first query writes anything into it. A stat per new connection; a chmod only once."""
    if connection.vendor != "sqlite":
        return
    for path in sqlite_files(connection.settings_dict.get("NAME")):
        make_private(path)
