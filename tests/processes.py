"""Helpers for tests that start real processes (workers, daphne) and wait on what they do, and the
isolation of the test processes themselves when pytest-xdist runs the suite in several at once.

This module is also a pytest plugin, loaded with ``-p tests.processes`` (pyproject's addopts) so
that its hook runs before pytest-django loads the settings: a plugin named on the command line is
imported before the initial conftests, and its ``tryfirst`` hook runs before pytest-django's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

DATA_DIR_VARIABLE = "DESK_DATA_DIR"
REDIS_PREFIX_VARIABLE = "REDIS_KEY_PREFIX"


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
