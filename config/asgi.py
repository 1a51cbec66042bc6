"""HTTP through Django, websockets through Channels with the session user attached.

Served by gunicorn's uvicorn workers (``./desk serve``, DESK_WEB_WORKERS processes) or by daphne;
the same application either way. uvicorn also sends the ASGI lifespan events, which this answers
(nothing to open or close) so its workers do not log the protocol as unsupported.

Pages go through Django's WSGI handler, each request whole in the process's one page thread
(``a2wsgi``): every view is synchronous, and Django's ASGI handler ran each synchronous middleware's
request and response halves, and the view, as separate hops between the event loop and that
thread: a quarter of a thesis page's CPU (bench/book.py). Requests are still served one at a time per
process, as before, and the websockets stay on the event loop."""

import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from a2wsgi import WSGIMiddleware
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# One thread: the views run one after another, on the one thread that holds the process's
# database connection (as Django's ASGI handler runs synchronous views).
django_http_app = WSGIMiddleware(get_wsgi_application(), workers=1)

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
        "http": django_http_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        "lifespan": lifespan,
    }
)
