"""Reads for the approval queue and the portfolio: a fixed number of queries per page."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import Aggregate, Max, QuerySet, Sum, TextField
from django.utils import timezone

from trading import edge
from trading.market.calendar import sessions_between
from trading.market.selectors import share_changes
from trading.models import Account, DailyBar, Order, Position, PositionMark, Thesis

QUEUE_FILTERS = ("strategy", "symbol", "direction", "min_conviction", "status", "replay")
QUEUE_STATUSES = (*Thesis.Status.values, "all")
DIRECTIONS = ("LONG", "SHORT")
POSITION_STATUSES = tuple(Position.Status.values)
ORDER_FILTERS = ("status", "symbol", "account")
ORDER_STATUSES = ("all", *Order.Status.values)
# The blotter's books: the live account (the default), every replay account, or one account by id.
ORDER_BOOKS = ("live", "replay", "all")


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


# What a row of the queue page shows, read as plain values: fifty model instances with their
# instrument, run, strategy run and strategy cost more CPU than the rest of the page together.
QUEUE_ROW_FIELDS = (
    "id",
    "run__is_replay",
    "run__strategy_run__strategy_id",
    "run__strategy_run__strategy__name",
    "instrument__symbol",
    "instrument__currency",
    "direction",
    "conviction",
    "entry",
    "stop",
    "target",
    "quantity",
    "risk_approved",
    "status",
    "created_at",
)


def thesis_queue_rows(theses: QuerySet[Thesis]) -> QuerySet[Thesis, dict[str, object]]:
    """``theses`` (``thesis_queue``'s queryset or a page of it: same filters, order and slice) as
    rows of the page's columns. Count the queryset itself: a count of these rows joins five tables."""
    return theses.values(*QUEUE_ROW_FIELDS)


class _JoinedRows(Aggregate):
    """Every row of a window as one string, its columns joined by '|' and its rows by ',': SQLite's
    group_concat, PostgreSQL's string_agg. The rows come in no promised order, which can only make
    two reads of the same rows differ, never two different windows read alike (each row carries its
    date)."""

    function = "GROUP_CONCAT"
    arg_joiner = " || '|' || "
    output_field = TextField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        template = "%(function)s(%(expressions)s, ',')"
        return super().as_sql(compiler, connection, function="STRING_AGG", template=template, **extra)


def bars_fingerprint(instrument_id: int, *, as_of: dt.date | None, limit: int) -> str:
    """Everything ``market.selectors.bars_frame(instrument, as_of=as_of, limit=limit)`` reads, as
    one string: the window's bars as stored (a new bar, a corrected price or volume, a removed day
    changes it) and the instrument's splits and bonuses. Two queries and no Decimal per price, a
    fraction of reading the frame: what a cached chart is keyed on, so it is never stale."""
    window = DailyBar.objects.filter(instrument_id=instrument_id)
    if as_of is not None:
        window = window.filter(date__lte=as_of)
    bars = window.order_by("-date")[:limit].aggregate(
        rows=_JoinedRows("date", "open", "high", "low", "close", "volume")
    )["rows"]
    return f"{bars or ''};{share_changes(instrument_id)!r}"


def open_positions(account: Account) -> QuerySet[Position]:
    return Position.objects.filter(account=account, status=Position.Status.OPEN).select_related("instrument")


HUNDRED = Decimal(100)


def percent_since_entry(direction: str, entry: Decimal, mark: Decimal) -> Decimal:
    """The move from the entry to the mark in the position's favour, in percent: +2.00 when a LONG's
    price rose 2 % or a SHORT's fell 2 %."""
    sign = 1 if direction == "LONG" else -1
    return (sign * (mark - entry) / entry * HUNDRED).quantize(Decimal("0.01")) if entry else Decimal(0)


def r_multiple(entry: Decimal, stop: Decimal, mark: Decimal) -> Decimal | None:
    """(mark − entry) / (entry − stop): the move in units of the risk taken. The sign follows the
    direction by itself (a SHORT's stop is above its entry), so +1.0 is one risk unit of profit and
    −1.0 the stop's loss for either side. None without a risk (a stop on the entry)."""
    risk = entry - stop
    return ((mark - entry) / risk).quantize(Decimal("0.01")) if risk else None


@dataclass(frozen=True)
class PositionRow:
    """One position as the portfolio shows it: the stored row and the figures computed from it."""

    position: Position
    mark: Decimal
    pct_since_entry: Decimal
    r_multiple: Decimal | None
    sessions_held: int
    notional: Decimal


@dataclass(frozen=True)
class Holding:
    """The open positions of one instrument and direction summed: what the book holds in it."""

    instrument_id: int
    direction: str
    rows: list[PositionRow]
    quantity: int
    avg_entry: Decimal
    mark: Decimal
    unrealised: Decimal
    notional: Decimal
    pct_since_entry: Decimal
    r_multiple: Decimal | None
    sessions_held: int
    dividends: Decimal

    @property
    def first(self) -> Position:
        return self.rows[0].position

    @property
    def stop(self) -> Decimal | None:
        """The stop when every position shares it, else None (the page shows each one's)."""
        stops = {row.position.stop for row in self.rows}
        return stops.pop() if len(stops) == 1 else None

    @property
    def target(self) -> Decimal | None:
        targets = {row.position.target for row in self.rows}
        return targets.pop() if len(targets) == 1 else None


def position_row(position: Position, *, held_until: dt.date | None) -> PositionRow:
    """``held_until``: the last session counted (the exit day of a closed position, the latest bar
    of an open one's instrument); sessions are the exchange calendar's, as the broker counts them."""
    mark = position.exit_price if position.exit_price is not None else (position.last_mark or position.entry_price)
    until = position.closed_on or held_until
    return PositionRow(
        position=position,
        mark=mark,
        pct_since_entry=percent_since_entry(position.direction, position.entry_price, mark),
        r_multiple=r_multiple(position.entry_price, position.stop, mark),
        sessions_held=sessions_between(position.instrument.exchange, position.opened_on, until) if until else 0,
        notional=(mark * position.quantity).quantize(Decimal("0.01")),
    )


def holding(rows: list[PositionRow]) -> Holding:
    """Several positions in one instrument and direction as one: quantities and PnL summed, the entry
    averaged by quantity, the R multiple as the summed move over the summed risk."""
    first = rows[0].position
    quantity = sum(row.position.quantity for row in rows)
    cost = sum((row.position.entry_price * row.position.quantity for row in rows), start=Decimal(0))
    avg_entry = (cost / quantity).quantize(Decimal("0.0001")) if quantity else Decimal(0)
    risk = sum((abs(row.position.entry_price - row.position.stop) * row.position.quantity for row in rows), Decimal(0))
    sign = 1 if first.direction == "LONG" else -1
    moved = sum((sign * (row.mark - row.position.entry_price) * row.position.quantity for row in rows), Decimal(0))
    mark = rows[0].mark
    return Holding(
        instrument_id=first.instrument_id,
        direction=first.direction,
        rows=rows,
        quantity=quantity,
        avg_entry=avg_entry,
        mark=mark,
        unrealised=sum((row.position.unrealised_pnl for row in rows), start=Decimal(0)),
        notional=sum((row.notional for row in rows), start=Decimal(0)),
        pct_since_entry=percent_since_entry(first.direction, avg_entry, mark),
        r_multiple=(moved / risk).quantize(Decimal("0.01")) if risk else None,
        sessions_held=max(row.sessions_held for row in rows),
        dividends=sum((row.position.dividends for row in rows), start=Decimal(0)),
    )


def open_holdings(account: Account) -> list[Holding]:
    """The account's open positions grouped by instrument and direction, largest notional first.
    Two queries: the positions, and the latest bar of their instruments (for the sessions held)."""
    positions = list(open_positions(account).order_by("opened_on", "id"))
    today = timezone.localdate()
    latest = dict(
        DailyBar.objects.filter(instrument_id__in={p.instrument_id for p in positions}, date__lte=today)
        .values_list("instrument_id")
        .annotate(last=Max("date"))
    )
    groups: dict[tuple[int, str], list[PositionRow]] = {}
    for position in positions:
        row = position_row(position, held_until=latest.get(position.instrument_id))
        groups.setdefault((position.instrument_id, position.direction), []).append(row)
    holdings = [holding(rows) for rows in groups.values()]
    return sorted(holdings, key=lambda h: (-h.notional, h.first.instrument.symbol))


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


@dataclass(frozen=True)
class OrderFilters:
    status: str
    symbol: str
    account: str


def order_filters(params: Mapping[str, str]) -> OrderFilters:
    """The blotter's filters (the page's and the API's: the same rules). ``account`` is ``live``
    (the default), ``replay``, ``all`` or an account's id. Raises ``edge.InputInvalid`` naming the
    first bad value."""
    account = str(params.get("account") or "live").strip()
    if account not in ORDER_BOOKS and not (account.isdigit() and len(account) < 12):
        raise edge.InputInvalid(f"account {edge.short(account)!r} is not one of live, replay, all or an account's id")
    return OrderFilters(
        status=edge.parse_choice(params.get("status") or "all", "status", ORDER_STATUSES),
        symbol=edge.parse_name(params.get("symbol"), "symbol").upper(),
        account=account,
    )


def order_blotter(params: Mapping[str, str], *, live: Account) -> QuerySet[Order]:
    """Orders newest first, with what a row shows in one query (instrument, account, thesis, run).
    ``live`` is the live account (the default book). Raises ``edge.InputInvalid`` for a bad filter."""
    filters = order_filters(params)
    orders = Order.objects.select_related("instrument", "account", "thesis__run", "thesis__decided_by")
    if filters.account == "live":
        orders = orders.filter(account=live)
    elif filters.account == "replay":
        orders = orders.filter(thesis__run__is_replay=True)
    elif filters.account != "all":
        orders = orders.filter(account_id=int(filters.account))
    if filters.status != "all":
        orders = orders.filter(status=filters.status)
    if filters.symbol:
        orders = orders.filter(instrument__symbol=filters.symbol)
    return orders.order_by("-placed_at", "-id")


def closed_rows(account: Account, limit: int = 100) -> list[PositionRow]:
    """The latest closed positions with their figures at the exit."""
    return [position_row(position, held_until=None) for position in closed_positions(account, limit)]
