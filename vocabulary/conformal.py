"""Split-conformal bands: how wide must a forecast's band be for its past misses to fit inside it?

Pure arithmetic shared by the layers (no Django): ``trading`` widens or narrows its forecast band
with it, and ``reviews.domain.calibration`` re-exports it for the retrospective's calibration.

Given the absolute residuals |realised − forecast| of n past forecasts, the band
``forecast ± q`` with q the ⌈(n+1)(1−α)⌉-th smallest residual covers the next outcome with
probability at least 1 − α when past and future residuals are exchangeable (split conformal
prediction). With too few residuals for that rank, q is infinite: no finite band can promise it.
A ``ResidualBuffer`` keeps the most recent residuals only, so the evaluator's memory stays fixed.

Residuals are unit-free (percent moves), so they are floats here.
"""

from __future__ import annotations

import math
import numbers
from collections import deque
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

__all__ = [
    "CONFORMAL_ALPHA",
    "RESIDUAL_BUFFER_SIZE",
    "RESIDUAL_MIN_SAMPLES",
    "ResidualBuffer",
    "conformal_band",
    "conformal_quantile",
    "conformal_rank",
]

RESIDUAL_BUFFER_SIZE = 200  # forecast residuals kept for the conformal band
RESIDUAL_MIN_SAMPLES = 30  # residuals before a conformal band replaces the forecast's own band
CONFORMAL_ALPHA = 0.10  # miss rate of the band: a 90% band


def _miss_rate(alpha: object) -> Fraction:
    """``alpha`` as an exact fraction of its decimal spelling (0.1 is 1/10, not the binary 0.1…)."""
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real | Decimal):
        raise ValueError(f"alpha must be a number strictly between 0 and 1, got {alpha!r}")
    if isinstance(alpha, float | Decimal) and not math.isfinite(alpha):
        raise ValueError(f"alpha must be a number strictly between 0 and 1, got {alpha!r}")
    rate = Fraction(str(alpha))
    if not 0 < rate < 1:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    return rate


def _finite(value: object, label: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{label} must be a finite number, got {value!r}")
    return float(value)


def _absolute_residuals(residuals: Sequence[float]) -> list[float]:
    return [abs(_finite(value, f"residual #{i}")) for i, value in enumerate(residuals)]


def conformal_rank(n: int, alpha: float) -> int:
    """⌈(n + 1)(1 − α)⌉: the 1-based rank of the residual that bounds a (1 − α) band."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"n must be a whole number >= 0, got {n!r}")
    return math.ceil((int(n) + 1) * (1 - _miss_rate(alpha)))


def conformal_quantile(residuals: Sequence[float], alpha: float) -> float:
    """The ⌈(n+1)(1−α)⌉-th smallest absolute residual (1-based); ``math.inf`` when that rank exceeds n.

    With 9 residuals and α = 0.1 that is the 9th (the largest); with 8 it would be the 9th of 8,
    so the band is unbounded: too few residuals to promise 90%. The rank is computed exactly from
    α's decimal spelling, so 0.1 is one tenth and (n+1)(1−α) lands on whole numbers when it should.
    Refuses α outside (0, 1) and a residual that is not finite.
    """
    rank = conformal_rank(len(residuals), alpha)
    ordered = sorted(_absolute_residuals(residuals))
    if rank > len(ordered):
        return math.inf
    return ordered[rank - 1]


def conformal_band(center: float, residuals: Sequence[float], alpha: float) -> tuple[float, float]:
    """(center − q, center + q) with q = ``conformal_quantile(residuals, alpha)``.

    ``center`` is the forecast's point estimate (say, the expected move in %), and the residuals
    are past (realised − forecast) in the same unit. The band is wider or narrower than the
    forecast's own band as the forecast's past misses were. (−inf, inf) when there are too few
    residuals; the caller decides whether to show the band before ``RESIDUAL_MIN_SAMPLES``.
    """
    middle = _finite(center, "center")
    half_width = conformal_quantile(residuals, alpha)
    return middle - half_width, middle + half_width


class ResidualBuffer:
    """The last ``maxlen`` residuals, oldest dropped first, so memory stays bounded."""

    __slots__ = ("_values",)

    def __init__(self, maxlen: int = RESIDUAL_BUFFER_SIZE) -> None:
        if isinstance(maxlen, bool) or not isinstance(maxlen, numbers.Integral) or maxlen < 1:
            raise ValueError(f"maxlen must be a whole number >= 1, got {maxlen!r}")
        self._values: deque[float] = deque(maxlen=int(maxlen))

    @property
    def maxlen(self) -> int:
        size = self._values.maxlen
        assert size is not None  # always set in __init__
        return size

    def append(self, residual: float) -> None:
        """Keep ``residual`` (a finite number), dropping the oldest when full."""
        self._values.append(_finite(residual, "residual"))

    def values(self) -> tuple[float, ...]:
        """The kept residuals, oldest first."""
        return tuple(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"ResidualBuffer(maxlen={self.maxlen}, held={len(self)})"
