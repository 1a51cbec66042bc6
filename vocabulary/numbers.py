"""Figures other than money as a person reads them: counts grouped by thousands ('12,345'),
percentages with a sign where they are a move or a distance ('+0.88%', '-1.20%'), plain figures
grouped to a fixed number of decimals ('1,234.50'). Money is ``vocabulary.money``.

Pure (no Django), so presenters, commands and template filters write a figure alike. Rounding is
half-up, as ``format_money`` rounds, and a figure that rounds to zero never reads '-0.00'. Nothing
here is used for arithmetic: these are words for the page, computed from the stored numbers."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

__all__ = ["MISSING", "as_decimal", "format_count", "format_number", "format_percent", "format_signed_percent"]

MISSING = "—"


def as_decimal(value: object) -> Decimal | None:
    """A finite Decimal from an int, float, Decimal or numeric string; None for anything else."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = Decimal(str(value).strip().replace(",", ""))
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def _rounded(number: Decimal, digits: int) -> Decimal:
    rounded = number.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return abs(rounded) if rounded.is_zero() else rounded  # never "-0.00"


def format_number(value: object, digits: int = 2) -> str:
    """1234.5 → '1,234.50'; -0.001 → '0.00'; a value that is not a number → '—'."""
    number = as_decimal(value)
    if number is None:
        return MISSING
    return f"{_rounded(number, max(digits, 0)):,.{max(digits, 0)}f}"


def format_count(value: object) -> str:
    """12345 → '12,345' (tokens, bars, calls): whole numbers, grouped by thousands."""
    return format_number(value, 0)


def format_percent(value: object, digits: int = 2) -> str:
    """A figure already in percent: 12.345 → '12.35%'. For a level or a share, not a move."""
    text = format_number(value, digits)
    return text if text == MISSING else f"{text}%"


def format_signed_percent(value: object, digits: int = 2) -> str:
    """A move or a distance in percent, with its sign: 0.876 → '+0.88%', -1.2 → '-1.20%', 0 → '0.00%'."""
    number = as_decimal(value)
    if number is None:
        return MISSING
    text = format_percent(number, digits)
    return f"+{text}" if _rounded(number, max(digits, 0)) > 0 else text
