"""What the risk engine reads about the book: the account, its open positions and working orders."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import NamedTuple, TypeVar

from django.conf import settings
from django.db.models import Aggregate, Count, DecimalField, F, Q, QuerySet, Sum
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Coalesce
from django.utils import timezone

from trading.book.domain.risk import PortfolioState, RiskDecision, RiskLimits, evaluate_risk
from trading.models import Account, Order, PipelineRun, Position, Strategy, Thesis
from vocabulary.trade import as_direction

_Limit = TypeVar("_Limit")


def default_account() -> Account:
    capital = Decimal(str(settings.ACCOUNT["CAPITAL"]))
    cap_pct = Decimal(str(settings.ACCOUNT["DAILY_LOSS_CAP_PCT"]))
    account, _ = Account.objects.get_or_create(
        name=settings.ACCOUNT["NAME"],
        defaults={
            "capital": capital,
            "cash": capital,
            "daily_loss_cap": (capital * cap_pct / 100).quantize(Decimal("0.01")),
        },
    )
    return account


def replay_account(strategy_name: str) -> Account:
    """Each strategy's replays trade their own paper account, so history never touches the live book."""
    live = default_account()
    account, _ = Account.objects.get_or_create(
        name=f"replay: {strategy_name}"[:64],
        defaults={
            "capital": live.capital,
            "cash": live.capital,
            "daily_loss_cap": live.daily_loss_cap,
            "risk_per_trade_pct": live.risk_per_trade_pct,
            "max_notional_pct": live.max_notional_pct,
            "max_positions": live.max_positions,
            "exposure_cap_pct": live.exposure_cap_pct,
            "max_instrument_pct": live.max_instrument_pct,
            "allow_short": live.allow_short,
            "currency": live.currency,
        },
    )
    return account


def account_for_run(run: PipelineRun) -> Account:
    if run.is_replay and run.strategy_run is not None:
        return replay_account(run.strategy_run.strategy.name)
    return default_account()


def _mandate_or(own: _Limit | None, account_value: _Limit) -> _Limit:
    """A mandate's blank limit (None) is the account's."""
    return own if own is not None else account_value


def risk_limits(account: Account, strategy: Strategy | None = None) -> RiskLimits:
    """The account's limits, tightened or loosened by the strategy's mandate where it sets one."""
    own_risk = strategy.risk_per_trade_pct if strategy is not None else None
    own_notional = strategy.max_notional_pct if strategy is not None else None
    own_positions = strategy.max_positions if strategy is not None else None
    return RiskLimits(
        risk_per_trade_pct=_mandate_or(own_risk, account.risk_per_trade_pct),
        daily_loss_cap=account.daily_loss_cap,
        max_notional_pct=_mandate_or(own_notional, account.max_notional_pct),
        max_positions=_mandate_or(own_positions, account.max_positions),
        exposure_cap_pct=account.exposure_cap_pct,
        max_instrument_pct=account.max_instrument_pct,
        allow_short=account.allow_short,
        currency=account.currency,
    )


def account_lock(account_id: int) -> Account:
    """The account row, locked until the surrounding transaction ends. Every decision that adds
    to the book (a thesis, an approval, a fill) takes this lock first, so two of them can never
    both pass a limit that only one fits under. (SQLite takes its write lock at BEGIN IMMEDIATE,
    which serialises the same blocks.)"""
    return Account.objects.select_for_update().get(pk=account_id)


def _working(account: Account, exclude_order_id: int | None) -> QuerySet[Order]:
    orders = Order.objects.filter(account=account, status=Order.Status.WORKING)
    return orders.exclude(pk=exclude_order_id) if exclude_order_id else orders


class _Sums(NamedTuple):
    value: Decimal
    how_many: int
    instrument: Decimal


def _sums(rows: QuerySet, value: CombinedExpression, instrument_id: int | None) -> _Sums:
    """How many ``rows``, their ``value`` summed, and the part of it in ``instrument_id`` (0 when None)."""
    sums: dict[str, Aggregate] = {"value": Sum(value, output_field=DecimalField()), "count": Count("pk")}
    if instrument_id is not None:
        sums["instrument"] = Sum(value, filter=Q(instrument_id=instrument_id), output_field=DecimalField())
    found = rows.aggregate(**sums)
    return _Sums(found["value"] or Decimal(0), found["count"], found.get("instrument") or Decimal(0))


