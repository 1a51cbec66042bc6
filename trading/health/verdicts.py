"""Verdicts on the desk's moving parts from what the probes saw: pure, so every threshold is tested
without a clock, a broker or a worker.

Only the database is needed to serve a page, so only the database makes the whole desk *down*
(HTTP 503, a load balancer takes the node out). A dead broker, scheduler or worker leaves the
pages working but nothing queued or scheduled runs: the desk is *degraded*, and says which part.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class Status(StrEnum):
    OK = "ok"
    DEGRADED = "degraded"
    DOWN = "down"


DATABASE = "database"
BROKER = "broker"
SCHEDULER = "scheduler"
WORKERS = "workers"
MARKET_DATA = "market_data"

# The scheduler ticks every minute: three missed ticks is not a hiccup.
SCHEDULER_STALE_AFTER = dt.timedelta(minutes=3)
# Each tick pings the workers: a worker that answered none of the last three is gone.
WORKER_STALE_AFTER = dt.timedelta(minutes=3)


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    # For people who are logged in: may name hosts and errors, so never in the public endpoint.
    detail: str
    latency_ms: float | None = None
    age_s: float | None = None
    seen: int | None = None

    @property
    def label(self) -> str:
        """The part's name as a person reads it ("market data")."""
        return self.name.replace("_", " ")

    @property
    def age_text(self) -> str:
        return "" if self.age_s is None else describe_age(self.age_s)

    def public(self) -> dict[str, object]:
        """Statuses and figures only: what an unauthenticated probe may read."""
        figures = {"latency_ms": self.latency_ms, "age_s": self.age_s, "seen": self.seen}
        return {"status": str(self.status), **{key: value for key, value in figures.items() if value is not None}}


@dataclass(frozen=True)
class WorkerSeen:
    name: str
    age_s: float
    alive: bool

    @property
    def age_text(self) -> str:
        return describe_age(self.age_s)


@dataclass(frozen=True)
class Report:
    status: Status
    checks: tuple[Check, ...]
    workers: tuple[WorkerSeen, ...] = ()

    @property
    def http_status(self) -> int:
        return 503 if self.status is Status.DOWN else 200

    def public(self) -> dict[str, object]:
        return {"status": str(self.status), "checks": {check.name: check.public() for check in self.checks}}


def overall(checks: Sequence[Check]) -> Status:
    if any(check.name == DATABASE and check.status is Status.DOWN for check in checks):
        return Status.DOWN
    if any(check.status is not Status.OK for check in checks):
        return Status.DEGRADED
    return Status.OK


def describe_age(seconds: float) -> str:
    """'42 s', '7 min', '3 h 5 min', '2 d': how long ago, at the precision a person needs."""
    whole = int(seconds)
    if whole < 120:
        return f"{whole} s"
    minutes = whole // 60
    if minutes < 120:
        return f"{minutes} min"
    hours = minutes // 60
    if hours < 48:
        return f"{hours} h {minutes % 60} min"
    return f"{hours // 24} d"


def scheduler_check(last_tick: dt.datetime | None, *, now: dt.datetime) -> Check:
    if last_tick is None:
        return Check(SCHEDULER, Status.DOWN, "no tick recorded: is beat running (celery worker --beat)?")
    age = max((now - last_tick).total_seconds(), 0.0)
    if age > SCHEDULER_STALE_AFTER.total_seconds():
        detail = f"last tick {describe_age(age)} ago: nothing scheduled is running"
        return Check(SCHEDULER, Status.DOWN, detail, age_s=age)
    return Check(SCHEDULER, Status.OK, f"last tick {describe_age(age)} ago", age_s=age)


def workers_seen(last_seen: dict[str, dt.datetime], *, now: dt.datetime) -> tuple[WorkerSeen, ...]:
    """Every worker ever recorded, most recently seen first."""
    stale_after = WORKER_STALE_AFTER.total_seconds()
    seen = []
    for name, when in last_seen.items():
        age = max((now - when).total_seconds(), 0.0)
        seen.append(WorkerSeen(name=name, age_s=age, alive=age <= stale_after))
    return tuple(sorted(seen, key=lambda worker: worker.age_s))


def workers_check(workers: Sequence[WorkerSeen]) -> Check:
    alive = [worker for worker in workers if worker.alive]
    if alive:
        window = describe_age(WORKER_STALE_AFTER.total_seconds())
        return Check(WORKERS, Status.OK, f"{len(alive)} seen in the last {window}", seen=len(alive))
    if workers:
        last = workers[0]
        return Check(WORKERS, Status.DOWN, f"no worker seen for {describe_age(last.age_s)}", seen=0)
    return Check(WORKERS, Status.DOWN, "no worker seen yet", seen=0)


class StaleExchange(Protocol):
    """What the freshness check reads of a verdict (``trading.market.domain.freshness.Staleness``;
    not imported: the market pages show this module's checks)."""

    @property
    def text(self) -> str: ...

    @property
    def sessions_behind(self) -> int: ...


def market_data_check(stale: Sequence[StaleExchange]) -> Check:
    """Bars older than their exchange's last completed session (counted on the exchange calendar,
    as the home page's banner counts them): the pages work, but every figure drawn from prices is
    as old as the bars, so the desk is degraded, and says which exchanges and by how much."""
    if not stale:
        return Check(MARKET_DATA, Status.OK, "latest bars are from each exchange's last completed session")
    return Check(
        MARKET_DATA,
        Status.DEGRADED,
        "; ".join(verdict.text for verdict in stale),
        seen=max(verdict.sessions_behind for verdict in stale),
    )
