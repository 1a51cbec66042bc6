"""Filters that read a retrospective's stored figures the way the rest of the desk reads numbers:
``{% load review_format %}``. Rates (strings from 0 to 1) as percentages, ISO dates as the desk's
dates, changes with their sign. A value that is missing reads "—", never a made-up zero."""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django import template
from django.utils import dateformat

from reviews.report_selectors import review_name as _review_name
from vocabulary.money import DEFAULT_CURRENCY, format_money

register = template.Library()

MISSING = "—"
DAY_FORMAT = "d M Y"  # as every page of the desk writes a date
TENTH = Decimal("0.1")
HUNDRED = Decimal(100)


def _decimal(value: object) -> Decimal | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


@register.filter
def percent(value: object) -> str:
    """'0.7640' → '76.4%'; a missing rate → '—'."""
    number = _decimal(value)
    if number is None:
        return MISSING
    return f"{(number * HUNDRED).quantize(TENTH, rounding=ROUND_HALF_UP)}%"


@register.filter
def points(value: object) -> str:
    """A change of a rate, in percentage points with its sign: '0.0500' → '+5.0 pts'."""
    number = _decimal(value)
    if number is None:
        return MISSING
    shown = (number * HUNDRED).quantize(TENTH, rounding=ROUND_HALF_UP)
    return f"{'+' if shown > 0 else ''}{shown} pts"


@register.filter
def signed(value: object) -> str:
    """A count or ratio change with its sign: 3 → '+3', -2 → '-2', 0 → '0'."""
    number = _decimal(value)
    if number is None:
        return MISSING
    return f"{'+' if number > 0 else ''}{number}"


@register.filter
def change_money(value: object, currency: str = DEFAULT_CURRENCY) -> str:
    """A money change with its sign: '+₹1,200.00', '-₹45.10', '₹0.00'."""
    number = _decimal(value)
    if number is None:
        return MISSING
    text = format_money(number, currency or DEFAULT_CURRENCY)
    return f"+{text}" if number.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP) > 0 else text


@register.filter
def day(value: object) -> str:
    """'2025-03-14' (or a date) → '14 Mar 2025'; anything else → '—'."""
    if isinstance(value, dt.date):
        return dateformat.format(value, DAY_FORMAT)
    if isinstance(value, str) and value:
        try:
            return dateformat.format(dt.date.fromisoformat(value), DAY_FORMAT)
        except ValueError:
            return MISSING
    return MISSING


@register.filter
def sign_class(value: object) -> str:
    """'up' for a positive figure, 'down' for a negative one, '' otherwise (the desk's colours)."""
    number = _decimal(value)
    if number is None or number == 0:
        return ""
    return "up" if number > 0 else "down"


@register.filter
def words(value: object) -> str:
    """'INSUFFICIENT_DATA' → 'insufficient data'; 'exit_reason' → 'exit reason'."""
    return str(value or "").replace("_", " ").lower()


@register.filter
def ratio(value: object) -> str:
    """A plain number as stored ('1.40'), or '—'."""
    number = _decimal(value)
    return MISSING if number is None else str(number)


@register.filter
def review_name(report: object) -> str:
    """A report (or a horizon) as the pages name it: 'weekly review', 'position retrospective'."""
    return _review_name(str(getattr(report, "horizon", report)))
