"""Typed events pushed to browsers over Channels. Tasks and services publish through here only."""

from __future__ import annotations

import datetime as dt
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from pydantic import BaseModel, Field

DESK_GROUP = "desk"


class DeskEvent(BaseModel):
    kind: str = Field(description="dotted name, e.g. features.computed")
    at: dt.datetime = Field(default_factory=lambda: dt.datetime.now(dt.UTC))
    data: dict[str, Any] = Field(default_factory=dict)


def publish(event: DeskEvent, *, group: str = DESK_GROUP) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    async_to_sync(layer.group_send)(group, {"type": "desk.event", "event": event.model_dump(mode="json")})
