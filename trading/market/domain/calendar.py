"""Exchange sessions from an exchange calendar (the ``exchange-calendars`` package), not weekdays.

NSE and BSE share their holidays, so both read the package's "XBOM" calendar; any other exchange
the package knows (by its MIC or an alias: "XNYS", "NYSE", "LSE", ...) reads its own. Days outside
a calendar's range (XBOM's hand-kept holiday list runs 1997-01-01..2026-12-31) and exchanges the
package does not know fall back to plain weekdays, and ``calendar_source`` says so, so a
data-quality report can show that a count was not checked against real holidays.

Pure: no Django. The calendar of each exchange is built once per process (``lru_cache``) and
every question after that is a bisect in a sorted tuple of dates.
"""

from __future__ import annotations

import bisect
import datetime as dt
import warnings
from dataclasses import dataclass
from functools import lru_cache
from zoneinfo import ZoneInfo

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

# The desk's names for exchanges the package knows under another name. NSE has no calendar of
# its own in the package; it shares every holiday with BSE (XBOM).
_ALIASES = {"NSE": "XBOM", "XNSE": "XBOM", "BSE": "XBOM", "NSE_EQ": "XBOM", "BSE_EQ": "XBOM"}
# Calendars computed from rules (not a hand-kept list) reach back centuries; the desk needs none of that.
_EARLIEST = dt.date(1990, 1, 1)
_WEEKDAYS_TZ = ZoneInfo("UTC")


@dataclass(frozen=True)
class CalendarSource:
    """Where the answer for one day on one exchange comes from."""

    exchange: str
    calendar: str | None  # the package's calendar name, None when the weekdays fallback answers
    detail: str

    @property
    def exact(self) -> bool:
        return self.calendar is not None

    def __str__(self) -> str:
        return self.detail


@dataclass(frozen=True)
class ExchangeCalendar:
    """One exchange's sessions over the calendar's range, its time zone and its close."""

    name: str
    first: dt.date
    last: dt.date
    days: tuple[dt.date, ...]
    tz: ZoneInfo
    close: dt.time

    def covers(self, day: dt.date) -> bool:
        return self.first <= day <= self.last


def _code(exchange: str) -> str:
    return exchange.strip().upper()


@lru_cache(maxsize=64)
def calendar_for(exchange: str) -> ExchangeCalendar | None:
    """The exchange's calendar, or None when the package has none for it (the weekdays fallback)."""
    # Local: the package and its pandas load only when asked. It ships no type information.
    import exchange_calendars as xcals  # type: ignore[import-untyped]

    code = _code(exchange)
    name = _ALIASES.get(code, code)
    if name not in xcals.get_calendar_names(include_aliases=True):
        return None
    with warnings.catch_warnings():
        # The package's own pandas deprecations, raised while it builds a calendar: not ours to fix.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        bound = type(xcals.get_calendar(name)).bound_min()  # a hand-kept holiday list starts somewhere
        start = max(bound.date(), _EARLIEST) if bound is not None else _EARLIEST
        calendar = xcals.get_calendar(name, start=start.isoformat())
        closes = [close for _, close in calendar.close_times]
        return ExchangeCalendar(
            name=str(calendar.name),
            first=calendar.first_session.date(),
            last=calendar.last_session.date(),
            days=tuple(session.date() for session in calendar.sessions),
            tz=ZoneInfo(str(calendar.tz)),
            close=closes[-1],
        )


def calendar_source(exchange: str, day: dt.date) -> CalendarSource:
    """Whether ``day`` on ``exchange`` is answered by a real calendar or by weekdays, and why."""
    calendar = calendar_for(exchange)
    if calendar is None:
        return CalendarSource(exchange, None, f"weekdays: no exchange calendar for {exchange}")
    if not calendar.covers(day):
        return CalendarSource(
            exchange,
            None,
            f"weekdays: {day} is outside the {calendar.name} calendar ({calendar.first} to {calendar.last})",
        )
    return CalendarSource(exchange, calendar.name, f"exchange calendar {calendar.name}")


