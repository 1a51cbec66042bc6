"""Helpers for tests that start real processes (workers, the web server) and wait on what they do, and the
isolation of the test processes themselves when pytest-xdist runs the suite in several at once.

This module is also a pytest plugin, loaded with ``-p tests.processes`` (pyproject's addopts) so
that its hook runs before pytest-django loads the settings: a plugin named on the command line is
imported before the initial conftests, and its ``tryfirst`` hook runs before pytest-django's.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

DATA_DIR_VARIABLE = "DESK_DATA_DIR"
REDIS_PREFIX_VARIABLE = "REDIS_KEY_PREFIX"
ROOT = Path(__file__).resolve().parent.parent
WEB_START_TIMEOUT_S = 60
STATIC_HASHED_VARIABLE = "DESK_STATIC_HASHED"


def xdist_worker_environment(environ: Mapping[str, str], rootpath: Path) -> dict[str, str]:
    """What an xdist worker changes in its environment: a data folder of its own under the run's
    (the SQLite test database, the embedded broker's folders, the channel relay, the secret key, logs)
    and a Redis key prefix of its own (queues, results, channel groups, throttle counts). Nothing
    outside xdist, so a serial run keeps its folder and keys as they were.

    Set in the environment rather than in the settings, so the workers and servers a test starts
    inherit them, while a test that names a folder of its own for a child still gets that folder."""
    worker = environ.get("PYTEST_XDIST_WORKER", "")
    if not worker:
        return {}
    base = Path(environ.get(DATA_DIR_VARIABLE) or rootpath / "var").resolve()
    return {
        DATA_DIR_VARIABLE: str(base / worker),
        REDIS_PREFIX_VARIABLE: f"{environ.get(REDIS_PREFIX_VARIABLE, '')}{worker}:",
    }


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    # Once per process, before pytest-django's hook imports config.settings (which reads both).
    os.environ.update(xdist_worker_environment(os.environ, early_config.rootpath))
    # Static files as they lie in static/: a manifest a `./desk up` left in staticfiles/ would be
    # stale for a file added since (a 500); tests of the hashed files ask for them (test_static_serving).
    os.environ.setdefault(STATIC_HASHED_VARIABLE, "0")


def wait_for(condition: Callable[[], bool], *, timeout: float, what: str) -> None:
    """Poll ``condition`` until it holds; a generous ``timeout`` keeps a busy machine from failing it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def stop_group(process: subprocess.Popen) -> None:
    """TERM the process's group (its pool children too), then KILL it if it lingers."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def at_once(calls: list[Callable[[], str]], *, timeout: float = 120) -> list[str]:
    """Run each call in a thread of its own, all released together; returns what each returned.

    Load rows before, not inside, the calls: a thread that held a pooled database connection
    while waiting to be released could starve the others of one."""
    from django.db import connection

    barrier = threading.Barrier(len(calls), timeout=timeout)
    outcomes: list[str] = []
    lock = threading.Lock()

    def run(call: Callable[[], str]) -> None:
        barrier.wait()
        try:
            result = call()
        finally:
            connection.close()
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    return outcomes


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_web_server(*, port: int, log: Path, env: Mapping[str, str]) -> subprocess.Popen:
    """The web server as ``./desk up`` starts it (``./desk serve``: gunicorn with DESK_WEB_WORKERS
    uvicorn workers, or daphne with DESK_WEB_SERVER=daphne) on 127.0.0.1:``port``, in a process
    group of its own (``stop_group`` stops the workers too); returns once it answers a page."""
    environment = {**env, "DESK_HOST": "127.0.0.1", "DESK_PORT": str(port), "PYTHONPATH": str(ROOT)}
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(ROOT / "desk"), "serve"],
            cwd=ROOT,
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for(lambda: _answers(process, port, log), timeout=WEB_START_TIMEOUT_S, what=f"the web server:\n{log}")
    except BaseException:
        stop_group(process)
        raise
    return process


def _answers(process: subprocess.Popen, port: int, log: Path) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"the web server exited with {process.returncode}:\n{log.read_text()}")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False
