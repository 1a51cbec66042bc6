"""A closed trade's outcome as facts: the label, the signal's fate and the predicted-vs-realised moves.

The reviewer's grounding rule: the realised P&L, the outcome label and the signal-evolution state
come from numbers, never from a model's wording, so the learning loop cannot record a
hallucinated outcome. Only the critique and lessons are the model's.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Literal

from vocabulary.trade import SIGNAL_STATES, Direction, Outcome, SignalEvolution

__all__ = [
    "SIGNAL_STATES",
    "Outcome",
    "SignalEvolution",
    "classify_outcome",
    "signal_evolution",
    "thesis_vs_outcome",
]


_EVOLUTION_BY_OUTCOME: dict[Outcome, Literal["Realized", "Falsified", "Weakened"]] = {
    "win": "Realized",
    "loss": "Falsified",
    "scratch": "Weakened",
}

HUNDRED = Decimal(100)
HUNDREDTH = Decimal("0.01")


def classify_outcome(
    realised_pnl: Decimal, *, notional: Decimal, scratch_band_pct: Decimal = Decimal("0.1")
) -> Outcome:
    """win, loss, or scratch when ``|realised_pnl|`` is within ``scratch_band_pct`` % of the entry notional.

    Pass the P&L net of costs: a trade whose gross gain only paid its charges was not a win.
    The band edge itself counts as a scratch.
    """
    if notional <= 0:
        raise ValueError(f"notional must be positive, got {notional}")
    if scratch_band_pct < 0:
        raise ValueError(f"scratch_band_pct must not be negative, got {scratch_band_pct}")
    band = notional * scratch_band_pct / HUNDRED
    if abs(realised_pnl) <= band:
        return "scratch"
    return "win" if realised_pnl > 0 else "loss"


def signal_evolution(outcome: Outcome) -> Literal["Realized", "Falsified", "Weakened"]:
    """win → Realized, loss → Falsified, scratch → Weakened."""
    try:
        return _EVOLUTION_BY_OUTCOME[outcome]
    except KeyError:
        raise ValueError(f"outcome must be win, loss or scratch, got {outcome!r}") from None


def thesis_vs_outcome(
    *, direction: Direction, entry: Decimal, stop: Decimal, target: Decimal, exit_price: Decimal
) -> dict[str, str]:
    """What the thesis predicted against what happened, as % moves of price from entry.

    - ``predicted_target_pct`` / ``predicted_stop_pct``: the move to the target / stop;
    - ``realised_pct``: the move to the exit price;
    - ``realised_r``: the move in the trade's favour as a multiple of the risk (entry to stop),
      so +2.00 is a 2R winner and -1.00 a full stop-out whatever the direction.

    Moves are signed as price moves (a SHORT's target is negative). Values are Decimal strings
    rounded to 0.01, halves away from zero.
    """
    _check_geometry(direction, entry, stop, target)
    side = 1 if direction == "LONG" else -1
    risk = abs(entry - stop)
    return {
        "direction": direction,
        "predicted_target_pct": _hundredths(_move_pct(entry, target)),
        "predicted_stop_pct": _hundredths(_move_pct(entry, stop)),
        "realised_pct": _hundredths(_move_pct(entry, exit_price)),
        "realised_r": _hundredths(side * (exit_price - entry) / risk),
    }


def _move_pct(entry: Decimal, price: Decimal) -> Decimal:
    return (price - entry) / entry * HUNDRED


def _hundredths(value: Decimal) -> str:
    return f"{value.quantize(HUNDREDTH, rounding=ROUND_HALF_UP):f}"


def _check_geometry(direction: Direction, entry: Decimal, stop: Decimal, target: Decimal) -> None:
    if entry <= 0:
        raise ValueError(f"entry must be positive, got {entry}")
    if direction == "LONG":
        sound = stop < entry < target
    elif direction == "SHORT":
        sound = target < entry < stop
    else:
        raise ValueError(f"direction must be LONG or SHORT, got {direction!r}")
    if not sound:
        raise ValueError(f"{direction} levels out of order: entry {entry}, stop {stop}, target {target}")
