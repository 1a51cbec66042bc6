"""Reads for the approval queue and the portfolio: a fixed number of queries per page."""

from __future__ import annotations

import contextlib
from decimal import Decimal

from django.db.models import QuerySet, Sum

from trading.models import Account, Position, PositionMark, Thesis

QUEUE_FILTERS = ("strategy", "symbol", "direction", "min_conviction", "status", "replay")
WITH_REPLAYS = ("1", "true")


def thesis_queue(params) -> QuerySet[Thesis]:
    """The live queue: theses of history replays only with ``replay=1`` (they are decided by their
    replay's policy, never by a person at the desk)."""
    theses = Thesis.objects.select_related("instrument", "run", "run__strategy_run__strategy", "decided_by")
    if str(params.get("replay", "")).lower() not in WITH_REPLAYS:
        theses = theses.filter(run__is_replay=False)
    status = params.get("status") or Thesis.Status.PENDING
    if status != "all":
        theses = theses.filter(status=status)
    if symbol := params.get("symbol"):
        theses = theses.filter(instrument__symbol=symbol.upper())
    if direction := params.get("direction"):
        theses = theses.filter(direction=direction.upper())
    if strategy := params.get("strategy"):
        theses = theses.filter(run__strategy_run__strategy__name=strategy)
    if min_conviction := params.get("min_conviction"):
        with contextlib.suppress(ArithmeticError):  # not a number: the filter is left off
            theses = theses.filter(conviction__gte=Decimal(min_conviction))
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
