"""The web worker leaves a new connection to a less busy process for a moment before taking it."""

from __future__ import annotations

import socket

import pytest

from config import web_worker
from config.web_worker import SpreadingSocket


@pytest.fixture
def listener():
    """A real listening socket with one connection waiting, seen through ``SpreadingSocket``."""
    plain = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    plain.bind(("127.0.0.1", 0))
    plain.listen(8)
    spreading = SpreadingSocket(plain.family, plain.type, fileno=plain.dup().detach())
    spreading.setblocking(False)
    client = socket.create_connection(plain.getsockname())
    yield spreading
    client.close()
    spreading.close()
    plain.close()


def _clock(monkeypatch, start: float = 100.0) -> list[float]:
    now = [start]
    monkeypatch.setattr(web_worker.time, "monotonic", lambda: now[0])
    return now


def test_a_worker_with_no_connections_accepts_at_once(listener, monkeypatch):
    _clock(monkeypatch)
    accepted, _ = listener.watch(connections=[]).accept()
    accepted.close()


def test_a_busy_worker_waits_its_turn_then_accepts(listener, monkeypatch):
    now = _clock(monkeypatch)
    listener.watch(connections=["a", "b", "c"])  # three held: it leaves the new one for 6 ms
    with pytest.raises(BlockingIOError):
        listener.accept()
    now[0] += 0.005
    with pytest.raises(BlockingIOError):
        listener.accept()
    now[0] += 0.002
    accepted, _ = listener.accept()
    accepted.close()


def test_a_worker_holding_many_still_accepts_within_the_cap(listener, monkeypatch):
    now = _clock(monkeypatch)
    listener.watch(connections=list(range(500)))  # websockets: the wait is capped, not 1 s
    with pytest.raises(BlockingIOError):
        listener.accept()
    now[0] += web_worker.YIELD_AT_MOST_S
    accepted, _ = listener.accept()
    accepted.close()


def test_connections_just_accepted_count_before_the_server_registers_them(listener, monkeypatch):
    now = _clock(monkeypatch)
    listener.watch(connections=[])
    listener.accept()[0].close()  # accepted, not yet in uvicorn's set
    socket.create_connection(listener.getsockname()).close()
    with pytest.raises(BlockingIOError):
        listener.accept()
    now[0] += web_worker.RECENT_ACCEPT_S  # forgotten once uvicorn would have registered it
    listener.accept()[0].close()
