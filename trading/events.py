"""Typed events pushed to browsers over Channels. Tasks and services publish through here only.

Events are a courtesy: the database holds the truth and pages can always re-read it, so a failed
publish is logged and never fails the work that produced it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from pydantic import BaseModel, Field

from security.redaction import redact_data

logger = logging.getLogger(__name__)
DESK_GROUP = "desk"
_handoff = ThreadPoolExecutor(max_workers=1, thread_name_prefix="desk-events")


class DeskEvent(BaseModel):
    kind: str = Field(description="dotted name, e.g. features.computed")
    at: dt.datetime = Field(default_factory=lambda: dt.datetime.now(dt.UTC))
    data: dict[str, Any] = Field(default_factory=dict)


def _send(group: str, message: dict) -> None:
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(group, message)


def publish(event: DeskEvent, *, group: str = DESK_GROUP) -> None:
    # Events reach browsers: any credential echoed into a reason is cut first.
    message = {"type": "desk.event", "event": redact_data(event.model_dump(mode="json"))}
    try:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            _send(group, message)
        else:
            # Called from a thread that runs an event loop: async_to_sync cannot block it, so
            # the send happens on a helper thread.
            _handoff.submit(_send, group, message).result(timeout=5)
    except Exception:  # a lost event must never fail a run, a fill or a close
        logger.warning("could not publish %s to %s", event.kind, group, exc_info=True)
