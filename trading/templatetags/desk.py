"""The desk's one number format, as template filters: ``{% load desk %}``.

- money and prices in their own currency, Indian grouping for rupees: ``{{ amount|money:account.currency }}``
  → '₹1,23,45,678.90'; ``{{ price|price:instrument }}`` → '$182.40' for a dollar instrument;
- counts grouped: ``{{ tokens|count }}`` → '12,345';
- plain figures grouped to fixed decimals: ``{{ ratio|number:3 }}`` → '1.235';
- a model bill, to the hundredth of a cent (runs cost fractions of one): ``{{ totals.cost|model_cost }}`` → '$0.0123';
- percentages (figures already in percent): ``{{ share|pct }}`` → '12.50%', and a move or a distance with its
  sign: ``{{ change|signed_pct }}`` → '+0.88%' / '-1.20%'.

The words live in ``vocabulary.money`` and ``vocabulary.numbers`` so presenters write the same."""

from __future__ import annotations

from django import template

from vocabulary.money import DEFAULT_CURRENCY, currency_symbol, format_money
from vocabulary.numbers import (
    as_decimal,
    format_count,
    format_number,
    format_percent,
    format_signed_percent,
)

register = template.Library()


def _currency(where: object) -> str:
    """A currency code, or anything that has one (an instrument, an account): its ``currency``."""
    code = getattr(where, "currency", where)
    return str(code).upper() if isinstance(code, str) and code else DEFAULT_CURRENCY


def _digits(arg: object, default: int) -> int:
    try:
        return max(int(str(arg)), 0)
    except (TypeError, ValueError):
        return default


@register.filter
def money(value: object, currency: object = DEFAULT_CURRENCY) -> str:
    """{{ amount|money:instrument.currency }}: '₹1,23,456.78', '$1,234.50'; blank for no value."""
    if value is None or value == "":
        return ""
    number = as_decimal(value)
    if number is None:
        return str(value)
    return format_money(number, _currency(currency))


@register.filter
def price(value: object, instrument: object = DEFAULT_CURRENCY) -> str:
    """{{ bar.close|price:instrument }} (or a currency code): a price in the instrument's own currency."""
    return money(value, instrument)


@register.filter
def rupees(value: object) -> str:
    """Kept for templates written before ``money``: the same as ``|money:"INR"``."""
    return money(value, "INR")


@register.filter
def count(value: object) -> str:
    """{{ run.tokens|count }}: '12,345'; '—' for no value."""
    return format_count(value)


@register.filter
def number(value: object, digits: object = 2) -> str:
    """{{ ratio|number:3 }}: '1,234.568'; '—' for no value."""
    return format_number(value, _digits(digits, 2))


@register.filter
def pct(value: object, digits: object = 2) -> str:
    """{{ share_pct|pct }}: a figure already in percent, '12.50%'; '—' for no value."""
    return format_percent(value, _digits(digits, 2))


@register.filter
def signed_pct(value: object, digits: object = 2) -> str:
    """{{ change_pct|signed_pct }}: a move or distance in percent with its sign, '+0.88%', '-1.20%'."""
    return format_signed_percent(value, _digits(digits, 2))


@register.filter
def model_cost(value: object, currency: object = "USD") -> str:
    """{{ totals.cost|model_cost }}: model calls' cost in the price table's currency (dollars by default),
    to four decimals, since a run's bill is often under a cent: '$0.0123'; '—' for no value."""
    number = as_decimal(value)
    if number is None:
        return format_number(None)
    return f"{currency_symbol(_currency(currency))}{format_number(number, 4)}"
