"""Stages 9-12 on the real services: fills, costs, marks, exits, realised PnL, review."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from agents.models import MemoryEntry
from reviews.models import TradeReview
from reviews.services import position_review
from tests.trading.book_rows import next_session
from trading.book import broker
from trading.book.approvals import thesis_approve
from trading.models import Account, AuditEvent, DailyBar, Order, Position, PositionMark, Thesis
from trading.pipeline.presenters import run_outputs


def _bar(thesis: Thesis, day: dt.date, *, open_, high, low, close) -> DailyBar:
    return DailyBar.objects.create(
        instrument=thesis.instrument,
        date=day,
        open=Decimal(open_),
        high=Decimal(high),
        low=Decimal(low),
        close=Decimal(close),
        volume=100_000,
    )


@pytest.fixture
def long_thesis(pending_thesis):
    """The pending thesis made LONG with round levels, so exits can be reasoned about by hand."""
    Thesis.objects.filter(pk=pending_thesis.pk).update(
        direction="LONG",
        entry=Decimal("100.00"),
        stop=Decimal("95.00"),
        target=Decimal("110.00"),
        quantity=100,
        horizon_sessions=3,
    )
    pending_thesis.refresh_from_db()
    return pending_thesis


def _approve_and_fill(thesis, approver, settings, *, policy="next_open", open_="100.00") -> Position:
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": policy, "SLIPPAGE_BPS": "10"}
    # The next session's open is where a next-open order fills; the staleness guard reads the
    # latest close, so the test's bar stays close to the entry.
    day = next_session(thesis.run.as_of)
    _bar(thesis, day, open_=open_, high="101.00", low="99.00", close="100.00")
    order = thesis_approve(thesis=thesis, user=approver)
    position = broker.order_try_fill(order=order, as_of=day)
    assert position is not None
    return position


def test_a_next_open_order_waits_for_the_next_bar_then_fills_with_slippage_and_costs(long_thesis, approver, settings):
    # The hand-made levels sit far from the random walk's last close: the staleness guard is
    # widened on purpose here, so the order can wait for a bar the test writes.
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open", "SLIPPAGE_BPS": "10", "STALE_ATR_MULTIPLE": 1000}
    cash_before = Account.objects.get().cash

    order = thesis_approve(thesis=long_thesis, user=approver)
    assert broker.order_try_fill(order=order) is None and order.status == Order.Status.WORKING

    day = next_session(long_thesis.run.as_of)
    _bar(long_thesis, day, open_="100.00", high="101.00", low="99.00", close="100.50")
    position = broker.order_try_fill(order=order, as_of=day)

    # 100.00 + 10 bps = 100.10, already on the 0.05 tick when rounded up.
    assert position.entry_price == Decimal("100.10") and position.opened_on == day
    turnover = Decimal("100.10") * 100
    expected_costs = (
        (turnover * Decimal("0.001")).quantize(Decimal("0.01"))  # STT 0.1%
        + (turnover * Decimal("0.0000297")).quantize(Decimal("0.01"))  # exchange 0.00297%
        + (turnover * Decimal("0.000001")).quantize(Decimal("0.01"))  # SEBI 0.0001%
        + (turnover * Decimal("0.00015")).quantize(Decimal("0.01"))  # stamp duty 0.015% on buys
    )
    gst = (
        (turnover * Decimal("0.0000297")).quantize(Decimal("0.01"))
        + (turnover * Decimal("0.000001")).quantize(Decimal("0.01"))
    ) * Decimal("0.18")
    assert position.entry_costs == expected_costs + gst.quantize(Decimal("0.01"))
    assert Account.objects.get().cash == cash_before - turnover - position.entry_costs
    assert broker.order_try_fill(order=order, as_of=day) == position  # a retried fill changes nothing
    assert Position.objects.count() == 1


def test_a_stop_hit_in_the_day_closes_at_the_stop_net_of_costs(long_thesis, approver, settings):
    position = _approve_and_fill(long_thesis, approver, settings)
    day = next_session(position.opened_on)
    _bar(long_thesis, day, open_="99.00", high="99.50", low="94.00", close="96.00")

    assert broker.positions_mark(as_of=day) == {"filled": 0, "closed": 1, "marked": 0}

    position.refresh_from_db()
    assert position.status == Position.Status.CLOSED and position.exit_reason == "stop"
    assert position.exit_price == Decimal("94.90")  # the stop 95.00 less 10 bps slippage, down to the tick
    gross = (Decimal("94.90") - position.entry_price) * 100
    assert position.realised_pnl == gross - position.entry_costs - position.exit_costs


def test_a_gap_through_the_stop_fills_at_the_open_not_the_stop(long_thesis, approver, settings):
    position = _approve_and_fill(long_thesis, approver, settings)
    day = next_session(position.opened_on)
    _bar(long_thesis, day, open_="90.00", high="91.00", low="89.00", close="90.50")

    broker.positions_mark(as_of=day)

    position.refresh_from_db()
    assert position.exit_reason == "stop" and position.exit_price == Decimal("89.90")  # the open 90.00 less slippage


def test_a_target_hit_closes_at_the_target(long_thesis, approver, settings):
    position = _approve_and_fill(long_thesis, approver, settings)
    day = next_session(position.opened_on)
    _bar(long_thesis, day, open_="104.00", high="111.00", low="103.00", close="108.00")

    broker.positions_mark(as_of=day)

    position.refresh_from_db()
    assert position.exit_reason == "target" and position.exit_price == Decimal("109.85")  # 110.00 less slippage
    assert position.realised_pnl > 0


def test_a_position_is_marked_daily_then_closed_at_the_horizon(long_thesis, approver, settings):
    position = _approve_and_fill(long_thesis, approver, settings)
    day = position.opened_on
    closes = ["101.00", "102.00", "101.50"]
    for close in closes:
        day = next_session(day)
        _bar(long_thesis, day, open_=close, high=str(Decimal(close) + 1), low=str(Decimal(close) - 1), close=close)
        broker.positions_mark(as_of=day)

    position.refresh_from_db()
    marks = list(PositionMark.objects.filter(position=position).values_list("close", flat=True))
    assert marks == [Decimal("101.00"), Decimal("102.00")]
    assert position.exit_reason == "horizon" and position.exit_price == Decimal("101.35")  # 101.50 less slippage


def test_a_manual_close_by_an_approver_is_audited_and_cannot_happen_twice(long_thesis, approver, viewer, settings):
    position = _approve_and_fill(long_thesis, approver, settings)

    with pytest.raises(broker.BrokerError, match="only approvers"):
        broker.position_close_by_hand(position=position, user=viewer)
    closed = broker.position_close_by_hand(position=position, user=approver, comment="news risk")

    assert closed.exit_reason == "manual"
    assert AuditEvent.objects.get(action="position_closed").reason == "news risk"
    with pytest.raises(broker.BrokerError, match="already closed"):
        broker.position_close(position=position, price=Decimal("100"), on=closed.closed_on, reason="manual")


def test_the_review_states_facts_from_code_and_feeds_memory(long_thesis, approver, settings):
    position = _approve_and_fill(long_thesis, approver, settings)
    day = next_session(position.opened_on)
    _bar(long_thesis, day, open_="99.00", high="99.50", low="94.00", close="96.00")
    broker.positions_mark(as_of=day)
    position.refresh_from_db()

    review = position_review(position=position)

    assert review.outcome == "loss" and review.signal_evolution == "Falsified"
    assert review.realised_pnl == position.realised_pnl
    assert review.lessons and review.critique
    memory = MemoryEntry.objects.get(review=review)
    assert memory.tags["outcome"] == "loss" and memory.tags["direction"] == "LONG"
    assert memory.symbol == "RELIANCE" and memory.created_on == day
    assert position_review(position=position) == review  # idempotent
    assert TradeReview.objects.count() == 1


def test_the_next_run_on_the_instrument_is_shown_the_lesson(long_thesis, approver, settings):
    from trading.pipeline.orchestrator import pipeline_run_create, pipeline_run_execute

    position = _approve_and_fill(long_thesis, approver, settings)
    day = next_session(position.opened_on)
    _bar(long_thesis, day, open_="99.00", high="99.50", low="94.00", close="96.00")
    broker.positions_mark(as_of=day)
    position.refresh_from_db()
    review = position_review(position=position)

    run = pipeline_run_create(instrument=long_thesis.instrument, as_of=day, provider="offline")
    pipeline_run_execute(run.pk)

    context = run_outputs(run).context
    assert review.memory_entry_id in context.memory_ids
    assert "outcome=loss" in context.memory_block


def test_an_order_whose_fill_gaps_through_the_stop_is_cancelled_not_opened(long_thesis, approver, settings):
    # The hand-made levels sit far from the random walk's last close: the staleness guard is
    # widened on purpose here, so the order can wait for a bar the test writes.
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open", "SLIPPAGE_BPS": "10", "STALE_ATR_MULTIPLE": 1000}
    order = thesis_approve(thesis=long_thesis, user=approver)
    day = next_session(long_thesis.run.as_of)
    _bar(long_thesis, day, open_="94.00", high="95.00", low="93.00", close="94.50")

    assert broker.order_try_fill(order=order, as_of=day) is None

    order.refresh_from_db()
    assert order.status == Order.Status.CANCELLED and "beyond the stop" in order.note
    assert not Position.objects.exists()
    assert AuditEvent.objects.filter(action="order_cancelled").count() == 1
