"""Money as a person reads it: the amount in its own currency, grouped the way that currency's
readers expect. Pure (no Django), so services, commands and templates format alike."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache

from babel.numbers import format_currency, get_currency_symbol

__all__ = ["DEFAULT_CURRENCY", "currency_symbol", "format_money", "locale_for"]

DEFAULT_CURRENCY = "INR"
CENTS = Decimal("0.01")

# Rupees are read the Indian way (lakh and crore: ₹1,20,000.00); every other currency in the
# international way with its own symbol ($1,200.00, €1,200.00). en_US rather than en_IN for those
# so a dollar figure is never grouped in lakhs; it also spells ambiguous dollars out (CA$, A$).
_LOCALES = {"INR": "en_IN"}
_OTHER_LOCALE = "en_US"


def locale_for(currency: str) -> str:
    return _LOCALES.get(currency, _OTHER_LOCALE)


def format_money(amount: Decimal, currency: str = DEFAULT_CURRENCY, *, locale: str | None = None) -> str:
    """'₹1,20,000.00', '$1,200.50', '-₹1,200.00': to the paisa/cent, in ``currency``'s symbol.

    Rounded half-up here (Babel would round half-even), and always to two decimals, even for a
    currency without minor units, so every figure on a page reads at the same precision."""
    code = (currency or DEFAULT_CURRENCY).upper()
    rounded = Decimal(amount).quantize(CENTS, rounding=ROUND_HALF_UP)
    if rounded.is_zero():
        rounded = abs(rounded)  # never "-₹0.00"
    return _formatted(rounded, code, locale or locale_for(code))


@lru_cache(maxsize=4096)
def _formatted(rounded: Decimal, code: str, locale: str) -> str:
    # Babel's formatting is the slow part (a risk evaluation formats two dozen figures); the same
    # amounts recur (limits, capital, a book's values), and a rounded amount formats one way.
    return format_currency(rounded, code, locale=locale, currency_digits=False)


def currency_symbol(currency: str = DEFAULT_CURRENCY) -> str:
    """'₹', '$': the symbol format_money prints, for chart axes and column headings."""
    code = (currency or DEFAULT_CURRENCY).upper()
    return get_currency_symbol(code, locale=locale_for(code))