def _weekday(day: dt.date) -> bool:
    return day.weekday() < 5


def is_session(exchange: str, day: dt.date) -> bool:
    """True when ``exchange`` trades on ``day``."""
    calendar = calendar_for(exchange)
    if calendar is None or not calendar.covers(day):
        return _weekday(day)
    index = bisect.bisect_left(calendar.days, day)
    return index < len(calendar.days) and calendar.days[index] == day


def _weekdays(start: dt.date, end: dt.date) -> list[dt.date]:
    days = []
    day = start
    while day <= end:
        if _weekday(day):
            days.append(day)
        day += dt.timedelta(days=1)
    return days


def sessions(exchange: str, start: dt.date, end: dt.date) -> list[dt.date]:
    """Every session in [start, end], oldest first."""
    if end < start:
        return []
    calendar = calendar_for(exchange)
    if calendar is None:
        return _weekdays(start, end)
    before = _weekdays(start, min(end, calendar.first - dt.timedelta(days=1)))
    after = _weekdays(max(start, calendar.last + dt.timedelta(days=1)), end)
    lo = bisect.bisect_left(calendar.days, start)
    hi = bisect.bisect_right(calendar.days, end)
    return before + list(calendar.days[lo:hi]) + after


def sessions_between(exchange: str, a: dt.date, b: dt.date) -> int:
    """Sessions after ``a`` up to and including ``b`` (0 when ``b`` <= ``a``): a position opened on
    ``a`` has been held this many sessions at the close of ``b``."""
    if b <= a:
        return 0
    start = a + dt.timedelta(days=1)
    calendar = calendar_for(exchange)
    if calendar is None:
        return _weekday_count(start, b)
    before = _weekday_count(start, min(b, calendar.first - dt.timedelta(days=1)))
    after = _weekday_count(max(start, calendar.last + dt.timedelta(days=1)), b)
    inside = bisect.bisect_right(calendar.days, b) - bisect.bisect_left(calendar.days, start)
    return before + max(inside, 0) + after


def _weekday_count(start: dt.date, end: dt.date) -> int:
    """Weekdays in [start, end], without walking the days."""
    if end < start:
        return 0
    weeks, rest = divmod((end - start).days + 1, 7)
    first = start.weekday()
    return weeks * 5 + sum(1 for offset in range(rest) if (first + offset) % 7 < 5)


def next_session(exchange: str, day: dt.date) -> dt.date:
    """The first session strictly after ``day``."""
    calendar = calendar_for(exchange)
    if calendar is not None and calendar.first <= day < calendar.last:
        return calendar.days[bisect.bisect_right(calendar.days, day)]
    candidate = day + dt.timedelta(days=1)
    while not is_session(exchange, candidate):
        candidate += dt.timedelta(days=1)
    return candidate


def previous_session(exchange: str, day: dt.date) -> dt.date:
    """The last session strictly before ``day``."""
    calendar = calendar_for(exchange)
    if calendar is not None and calendar.first < day <= calendar.last:
        return calendar.days[bisect.bisect_left(calendar.days, day) - 1]
    candidate = day - dt.timedelta(days=1)
    while not is_session(exchange, candidate):
        candidate -= dt.timedelta(days=1)
    return candidate


def last_completed_session(exchange: str, now: dt.datetime, *, fallback_tz: ZoneInfo | None = None) -> dt.date:
    """The latest session whose close has passed at ``now``, in the exchange's time zone.

    An exchange without a calendar counts a weekday as complete only once the whole day is over in
    ``fallback_tz`` (UTC when not given): with no known close, the conservative answer. A naive
    ``now`` is read in the exchange's (or the fallback) time zone."""
    calendar = calendar_for(exchange)
    tz = calendar.tz if calendar is not None else (fallback_tz or _WEEKDAYS_TZ)
    close = calendar.close if calendar is not None else dt.time.max
    local = now.replace(tzinfo=tz) if now.tzinfo is None else now.astimezone(tz)
    today = local.date()
    if is_session(exchange, today) and local.time() >= close:
        return today
    return previous_session(exchange, today)
