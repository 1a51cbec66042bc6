"""Helpers for tests that start real processes (workers, daphne) and wait on what they do."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable


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
