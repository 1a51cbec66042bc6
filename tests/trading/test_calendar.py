"""The exchange calendar: NSE and BSE sessions from the exchange-calendars package, weekdays (and
saying so) where it has nothing to answer with."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from trading.market.calendar import (
    calendar_source,
    is_session,
    last_completed_session,
    next_session,
    previous_session,
    sessions,
    sessions_between,
)
from trading.market.domain.demo import DEMO_END, DEMO_START, trading_sessions

IST = ZoneInfo("Asia/Kolkata")
DIWALI_2024 = dt.date(2024, 11, 1)  # a Friday, and a holiday
HOLI_2026 = dt.date(2026, 3, 3)  # a Tuesday, and a holiday


@pytest.mark.parametrize("exchange", ["NSE", "BSE", "nse"])
def test_nse_and_bse_share_their_holidays(exchange):
    assert not is_session(exchange, DIWALI_2024)
    assert not is_session(exchange, dt.date(2024, 11, 2))  # a Saturday
    assert is_session(exchange, dt.date(2024, 10, 31))
    assert calendar_source(exchange, DIWALI_2024).exact


def test_sessions_skip_weekends_and_holidays():
    assert sessions("NSE", dt.date(2026, 3, 2), dt.date(2026, 3, 6)) == [
        dt.date(2026, 3, 2),
        dt.date(2026, 3, 4),
        dt.date(2026, 3, 5),
        dt.date(2026, 3, 6),
    ]
    assert sessions("NSE", dt.date(2026, 3, 6), dt.date(2026, 3, 2)) == []


def test_next_and_previous_session_step_over_a_holiday():
    assert next_session("NSE", dt.date(2026, 3, 2)) == dt.date(2026, 3, 4)
    assert previous_session("NSE", dt.date(2026, 3, 4)) == dt.date(2026, 3, 2)
    assert next_session("NSE", dt.date(2024, 10, 31)) == dt.date(2024, 11, 4)  # over Diwali and a weekend


def test_a_position_held_over_a_holiday_has_held_one_session_fewer():
    # Opened Monday 2 March 2026; by Friday's close: Wed, Thu, Fri (Tuesday is Holi).
    assert sessions_between("NSE", dt.date(2026, 3, 2), dt.date(2026, 3, 6)) == 3
    assert sessions_between("NSE", dt.date(2026, 3, 6), dt.date(2026, 3, 2)) == 0
    assert sessions_between("NSE", dt.date(2026, 3, 2), dt.date(2026, 3, 2)) == 0


def test_the_last_completed_session_waits_for_the_close_in_the_exchanges_time_zone():
    # Wednesday 4 March 2026 (after Holi): before 15:30 IST the last complete one is Monday's.
    before_close = dt.datetime(2026, 3, 4, 15, 0, tzinfo=IST)
    after_close = dt.datetime(2026, 3, 4, 15, 31, tzinfo=IST)
    assert last_completed_session("NSE", before_close) == dt.date(2026, 3, 2)
    assert last_completed_session("NSE", after_close) == dt.date(2026, 3, 4)
    # The same instant written in UTC: 10:01 UTC is 15:31 IST.
    assert last_completed_session("NSE", after_close.astimezone(ZoneInfo("UTC"))) == dt.date(2026, 3, 4)
    # A Sunday: Friday's.
    assert last_completed_session("NSE", dt.datetime(2026, 3, 8, 12, 0, tzinfo=IST)) == dt.date(2026, 3, 6)


def test_an_unknown_exchange_falls_back_to_weekdays_and_says_so():
    source = calendar_source("MOONEX", dt.date(2026, 3, 3))
    assert not source.exact and "no exchange calendar for MOONEX" in str(source)
    assert is_session("MOONEX", HOLI_2026)  # a Tuesday, as far as weekdays know
    assert sessions_between("MOONEX", dt.date(2026, 3, 6), dt.date(2026, 3, 9)) == 1
    # No known close: a day counts as complete once it is over in the desk's time zone.
    assert last_completed_session("MOONEX", dt.datetime(2026, 3, 4, 23, 0, tzinfo=IST)) == dt.date(2026, 3, 3)


def test_a_day_outside_the_packages_range_falls_back_to_weekdays_and_says_so():
    after = dt.date(2027, 1, 4)
    source = calendar_source("NSE", after)
    assert not source.exact and "outside the XBOM calendar" in str(source)
    assert is_session("NSE", dt.date(2027, 1, 1))  # a Friday; whatever the exchange decides, weekdays say yes
    # Counting across the edge of the range: the calendar's days, then weekdays.
    assert sessions("NSE", dt.date(2026, 12, 30), dt.date(2027, 1, 4)) == [
        dt.date(2026, 12, 30),
        dt.date(2026, 12, 31),
        dt.date(2027, 1, 1),
        dt.date(2027, 1, 4),
    ]
    assert sessions_between("NSE", dt.date(2026, 12, 30), dt.date(2027, 1, 4)) == 3
    assert next_session("NSE", dt.date(2026, 12, 31)) == dt.date(2027, 1, 1)
    assert previous_session("NSE", dt.date(2027, 1, 1)) == dt.date(2026, 12, 31)


def test_other_exchanges_use_their_own_calendar():
    assert not is_session("NYSE", dt.date(2026, 11, 26))  # Thanksgiving
    assert is_session("NSE", dt.date(2026, 11, 26))
    assert calendar_source("XNYS", dt.date(2026, 11, 26)).calendar == "XNYS"


def test_no_demo_bar_falls_on_an_nse_holiday():
    days = trading_sessions(DEMO_START, DEMO_END)
    assert all(is_session("NSE", day) for day in days)
    assert DIWALI_2024 not in days and HOLI_2026 not in days
    assert days == sessions("NSE", DEMO_START, DEMO_END)
