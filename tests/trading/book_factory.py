"""Theses, orders and positions for book tests, written as rows (no pipeline run), so a test can
put a dozen ideas in a dozen instruments in front of the approval and fill services at once."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.utils import timezone

from trading.approvals import thesis_expiry
from trading.models import Account, DailyBar, Instrument, PipelineRun, Thesis

SESSION = dt.date(2026, 3, 2)  # a Monday


def book_account(**limits) -> Account:
    """A ₹10,00,000 account with the desk's default limits unless ``limits`` says otherwise."""
    values = {
        "capital": Decimal("1000000"),
        "cash": Decimal("1000000"),
        "daily_loss_cap": Decimal("20000"),
        "max_notional_pct": Decimal("20"),
        "max_positions": 5,
        "exposure_cap_pct": Decimal("100"),
        "max_instrument_pct": Decimal("20"),
        **limits,
    }
    account, _ = Account.objects.update_or_create(name="Desk", defaults=values)
    return account


def instrument_at(symbol: str, price: str = "100.00", *, day: dt.date = SESSION) -> Instrument:
    """An instrument whose bar on ``day`` opens, closes and trades at ``price``."""
    instrument, _ = Instrument.objects.get_or_create(symbol=symbol, exchange="NSE", defaults={"name": symbol})
    level = Decimal(price)
    DailyBar.objects.update_or_create(
        instrument=instrument,
        date=day,
        defaults={"open": level, "high": level, "low": level, "close": level, "volume": 100_000},
    )
    return instrument


def pending(
    account: Account,
    instrument: Instrument,
    *,
    quantity: int,
    entry: str = "100.00",
    stop: str = "95.00",
    target: str = "110.00",
    direction: str = "LONG",
    as_of: dt.date = SESSION,
    replay: bool = False,
) -> Thesis:
    """A risk-approved thesis waiting for a person, sized ``quantity``, on a finished run."""
    run = PipelineRun.objects.create(
        instrument=instrument, as_of=as_of, provider="offline", status=PipelineRun.Status.COMPLETED, is_replay=replay
    )
    entry_price = Decimal(entry)
    return Thesis.objects.create(
        run=run,
        account=account,
        instrument=instrument,
        direction=direction,
        conviction=Decimal("0.6"),
        entry=entry_price,
        stop=Decimal(stop),
        target=Decimal(target),
        horizon_sessions=10,
        quantity=quantity,
        risk_amount=abs(entry_price - Decimal(stop)) * quantity,
        notional=entry_price * quantity,
        risk_approved=True,
        risk_checks=[],
        payload={"rationale": "a test idea"},
        expires_at=thesis_expiry(timezone.now()),
    )
