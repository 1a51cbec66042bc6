"""Dividends: a long held into the ex-date receives them in cash, a short pays them, once, and a
closed position's realised PnL includes them."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.trading.book_rows import book_account, open_position, round_thesis
from trading.book.broker import book_catch_up, positions_mark
from trading.book.corporate import dividend_cash
from trading.market.calendar import next_session
from trading.models import Account, AuditEvent, CorporateAction, DailyBar, Position
from vocabulary.exits import realised_pnl

pytestmark = pytest.mark.django_db


def _bar(instrument, day, price: str = "101.00") -> None:
    level = Decimal(price)
    DailyBar.objects.create(
        instrument=instrument, date=day, open=level, high=level, low=level, close=level, volume=100_000
    )


def _held(instrument, *, direction: str = "LONG", amount: str = "7.5"):
    """A position of 100 opened on the last bar, the next session's bar at 101 (inside its levels),
    and a dividend of ``amount`` a share going ex on that session."""
    account = book_account(max_notional_pct=Decimal("100"), max_instrument_pct=Decimal("100"))
    Account.objects.filter(pk=account.pk).update(allow_short=True)
    thesis = round_thesis(instrument, direction=direction)
    last = instrument.bars.latest("date").date
    position = open_position(thesis, account, on=last)
    ex_date = next_session("NSE", last)
    _bar(instrument, ex_date, "101.00" if direction == "LONG" else "99.00")
    action = CorporateAction.objects.create(
        instrument=instrument, kind=CorporateAction.Kind.DIVIDEND, ex_date=ex_date, amount=Decimal(amount)
    )
    return account, position, action


def test_a_long_held_into_the_ex_date_receives_the_dividend_in_cash(instrument_with_bars):
    account, position, action = _held(instrument_with_bars)
    cash_before = Account.objects.get(pk=account.pk).cash
    positions_mark(as_of=action.ex_date, account=account)
    position.refresh_from_db()
    assert position.dividends == Decimal("750.00")
    assert Account.objects.get(pk=account.pk).cash == cash_before + Decimal("750.00")
    event = AuditEvent.objects.get(action="dividend_received")
    assert event.target == f"position {position.pk}" and event.details["cash"] == "750.00"


def test_a_short_pays_the_dividend(instrument_with_bars):
    account, position, action = _held(instrument_with_bars, direction="SHORT", amount="2.3333")
    cash_before = Account.objects.get(pk=account.pk).cash
    positions_mark(as_of=action.ex_date, account=account)
    position.refresh_from_db()
    assert position.dividends == Decimal("-233.33")
    assert Account.objects.get(pk=account.pk).cash == cash_before - Decimal("233.33")
    assert AuditEvent.objects.filter(action="dividend_paid").count() == 1


def test_a_dividend_is_paid_once_however_often_the_pass_runs(instrument_with_bars):
    account, position, action = _held(instrument_with_bars)
    cash_before = Account.objects.get(pk=account.pk).cash
    for _ in range(3):
        positions_mark(as_of=action.ex_date, account=account)
    positions_mark(as_of=next_session("NSE", action.ex_date), account=account)
    position.refresh_from_db()
    assert position.dividends == Decimal("750.00")
    assert Account.objects.get(pk=account.pk).cash == cash_before + Decimal("750.00")
    assert AuditEvent.objects.filter(action="dividend_received").count() == 1


def test_a_position_bought_on_the_ex_date_gets_no_dividend(instrument_with_bars):
    account, position, action = _held(instrument_with_bars)
    Position.objects.filter(pk=position.pk).update(opened_on=action.ex_date)
    positions_mark(as_of=action.ex_date, account=account)
    position.refresh_from_db()
    assert position.dividends == 0 and position.adjustments == []


def test_the_realised_pnl_of_a_closed_position_includes_its_dividends(instrument_with_bars):
    account, position, action = _held(instrument_with_bars)
    positions_mark(as_of=action.ex_date, account=account)
    day = next_session("NSE", action.ex_date)
    _bar(instrument_with_bars, day, "112.00")  # through the target at 110
    positions_mark(as_of=day, account=account)
    position.refresh_from_db()
    assert position.status == Position.Status.CLOSED and position.exit_reason == "target"
    trading = realised_pnl(
        direction="LONG",
        quantity=100,
        entry_price=position.entry_price,
        exit_price=position.exit_price,
        entry_costs=position.entry_costs,
        exit_costs=position.exit_costs,
    )
    assert position.realised_pnl == trading + Decimal("750.00")
    closed = AuditEvent.objects.get(action="position_closed", target=f"position {position.pk}")
    assert closed.details["dividends"] == "750.00"


def test_a_split_and_a_dividend_on_one_ex_date_pay_on_the_new_shares(instrument_with_bars):
    account, position, action = _held(instrument_with_bars, amount="1.5")
    DailyBar.objects.filter(instrument=instrument_with_bars, date=action.ex_date).update(
        open=Decimal("20.20"), high=Decimal("20.20"), low=Decimal("20.20"), close=Decimal("20.20")
    )
    CorporateAction.objects.create(
        instrument=instrument_with_bars,
        kind=CorporateAction.Kind.SPLIT,
        ex_date=action.ex_date,
        ratio_old=1,
        ratio_new=5,
    )
    positions_mark(as_of=action.ex_date, account=account)
    position.refresh_from_db()
    assert position.quantity == 500 and position.dividends == Decimal("750.00")
    assert [entry["kind"] for entry in position.adjustments] == ["split", "dividend"]


def test_the_catch_up_pays_a_dividend_whose_ex_date_the_beat_missed(instrument_with_bars):
    account, position, action = _held(instrument_with_bars)
    day = next_session("NSE", action.ex_date)
    _bar(instrument_with_bars, day)
    book_catch_up(account=account, until=day)
    position.refresh_from_db()
    assert position.dividends == Decimal("750.00")


def test_dividend_cash_rounds_against_the_trader() -> None:
    assert dividend_cash(direction="LONG", amount=Decimal("0.3333"), quantity=10) == Decimal("3.33")
    assert dividend_cash(direction="SHORT", amount=Decimal("0.3333"), quantity=10) == Decimal("-3.34")
