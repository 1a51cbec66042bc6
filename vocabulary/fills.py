"""The paper fill: which price an order is filled at, and which side each leg of a trade takes.

A paper broker that fills at the quoted price flatters every strategy, so slippage always moves
the fill against the trader and the tick rounding does too. The price forecast is no input here.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from vocabulary.costs import Side
from vocabulary.ticks import round_to_tick
from vocabulary.trade import Direction

__all__ = ["FillPolicy", "as_fill_policy", "entry_side", "exit_side", "fill_price", "reference_price"]

# next_open: fill at the first price we could really have traded after the decision (no look-ahead).
# last_price: fill at the last close we saw; quicker, but optimistic for a decision made after the close.
FillPolicy = Literal["next_open", "last_price"]

BASIS_POINTS = Decimal(10_000)


def as_fill_policy(value: str) -> FillPolicy:
    """A stored or configured fill policy (text) as the word the pure code takes; anything else is refused."""
    if value == "next_open":
        return "next_open"
    if value == "last_price":
        return "last_price"
    raise ValueError(f"fill policy must be next_open or last_price, got {value!r}")


def fill_price(*, side: Side, reference: Decimal, slippage_bps: Decimal, tick: Decimal) -> Decimal:
    """``reference`` moved ``slippage_bps`` against the trader, then onto the tick grid against them too.

    A BUY pays ``reference x (1 + bps/10,000)`` rounded up to the tick; a SELL receives
    ``reference x (1 - bps/10,000)`` rounded down.
    """
    if not reference.is_finite() or reference <= 0:
        raise ValueError(f"reference price must be positive, got {reference}")
    if not slippage_bps.is_finite() or slippage_bps < 0:
        raise ValueError(f"slippage_bps must not be negative, got {slippage_bps}")
    slippage = slippage_bps / BASIS_POINTS
    if side == "BUY":
        return round_to_tick(reference * (1 + slippage), tick, mode="up")
    if side == "SELL":
        price = round_to_tick(reference * (1 - slippage), tick, mode="down")
        if price <= 0:
            raise ValueError(f"a sell at {reference} with {slippage_bps} bps slippage leaves no price")
        return price
    raise ValueError(f"side must be BUY or SELL, got {side!r}")


def reference_price(policy: FillPolicy, *, last_close: Decimal | None, next_open: Decimal | None) -> Decimal | None:
    """The price a fill is taken from, or None when it is not known yet (the order waits): the next
    open before the next session, the last close before the instrument has any bar."""
    if policy == "next_open":
        return next_open
    if policy == "last_price":
        return last_close
    raise ValueError(f"fill policy must be next_open or last_price, got {policy!r}")


def entry_side(direction: Direction) -> Side:
    """A LONG opens with a BUY, a SHORT with a SELL."""
    return _opening_side(direction)


def exit_side(direction: Direction) -> Side:
    """A LONG closes with a SELL, a SHORT buys back."""
    return "SELL" if _opening_side(direction) == "BUY" else "BUY"


def _opening_side(direction: Direction) -> Side:
    if direction == "LONG":
        return "BUY"
    if direction == "SHORT":
        return "SELL"
    raise ValueError(f"direction must be LONG or SHORT, got {direction!r}")
