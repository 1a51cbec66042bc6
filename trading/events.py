"""Typed events pushed to browsers over Channels. Tasks and services publish through here only.

Events are a courtesy: the database holds the truth and pages can always re-read it, so a failed
publish is logged and never fails the work that produced it.

A publish from plain sync code (a worker's pipeline run: 13 per run) goes through one event loop
kept running on a daemon thread for the life of the process, instead of the fresh loop and thread
``async_to_sync`` would start for every call; the channel layer also keeps its connections (Redis)
on that one loop. Sync code running under an outer event loop (a sync view or a test inside
``sync_to_async``) still sends on that outer loop, where its in-memory consumers wait.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import threading
from collections.abc import Coroutine
from typing import Any

from asgiref.sync import SyncToAsync, async_to_sync
from channels.layers import get_channel_layer
from pydantic import BaseModel, Field

from security.redaction import redact_data

logger = logging.getLogger(__name__)
DESK_GROUP = "desk"
SEND_TIMEOUT_SECONDS = 5


class DeskEvent(BaseModel):
    kind: str = Field(description="dotted name, e.g. features.computed")
    at: dt.datetime = Field(default_factory=lambda: dt.datetime.now(dt.UTC))
    data: dict[str, Any] = Field(default_factory=dict)


class _SenderLoop:
    """One event loop on one daemon thread, started on first use and again in a forked child
    (a fork copies the loop object but not the thread that runs it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            alive = self._thread is not None and self._thread.is_alive() and self._pid == os.getpid()
            if self._loop is None or not alive:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="desk-events", daemon=True)
                self._thread.start()
                self._pid = os.getpid()
            return self._loop

    def run(self, coroutine: Coroutine[Any, Any, None], timeout: float) -> None:
        future = asyncio.run_coroutine_threadsafe(coroutine, self._running_loop())
        try:
            future.result(timeout=timeout)
        except TimeoutError:
            future.cancel()  # a stuck send must not pile up on the loop
            raise

    def forget(self) -> None:
        """In a forked child: the parent's loop is not running here; the next send starts one."""
        self._lock = threading.Lock()
        self._loop, self._thread, self._pid = None, None, 0


_sender = _SenderLoop()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_sender.forget)


def _outer_loop() -> asyncio.AbstractEventLoop | None:
    """The running event loop whose ``sync_to_async`` called this thread, if any: the loop
    ``async_to_sync`` itself would send on (it looks in the same thread-local)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return None  # this thread runs a loop itself: it cannot wait on it, so the sender loop sends
    local = SyncToAsync.threadlocal
    if getattr(local, "main_event_loop_pid", None) != os.getpid():
        return None
    loop: asyncio.AbstractEventLoop | None = getattr(local, "main_event_loop", None)
    return loop if loop is not None and loop.is_running() else None


def _send(group: str, message: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    if _outer_loop() is not None:
        # Sync code called from an event loop's thread pool (a sync view, a test): send on that
        # loop, the one its in-memory consumers wait on.
        async_to_sync(layer.group_send)(group, message)
        return
    _sender.run(layer.group_send(group, message), SEND_TIMEOUT_SECONDS)


def publish(event: DeskEvent, *, group: str = DESK_GROUP) -> None:
    # Events reach browsers: any credential echoed into a reason is cut first.
    message = {"type": "desk.event", "event": redact_data(event.model_dump(mode="json"))}
    try:
        _send(group, message)
    except Exception:  # a lost event must never fail a run, a fill or a close
        logger.warning("could not publish %s to %s", event.kind, group, exc_info=True)
