"""Splits and bonuses: history reads in today's share units, and an open position is adjusted,
never stopped out, by a split."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pandas as pd
import pytest

from tests.conftest import make_bars
from tests.trading.book_rows import book_account, open_position, round_thesis, working_order
from trading.book.broker import positions_mark
from trading.market import selectors, services
from trading.market.calendar import next_session
from trading.market.domain.adjust import ShareChange, adjust_frame, adjusted_levels
from trading.models import AuditEvent, CorporateAction, DailyBar, Instrument, Order, Position

pytestmark = pytest.mark.django_db

SPLIT_AT = 250  # the index of the ex-date's bar in the 300-bar window


def _instrument(symbol: str) -> Instrument:
    return Instrument.objects.create(
        symbol=symbol, exchange="NSE", name=symbol, sector="Energy", tick_size=Decimal("0.05"), lot_size=1
    )


def _pre_split_copy(source: Instrument, symbol: str, ex_date: dt.date, ratio: int = 5) -> Instrument:
    """The same market as ``source`` as the exchange printed it with a 1:``ratio`` split on
    ``ex_date``: every earlier bar five times the price on a fifth of the volume."""
    copy = _instrument(symbol)
    bars = []
    for bar in source.bars.order_by("date"):
        before = bar.date < ex_date
        scale = ratio if before else 1
        bars.append(
            DailyBar(
                instrument=copy,
                date=bar.date,
                open=bar.open * scale,
                high=bar.high * scale,
                low=bar.low * scale,
                close=bar.close * scale,
                volume=bar.volume // ratio if before else bar.volume,
            )
        )
    DailyBar.objects.bulk_create(bars)
    CorporateAction.objects.create(
        instrument=copy, kind=CorporateAction.Kind.SPLIT, ex_date=ex_date, ratio_old=1, ratio_new=ratio, source="test"
    )
    return copy


@pytest.fixture
def split_pair(db) -> tuple[Instrument, Instrument, dt.date]:
    """An adjusted series and the same series as printed with a 1:5 split inside the window."""
    adjusted = _instrument("ADJUSTED")
    make_bars(adjusted, 300)
    for bar in adjusted.bars.all():  # a volume a 1:5 split divides exactly
        DailyBar.objects.filter(pk=bar.pk).update(volume=bar.volume - bar.volume % 5)
    ex_date = adjusted.bars.order_by("date")[SPLIT_AT].date
    return adjusted, _pre_split_copy(adjusted, "PRINTED", ex_date), ex_date


def test_a_split_inside_the_window_leaves_the_bars_and_features_identical_to_the_adjusted_series(split_pair):
    adjusted, printed, _ = split_pair
    as_of = adjusted.bars.latest("date").date
    pd.testing.assert_frame_equal(
        selectors.bars_frame(printed, as_of=as_of), selectors.bars_frame(adjusted, as_of=as_of)
    )
    mine = services.feature_bundle_for(instrument=printed, as_of=as_of).model_dump(exclude={"symbol"})
    theirs = services.feature_bundle_for(instrument=adjusted, as_of=as_of).model_dump(exclude={"symbol"})
    assert mine == theirs


def test_a_split_is_not_applied_before_its_ex_date(split_pair):
    """No look-ahead: the day before the ex-date nobody knew of the split."""
    _, printed, ex_date = split_pair
    eve = printed.bars.filter(date__lt=ex_date).latest("date")
    frame = selectors.bars_frame(printed, as_of=eve.date)
    assert frame["close"].iloc[-1] == float(eve.close)
    assert selectors.bars_frame(printed, as_of=ex_date)["close"].loc[eve.date] == float(eve.close) / 5


def test_the_raw_read_shows_the_printed_prices(split_pair):
    _, printed, ex_date = split_pair
    eve = printed.bars.filter(date__lt=ex_date).latest("date")
    raw = selectors.bars_frame(printed, adjusted=False)
    assert raw["close"].loc[eve.date] == float(eve.close)


def test_a_new_split_gives_the_day_a_new_feature_snapshot(split_pair):
    _, printed, ex_date = split_pair
    as_of = printed.bars.latest("date").date
    CorporateAction.objects.filter(instrument=printed).delete()
    before = services.feature_snapshot_store(instrument=printed, as_of=as_of)
    CorporateAction.objects.create(
        instrument=printed, kind=CorporateAction.Kind.SPLIT, ex_date=ex_date, ratio_old=1, ratio_new=5
    )
    after = services.feature_snapshot_store(instrument=printed, as_of=as_of)
    assert after.pk != before.pk and after.digest != before.digest


def test_adjustment_compounds_two_changes_and_ignores_unknown_ones() -> None:
    days = [dt.date(2024, 1, d) for d in (1, 2, 3, 4)]
    frame = pd.DataFrame(
        {"open": 100.0, "high": 100.0, "low": 100.0, "close": 100.0, "volume": 10.0}, index=pd.Index(days)
    )
    changes = [ShareChange(dt.date(2024, 1, 2), 1, 2), ShareChange(dt.date(2024, 1, 4), 1, 5)]
    early = adjust_frame(frame, changes, as_of=dt.date(2024, 1, 3))
    assert list(early["close"]) == [50.0, 100.0, 100.0, 100.0]
    late = adjust_frame(frame, changes, as_of=dt.date(2024, 1, 4))
    assert list(late["close"]) == [10.0, 20.0, 20.0, 100.0]
    assert list(late["volume"]) == [100.0, 50.0, 50.0, 10.0]


def test_a_fraction_of_a_share_is_returned_in_cash_at_the_adjusted_entry() -> None:
    levels = adjusted_levels(
        direction="LONG",
        quantity=7,
        entry_price=Decimal("300.00"),
        stop=Decimal("290.05"),
        target=Decimal("320.00"),
        last_mark=Decimal("301.00"),
        change=ShareChange(dt.date(2024, 1, 2), 2, 3),  # a 1:2 bonus: every 2 shares become 3
    )
    assert levels.quantity == 10  # 10.5 shares: the half is not held
    assert levels.entry_price == Decimal("200.0000")
    assert levels.cash_in_lieu == Decimal("100.00")
    assert levels.stop <= Decimal("290.05") * 2 / 3 and levels.target >= Decimal("320.00") * 2 / 3


# --- the book ----------------------------------------------------------------------------------


@pytest.fixture
def held_into_a_split(instrument_with_bars):
    """A long of 100 at 100.10 (stop 95, target 110) and a 1:5 split the next session, whose bar
    trades at a fifth of the price: unadjusted, it is far below the stop."""
    account = book_account(max_notional_pct=Decimal("100"), max_instrument_pct=Decimal("100"))
    thesis = round_thesis(instrument_with_bars)
    last = instrument_with_bars.bars.latest("date").date
    position = open_position(thesis, account, on=last)
    ex_date = next_session("NSE", last)
    DailyBar.objects.create(
        instrument=instrument_with_bars,
        date=ex_date,
        open=Decimal("20.10"),
        high=Decimal("20.40"),
        low=Decimal("19.95"),
        close=Decimal("20.30"),
        volume=500_000,
    )
    action = CorporateAction.objects.create(
        instrument=instrument_with_bars, kind=CorporateAction.Kind.SPLIT, ex_date=ex_date, ratio_old=1, ratio_new=5
    )
    return account, position, action


def test_a_split_adjusts_an_open_position_instead_of_stopping_it_out(held_into_a_split):
    account, position, action = held_into_a_split
    counts = positions_mark(as_of=action.ex_date, account=account)
    position.refresh_from_db()
    assert counts["closed"] == 0 and position.status == Position.Status.OPEN
    assert position.quantity == 500
    assert (position.entry_price, position.stop, position.target) == (
        Decimal("20.0200"),
        Decimal("19.0000"),
        Decimal("22.0000"),
    )
    assert position.last_mark == Decimal("20.30")
    assert position.unrealised_pnl == Decimal("140.00")  # (20.30 − 20.02) × 500, as 100 × (101.50 − 100.10)
    [entry] = position.adjustments
    assert entry["action"] == action.pk and entry["quantity"] == [100, 500]
    audit = AuditEvent.objects.get(action="position_adjusted")
    assert audit.target == f"position {position.pk}"
    action.refresh_from_db()
    assert action.applied_at is not None


def test_a_retried_pass_adjusts_a_position_once(held_into_a_split):
    account, position, action = held_into_a_split
    positions_mark(as_of=action.ex_date, account=account)
    positions_mark(as_of=action.ex_date, account=account)
    position.refresh_from_db()
    assert position.quantity == 500 and len(position.adjustments) == 1
    assert AuditEvent.objects.filter(action="position_adjusted").count() == 1


def test_a_position_opened_on_the_ex_date_is_already_in_the_new_units(held_into_a_split, instrument_with_bars):
    account, position, action = held_into_a_split
    Position.objects.filter(pk=position.pk).update(opened_on=action.ex_date)
    positions_mark(as_of=action.ex_date, account=account)
    position.refresh_from_db()
    assert position.quantity == 100 and position.adjustments == []


def test_an_order_placed_before_a_split_and_due_after_it_is_cancelled_with_the_reason(instrument_with_bars):
    account = book_account(max_notional_pct=Decimal("100"), max_instrument_pct=Decimal("100"))
    thesis = round_thesis(instrument_with_bars)
    last = instrument_with_bars.bars.latest("date").date
    order = working_order(thesis, account, placed_on=last)
    ex_date = next_session("NSE", last)
    DailyBar.objects.create(
        instrument=instrument_with_bars,
        date=ex_date,
        open=Decimal("20.10"),
        high=Decimal("20.40"),
        low=Decimal("19.95"),
        close=Decimal("20.30"),
        volume=500_000,
    )
    CorporateAction.objects.create(
        instrument=instrument_with_bars, kind=CorporateAction.Kind.SPLIT, ex_date=ex_date, ratio_old=1, ratio_new=5
    )
    counts = positions_mark(as_of=ex_date, account=account)
    order.refresh_from_db()
    assert counts["filled"] == 0 and order.status == Order.Status.CANCELLED
    assert f"a split 1:5 went ex on {ex_date}" in order.note
    assert not Position.objects.filter(order=order).exists()


# --- the admin ---------------------------------------------------------------------------------


def test_the_admin_edits_an_action_until_the_book_has_applied_it(held_into_a_split, desk_admin, client):
    from django.urls import reverse

    account, _, action = held_into_a_split
    client.force_login(desk_admin)
    change = reverse("admin:trading_corporateaction_change", args=[action.pk])
    delete = reverse("admin:trading_corporateaction_delete", args=[action.pk])
    assert 'name="ratio_new"' in client.get(change).content.decode()
    positions_mark(as_of=action.ex_date, account=account)
    page = client.get(change).content.decode()
    assert 'name="ratio_new"' not in page  # read-only now: the book and the record must agree
    assert client.post(delete, {"post": "yes"}).status_code == 403
    assert CorporateAction.objects.filter(pk=action.pk).exists()
