"""Django's SQLite backend, with a small pool of open connections per process.

Under ASGI each request runs its sync view in a thread of its own, so Django's per-thread
connection is opened at the request's first query and closed at its end (``CONN_MAX_AGE=0``; a
persistent connection would stay behind with its dead thread). Opening one costs more than most
of the queries a page makes: the file is opened, Django registers its SQL functions and the
settings' PRAGMAs run. Here a closed connection goes back to a per-process pool instead, and the
next opening takes it from there, as PostgreSQL's backend does with ``OPTIONS["pool"]``.

A connection is pooled only when it is clean: no transaction open (it is rolled back first), no
error met, not closed inside ``atomic`` (Django keeps referring to it then). A pooled connection
is never shared: a forked child starts with an empty pool, and a database file that was removed
or replaced since (a test database made again) is never served from connections to the old one.
In-memory databases are not pooled (Django keeps their one connection open anyway).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from typing import Any

from django.db.backends.sqlite3 import base

POOL_SIZE = 8  # idle connections kept per database file and process; the rest are closed


class _Connection(sqlite3.Connection):
    """A connection that remembers which file it was opened on."""

    opened_on: tuple[int, int] | None = None


class _Pool:
    """Idle connections to one database file, with the file's identity when each was opened."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[tuple[_Connection, tuple[int, int]]] = []


_pools: dict[tuple[int, str], _Pool] = {}
_pools_lock = threading.Lock()


def _identity(path: str) -> tuple[int, int] | None:
    """The file's device and inode: a removed and recreated file is another database."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _pool(path: str) -> _Pool:
    key = (os.getpid(), path)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = _Pool()
        return pool


def pooled_count(path: str) -> int:
    """How many idle connections this process keeps for ``path`` (for tests and benches)."""
    pool = _pool(str(path))
    with pool.lock:
        return len(pool.idle)


def _close_quietly(connection: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):
        connection.close()


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self) -> dict[str, Any]:
        return {**super().get_connection_params(), "factory": _Connection}

    def _pool_path(self) -> str | None:
        if self.is_in_memory_db():
            return None
        return str(self.settings_dict["NAME"])

    def get_new_connection(self, conn_params: dict[str, Any]) -> _Connection:
        path = self._pool_path()
        identity = _identity(path) if path is not None else None
        if path is not None and identity is not None:
            pool = _pool(path)
            while True:
                with pool.lock:
                    if not pool.idle:
                        break
                    connection, opened_on = pool.idle.pop()  # the most recently used: warm
                if opened_on == identity:
                    # What a caller may have switched off for a while (the schema editor does).
                    connection.execute("PRAGMA foreign_keys = ON")
                    return connection
                _close_quietly(connection)  # a connection to a file that is gone
        opened: _Connection = super().get_new_connection(conn_params)
        if path is not None:
            opened.opened_on = identity if identity is not None else _identity(path)  # made by this opening
        return opened

    def _close(self) -> None:
        connection = self.connection
        path = self._pool_path()
        opened_on = getattr(connection, "opened_on", None)
        clean = not (self.in_atomic_block or self.errors_occurred or self.needs_rollback)
        if not (isinstance(connection, _Connection) and path is not None and opened_on is not None and clean):
            super()._close()  # type: ignore[misc]  # Django's, untyped in the stubs
            return
        try:
            if connection.in_transaction:
                connection.rollback()
        except sqlite3.Error:
            super()._close()  # type: ignore[misc]
            return
        pool = _pool(path)
        with pool.lock:
            if len(pool.idle) < POOL_SIZE:
                pool.idle.append((connection, opened_on))
                return
        _close_quietly(connection)


def _after_fork() -> None:
    """In a forked child: the pools are keyed by process, so the parent's connections are never
    handed out here (SQLite's rule: a connection does not cross a fork); they are left as they
    are, not closed, and the lock is new in case a thread of the parent held it."""
    global _pools_lock
    _pools_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
