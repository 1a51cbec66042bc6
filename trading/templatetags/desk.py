from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django import template

from vocabulary.money import DEFAULT_CURRENCY, format_money

register = template.Library()


@register.filter
def money(value, currency: str = DEFAULT_CURRENCY) -> str:
    """{{ amount|money:instrument.currency }}: '₹1,23,456.78', '$1,234.50'; blank for no value."""
    if value is None or value == "":
        return ""
    try:
        return format_money(Decimal(str(value)), currency or DEFAULT_CURRENCY)
    except InvalidOperation:
        return str(value)


@register.filter
def rupees(value) -> str:
    """Kept for templates written before ``money``: the same as ``|money:"INR"``."""
    return money(value, "INR")
