"""Strategic effectiveness: is the strategy worth running at all? Pure; no Django.

Prediction accuracy says whether the desk reads the market right; effectiveness says whether the
strategy, after every cost, does better than not trading. Per weekly review (or over a rolling
window of them):

- **net result**: the attribution's net (gains, losses, slippage, costs, manual exits, unrealised,
  inference), money to the paisa; over a window, the sum of the weeks' nets;
- **risk-adjusted return**: the attribution's ``risk_adjusted`` figure (a ratio, no unit); over a
  window, the mean of the weeks that have one;
- **inaction-superiority rate**: the share of positions that inaction (not trading, which earns
  zero) beat; over a window, all beaten positions over all positions, not a mean of rates;
- **composite score** in [0, 1], higher is better, a weighted mean of three parts, each in [0, 1]:

  ========================  ======  ==================================================
  part                      weight  value
  ========================  ======  ==================================================
  worthwhile actions        0.4     1 − inaction-superiority rate
  risk-adjusted return      0.4     (tanh(risk-adjusted) + 1) / 2: 0.5 at zero, → 1 / → 0
  net result                0.2     1 when net > 0, 0.5 when exactly 0, 0 when net < 0
  ========================  ======  ==================================================

  A part whose figure is missing (no closed position, no risk figure) is left out and the
  remaining weights are scaled up to sum to one; with nothing to judge the score is None. The
  score is rounded to 4 decimals; ``score_label`` reads it as good (≥ 0.6), mixed (≥ 0.4) or poor.

**The flag** (``should_flag``): the strategy is flagged for its owner when inaction beat it in
*strictly more* than ``share`` (70%) of its positions in each of the last ``weeks`` (2) weekly
reviews in a row. Exactly 70% does not flag; a week with no positions (no rate) breaks the run.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

__all__ = [
    "DEFAULT_FLAG_SHARE",
    "DEFAULT_FLAG_WEEKS",
    "SCORE_WEIGHTS",
    "Effectiveness",
    "WeekFigures",
    "composite_score",
    "effectiveness",
    "inaction_superiority",
    "rolling_effectiveness",
    "score_label",
    "should_flag",
]

DEFAULT_FLAG_SHARE = 0.70
DEFAULT_FLAG_WEEKS = 2
SCORE_WEIGHTS = {"actions": Decimal("0.4"), "risk": Decimal("0.4"), "net": Decimal("0.2")}
_PAISE = Decimal("0.01")
_RATE = Decimal("0.0001")
_ZERO = Decimal(0)
_ONE = Decimal(1)
_HALF = Decimal("0.5")

Rate = Decimal | float | str | None


def _decimal(value: object, label: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, numbers.Real | Decimal | str):
        raise ValueError(f"{label} must be a number, got {value!r}")
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"{label} must be a number, got {value!r}") from None
    if not number.is_finite():
        raise ValueError(f"{label} must be finite, got {value!r}")
    return number


def _rate(value: Rate, label: str) -> Decimal | None:
    """A share in [0, 1] as a Decimal of its decimal spelling (0.7 is exactly 7/10), or None."""
    if value is None:
        return None
    rate = _decimal(value, label)
    if not _ZERO <= rate <= _ONE:
        raise ValueError(f"{label} must be within [0, 1], got {value!r}")
    return rate


def inaction_superiority(*, positions: int, beaten_by_inaction: int) -> Decimal | None:
    """beaten / positions to 4 decimals (halves up), or None when there was no position."""
    if positions < 0 or beaten_by_inaction < 0 or beaten_by_inaction > positions:
        raise ValueError(f"{beaten_by_inaction} beaten of {positions} positions does not add up")
    if positions == 0:
        return None
    return (Decimal(beaten_by_inaction) / Decimal(positions)).quantize(_RATE, rounding=ROUND_HALF_UP)


def composite_score(
    *, net: Decimal | None, risk_adjusted: Decimal | float | None, superiority: Decimal | None
) -> Decimal | None:
    """The weighted mean of the parts that have a figure (see the module's table), 4 decimals."""
    parts: list[tuple[Decimal, Decimal]] = []
    if superiority is not None:
        parts.append((SCORE_WEIGHTS["actions"], _ONE - superiority))
    if risk_adjusted is not None:
        squashed = (math.tanh(float(risk_adjusted)) + 1.0) / 2.0
        parts.append((SCORE_WEIGHTS["risk"], Decimal(repr(squashed))))
    if net is not None:
        parts.append((SCORE_WEIGHTS["net"], _ONE if net > 0 else _HALF if net == 0 else _ZERO))
    if not parts:
        return None
    total_weight = sum((weight for weight, _ in parts), _ZERO)
    score = sum((weight * value for weight, value in parts), _ZERO) / total_weight
    return score.quantize(_RATE, rounding=ROUND_HALF_UP)


def score_label(score: Decimal | None) -> str:
    """good (≥ 0.6), mixed (≥ 0.4), poor, or "no data"."""
    if score is None:
        return "no data"
    if score >= Decimal("0.6"):
        return "good"
    return "mixed" if score >= Decimal("0.4") else "poor"


@dataclass(frozen=True)
class Effectiveness:
    net: Decimal
    risk_adjusted: Decimal | None
    inaction_superiority: Decimal | None
    score: Decimal | None

    @property
    def label(self) -> str:
        return score_label(self.score)

    def to_dict(self) -> dict[str, str | None]:
        """The hard part's ``effectiveness`` block: money with 2 decimals, rates with 4."""
        return {
            "net": f"{self.net:.2f}",
            "risk_adjusted": None if self.risk_adjusted is None else f"{self.risk_adjusted:.4f}",
            "inaction_superiority": None if self.inaction_superiority is None else f"{self.inaction_superiority:.4f}",
            "score": None if self.score is None else f"{self.score:.4f}",
        }


def effectiveness(
    *, net: Decimal | str, risk_adjusted: Decimal | float | str | None, positions: int, beaten_by_inaction: int
) -> Effectiveness:
    """One period's effectiveness from its attribution net, risk figure and position counts."""
    money = _decimal(net, "net").quantize(_PAISE, rounding=ROUND_HALF_UP)
    risk = None if risk_adjusted is None else _decimal(risk_adjusted, "risk_adjusted")
    superiority = inaction_superiority(positions=positions, beaten_by_inaction=beaten_by_inaction)
    return Effectiveness(
        net=money,
        risk_adjusted=risk,
        inaction_superiority=superiority,
        score=composite_score(net=money, risk_adjusted=risk, superiority=superiority),
    )


@dataclass(frozen=True)
class WeekFigures:
    """One weekly review's figures, as its hard part holds them."""

    net: Decimal
    risk_adjusted: Decimal | None
    positions: int
    beaten_by_inaction: int


def rolling_effectiveness(weeks: Sequence[WeekFigures]) -> Effectiveness:
    """Effectiveness over a window of weeks: nets summed, risk figures averaged over the weeks
    that have one, superiority pooled over every position of the window."""
    if not weeks:
        raise ValueError("a rolling effectiveness needs at least one week")
    risks = [week.risk_adjusted for week in weeks if week.risk_adjusted is not None]
    return effectiveness(
        net=sum((week.net for week in weeks), _ZERO),
        risk_adjusted=(sum(risks, _ZERO) / len(risks)) if risks else None,
        positions=sum(week.positions for week in weeks),
        beaten_by_inaction=sum(week.beaten_by_inaction for week in weeks),
    )


def should_flag(
    weekly_superiorities: Sequence[Rate], share: float | Decimal = DEFAULT_FLAG_SHARE, weeks: int = DEFAULT_FLAG_WEEKS
) -> bool:
    """True when each of the last ``weeks`` rates (oldest first) is strictly above ``share``.

    Rates may be Decimals, floats or the hard part's 4-decimal strings; None (a week with no
    position) never counts as above. Fewer than ``weeks`` rates never flag. Compared exactly in
    decimal, so 0.70 is not above 0.7.
    """
    if isinstance(weeks, bool) or not isinstance(weeks, int) or weeks < 1:
        raise ValueError(f"weeks must be a whole number >= 1, got {weeks!r}")
    threshold = _rate(share, "share")
    assert threshold is not None
    if len(weekly_superiorities) < weeks:
        return False
    latest = [_rate(value, f"superiority #{i}") for i, value in enumerate(weekly_superiorities[-weeks:])]
    return all(rate is not None and rate > threshold for rate in latest)
