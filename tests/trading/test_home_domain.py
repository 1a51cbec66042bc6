"""The home page's arithmetic on plain values: today's profit and the data's staleness."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from trading.home.domain import PositionPnl, book_day_change
from trading.market.domain.freshness import staleness

MON, TUE, WED, THU = (dt.date(2026, 11, d) for d in (16, 17, 18, 19))


def test_today_is_the_change_of_each_open_position_between_the_last_two_marks():
    held = PositionPnl(opened_on=MON, marks={MON: Decimal("100"), TUE: Decimal("250"), WED: Decimal("180")})

    change = book_day_change([held], [MON, TUE, WED])

    assert change is not None and change.day == WED and change.previous == TUE
    assert change.change == Decimal("-70")


def test_a_position_closed_today_counts_its_realised_profit_less_its_last_mark():
    closed = PositionPnl(opened_on=MON, closed_on=WED, realised=Decimal("90"), marks={TUE: Decimal("120")})
    filled_today = PositionPnl(opened_on=WED, marks={WED: Decimal("-15")})
    closed_long_ago = PositionPnl(opened_on=MON, closed_on=TUE, realised=Decimal("500"), marks={MON: Decimal("1")})

    change = book_day_change([closed, filled_today, closed_long_ago], [TUE, WED])

    assert change is not None and change.change == Decimal("90") - Decimal("120") + Decimal("-15")


def test_a_session_without_a_bar_keeps_the_positions_last_mark():
    quiet = PositionPnl(opened_on=MON, marks={MON: Decimal("40")})  # no bar on Tuesday or Wednesday

    change = book_day_change([quiet], [TUE, WED])

    assert change is not None and change.change == Decimal("0")


def test_the_first_marked_session_counts_from_nothing_and_no_session_is_no_figure():
    first = PositionPnl(opened_on=THU, marks={THU: Decimal("12.5")})

    change = book_day_change([first], [THU])

    assert change is not None and change.previous is None and change.change == Decimal("12.5")
    assert book_day_change([first], []) is None


def test_data_is_stale_only_when_the_latest_bar_is_older_than_the_last_session():
    late = staleness("NSE", latest_bar=dt.date(2026, 11, 19), last_session=dt.date(2026, 11, 26), sessions_behind=4)

    assert late is not None
    assert late.text == "Latest bar 2026-11-19 is 4 sessions old (last session 2026-11-26) on NSE"
    assert staleness("NSE", latest_bar=THU, last_session=THU, sessions_behind=0) is None
    assert staleness("NSE", latest_bar=None, last_session=THU, sessions_behind=0) is None
    one = staleness("BSE", latest_bar=WED, last_session=THU, sessions_behind=1)
    assert one is not None and "is 1 session old" in one.text
