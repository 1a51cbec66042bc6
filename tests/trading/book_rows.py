"""Rows for book tests: a thesis from a real offline run, reshaped to round levels, and orders and
positions written directly, so a test reasons about the broker's arithmetic alone."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from trading.models import Account, DailyBar, Instrument, Order, PipelineRun, Position, Thesis
from trading.pipeline import pipeline_run_create, pipeline_run_execute


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
