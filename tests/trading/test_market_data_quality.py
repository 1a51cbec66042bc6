"""Data quality: the pure checks, and the instrument page's panel built from them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.urls import reverse

from trading.market import calendar
from trading.market.domain.quality import QualityTracker, SessionIndex, instrument_quality
from trading.models import CorporateAction, DailyBar

D = dt.date


def weekdays(start: dt.date, end: dt.date) -> list[dt.date]:
    return [
        start + dt.timedelta(days=n)
        for n in range((end - start).days + 1)
        if (start + dt.timedelta(days=n)).weekday() < 5
    ]


SESSIONS = SessionIndex([day for day in weekdays(D(2025, 6, 2), D(2025, 7, 31)) if day != D(2025, 7, 15)])


def test_missing_sessions_are_counted_against_the_calendar_not_weekdays():
    bars = [(D(2025, 7, 11), Decimal(100)), (D(2025, 7, 14), Decimal(101)), (D(2025, 7, 17), Decimal(102))]

    quality = instrument_quality(
        "X:A", bars, sessions=SESSIONS, explained=set(), last_session=D(2025, 7, 17), threshold_pct=25
    )

    # 15 July is a holiday in this calendar: only the 16th is missing.
    assert (quality.missing_count, quality.missing) == (1, [D(2025, 7, 16)])
    assert not quality.stale and quality.outlier_count == 0


def test_an_unexplained_move_beyond_the_threshold_is_an_outlier_and_an_explained_one_is_not():
    bars = [(D(2025, 7, 1), Decimal(100)), (D(2025, 7, 2), Decimal(126)), (D(2025, 7, 3), Decimal(125))]

    flagged = instrument_quality("X:A", bars, sessions=SESSIONS, explained=set(), last_session=None, threshold_pct=25)
    explained = instrument_quality(
        "X:A", bars, sessions=SESSIONS, explained={D(2025, 7, 2)}, last_session=None, threshold_pct=25
    )
    wider = instrument_quality("X:A", bars, sessions=SESSIONS, explained=set(), last_session=None, threshold_pct=30)

    assert flagged.outlier_count == 1 and flagged.outliers[0].pct == 26.0
    assert "+26.0% close to close on 2025-07-02 (100 → 126), beyond ±25%" in flagged.lines(25)[0]
    assert explained.outlier_count == 0 and wider.outlier_count == 0


def test_a_feed_that_stopped_is_stale():
    quality = instrument_quality(
        "X:A",
        [(D(2025, 7, 1), Decimal(100))],
        sessions=SESSIONS,
        explained=set(),
        last_session=D(2025, 7, 4),
        threshold_pct=25,
    )

    assert quality.stale
    assert quality.lines(25) == ["X:A: stale, last bar 2025-07-01 but the last session was 2025-07-04"]


def test_bars_on_closed_days_are_counted():
    quality = instrument_quality(
        "X:A",
        [(D(2025, 7, 14), Decimal(100)), (D(2025, 7, 15), Decimal(100)), (D(2025, 7, 16), Decimal(100))],
        sessions=SESSIONS,
        explained=set(),
        last_session=D(2025, 7, 16),
        threshold_pct=25,
    )

    assert quality.off_session == [D(2025, 7, 15)] and quality.missing_count == 0


def test_without_a_calendar_only_moves_are_checked():
    quality = instrument_quality(
        "X:A",
        [(D(2025, 7, 1), Decimal(100)), (D(2025, 7, 10), Decimal(200))],
        sessions=None,
        explained=set(),
        last_session=None,
        threshold_pct=25,
    )

    assert quality.missing_count == 0 and quality.outlier_count == 1
    assert quality.lines(25)[0] == "X:A: no exchange calendar, sessions not checked"


def test_the_tracker_keeps_two_bars_per_instrument_whatever_the_rows_and_joins_the_stored_one():
    tracker = QualityTracker(25)
    tracker.start("X:A", SESSIONS)
    tracker.start("X:B", SESSIONS)
    for day in weekdays(D(2025, 7, 3), D(2025, 7, 31)):
        if day != D(2025, 7, 15):
            tracker.add("X:A", day, Decimal(100))
            tracker.add("X:B", day, Decimal(50))

    found = tracker.finish(
        last_sessions={},
        last_stored={},
        explained={},
        # A's stored history ends on 30 June at 60: 1 and 2 July are missing, and +66.7% is a jump.
        before={"X:A": (D(2025, 6, 30), Decimal(60))},
    )

    assert [q.missing for q in found] == [[D(2025, 7, 1), D(2025, 7, 2)], []]
    assert [q.outlier_count for q in found] == [1, 0]
    assert len(tracker._last) == len(tracker._first) == 2


def _bar(instrument, day: dt.date, close: str) -> DailyBar:
    price = Decimal(close)
    return DailyBar(instrument=instrument, date=day, open=price, high=price, low=price, close=price, volume=1000)


def test_the_instrument_page_shows_the_data_quality_panel(client, viewer, instrument):
    last = calendar.last_completed_session("NSE", dt.datetime.now(dt.UTC))
    days = calendar.sessions("NSE", last - dt.timedelta(days=40), last)
    closes = ["100"] * len(days)
    closes[-3] = "60"  # a 40% drop, unexplained
    closes[-2] = "60"
    bars = [_bar(instrument, day, close) for day, close in zip(days, closes, strict=True) if day != days[5]]
    DailyBar.objects.bulk_create(bars)
    client.force_login(viewer)

    page = client.get(reverse("instrument_detail", args=["RELIANCE"])).content.decode()

    assert 'id="data-quality"' in page
    assert f"1 missing session(s): {days[5].isoformat()}" in page
    assert f"-40.0% close to close on {days[-3].isoformat()}" in page
    assert f"+66.7% close to close on {days[-1].isoformat()}" in page
    assert 'id="quality-stale"' in page and "up to date" in page

    CorporateAction.objects.create(instrument=instrument, kind="split", ex_date=days[-3], ratio_old=3, ratio_new=5)
    page = client.get(reverse("instrument_detail", args=["RELIANCE"])).content.decode()
    assert "-40.0%" not in page and "+66.7%" in page


def test_an_instrument_without_bars_has_no_panel(client, viewer, instrument):
    client.force_login(viewer)

    page = client.get(reverse("instrument_detail", args=["RELIANCE"])).content.decode()

    assert 'id="data-quality"' not in page
