"""Probes of the desk's moving parts, each short and bounded so a health page never hangs: the
database (a trivial query), the broker (a Redis ping with a half-second timeout, or a file
written in the embedded broker's folder), and the heartbeats the scheduler and workers record.
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from trading.health.verdicts import (
    BROKER,
    DATABASE,
    MARKET_DATA,
    SCHEDULER,
    WORKERS,
    Check,
    Report,
    StaleExchange,
    Status,
    market_data_check,
    overall,
    scheduler_check,
    workers_check,
    workers_seen,
)
from trading.models import Heartbeat

BROKER_TIMEOUT_S = 0.5
SCHEDULER_NAME = "beat"


def heartbeat_record(kind: str, name: str, *, at: dt.datetime | None = None) -> None:
    Heartbeat.objects.update_or_create(kind=kind, name=name, defaults={"seen_at": at or timezone.now()})


def _timed(probe: Callable[[], None]) -> float:
    started = time.perf_counter()
    probe()
    return round((time.perf_counter() - started) * 1000, 1)


def _select_one() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def database_check() -> Check:
    try:
        latency = _timed(_select_one)
    except DatabaseError as error:
        return Check(DATABASE, Status.DOWN, f"{type(error).__name__}: {error}".strip())
    return Check(DATABASE, Status.OK, f"SELECT 1 in {latency} ms", latency_ms=latency)


def _redis_ping() -> None:
    import redis

    client = redis.Redis.from_url(
        settings.REDIS_URL, socket_connect_timeout=BROKER_TIMEOUT_S, socket_timeout=BROKER_TIMEOUT_S
    )
    try:
        client.ping()
    finally:
        client.close()


def _broker_folder() -> Path:
    """The embedded broker's queue folder. Settings values are read as objects, so a value that is
    not a path is refused here, naming the setting, rather than surfacing as an odd Path error."""
    folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]
    if not isinstance(folder, str | os.PathLike):
        raise ValueError(f"CELERY_BROKER_TRANSPORT_OPTIONS['data_folder_in'] must be a folder path, got {folder!r}")
    return Path(folder)


def _folder_write() -> None:
    # A real write, not os.access: as root every folder looks writable.
    with tempfile.NamedTemporaryFile(dir=_broker_folder(), prefix=".health-", suffix=".probe"):
        pass


def broker_check() -> Check:
    if settings.REDIS_URL:
        probe, what = _redis_ping, "Redis ping"
    else:
        probe, what = _folder_write, f"embedded broker folder {_broker_folder()} writable"
    try:
        latency = _timed(probe)
    except Exception as error:  # any failure to reach the broker is the answer, not a crash
        return Check(BROKER, Status.DOWN, f"{what}: {type(error).__name__}: {error}".strip())
    return Check(BROKER, Status.OK, f"{what} in {latency} ms", latency_ms=latency)


StaleFinder = Callable[[dt.datetime], Sequence[StaleExchange]]


def health_report(*, now: dt.datetime | None = None, market_data: StaleFinder | None = None) -> Report:
    """Every part's check. ``market_data`` (``trading.market.selectors.stale_exchanges``, or what
    a page already read from it, handed in by the pages: the market pages show this report too, so
    it cannot import them) adds the bars' freshness, so the pages' strips say what the health page
    says; the load balancer's probe leaves it out: it reads the latest bar of every exchange, more
    than a probe polled every few seconds should."""
    now = now or timezone.now()
    database = database_check()
    checks = [database, broker_check()]
    workers: tuple = ()
    if database.status is Status.OK:
        beats = list(Heartbeat.objects.values_list("kind", "name", "seen_at"))
        tick = next((seen for kind, name, seen in beats if kind == Heartbeat.Kind.SCHEDULER), None)
        workers = workers_seen({name: seen for kind, name, seen in beats if kind == Heartbeat.Kind.WORKER}, now=now)
        checks += [scheduler_check(tick, now=now), workers_check(workers)]
        if market_data is not None:
            checks.append(market_data_check(market_data(now)))
    else:
        # Heartbeats live in the database: without it nobody can say.
        checks += [
            Check(SCHEDULER, Status.DOWN, "unknown: the database is down"),
            Check(WORKERS, Status.DOWN, "unknown: the database is down"),
        ]
        if market_data is not None:
            checks.append(Check(MARKET_DATA, Status.DOWN, "unknown: the database is down"))
    return Report(status=overall(checks), checks=tuple(checks), workers=workers)
