"""A real daphne on PostgreSQL keeps its database connections bounded under a burst of clients.

Django's persistent connections leak under ASGI (each request runs in its own thread, whose
connection is never reused nor closed), so the desk pools them instead. This starts the server as
`./desk up` does, fires 50 clients at once and watches ``pg_stat_activity`` for the server's own
connections, told apart by their ``application_name``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from tests.conftest import require_or_skip
from tests.processes import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parent.parent.parent
POOL_MIN, POOL_MAX = 1, 4
MARGIN = 1  # a pool may briefly hold one connection over max while it replaces a broken one
CLIENTS = 50
START_TIMEOUT_S = 60


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _test_db_url(application_name: str) -> str:
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    host = f"{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}"
    return f"postgres://{auth}@{host}/{db['NAME']}?application_name={application_name}"


def _connections_of(application_name: str) -> Callable[[], int]:
    """A counter of the server's connections, on a connection of its own (not Django's, which
    belongs to the test's thread)."""
    db = connection.settings_dict
    watcher = psycopg.connect(
        dbname=db["NAME"],
        user=db["USER"],
        password=db["PASSWORD"] or None,
        host=db["HOST"] or "localhost",
        port=db["PORT"] or 5432,
        autocommit=True,
    )
    lock = threading.Lock()

    def count() -> int:
        with lock:
            row = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [application_name]
            ).fetchone()
        return int(row[0])

    count.close = watcher.close  # type: ignore[attr-defined]
    return count


@dataclass
class Server:
    url: str
    application_name: str
    process: subprocess.Popen
    log: Path


@pytest.fixture
def daphne(tmp_path) -> Iterator[Server]:
    require_or_skip(connection.vendor == "postgresql", "PostgreSQL")
    application_name = f"desk-burst-{uuid.uuid4().hex[:8]}"
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": _test_db_url(application_name),
        "DB_POOL_MIN_SIZE": str(POOL_MIN),
        "DB_POOL_MAX_SIZE": str(POOL_MAX),
        "DB_POOL_MAX_IDLE": "1",  # shrink back within seconds, not the default ten minutes
        "PYTHONPATH": str(ROOT),
    }
    log = tmp_path / "daphne.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(ROOT / ".venv/bin/daphne"), "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = Server(f"http://127.0.0.1:{port}", application_name, process, log)
    try:
        _wait_until_listening(server, port)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_listening(server: Server, port: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError(f"daphne exited:\n{server.log.read_text()}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"daphne did not listen:\n{server.log.read_text()}")


@dataclass
class Sampler:
    """Counts the server's connections every few milliseconds in a background thread."""

    count: Callable[[], int]
    seen: list[int] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.seen.append(self.count())
            self._stop.wait(0.01)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _session_cookie(user) -> str:
    """A real session row, committed, so the server in the other process finds it."""
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def _get(url: str, cookie: str) -> int:
    request = urllib.request.Request(url, headers={"Cookie": cookie})
    with urllib.request.urlopen(request, timeout=60) as response:
        response.read()
        return response.status


def _burst(url: str, cookie: str, clients: int) -> list[int]:
    """``clients`` requests released at the same instant."""
    start = threading.Barrier(clients)

    def one(_: int) -> int:
        start.wait()
        return _get(url, cookie)

    with ThreadPoolExecutor(max_workers=clients) as pool:
        return list(pool.map(one, range(clients)))


def test_a_burst_of_fifty_clients_stays_within_the_pool_and_the_pool_shrinks_after(daphne, viewer, instrument):
    cookie = _session_cookie(viewer)
    url = f"{daphne.url}/api/instruments/"
    count = _connections_of(daphne.application_name)
    try:
        sequential = [_get(url, cookie) for _ in range(20)]
        after_sequential = count()
        with Sampler(count) as sampler:
            statuses = _burst(url, cookie, CLIENTS) + _burst(url, cookie, CLIENTS)
        after_burst = count()
        print(
            f"\nconnections: after 20 sequential requests {after_sequential}, "
            f"max during 2x{CLIENTS}-client burst {max(sampler.seen)}, right after {after_burst} "
            f"({len(sampler.seen)} samples; pool min {POOL_MIN}, max {POOL_MAX})"
        )

        assert set(sequential) == {200} and statuses == [200] * (2 * CLIENTS)
        assert after_sequential <= POOL_MAX
        assert max(sampler.seen) <= POOL_MAX + MARGIN, sampler.seen
        wait_for(lambda: count() <= POOL_MIN, timeout=30, what=f"the pool to shrink back to {POOL_MIN}")
    finally:
        count.close()  # type: ignore[attr-defined]
