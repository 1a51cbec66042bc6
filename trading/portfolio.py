"""What the risk engine reads about the book: the account and its open positions."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.conf import settings
from django.db.models import DecimalField, F, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from trading.domain.risk import PortfolioState, RiskLimits
from trading.models import Account, Position


def default_account() -> Account:
    capital = Decimal(settings.ACCOUNT["CAPITAL"])
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
        },
    )
    return account


def account_for_run(run) -> Account:
    if run.is_replay and run.strategy_run_id:
        return replay_account(run.strategy_run.strategy.name)
    return default_account()


def risk_limits(account: Account, strategy=None) -> RiskLimits:
    """The account's limits, tightened or loosened by the strategy's mandate where it sets one."""

    def pick(name: str):
        own = getattr(strategy, name, None) if strategy is not None else None
        return own if own is not None else getattr(account, name)

    return RiskLimits(
        risk_per_trade_pct=pick("risk_per_trade_pct"),
        daily_loss_cap=account.daily_loss_cap,
        max_notional_pct=pick("max_notional_pct"),
        max_positions=pick("max_positions"),
        exposure_cap_pct=account.exposure_cap_pct,
    )


def account_portfolio(account: Account, *, today: dt.date | None = None) -> PortfolioState:
    """Exposure is marked at the latest close (entry price before the first mark); the day's loss
    is the net realised PnL of positions closed on ``today`` when it is negative."""
    account.refresh_from_db(fields=["cash"])
    open_positions = Position.objects.filter(account=account, status=Position.Status.OPEN)
    exposure = open_positions.aggregate(
        value=Sum(F("quantity") * Coalesce("last_mark", "entry_price"), output_field=DecimalField())
    )["value"] or Decimal(0)
    day = today or timezone.localdate()
    realised_today = Position.objects.filter(account=account, status=Position.Status.CLOSED, closed_on=day).aggregate(
        total=Sum("realised_pnl")
    )["total"] or Decimal(0)
    return PortfolioState(
        capital=account.capital,
        available_cash=account.cash,
        open_positions=open_positions.count(),
        gross_exposure=exposure,
        realised_loss_today=max(Decimal(0), -realised_today),
    )
