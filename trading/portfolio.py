"""What the risk engine reads about the book. Positions arrive with the paper broker (issue 4);
until then the account row is the whole book: no open positions, no exposure, no loss today."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings

from trading.domain.risk import PortfolioState, RiskLimits
from trading.models import Account


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


def risk_limits(account: Account) -> RiskLimits:
    return RiskLimits(
        risk_per_trade_pct=account.risk_per_trade_pct,
        daily_loss_cap=account.daily_loss_cap,
        max_notional_pct=account.max_notional_pct,
        max_positions=account.max_positions,
        exposure_cap_pct=account.exposure_cap_pct,
    )


def account_portfolio(account: Account) -> PortfolioState:
    return PortfolioState(
        capital=account.capital,
        available_cash=account.cash,
        open_positions=0,
        gross_exposure=Decimal(0),
        realised_loss_today=Decimal(0),
    )
