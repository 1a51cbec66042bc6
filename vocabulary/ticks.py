"""Prices on the exchange's tick grid. Pure; no Django."""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from typing import Literal

__all__ = ["RoundingMode", "profit_side", "round_to_tick"]

RoundingMode = Literal["nearest", "down", "up"]

_DECIMAL_ROUNDING: dict[RoundingMode, str] = {
    "nearest": ROUND_HALF_UP,
    "down": ROUND_FLOOR,
    "up": ROUND_CEILING,
}


def round_to_tick(price: Decimal, tick: Decimal, *, mode: RoundingMode = "nearest") -> Decimal:
    """``price`` on the ``tick`` grid: nearest (halves go up), or always down, or always up."""
    if tick <= 0:
        raise ValueError(f"tick must be positive, got {tick}")
    ticks = (price / tick).to_integral_value(rounding=_DECIMAL_ROUNDING[mode])
    return ticks * tick


def profit_side(direction: str) -> int:
    """+1 when profit lies above entry (LONG), -1 when below (SHORT)."""
    return 1 if direction == "LONG" else -1
