"""The desk's own pure arithmetic, reached from one place.

The factories never re-implement a fill, a cost, an exit or a profit: they call the functions the
paper broker calls. The imports are made inside each function, so the factories import (and the
suite collects) even while those modules move between packages; if one moves, only this file
changes.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any


def round_to_tick(price: Decimal, tick: Decimal, *, mode: str = "nearest") -> Decimal:
    from vocabulary.ticks import round_to_tick as rounded

    return rounded(price, tick, mode=mode)  # type: ignore[arg-type]


def entry_side(direction: str) -> str:
    from vocabulary.fills import entry_side as side

    return side(direction)  # type: ignore[arg-type]


def exit_side(direction: str) -> str:
    from vocabulary.fills import exit_side as side

    return side(direction)  # type: ignore[arg-type]


def fill_price(*, side: str, reference: Decimal, slippage_bps: Decimal, tick: Decimal) -> Decimal:
    from vocabulary.fills import fill_price as price

    return price(side=side, reference=reference, slippage_bps=slippage_bps, tick=tick)  # type: ignore[arg-type]


def order_costs(side: str, quantity: int, price: Decimal) -> Any:
    """The broker's cost breakdown (``.total``, ``.to_dict()``) under the desk's configured cost model."""
    from trading.book.broker import cost_model
    from vocabulary.costs import order_costs as costs

    return costs(side, quantity, price, cost_model())  # type: ignore[arg-type]


def check_exit(**bar_and_levels: Any) -> Any:
    """An ``ExitSignal`` (``.reason``, ``.price``) or None, exactly as the daily pass decides."""
    from vocabulary.exits import check_exit as exit_on

    return exit_on(**bar_and_levels)


def mark(*, direction: str, quantity: int, entry_price: Decimal, mark_price: Decimal) -> Decimal:
    from vocabulary.exits import mark as marked

    return marked(direction=direction, quantity=quantity, entry_price=entry_price, mark_price=mark_price)  # type: ignore[arg-type]


def realised_pnl(**legs: Any) -> Decimal:
    from vocabulary.exits import realised_pnl as pnl

    return pnl(**legs)


def thesis_expiry(created_at: dt.datetime) -> dt.datetime:
    from trading.book.approvals import thesis_expiry as expiry

    return expiry(created_at)