def account_portfolio(
    account: Account,
    *,
    today: dt.date | None = None,
    instrument_id: int | None = None,
    exclude_order_id: int | None = None,
) -> PortfolioState:
    """The live book: open positions marked at their latest close (entry before the first mark),
    working orders at their thesis entry (they take a slot, exposure and cash the moment they
    are approved), and the day's loss as the net realised PnL of positions closed on ``today``.
    ``exclude_order_id`` leaves out the order being filled, which is checked on its own."""
    account.refresh_from_db(fields=["cash"])
    # One query per table: the count, the total and the instrument's share summed together (the
    # same sums the database made one by one before; one instrument holds at most one live idea).
    open_positions = Position.objects.filter(account=account, status=Position.Status.OPEN)
    held = _sums(open_positions, F("quantity") * Coalesce("last_mark", "entry_price"), instrument_id)
    working = _sums(_working(account, exclude_order_id), F("quantity") * F("thesis__entry"), instrument_id)
    position_value, working_value = held.value, working.value
    instrument_value = held.instrument + working.instrument
    day = today or timezone.localdate()
    realised_today = Position.objects.filter(account=account, status=Position.Status.CLOSED, closed_on=day).aggregate(
        total=Sum("realised_pnl")
    )["total"] or Decimal(0)
    return PortfolioState(
        capital=account.capital,
        available_cash=account.cash - working_value,
        open_positions=held.how_many,
        working_orders=working.how_many,
        gross_exposure=position_value + working_value,
        instrument_exposure=instrument_value,
        realised_loss_today=max(Decimal(0), -realised_today),
    )


def _live_ideas(
    account: Account, *, exclude_run_id: int | None = None, include_pending: bool = True
) -> list[tuple[QuerySet, str]]:
    """The account's live ideas, table by table in the order they are asked about, each with the
    reason it gives: held, working, pending (past its approval window no longer counts, swept or
    not; ``exclude_run_id``'s own thesis neither)."""
    ideas: list[tuple[QuerySet, str]] = [
        (Position.objects.filter(account=account, status=Position.Status.OPEN), "already held (position #{})"),
        (Order.objects.filter(account=account, status=Order.Status.WORKING), "an order is already working (order #{})"),
    ]
    if include_pending:
        pending = Thesis.objects.filter(account=account, status=Thesis.Status.PENDING)
        pending = pending.exclude(expires_at__lte=timezone.now())
        if exclude_run_id is not None:
            pending = pending.exclude(run_id=exclude_run_id)
        ideas.append((pending, "a thesis is already pending approval (thesis #{})"))
    return ideas


def instrument_live_idea(
    account: Account, instrument_id: int, *, exclude_run_id: int | None = None, include_pending: bool = True
) -> str:
    """Why the account may not take a new idea in this instrument, or "" when it may: one
    instrument holds at most one live idea per account (held, working or pending)."""
    for rows, reason in _live_ideas(account, exclude_run_id=exclude_run_id, include_pending=include_pending):
        if (found := rows.filter(instrument_id=instrument_id).values_list("pk", flat=True).first()) is not None:
            return reason.format(found)
    return ""


def account_live_ideas(account: Account) -> dict[int, str]:
    """``instrument_live_idea`` for every instrument of the account at once, in three queries: the
    reason by instrument id, for the instruments that have one (the same row each question would
    find first). What a replay day's runs read, once for the day."""
    found: dict[int, str] = {}
    for rows, reason in _live_ideas(account):
        ordered = rows if rows.ordered else rows.order_by("pk")  # the order ``first()`` reads them in
        for instrument_id, pk in ordered.values_list("instrument_id", "pk"):
            found.setdefault(instrument_id, reason.format(pk))
    return found


def thesis_book_check(
    thesis: Thesis,
    account: Account,
    *,
    entry: Decimal,
    today: dt.date,
    exclude_order_id: int | None = None,
    portfolio: PortfolioState | None = None,
) -> RiskDecision:
    """The thesis's fixed size at ``entry`` against the book as it is now: the re-check at
    approval (at the thesis's entry) and at fill (at the fill price, leaving out the order being
    filled). Call it with the account locked; pass ``portfolio`` when it is already read."""
    run = thesis.run
    strategy = run.strategy_run.strategy if run.strategy_run is not None else None
    return evaluate_risk(
        direction=as_direction(thesis.direction),
        entry=entry,
        stop=thesis.stop,
        target=thesis.target,
        lot_size=thesis.instrument.lot_size,
        limits=risk_limits(account, strategy),
        portfolio=portfolio
        or account_portfolio(
            account, today=today, instrument_id=thesis.instrument_id, exclude_order_id=exclude_order_id
        ),
        quantity=thesis.quantity,
    )
