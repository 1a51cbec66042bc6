"""The beat and queue tasks, called directly: ids in, services do the work, a repeat is harmless."""

from __future__ import annotations

import datetime as dt

from reviews.tasks import review_position
from trading.book.approvals import thesis_approve
from trading.book.tasks import expire_theses, fill_order, mark_positions
from trading.models import DailyBar, Order, Position, Strategy, StrategyRun, Thesis
from trading.strategies.tasks import run_due_strategies


def test_fill_then_mark_then_review_by_task(pending_thesis, approver, settings):
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open"}
    order = thesis_approve(thesis=pending_thesis, user=approver)
    assert fill_order(order.pk)["position_id"] is None  # no next session yet: it waits

    last = pending_thesis.instrument.bars.latest("date")
    DailyBar.objects.create(
        instrument=pending_thesis.instrument,
        date=last.date + dt.timedelta(days=3),
        open=last.close,
        high=last.close,
        low=last.close,
        close=last.close,
        volume=1000,
    )
    filled = fill_order(order.pk)
    assert filled["status"] == "filled" and Position.objects.filter(pk=filled["position_id"]).exists()
    assert fill_order(order.pk)["position_id"] == filled["position_id"]  # a redelivery changes nothing

    assert mark_positions()["closed"] == 0  # the latest bar is the fill day: nothing to exit yet
    assert Position.objects.get().status == "open"


def test_review_task_is_quiet_for_a_missing_position(db):
    assert review_position(123456) == {"status": "gone", "position_id": 123456}


def test_expire_task_counts_expired_theses(pending_thesis):
    Thesis.objects.filter(pk=pending_thesis.pk).update(expires_at=pending_thesis.created_at)
    assert expire_theses() == 1
    assert Thesis.objects.get().status == "expired"


def test_due_strategies_are_started_once(instrument_with_bars, django_capture_on_commit_callbacks):
    strategy = Strategy.objects.create(name="always", philosophy="test", schedule="* * * * *")
    strategy.universe.set([instrument_with_bars])
    Strategy.objects.filter(pk=strategy.pk).update(created_at=strategy.created_at.replace(year=2020))

    with django_capture_on_commit_callbacks():
        started = run_due_strategies()

    assert started == [StrategyRun.objects.get().pk]
    assert Order.objects.count() == 0


def test_a_missed_day_is_caught_up_in_order_and_never_twice(pending_thesis, approver, settings):
    from decimal import Decimal

    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open"}
    Thesis.objects.filter(pk=pending_thesis.pk).update(
        direction="LONG",
        entry=pending_thesis.instrument.bars.latest("date").close,
        stop=Decimal("1"),
        target=Decimal("100000"),
        horizon_sessions=50,
        quantity=10,  # a stop this far away risks ₹6,950 on 10 shares, inside the daily cap
    )
    pending_thesis.refresh_from_db()
    thesis_approve(thesis=pending_thesis, user=approver)
    last = pending_thesis.instrument.bars.latest("date")
    for offset, low in ((1, last.close), (2, Decimal("0.50")), (3, last.close)):  # the stop is hit on day 2
        DailyBar.objects.create(
            instrument=pending_thesis.instrument,
            date=last.date + dt.timedelta(days=offset),
            open=last.close,
            high=last.close,
            low=low,
            close=last.close,
            volume=1000,
        )

    first = mark_positions()
    again = mark_positions()

    assert first["sessions"] == 3 and first["filled"] == 1 and first["closed"] == 1
    position = Position.objects.get()
    assert position.closed_on == last.date + dt.timedelta(days=2) and position.exit_reason == "stop"
    assert again["sessions"] == 0
