"""The web server's worker process: uvicorn under gunicorn, taking a share of new connections.

Every worker waits on the one listening socket gunicorn opened, and asyncio accepts every waiting
connection at once when it wakes. A burst of kept-alive connections (eight clients, a browser's
parallel requests) therefore landed on one process, which held them for their lifetime and served
them on one core while the other processes idled. Here a worker that already holds connections
leaves a new one for a less busy worker for a moment before taking it itself: least connections,
with nothing shared between the processes.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Collection
from typing import Any

from gunicorn.arbiter import Arbiter
from uvicorn.server import Server
from uvicorn_worker import UvicornWorker

YIELD_PER_CONNECTION_S = 0.002  # how long a worker leaves a new connection to others, per one it holds
YIELD_AT_MOST_S = 0.010  # a worker holding many (websockets) still answers within this
RECENT_ACCEPT_S = 0.05  # a connection accepted this recently counts before uvicorn registers it


class SpreadingSocket(socket.socket):
    """The shared listening socket as one worker sees it. ``accept`` refuses (as a socket with
    nothing waiting does) until the worker has waited its turn; asyncio tries again on the next
    wake-up, by which time a less busy worker may have taken the connection."""

    def watch(self, connections: Collection[object]) -> SpreadingSocket:
        self.connections = connections  # uvicorn's open connections of this worker
        self.accepted_at: list[float] = []
        self.waiting_since: float | None = None
        return self

    def accept(self) -> tuple[socket.socket, Any]:
        now = time.monotonic()
        self.accepted_at = [at for at in self.accepted_at if now - at < RECENT_ACCEPT_S]
        held = max(len(self.connections), len(self.accepted_at))
        if held:
            if self.waiting_since is None:
                self.waiting_since = now
            if now - self.waiting_since < min(held * YIELD_PER_CONNECTION_S, YIELD_AT_MOST_S):
                raise BlockingIOError  # asyncio's accept loop stops quietly and waits for the next wake-up
        self.waiting_since = None
        accepted = super().accept()
        self.accepted_at.append(time.monotonic())
        return accepted


class SpreadingUvicornWorker(UvicornWorker):
    """``uvicorn_worker.UvicornWorker`` serving gunicorn's sockets through ``SpreadingSocket``."""

    async def _serve(self) -> None:
        self.config.app = self.wsgi
        server = Server(config=self.config)
        self._install_sigquit_handler()
        sockets: list[socket.socket] = [
            SpreadingSocket(sock.family, sock.type, fileno=sock.dup().detach()).watch(server.server_state.connections)
            for sock in self.sockets
        ]
        await server.serve(sockets=sockets)
        if not server.started:
            sys.exit(Arbiter.WORKER_BOOT_ERROR)
