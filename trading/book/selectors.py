"""Reads for the approval queue and the portfolio: a fixed number of queries per page."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import QuerySet, Sum

from trading import edge
from trading.models import Account, Position, PositionMark, Thesis

QUEUE_FILTERS = ("strategy", "symbol", "direction", "min_conviction", "status", "replay")
QUEUE_STATUSES = (*Thesis.Status.values, "all")
DIRECTIONS = ("LONG", "SHORT")
POSITION_STATUSES = tuple(Position.Status.values)


@dataclass(frozen=True)
class QueueFilters:
    status: str
    symbol: str
    direction: str
    strategy: str
    min_conviction: Decimal | None
    replay: bool


def queue_filters(params: Mapping[str, str]) -> QueueFilters:
    """The queue's filters, read from a query string (the page's or the API's: the same rules).
    Raises ``edge.InputInvalid`` naming the first bad value; an empty value is no filter."""
    direction = str(params.get("direction") or "").strip().upper()
    return QueueFilters(
        status=edge.parse_choice(params.get("status") or Thesis.Status.PENDING, "status", QUEUE_STATUSES),
        symbol=edge.parse_name(params.get("symbol"), "symbol").upper(),
        direction=edge.parse_choice(direction, "direction", DIRECTIONS) if direction else "",
        strategy=edge.parse_name(params.get("strategy"), "strategy"),
        min_conviction=edge.parse_fraction(params.get("min_conviction"), "min_conviction"),
        replay=edge.parse_flag(params.get("replay"), "replay"),
    )


def thesis_queue(params: Mapping[str, str]) -> QuerySet[Thesis]:
    """The live queue: theses of history replays only with ``replay=1`` (they are decided by their
    replay's policy, never by a person at the desk). Raises ``edge.InputInvalid`` for a bad filter
    (a NaN conviction used to reach the database and answer 500)."""
    filters = queue_filters(params)
    theses = Thesis.objects.select_related("instrument", "run", "run__strategy_run__strategy", "decided_by")
    if not filters.replay:
        theses = theses.filter(run__is_replay=False)
    if filters.status != "all":
        theses = theses.filter(status=filters.status)
    if filters.symbol:
        theses = theses.filter(instrument__symbol=filters.symbol)
    if filters.direction:
        theses = theses.filter(direction=filters.direction)
    if filters.strategy:
        theses = theses.filter(run__strategy_run__strategy__name=filters.strategy)
    if filters.min_conviction is not None:
        theses = theses.filter(conviction__gte=filters.min_conviction)
    return theses.order_by("-conviction", "-created_at", "-id")


def open_positions(account: Account) -> QuerySet[Position]:
    return Position.objects.filter(account=account, status=Position.Status.OPEN).select_related("instrument")


def closed_positions(account: Account, limit: int = 100) -> QuerySet[Position]:
    return (
        Position.objects.filter(account=account, status=Position.Status.CLOSED)
        .select_related("instrument", "review")
        .order_by("-closed_on", "-id")[:limit]
    )


def equity_curve(account: Account) -> list[tuple[str, float]]:
    """Equity per day = capital + realised PnL closed by that day + unrealised PnL marked that day."""
    realised = dict(
        Position.objects.filter(account=account, status=Position.Status.CLOSED)
        .values_list("closed_on")
        .annotate(total=Sum("realised_pnl"))
        .order_by("closed_on")
    )
    unrealised = dict(
        PositionMark.objects.filter(position__account=account)
        .values_list("date")
        .annotate(total=Sum("unrealised_pnl"))
        .order_by("date")
    )
    days = sorted(set(realised) | set(unrealised))
    equity, cumulative = [], Decimal(0)
    for day in days:
        cumulative += realised.get(day, Decimal(0))
        equity.append((day.isoformat(), float(account.capital + cumulative + unrealised.get(day, Decimal(0)))))
    return equity
