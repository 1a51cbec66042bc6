from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django import template

from trading.domain.risk import format_rupees

register = template.Library()


@register.filter
def rupees(value) -> str:
    """₹1,23,456.78: rupees grouped the Indian way; blank for no value."""
    if value is None or value == "":
        return ""
    try:
        return format_rupees(Decimal(str(value)))
    except InvalidOperation:
        return str(value)
