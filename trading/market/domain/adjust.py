"""Split and bonus adjustment: history as it reads after every share-count change known on a day.

A split or bonus multiplies the share count by ``factor = ratio_new / ratio_old`` on its ex-date
(a 1:5 split: 5; a 1:1 bonus: old 1, new 2, so 2). A bar dated before the ex-date is in the old
units: its prices are divided by the factor and its volume multiplied by it, so indicators, ATR,
levels and charts never see the change as a crash. Only actions with an ex-date on or before the
reading day are applied: on a day before the ex-date nobody knew of it (no look-ahead).

Pure: no Django. The book's side (a position's quantity and levels) is ``adjusted_levels``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from fractions import Fraction

import pandas as pd

__all__ = [
    "PRICE_COLUMNS",
    "AdjustedLevels",
    "ShareChange",
    "adjust_frame",
    "adjusted_levels",
    "cumulative_factors",
]

PRICE_COLUMNS = ("open", "high", "low", "close")
_PRICE_PLACES = Decimal("0.0001")  # as the book stores a price


@dataclass(frozen=True)
class ShareChange:
    """A split or a bonus: on ``ex_date`` every ``ratio_old`` shares become ``ratio_new``."""

    ex_date: dt.date
    ratio_old: int
    ratio_new: int

    def __post_init__(self) -> None:
        if self.ratio_old < 1 or self.ratio_new < 1:
            raise ValueError(f"a split or bonus needs two positive ratios, not {self.ratio_old}:{self.ratio_new}")

    @property
    def factor(self) -> Fraction:
        return Fraction(self.ratio_new, self.ratio_old)


def _known(changes: Iterable[ShareChange], as_of: dt.date | None) -> list[ShareChange]:
    return sorted((change for change in changes if as_of is None or change.ex_date <= as_of), key=lambda c: c.ex_date)


def cumulative_factors(
    dates: Sequence[dt.date], changes: Iterable[ShareChange], *, as_of: dt.date | None
) -> list[float]:
    """For each date, the factor its prices are divided by: the product of the factors of every
    change known by ``as_of`` whose ex-date is after that date (1.0 for a date on or after the
    last ex-date)."""
    known = _known(changes, as_of)
    factors = []
    for day in dates:
        factor = Fraction(1)
        for change in known:
            if day < change.ex_date:
                factor *= change.factor
        factors.append(float(factor))
    return factors


def adjust_frame(frame: pd.DataFrame, changes: Iterable[ShareChange], *, as_of: dt.date | None) -> pd.DataFrame:
    """``frame`` (date index, the bar columns as floats) with prices ÷ and volume × the cumulative
    factor of the changes known by ``as_of``. Returned unchanged (the same object) when no known
    change touches it."""
    known = _known(changes, as_of)
    if frame.empty or not known:
        return frame
    dates = [day.date() if isinstance(day, dt.datetime) else day for day in frame.index]
    factors = cumulative_factors(dates, known, as_of=as_of)
    if all(factor == 1.0 for factor in factors):
        return frame
    adjusted = frame.copy()
    scale = pd.Series(factors, index=frame.index, dtype=float)
    for column in PRICE_COLUMNS:
        if column in adjusted:
            adjusted[column] = adjusted[column] / scale
    if "volume" in adjusted:
        adjusted["volume"] = adjusted["volume"] * scale
    return adjusted


@dataclass(frozen=True)
class AdjustedLevels:
    """An open position after a split or bonus: the whole shares it now holds, its prices in the
    new units, and what its fractional entitlement returned in cash (at the adjusted entry price,
    so the trade's result is unchanged by the action)."""

    quantity: int
    entry_price: Decimal
    stop: Decimal
    target: Decimal
    last_mark: Decimal | None
    cash_in_lieu: Decimal


def _price(value: Decimal, factor: Fraction, rounding: str) -> Decimal:
    return (value * factor.denominator / factor.numerator).quantize(_PRICE_PLACES, rounding=rounding)


def adjusted_levels(
    *,
    direction: str,
    quantity: int,
    entry_price: Decimal,
    stop: Decimal,
    target: Decimal,
    last_mark: Decimal | None,
    change: ShareChange,
) -> AdjustedLevels:
    """A position's quantity × the factor and its entry, stop, target and mark ÷ the factor.

    The entry is rounded to the book's 4 places; the stop and the target are rounded away from the
    entry (never closer to it, so an adjustment cannot trigger an exit the unadjusted levels would
    not). A fraction of a share (a 2:3 bonus on 7 shares) is not held: it is returned in cash at the
    adjusted entry price, to the paisa, rounded down."""
    factor = change.factor
    exact = Fraction(quantity) * factor
    whole = int(exact)  # floor: quantities are positive
    new_entry = _price(entry_price, factor, ROUND_HALF_UP)
    long = direction == "LONG"
    fraction = exact - whole
    cash = (new_entry * fraction.numerator / fraction.denominator).quantize(Decimal("0.01"), rounding=ROUND_FLOOR)
    return AdjustedLevels(
        quantity=whole,
        entry_price=new_entry,
        stop=_price(stop, factor, ROUND_FLOOR if long else ROUND_CEILING),
        target=_price(target, factor, ROUND_CEILING if long else ROUND_FLOOR),
        last_mark=None if last_mark is None else _price(last_mark, factor, ROUND_HALF_UP),
        cash_in_lieu=cash,
    )
