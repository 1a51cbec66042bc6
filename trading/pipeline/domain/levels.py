"""Trade levels set by code, not by the model: anchor entry/stop/target to price and ATR, then check them.

The trader model owns direction, rationale and risks; it is not trusted to pick prices. Prices are
Decimal and sit on the exchange tick grid. The thesis schema stores floats, so Decimal values are
converted at this boundary only (``Decimal(str(x))`` reads a float back exactly as it printed).
"""

from __future__ import annotations

from decimal import Decimal

from agents.roles import TradeThesis
from vocabulary.ticks import RoundingMode, profit_side, round_to_tick
from vocabulary.trade import Direction

__all__ = ["ThesisInvalid", "anchor_levels", "validate_thesis"]


class ThesisInvalid(ValueError):
    """The thesis's price geometry is wrong; ``reason`` says how, in words a person can act on."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _as_decimal(price: float) -> Decimal:
    return Decimal(str(price))


def _away_from_entry(direction: Direction) -> RoundingMode:
    # A LONG's stop sits below entry, so "away" is down; a SHORT's sits above, so up.
    return "down" if direction == "LONG" else "up"


def _toward_entry(direction: Direction) -> RoundingMode:
    return "up" if direction == "LONG" else "down"


def anchor_levels(
    thesis: TradeThesis,
    *,
    last_price: Decimal,
    atr: Decimal | None,
    tick: Decimal,
    stop_atr_multiple: Decimal = Decimal(2),
    reward_multiple: Decimal = Decimal(2),
) -> TradeThesis:
    """A copy of ``thesis`` with entry, stop and target set from the last price and ATR.

    - entry: the last price, rounded to the nearest tick.
    - stop: ``stop_atr_multiple`` x ATR beyond entry, rounded to the tick *away* from entry. The
      stop distance is then never narrower than the ATR asks for, so noise is less likely to
      take the trade out; the rupee risk stays bounded because sizing divides by this distance.
    - target: ``reward_multiple`` x the (rounded) stop distance past entry, rounded *toward*
      entry so the reward is never overstated. With whole multiples it is already on the grid.

    The model's levels are never used. When no anchor can be set — ATR unknown, an ATR distance
    under half a tick (it would round the stop onto entry), or a LONG's stop or a SHORT's target
    at or below zero — it raises ``ThesisInvalid`` with the reason, and the run fails closed.
    """
    if last_price <= 0:
        raise ValueError(f"last_price must be positive, got {last_price}")
    if atr is None:
        raise ThesisInvalid("ATR is unknown: there is no volatility to set the stop from")
    if atr < 0:
        raise ValueError(f"atr must not be negative, got {atr}")

    stop_distance_raw = stop_atr_multiple * atr
    if round_to_tick(stop_distance_raw, tick) == 0:
        raise ThesisInvalid(
            f"{stop_atr_multiple} x ATR ₹{atr} is under half a tick (₹{tick}): no stop can be placed off the entry"
        )

    direction = thesis.direction
    side = profit_side(direction)
    entry = round_to_tick(last_price, tick)
    stop = round_to_tick(entry - side * stop_distance_raw, tick, mode=_away_from_entry(direction))
    target = round_to_tick(entry + side * reward_multiple * abs(entry - stop), tick, mode=_toward_entry(direction))
    if stop <= 0 or target <= 0:
        raise ThesisInvalid(
            f"{stop_atr_multiple} x ATR ₹{atr} from ₹{entry} puts a level at or below zero "
            f"(stop ₹{stop}, target ₹{target})"
        )
    return thesis.model_copy(
        update={
            "entry": float(entry),
            "stop": float(stop),
            "target": float(target),
            "levels_source": "atr-anchor",
        }
    )


def _check_sides(direction: Direction, entry: Decimal, stop: Decimal, target: Decimal) -> None:
    if stop == entry:
        raise ThesisInvalid(f"stop equals entry (₹{entry}): the trade has no defined risk")
    side = profit_side(direction)
    if (entry - stop) * side < 0:
        where = "below" if direction == "LONG" else "above"
        raise ThesisInvalid(f"{direction} stop ₹{stop} must be {where} entry ₹{entry}")
    if (target - entry) * side <= 0:
        where = "above" if direction == "LONG" else "below"
        raise ThesisInvalid(f"{direction} target ₹{target} must be {where} entry ₹{entry}")


def _check_stop_distance(
    entry: Decimal, stop: Decimal, *, atr: Decimal, max_stop_atr: Decimal, tick: Decimal | None
) -> None:
    # Anchoring rounds the stop away from entry by less than one tick, so the bound allows that tick.
    limit = max_stop_atr * atr + (tick or Decimal(0))
    stop_distance = abs(entry - stop)
    if stop_distance > limit:
        raise ThesisInvalid(
            f"stop ₹{stop} is ₹{stop_distance} from entry ₹{entry}, further than {max_stop_atr} x ATR ₹{atr} = ₹{limit}"
        )


def validate_thesis(
    thesis: TradeThesis,
    *,
    atr: Decimal | None,
    max_stop_atr: Decimal = Decimal(4),
    tick: Decimal | None = None,
) -> None:
    """Raise ``ThesisInvalid`` unless the levels make a tradable geometry.

    LONG needs stop < entry < target; SHORT needs target < entry < stop; the stop may be at most
    ``max_stop_atr`` x ATR (plus the one tick that rounding away from entry may add) from entry,
    and every price must sit on the ``tick`` grid when one is given. Without an ATR the bound
    cannot be checked, so the thesis is invalid: the bound is never silently off.
    """
    entry, stop, target = _as_decimal(thesis.entry), _as_decimal(thesis.stop), _as_decimal(thesis.target)
    _check_sides(thesis.direction, entry, stop, target)
    if atr is None:
        raise ThesisInvalid("ATR is unknown, so the stop distance cannot be bounded")
    _check_stop_distance(entry, stop, atr=atr, max_stop_atr=max_stop_atr, tick=tick)
    if tick is not None:
        for name, price in (("entry", entry), ("stop", stop), ("target", target)):
            if price % tick != 0:
                raise ThesisInvalid(f"{name} ₹{price} is off the tick grid of ₹{tick}")
