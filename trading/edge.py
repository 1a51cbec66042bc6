"""Values that come in from outside (a query string, a form, a request body), checked before they
reach a query or a service: a bad value is refused with the reason, never turned into a 500 or
silently ignored. The pages show the reason with a 400 (or as a form error), the API answers 400
``{"detail": reason}``; both call the same checks, so the page and the API refuse the same values.
``InputInvalid`` is an ``InputRefused``: raised under an API view it is answered 400 by
``trading.api.errors`` without the view catching it.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from vocabulary.dates import DateWindow
from vocabulary.refusals import InputRefused

# One limit for every free-text input a person types (an approval comment, a reason to reject, a
# reason to close a position by hand), on the page and in the API alike.
MAX_COMMENT_CHARS = 2_000
# Filters name a symbol, a strategy, a status: nothing longer is a name the desk could hold.
MAX_FILTER_CHARS = 100
FLAGS = {"": False, "0": False, "false": False, "1": True, "true": True}


class InputInvalid(InputRefused, ValueError):
    """A value the desk refuses; the message is the reason, written for the person who sent it.
    Still a ``ValueError`` for the callers that catch one."""


def date_window() -> DateWindow:
    """From ``vocabulary.dates.DATE_FLOOR`` (1990-01-01) to today on the desk's clock: the dates a run,
    a bundle or a chart can be as of. Older dates are typos (and ``0001-01-01`` overflows the
    features' date arithmetic); a later date would be a look at a session that has not happened."""
    return DateWindow(today=timezone.localdate(), zone=settings.TIME_ZONE)


def parse_date(text: str | None, name: str) -> dt.date | None:
    """An ISO date inside the desk's window, or None when the value is empty."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = dt.date.fromisoformat(text)
    except ValueError:
        raise InputInvalid(f"{name} {short(text)!r} is not a date (YYYY-MM-DD)") from None
    return check_date(value, name)


def check_date(value: dt.date, name: str) -> dt.date:
    if (problem := date_window().problem(value, name)) is not None:
        raise InputInvalid(problem)
    return value


def parse_flag(text: str | None, name: str) -> bool:
    value = (text or "").strip().lower()
    if value not in FLAGS:
        raise InputInvalid(f"{name} {short(value)!r} is not one of 1, 0, true, false")
    return FLAGS[value]


def parse_name(text: str | None, name: str, *, limit: int = MAX_FILTER_CHARS) -> str:
    """A free-form filter value (a symbol, a strategy's name): text a database can compare."""
    value = (text or "").strip()
    if "\x00" in value:
        raise InputInvalid(f"{name} contains a NUL character")
    if len(value) > limit:
        raise InputInvalid(f"{name} is {len(value)} characters (at most {limit})")
    return value


def parse_choice(text: str | None, name: str, choices: tuple[str, ...]) -> str:
    value = (text or "").strip()
    if value not in choices:
        raise InputInvalid(f"{name} {short(value)!r} is not one of {', '.join(choices)}")
    return value


def parse_fraction(text: str | None, name: str) -> Decimal | None:
    """A number from 0 to 1 (a conviction), or None when empty. NaN and infinities are refused:
    they used to reach the database, which cannot compare with them."""
    value = (text or "").strip()
    if not value:
        return None
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise InputInvalid(f"{name} {short(value)!r} is not a number") from None
    if not number.is_finite() or not 0 <= number <= 1:
        raise InputInvalid(f"{name} {short(value)!r} is not a number from 0 to 1")
    return number


def check_comment(text: str, what: str = "comment") -> str:
    if len(text) > MAX_COMMENT_CHARS:
        raise InputInvalid(f"the {what} is {len(text):,} characters; at most {MAX_COMMENT_CHARS:,} are kept")
    if "\x00" in text:
        raise InputInvalid(f"the {what} contains a NUL character")
    return text


def default_run_as_of(instruments) -> dt.date | None:
    """The latest bar of these instruments on or before today. ``pipeline_runs_start`` defaults to
    the latest bar of any of them, so one bar dated 9999-12-31 (imported before dates were checked)
    set every run of a multi-instrument batch to 9999-12-31; the edges pass this date instead."""
    from trading.models import DailyBar

    bars = DailyBar.objects.filter(instrument__in=instruments, date__lte=timezone.localdate())
    return bars.aggregate(last=Max("date"))["last"]


def short(text: str, limit: int = 40) -> str:
    """A value quoted back in a reason, cut short: a reason must stay readable."""
    return text if len(text) <= limit else f"{text[:limit]}…"
