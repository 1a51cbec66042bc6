"""Parallel test processes (pytest-xdist) keep apart: each has its own data folder (SQLite test
database, embedded broker, channel relay, secret key) and its own Redis key prefix, set before the
settings load and inherited by the workers and servers its tests start.

And the web server as ``./desk up`` starts it: several processes answer pages and websockets."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from contextlib import ExitStack
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.processes import free_port, start_web_server, stop_group, wait_for, xdist_worker_environment
from trading.events import DeskEvent, publish

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


# --- the web server ----------------------------------------------------------------------------------


def _test_database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def web_server(tmp_path):
    """``./desk serve`` with two worker processes on the test database."""
    port = free_port()
    log = tmp_path / "web.log"
    env = {**os.environ, "DATABASE_URL": _test_database_url(), "DESK_WEB_WORKERS": "2", "DEBUG": "0"}
    process = start_web_server(port=port, log=log, env=env)
    try:
        yield f"127.0.0.1:{port}", log
    finally:
        stop_group(process)


def _session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


@pytest.mark.django_db(transaction=True)
def test_the_desk_serves_pages_and_websockets_from_several_worker_processes_and_refuses_a_stranger(web_server, viewer):
    address, log = web_server
    cookie = _session_cookie(viewer)

    booted = [line for line in log.read_text().splitlines() if "Booting worker with pid" in line]
    assert len(booted) == 2, log.read_text()
    assert "lifespan' protocol appears unsupported" not in log.read_text()  # config.asgi answers it
    request = urllib.request.Request(f"http://{address}/health/", headers={"Cookie": cookie})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200 and "text/html" in response.headers["Content-Type"]

    # Four sockets, which the kernel spreads over the two processes: an event published here (as a
    # worker publishes a run's stages) reaches every one of them, whichever process holds it.
    with ExitStack() as stack:
        sockets = [
            stack.enter_context(
                connect(f"ws://{address}/ws/events/", origin=f"http://{address}", additional_headers={"Cookie": cookie})
            )
            for _ in range(4)
        ]
        publish(DeskEvent(kind="features.computed", data={"symbol": "RELIANCE"}))
        received = [json.loads(socket.recv(timeout=10)) for socket in sockets]
    assert [message["data"] for message in received] == [{"symbol": "RELIANCE"}] * 4

    # Without a session the socket is refused (one server start serves both checks: it takes seconds).
    with pytest.raises(InvalidStatus) as refused, connect(f"ws://{address}/ws/events/", origin=f"http://{address}"):
        pass
    assert refused.value.response.status_code == 403  # closed before the handshake completed


@pytest.mark.django_db(transaction=True)
def test_without_a_worker_count_the_desk_starts_one_web_process_per_core(tmp_path):
    """A page is nearly all CPU, so the default is one process per core (at most 8), as ``nproc``
    counts them: more only queue for the cores (bench/book.py)."""
    log = tmp_path / "web.log"
    env = {key: value for key, value in os.environ.items() if key != "DESK_WEB_WORKERS"}
    process = start_web_server(
        port=free_port(), log=log, env={**env, "DATABASE_URL": _test_database_url(), "DEBUG": "0"}
    )
    cores = len(os.sched_getaffinity(0))

    def booted() -> int:
        return sum("Booting worker with pid" in line for line in log.read_text().splitlines())

    try:
        # ``./desk serve`` execs gunicorn: the count it was given is on its command line, final
        # from the start, where a count of started processes could still be rising.
        arguments = Path(f"/proc/{process.pid}/cmdline").read_bytes().split(b"\0")
        workers = int(arguments[arguments.index(b"--workers") + 1])
        # Each process logs its start itself: the last may do so just after the first answered.
        wait_for(lambda: booted() >= workers, timeout=30, what=f"{workers} web processes:\n{log}")
    finally:
        stop_group(process)
    assert workers == min(cores, 8), log.read_text()
    assert booted() == min(cores, 8), log.read_text()


def test_a_web_worker_count_that_is_not_a_number_is_refused_at_start():
    result = subprocess.run(
        [str(Path(__file__).resolve().parent.parent / "desk"), "serve"],
        env={**os.environ, "DESK_WEB_WORKERS": "lots", "DESK_PORT": "1"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "DESK_WEB_WORKERS must be a whole number" in result.stderr
    assert "gunicorn" not in result.stderr  # refused before any server was tried
