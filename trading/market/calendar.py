"""The desk's exchange calendar: which days an exchange trades (see ``trading.market.domain.calendar``).

Use it, never weekdays, wherever a session is counted or awaited: next-open fills, horizons, the
daily book pass, freshness checks, replays and the demo market. Unknown exchanges and days outside
the package's range fall back to weekdays; ``calendar_source`` says when that happened.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from django.conf import settings

from trading.market.domain import calendar as _calendar
from trading.market.domain.calendar import (
    CalendarSource,
    ExchangeCalendar,
    calendar_for,
    calendar_source,
    is_session,
    next_session,
    previous_session,
    sessions,
    sessions_between,
)

__all__ = [
    "CalendarSource",
    "ExchangeCalendar",
    "calendar_for",
    "calendar_source",
    "is_session",
    "last_completed_session",
    "next_session",
    "previous_session",
    "sessions",
    "sessions_between",
]


def last_completed_session(exchange: str, now: dt.datetime) -> dt.date:
    """The latest session of ``exchange`` whose close has passed at ``now`` (in the exchange's time
    zone; an exchange without a calendar is read in the desk's time zone, a day counting once over)."""
    return _calendar.last_completed_session(exchange, now, fallback_tz=ZoneInfo(settings.TIME_ZONE))
