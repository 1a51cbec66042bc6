"""Exits by code on one day's bar, and the position's profit or loss. No model involved.

A daily bar says where price went but not in which order, so the rules lean conservative:

- A gap through the stop fills at the open, not at the stop: the stop price was never traded.
- A gap through the target fills at the (better) open: a resting limit order would get it.
- When the stop and the target both sit inside the day's range and neither gapped, the stop is
  assumed to have come first. We cannot tell from a daily bar, and assuming the loss keeps paper
  results from flattering the strategy.
- Only when neither level was touched does the horizon close the position, at the day's close.

The exit price is the reference price; slippage on it belongs to ``execution.fill_price``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Literal

from vocabulary.trade import Direction

__all__ = ["ExitReason", "ExitSignal", "check_exit", "mark", "realised_pnl"]

ExitReason = Literal["stop", "target", "horizon"]

PAISE = Decimal("0.01")


@dataclass(frozen=True)
class ExitSignal:
    reason: ExitReason
    price: Decimal


def check_exit(
    *,
    direction: Direction,
    stop: Decimal,
    target: Decimal,
    bar_open: Decimal,
    bar_high: Decimal,
    bar_low: Decimal,
    bar_close: Decimal,
    sessions_held: int,
    horizon_sessions: int,
) -> ExitSignal | None:
    """The exit this bar triggers, or None to hold.

    ``sessions_held`` counts the sessions the position has been open, including this bar; the
    horizon closes it at this bar's close once that count reaches ``horizon_sessions``.
    """
    _check_bar(bar_open, bar_high, bar_low, bar_close)
    _check_levels(direction, stop, target)
    level_exit = _level_exit(direction, stop, target, bar_open, bar_high, bar_low)
    if level_exit is not None:
        return level_exit
    if sessions_held >= horizon_sessions:
        return ExitSignal("horizon", bar_close)
    return None


def _level_exit(
    direction: Direction, stop: Decimal, target: Decimal, bar_open: Decimal, bar_high: Decimal, bar_low: Decimal
) -> ExitSignal | None:
    if direction == "LONG":
        return _long_level_exit(stop, target, bar_open, bar_high, bar_low)
    return _short_level_exit(stop, target, bar_open, bar_high, bar_low)


def _long_level_exit(
    stop: Decimal, target: Decimal, bar_open: Decimal, bar_high: Decimal, bar_low: Decimal
) -> ExitSignal | None:
    # The order of the tests is the rule: gaps first, then the stop before the target.
    if bar_open <= stop:
        return ExitSignal("stop", bar_open)
    if bar_open >= target:
        return ExitSignal("target", bar_open)
    if bar_low <= stop:
        return ExitSignal("stop", stop)
    if bar_high >= target:
        return ExitSignal("target", target)
    return None


def _short_level_exit(
    stop: Decimal, target: Decimal, bar_open: Decimal, bar_high: Decimal, bar_low: Decimal
) -> ExitSignal | None:
    # A LONG's rules mirrored: a SHORT's stop sits above, its target below.
    if bar_open >= stop:
        return ExitSignal("stop", bar_open)
    if bar_open <= target:
        return ExitSignal("target", bar_open)
    if bar_high >= stop:
        return ExitSignal("stop", stop)
    if bar_low <= target:
        return ExitSignal("target", target)
    return None


def mark(*, direction: Direction, quantity: int, entry_price: Decimal, mark_price: Decimal) -> Decimal:
    """Unrealised profit (negative: loss) in ₹ at ``mark_price``, before costs."""
    _check_quantity(quantity)
    return _to_paise(_side(direction) * (mark_price - entry_price) * quantity)


def realised_pnl(
    *,
    direction: Direction,
    quantity: int,
    entry_price: Decimal,
    exit_price: Decimal,
    entry_costs: Decimal,
    exit_costs: Decimal,
) -> Decimal:
    """Realised profit (negative: loss) in ₹: the price move on ``quantity`` shares less both legs' costs."""
    if entry_costs < 0 or exit_costs < 0:
        raise ValueError(f"costs must not be negative, got entry {entry_costs} and exit {exit_costs}")
    gross = mark(direction=direction, quantity=quantity, entry_price=entry_price, mark_price=exit_price)
    return _to_paise(gross - entry_costs - exit_costs)


def _side(direction: Direction) -> int:
    """+1 when profit lies above entry (LONG), -1 when below (SHORT)."""
    if direction == "LONG":
        return 1
    if direction == "SHORT":
        return -1
    raise ValueError(f"direction must be LONG or SHORT, got {direction!r}")


def _to_paise(amount: Decimal) -> Decimal:
    return amount.quantize(PAISE, rounding=ROUND_HALF_UP)


def _check_quantity(quantity: int) -> None:
    if isinstance(quantity, bool) or not isinstance(quantity, int) or quantity <= 0:
        raise ValueError(f"quantity must be a positive whole number of shares, got {quantity!r}")


def _check_bar(bar_open: Decimal, bar_high: Decimal, bar_low: Decimal, bar_close: Decimal) -> None:
    # A bar whose open or close lies outside its own range is bad data; exiting on it would be a guess.
    if not (bar_low <= bar_open <= bar_high and bar_low <= bar_close <= bar_high):
        raise ValueError(f"inconsistent bar: open {bar_open}, high {bar_high}, low {bar_low}, close {bar_close}")


def _check_levels(direction: Direction, stop: Decimal, target: Decimal) -> None:
    # With the levels the wrong way round, the gap and range tests would fire on the wrong side.
    lower, upper = (stop, target) if _side(direction) == 1 else (target, stop)
    if not lower < upper:
        raise ValueError(f"{direction} levels out of order: stop {stop}, target {target}")
