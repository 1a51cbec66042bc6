"""Rows for book tests: a thesis from a real offline run, reshaped to round levels, and orders and
positions written directly, so a test reasons about the broker's arithmetic alone; and theses
written as rows with no run at all (``pending``), so a test can put a dozen ideas in a dozen
instruments in front of the approval and fill services at once."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.utils import timezone

from trading.book.approvals import thesis_expiry
from trading.models import Account, DailyBar, Instrument, Order, PipelineRun, Position, Thesis
from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute


def next_session(day: dt.date, n: int = 1) -> dt.date:
    while n:
        day += dt.timedelta(days=1)
        if day.weekday() < 5:
            n -= 1
    return day


def add_bar(instrument: Instrument, day: dt.date, *, open_: str, high: str, low: str, close: str) -> DailyBar:
    return DailyBar.objects.create(
        instrument=instrument,
        date=day,
        open=Decimal(open_),
        high=Decimal(high),
        low=Decimal(low),
        close=Decimal(close),
        volume=100_000,
    )


def round_thesis(instrument: Instrument, *, direction: str = "LONG", replay: bool = False) -> Thesis:
    """A thesis on the latest bar with entry 100, stop 95 / target 110 (mirrored for a SHORT), 100 shares."""
    as_of = instrument.bars.latest("date").date
    run = pipeline_run_create(instrument=instrument, as_of=as_of, provider="offline")
    pipeline_run_execute(run.pk)
    if replay:
        PipelineRun.objects.filter(pk=run.pk).update(is_replay=True)
    stop, target = ("95.00", "110.00") if direction == "LONG" else ("105.00", "90.00")
    Thesis.objects.filter(run=run).update(
        direction=direction,
        entry=Decimal("100.00"),
        stop=Decimal(stop),
        target=Decimal(target),
        quantity=100,
        horizon_sessions=3,
        risk_approved=True,
        status=Thesis.Status.PENDING,
    )
    return Thesis.objects.select_related("instrument", "run").get(run=run)


def working_order(thesis: Thesis, account: Account, *, placed_on: dt.date, slippage_bps: str = "10") -> Order:
    return Order.objects.create(
        thesis=thesis,
        account=account,
        instrument=thesis.instrument,
        side="BUY" if thesis.direction == "LONG" else "SELL",
        quantity=thesis.quantity,
        fill_policy="next_open",
        slippage_bps=Decimal(slippage_bps),
        placed_on=placed_on,
    )


def open_position(thesis: Thesis, account: Account, *, on: dt.date, entry: str = "100.10") -> Position:
    """An open position as the broker leaves it after a fill at ``entry`` on ``on``."""
    order = working_order(thesis, account, placed_on=on)
    Order.objects.filter(pk=order.pk).update(status=Order.Status.FILLED, fill_price=Decimal(entry), filled_on=on)
    return Position.objects.create(
        account=account,
        order=order,
        thesis=thesis,
        instrument=thesis.instrument,
        direction=thesis.direction,
        quantity=thesis.quantity,
        entry_price=Decimal(entry),
        entry_costs=Decimal("12.00"),
        opened_on=on,
        stop=thesis.stop,
        target=thesis.target,
        horizon_sessions=thesis.horizon_sessions,
        last_mark=Decimal(entry),
        is_replay=thesis.run.is_replay,
    )


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
