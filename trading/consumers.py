from __future__ import annotations

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from trading.events import DESK_GROUP

UNAUTHENTICATED = 4401


class DeskEventsConsumer(AsyncJsonWebsocketConsumer):
    """Authenticates, joins the desk group and forwards its events; nothing else."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHENTICATED)
            return
        await self.channel_layer.group_add(DESK_GROUP, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(DESK_GROUP, self.channel_name)

    async def desk_event(self, message: dict) -> None:
        await self.send_json(message["event"])


class RunEventsConsumer(AsyncJsonWebsocketConsumer):
    """Stage events of one run, for its live page."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHENTICATED)
            return
        self.group = f"run-{int(self.scope['url_route']['kwargs']['run_id'])}"
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def desk_event(self, message: dict) -> None:
        await self.send_json(message["event"])
