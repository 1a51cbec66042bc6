"""A channel layer for the embedded runtime: the in-memory layer, plus a small SQLite relay so
that a group message sent in one process (a Celery worker finishing a stage) reaches the
websockets held by another (the web server), with no Redis.

Each group_send is delivered locally as usual and appended to a relay table. A process that has
local group members tails the table every ``poll_interval`` seconds and delivers what other
processes wrote. Rows older than ``retention`` seconds are pruned. With Redis configured, the
desk uses channels_redis instead and this class is not loaded.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
import time
import uuid
from pathlib import Path

from channels.layers import InMemoryChannelLayer

_SCHEMA = """
CREATE TABLE IF NOT EXISTS relay (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    origin TEXT NOT NULL,
    sent REAL NOT NULL,
    grp TEXT NOT NULL,
    message TEXT NOT NULL
)
"""


class RelayedInMemoryChannelLayer(InMemoryChannelLayer):
    def __init__(self, path: str, poll_interval: float = 0.5, retention: float = 120, **kwargs) -> None:
        super().__init__(**kwargs)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.poll_interval = poll_interval
        self.retention = retention
        self.origin = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._last_id: int | None = None
        self._poller: asyncio.Task | None = None
        self._poller_loop: asyncio.AbstractEventLoop | None = None
        # poll_once reads in a worker thread; the lock makes "read rows, advance _last_id" one
        # step, so two overlapping polls (the poller and an explicit call) never both deliver a row.
        self._claim_lock = threading.Lock()
        # One connection per thread and process, kept: opening one (and setting WAL) on every
        # publish and every poll cost more than the insert itself, and was never closed.
        self._local = threading.local()
        self._pruned_at = 0.0
        self._connect().execute(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None or getattr(self._local, "pid", None) != os.getpid():  # a forked child opens its own
            db = sqlite3.connect(self.path, timeout=5, isolation_level=None, check_same_thread=True)
            db.execute("PRAGMA journal_mode=WAL")
            self._local.db, self._local.pid = db, os.getpid()
        return db

    # --- sending ----------------------------------------------------------------------------

    async def group_send(self, group: str, message: dict) -> None:
        await super().group_send(group, message)
        await asyncio.to_thread(self._append, group, message)

    def _append(self, group: str, message: dict) -> None:
        now = time.time()
        db = self._connect()
        db.execute(
            "INSERT INTO relay (origin, sent, grp, message) VALUES (?, ?, ?, ?)",
            (self.origin, now, group, json.dumps(message)),
        )
        # Pruning scans the table: a few times per retention period is enough to bound it.
        if now - self._pruned_at >= self.retention / 4:
            self._pruned_at = now
            db.execute("DELETE FROM relay WHERE sent < ?", (now - self.retention,))

    # --- receiving --------------------------------------------------------------------------

    async def group_add(self, group: str, channel: str) -> None:
        await super().group_add(group, channel)
        self._ensure_poller()

    def _ensure_poller(self) -> None:
        loop = asyncio.get_running_loop()
        # One poller per event loop: a test harness may run several loops one after another.
        if self._poller is None or self._poller.done() or self._poller_loop is not loop:
            if self._last_id is None:
                self._last_id = self._max_id()
            self._poller = loop.create_task(self._poll_forever())
            self._poller_loop = loop

    def _max_id(self) -> int:
        return self._connect().execute("SELECT COALESCE(MAX(id), 0) FROM relay").fetchone()[0]

    def _claim_new(self) -> list[tuple[int, str, str]]:
        with self._claim_lock:
            rows = (
                self._connect()
                .execute(
                    "SELECT id, grp, message FROM relay WHERE id > ? AND origin != ? ORDER BY id",
                    (self._last_id or 0, self.origin),
                )
                .fetchall()
            )
            if rows:
                self._last_id = max(self._last_id or 0, rows[-1][0])
            return rows

    async def poll_once(self) -> int:
        """Deliver what other processes sent since the last look; returns how many messages."""
        rows = await asyncio.to_thread(self._claim_new)
        for _row_id, group, message in rows:
            if group in self.groups:
                await InMemoryChannelLayer.group_send(self, group, json.loads(message))
        return len(rows)

    async def _poll_forever(self) -> None:
        # Wait first: the poller starts from the newest row, so an immediate look finds nothing
        # of its own and would only race an explicit poll_once for rows written meanwhile.
        while self.groups:
            await asyncio.sleep(self.poll_interval)
            await self.poll_once()

    async def flush(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None
        await super().flush()
