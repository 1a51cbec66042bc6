"""Were the calls right? Each analyst's stance, the debate's winner, the thesis's levels and the
forecast band, held against what the price did afterwards. Pure; no Django.

A thesis is judged over its own horizon: ``horizon_sessions`` sessions after its decision session
(the run's as-of day, whose close is the thesis's entry). ``bars`` are the instrument's bars after
the decision session, in date order; a thesis with fewer bars than its horizon is not resolved yet
and counts nowhere. Its resolution date is the date of the horizon's last bar, so a review counts
the theses whose horizon ended inside its period.

- **The realised move** is the sign of the close at the horizon's end less the decision close:
  +1 up, -1 down, 0 flat.
- **A call** (an analyst's stance, the debate's winner as +1 LONG / -1 SHORT) is right when its
  sign matches the move's; a call with no side (an abstention, a stance of zero) or a flat move
  resolves neither way and is not counted.
- **The levels** are walked bar by bar with the broker's own exit rule
  (``vocabulary.exits.check_exit``: gaps first, the stop before the target on one bar): the
  thesis hit its target, its stop, or neither within the horizon. The hit rate is the share of
  resolved theses whose target was reached first.
- **The forecast band** covers the move when the close at the forecast's own horizon lies within
  ``[low_price, high_price]`` (both ends inside).

Rates are fractions to 4 decimals (halves up), None when nothing was counted.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Literal

from vocabulary.exits import check_exit
from vocabulary.trade import Direction

__all__ = [
    "Bar",
    "LevelOutcome",
    "Tally",
    "ThesisResolution",
    "call_right",
    "forecast_covers",
    "rate",
    "resolve_thesis",
    "sign",
    "tally",
]

RATE = Decimal("0.0001")

LevelOutcome = Literal["target", "stop", "neither"]


@dataclass(frozen=True)
class Bar:
    """One session of an instrument, as the resolution reads it."""

    date: dt.date
    open: Decimal
    high: Decimal
    low: Decimal
    close: Decimal


@dataclass(frozen=True)
class ThesisResolution:
    """How one thesis resolved: the move's sign over its horizon, which level came first, and the
    date its horizon ended."""

    move: int
    levels: LevelOutcome
    resolved_on: dt.date


@dataclass(frozen=True)
class Tally:
    """Calls counted (those that resolved either way) and how many were right."""

    calls: int
    right: int

    @property
    def rate(self) -> Decimal | None:
        return rate(self.right, self.calls)

    def to_dict(self) -> dict[str, int | str | None]:
        share = self.rate
        return {"calls": self.calls, "right": self.right, "rate": None if share is None else f"{share:.4f}"}


def sign(value: Decimal | int | float) -> int:
    return (value > 0) - (value < 0)


def call_right(call: int, move: int) -> bool | None:
    """A call with no side, or a move with no direction, resolves neither way."""
    if call == 0 or move == 0:
        return None
    return call == move


def tally(results: Iterable[bool | None]) -> Tally:
    """Count the calls that resolved (True or False) and the right ones among them."""
    calls = right = 0
    for result in results:
        if result is None:
            continue
        calls += 1
        right += 1 if result else 0
    return Tally(calls=calls, right=right)


def rate(part: int, whole: int) -> Decimal | None:
    """``part / whole`` to 4 decimals, None when ``whole`` is zero."""
    if whole <= 0:
        return None
    return (Decimal(part) / Decimal(whole)).quantize(RATE, rounding=ROUND_HALF_UP)


def resolve_thesis(
    *,
    direction: Direction,
    stop: Decimal,
    target: Decimal,
    horizon_sessions: int,
    decision_close: Decimal,
    bars: Sequence[Bar],
) -> ThesisResolution | None:
    """The thesis's resolution from the bars after its decision session, or None while its
    horizon has not ended (fewer bars than ``horizon_sessions``) or its levels are out of order
    (a row the broker could never have traded, judged nowhere rather than wrongly)."""
    if horizon_sessions < 1 or len(bars) < horizon_sessions:
        return None
    window = bars[:horizon_sessions]
    last = window[-1]
    try:
        levels = _levels(direction, stop, target, horizon_sessions, window)
    except ValueError:
        return None
    return ThesisResolution(move=sign(last.close - decision_close), levels=levels, resolved_on=last.date)


def _levels(
    direction: Direction, stop: Decimal, target: Decimal, horizon_sessions: int, window: Sequence[Bar]
) -> LevelOutcome:
    for held, bar in enumerate(window, start=1):
        signal = check_exit(
            direction=direction,
            stop=stop,
            target=target,
            bar_open=bar.open,
            bar_high=bar.high,
            bar_low=bar.low,
            bar_close=bar.close,
            sessions_held=held,
            horizon_sessions=horizon_sessions,
        )
        if signal is None:
            continue
        if signal.reason == "stop":
            return "stop"
        if signal.reason == "target":
            return "target"
        return "neither"
    return "neither"


def forecast_covers(*, low_price: Decimal, high_price: Decimal, close: Decimal) -> bool:
    """The band covered the realised close (its ends count as inside)."""
    return low_price <= close <= high_price
