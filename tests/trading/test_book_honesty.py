"""Honest execution: automatic exits slip like entries, the fill day is marked at its close, a
manual close needs a fresh price and a reason, and its review is a human's exit, not a lesson."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.models import MemoryEntry
from reviews.services import position_review
from tests.trading.book_rows import add_bar, next_session, open_position, round_thesis, working_order
from trading.book import broker
from trading.book.accounts import default_account
from trading.models import Account, AuditEvent, Instrument, Position, PositionMark


@pytest.fixture
def account(db) -> Account:
    account = default_account()
    Account.objects.filter(pk=account.pk).update(max_notional_pct=Decimal("100"), exposure_cap_pct=Decimal("500"))
    account.refresh_from_db()
    return account


@pytest.fixture
def ten_bps(settings):
    settings.BROKER = {**settings.BROKER, "FILL_POLICY": "next_open", "SLIPPAGE_BPS": "10"}


def _fill_day(instrument):
    return next_session(instrument.bars.latest("date").date)


# --- B1: automatic exits carry slippage ----------------------------------------------------------


@pytest.mark.parametrize(
    ("direction", "bar", "reason", "exit_price"),
    [
        # LONG stop 95 hit in the day: a SELL at 95 x (1 - 0.001) = 94.905, down to the tick: 94.90.
        ("LONG", ("99.00", "99.50", "94.00", "96.00"), "stop", "94.90"),
        # LONG gap through the stop at the open 90: 89.91, down to 89.90.
        ("LONG", ("90.00", "91.00", "89.00", "90.50"), "stop", "89.90"),
        # LONG target 110 hit: 109.89, down to 109.85.
        ("LONG", ("104.00", "111.00", "103.00", "108.00"), "target", "109.85"),
        # SHORT target 90 hit: a BUY back at 90 x 1.001 = 90.09, up to the tick: 90.10.
        ("SHORT", ("96.00", "97.00", "89.00", "91.00"), "target", "90.10"),
    ],
)
def test_a_stop_or_target_exit_pays_slippage_against_the_trader(
    instrument_with_bars, account, ten_bps, direction, bar, reason, exit_price
):
    thesis = round_thesis(instrument_with_bars, direction=direction)
    day = _fill_day(instrument_with_bars)
    position = open_position(thesis, account, on=day, entry="100.00")
    exit_day = next_session(day)
    open_, high, low, close = bar
    add_bar(instrument_with_bars, exit_day, open_=open_, high=high, low=low, close=close)

    assert broker.positions_mark(as_of=exit_day)["closed"] == 1

    position.refresh_from_db()
    assert position.exit_reason == reason and position.exit_price == Decimal(exit_price)
    sign = 1 if direction == "LONG" else -1
    gross = sign * (Decimal(exit_price) - Decimal("100.00")) * 100
    assert position.realised_pnl == gross - position.entry_costs - position.exit_costs


def test_a_horizon_exit_pays_slippage_on_the_close(instrument_with_bars, account, ten_bps):
    thesis = round_thesis(instrument_with_bars)
    day = _fill_day(instrument_with_bars)
    position = open_position(thesis, account, on=day)
    for close in ["101.00", "102.00", "101.50"]:
        day = next_session(day)
        add_bar(
            instrument_with_bars,
            day,
            open_=close,
            high=str(Decimal(close) + 1),
            low=str(Decimal(close) - 1),
            close=close,
        )
        broker.positions_mark(as_of=day)

    position.refresh_from_db()
    # The third session's close 101.50 x 0.999 = 101.3985, down to the tick: 101.35.
    assert position.exit_reason == "horizon" and position.exit_price == Decimal("101.35")


# --- B2: the fill day is marked at its close -----------------------------------------------------


def test_a_next_open_fill_is_marked_at_that_days_close(instrument_with_bars, account, ten_bps):
    thesis = round_thesis(instrument_with_bars)
    placed_on = instrument_with_bars.bars.latest("date").date
    working_order(thesis, account, placed_on=placed_on)
    day = next_session(placed_on)
    add_bar(instrument_with_bars, day, open_="100.00", high="101.00", low="99.50", close="100.60")

    assert broker.positions_mark(as_of=day) == {"filled": 1, "closed": 0, "marked": 1}

    position = Position.objects.get(thesis=thesis)
    # Filled at 100.00 + 10 bps = 100.10; marked at the close 100.60: (100.60 - 100.10) x 100 = 50.00.
    assert position.opened_on == day and position.entry_price == Decimal("100.10")
    assert position.last_mark == Decimal("100.60") and position.unrealised_pnl == Decimal("50.00")
    assert PositionMark.objects.get(position=position, date=day).unrealised_pnl == Decimal("50.00")


def test_the_fill_days_range_does_not_close_the_position_exits_start_next_session(
    instrument_with_bars, account, ten_bps
):
    thesis = round_thesis(instrument_with_bars)
    placed_on = instrument_with_bars.bars.latest("date").date
    working_order(thesis, account, placed_on=placed_on)
    day = next_session(placed_on)
    # Opens at 100 (fill 100.10), trades down through the stop 95 later the same day, closes at 96.
    add_bar(instrument_with_bars, day, open_="100.00", high="100.50", low="94.00", close="96.00")

    broker.positions_mark(as_of=day)

    position = Position.objects.get(thesis=thesis)
    assert position.status == Position.Status.OPEN
    assert position.last_mark == Decimal("96.00") and position.unrealised_pnl == Decimal("-410.00")


# --- B3: a manual close needs a fresh price and a reason; its review is a human's exit ------------


def test_a_manual_close_without_a_reason_is_refused(instrument_with_bars, account, approver, ten_bps):
    position = open_position(
        round_thesis(instrument_with_bars), account, on=instrument_with_bars.bars.latest("date").date
    )

    with pytest.raises(broker.BrokerError, match="say why you close it by hand: a reason is required"):
        broker.position_close_by_hand(position=position, user=approver, comment="   ")

    position.refresh_from_db()
    assert position.status == Position.Status.OPEN


def test_a_manual_close_is_refused_when_the_instruments_price_is_older_than_the_last_session(
    instrument_with_bars, account, approver, ten_bps
):
    last_own = instrument_with_bars.bars.latest("date").date
    position = open_position(round_thesis(instrument_with_bars), account, on=last_own)
    tcs = Instrument.objects.create(symbol="TCS", exchange="NSE", name="TCS", sector="IT")
    day = last_own
    for _ in range(3):
        day = next_session(day)
        add_bar(tcs, day, open_="3500", high="3510", low="3490", close="3505")
    # A later bar on another exchange does not move the NSE's last session.
    bse = Instrument.objects.create(symbol="TCS", exchange="BSE", name="TCS", sector="IT")
    add_bar(bse, next_session(day), open_="3500", high="3510", low="3490", close="3505")

    with pytest.raises(broker.BrokerError) as refused:
        broker.position_close_by_hand(position=position, user=approver, comment="news risk")

    assert refused.value.reason.startswith(
        f"the last price of RELIANCE is from {last_own:%d %b %Y}, 3 sessions before the last session {day:%d %b %Y}"
    )
    position.refresh_from_db()
    assert position.status == Position.Status.OPEN


def test_a_manual_close_at_the_last_session_closes_with_slippage_and_keeps_the_reason(
    instrument_with_bars, account, approver, ten_bps
):
    thesis = round_thesis(instrument_with_bars)
    day = _fill_day(instrument_with_bars)
    add_bar(instrument_with_bars, day, open_="100.00", high="101.00", low="99.00", close="100.00")
    position = open_position(thesis, account, on=day)

    closed = broker.position_close_by_hand(position=position, user=approver, comment="results tomorrow")

    # The close 100.00 x 0.999 = 99.90 on the tick.
    assert closed.exit_reason == "manual" and closed.exit_price == Decimal("99.90")
    assert closed.exit_comment == "results tomorrow"
    assert AuditEvent.objects.get(action="position_closed").reason == "results tomorrow"


def test_a_manual_exits_review_says_a_person_closed_it_and_writes_no_market_lesson(
    instrument_with_bars, account, approver, ten_bps
):
    thesis = round_thesis(instrument_with_bars)
    day = _fill_day(instrument_with_bars)
    add_bar(instrument_with_bars, day, open_="100.00", high="101.00", low="97.50", close="98.00")
    position = open_position(thesis, account, on=day)
    closed = broker.position_close_by_hand(position=position, user=approver, comment="results tomorrow")

    review = position_review(position=closed)

    assert "a person's exit, not the market's" in review.thesis_vs_outcome["exit"]
    assert "results tomorrow" in review.thesis_vs_outcome["exit"]
    assert review.critique.startswith("Closed by hand (a person's exit, not the market's): results tomorrow.")
    assert review.memory_entry is None and not MemoryEntry.objects.exists()
