"""HTTP through Django, websockets through Channels with the session user attached.

Served by gunicorn's uvicorn workers (``./desk serve``, DESK_WEB_WORKERS processes) or by daphne;
the same application either way. uvicorn also sends the ASGI lifespan events, which this answers
(nothing to open or close) so its workers do not log the protocol as unsupported."""

import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from trading.routing import websocket_urlpatterns  # noqa: E402

Message = MutableMapping[str, Any]


async def lifespan(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[Message]],
    send: Callable[[Message], Awaitable[None]],
) -> None:
    """Start-up and shut-down complete at once: Django opens its connections per request."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        "lifespan": lifespan,
    }
)
