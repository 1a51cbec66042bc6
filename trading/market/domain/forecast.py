"""A baseline price forecast: recent drift plus a volatility band, nothing cleverer.

It is evidence for the technical analyst and the trader only. Risk, sizing and execution never
read it. A better model can replace ``price_forecast`` behind the same signature.

**The conformal correction.** The baseline's z-band assumes normal, steady returns; its past misses
say how wide the band really had to be. ``forecast_residuals`` replays the baseline at each past
close whose horizon has passed by the last close (strictly as of that close: the forecast at
session t reads closes up to t, its outcome is the close at t + horizon), and returns the residuals
realised move − expected move, in percent. ``conformal_forecast`` then sets the band
``expected_move_pct ± q``, q the split-conformal quantile of their absolute values
(``vocabulary.conformal``), once there are ``min_samples`` of them; the raw band is kept beside it.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence

import numpy as np

from vocabulary.conformal import conformal_quantile
from vocabulary.features import PriceForecast

__all__ = [
    "MIN_RETURNS",
    "ConformalSettings",
    "conformal_forecast",
    "dated_forecast_residuals",
    "forecast_residuals",
    "price_forecast",
]

# Fewer returns than this give a drift estimate that is mostly noise: say nothing instead.
MIN_RETURNS = 20


def _log_returns(closes: Sequence[float] | np.ndarray, lookback_sessions: int) -> np.ndarray | None:
    """The last ``lookback_sessions`` daily log returns, or None when the closes cannot give them."""
    prices = np.asarray(closes, dtype=float)[-(lookback_sessions + 1) :]
    # A missing or non-positive close has no logarithm; guessing around it would invent data.
    if prices.ndim != 1 or not np.all(np.isfinite(prices)) or np.any(prices <= 0.0):
        return None
    returns = np.diff(np.log(prices))
    return returns if len(returns) >= MIN_RETURNS else None


def _move_pct(log_move: float) -> float:
    return (math.exp(log_move) - 1.0) * 100.0


def price_forecast(
    closes: Sequence[float] | np.ndarray,
    *,
    horizon_sessions: int = 10,
    lookback_sessions: int = 60,
    band_z: float = 1.645,
) -> PriceForecast | None:
    """Expected move and a z-band over ``horizon_sessions``, from the last ``lookback_sessions`` returns.

    drift = mean daily log return, volatility = its sample standard deviation (ddof=1).
    Expected move = exp(drift*h) - 1; band = exp(drift*h ± z*vol*sqrt(h)) - 1, all in percent,
    and prices are the last close moved by those percentages. ``lookback_sessions`` in the result
    is the number of returns actually used (fewer than asked when history is short). Returns None
    with fewer than ``MIN_RETURNS`` returns or when a close in the window is missing or not positive.
    """
    if horizon_sessions < 1:
        raise ValueError(f"horizon_sessions must be >= 1, got {horizon_sessions}")
    if lookback_sessions < MIN_RETURNS:
        raise ValueError(f"lookback_sessions must be >= {MIN_RETURNS}, got {lookback_sessions}")
    if not band_z > 0:
        raise ValueError(f"band_z must be > 0, got {band_z}")
    returns = _log_returns(closes, lookback_sessions)
    if returns is None:
        return None
    drift = float(np.mean(returns))
    volatility = float(np.std(returns, ddof=1))
    centre = drift * horizon_sessions
    half_width = band_z * volatility * math.sqrt(horizon_sessions)
    last_close = float(np.asarray(closes, dtype=float)[-1])
    expected_move, low_move, high_move = (
        _move_pct(centre),
        _move_pct(centre - half_width),
        _move_pct(centre + half_width),
    )
    return PriceForecast(
        horizon_sessions=horizon_sessions,
        lookback_sessions=len(returns),
        drift_daily_pct=drift * 100.0,
        volatility_daily_pct=volatility * 100.0,
        expected_move_pct=expected_move,
        low_move_pct=low_move,
        high_move_pct=high_move,
        expected_price=last_close * (1.0 + expected_move / 100.0),
        low_price=last_close * (1.0 + low_move / 100.0),
        high_price=last_close * (1.0 + high_move / 100.0),
        band_z=band_z,
    )


class ConformalSettings:
    """How the band is corrected: ``quantile`` is the coverage aimed at (0.90: α = 0.10),
    ``buffer_size`` the most recent residuals kept, ``min_samples`` the residuals needed first."""

    def __init__(self, *, quantile: float = 0.90, buffer_size: int = 200, min_samples: int = 30) -> None:
        if not 0.0 < quantile < 1.0:
            raise ValueError(f"quantile must be strictly between 0 and 1, got {quantile}")
        if buffer_size < 1 or min_samples < 1:
            raise ValueError(f"buffer_size and min_samples must be >= 1, got {buffer_size} and {min_samples}")
        self.quantile = quantile
        self.buffer_size = buffer_size
        self.min_samples = min_samples

    @property
    def alpha(self) -> float:
        # Rounded so 1 - 0.9 is 0.1, the decimal the conformal rank reads exactly.
        return round(1.0 - self.quantile, 12)


def forecast_residuals(
    closes: Sequence[float] | np.ndarray,
    *,
    horizon_sessions: int = 10,
    lookback_sessions: int = 60,
    band_z: float = 1.645,
    limit: int = 200,
) -> list[float]:
    """Realised minus expected move (percent) of the baseline forecast made at each past close,
    for the ``limit`` most recent forecasts whose horizon ended by the last close; oldest first.

    No look-ahead: the forecast at session t reads ``closes[: t + 1]`` only and is resolved by
    ``closes[t + horizon]``, which is at most the last close. A session where the baseline says
    nothing (too little history, a bad close) yields no residual.
    """
    points = _residual_points(
        closes, horizon_sessions=horizon_sessions, lookback_sessions=lookback_sessions, band_z=band_z, limit=limit
    )
    return [residual for _, residual in points]


def dated_forecast_residuals(
    closes: Sequence[float] | np.ndarray,
    dates: Sequence[dt.date],
    *,
    horizon_sessions: int = 10,
    lookback_sessions: int = 60,
    band_z: float = 1.645,
    limit: int = 200,
) -> list[tuple[dt.date, float]]:
    """``forecast_residuals`` with the date each residual became known (its outcome's close), so
    residuals of several instruments can be pooled newest first."""
    if len(dates) != len(closes):
        raise ValueError(f"{len(closes)} closes but {len(dates)} dates: they must pair up")
    points = _residual_points(
        closes, horizon_sessions=horizon_sessions, lookback_sessions=lookback_sessions, band_z=band_z, limit=limit
    )
    return [(dates[resolved], residual) for resolved, residual in points]


def _residual_points(
    closes: Sequence[float] | np.ndarray, *, horizon_sessions: int, lookback_sessions: int, band_z: float, limit: int
) -> list[tuple[int, float]]:
    """(index of the outcome's close, residual) for each resolvable past forecast, oldest first.

    Vectorised over the sessions, with the same arithmetic as ``price_forecast``: the forecast at
    session t uses the last k = min(lookback, t) log returns of ``closes[: t + 1]``, whose mean
    telescopes to (log p_t − log p_{t−k}) / k, and says nothing when a close in that window is
    missing or not positive. ``band_z`` does not move the expected move, so it is not read here.
    """
    if horizon_sessions < 1:
        raise ValueError(f"horizon_sessions must be >= 1, got {horizon_sessions}")
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    prices = np.asarray(closes, dtype=float)
    newest = len(prices) - 1 - horizon_sessions  # the last session whose outcome is known
    first = max(MIN_RETURNS, newest - limit + 1)
    if newest < first:
        return []
    sessions = np.arange(first, newest + 1)
    window = np.minimum(lookback_sessions, sessions)  # returns the forecast at each session reads
    usable = np.isfinite(prices) & (prices > 0.0)
    unusable_before = np.concatenate([[0], np.cumsum(~usable)])  # unusable closes in prices[:i]
    clean = (unusable_before[sessions + 1] - unusable_before[sessions - window]) == 0
    logs = np.log(np.where(usable, prices, 1.0))
    drift = (logs[sessions] - logs[sessions - window]) / window
    expected_move = (np.exp(drift * horizon_sessions) - 1.0) * 100.0
    outcome = prices[sessions + horizon_sessions]
    with np.errstate(invalid="ignore", divide="ignore"):
        realised = (outcome / prices[sessions] - 1.0) * 100.0
    keep = clean & np.isfinite(outcome)
    return [
        (int(session) + horizon_sessions, float(residual))
        for session, residual in zip(sessions[keep], (realised - expected_move)[keep], strict=True)
    ]


def conformal_forecast(
    forecast: PriceForecast,
    residuals: Sequence[float],
    *,
    last_close: float,
    settings: ConformalSettings,
    scope: str = "instrument",
) -> PriceForecast:
    """``forecast`` with its conformal band, or with only the sample count while there are fewer
    than ``settings.min_samples`` residuals (the most recent ``settings.buffer_size`` are used).

    The band is ``expected_move_pct ± q`` (q the conformal quantile at ``settings.alpha``), its
    low end floored at −100% (a price cannot fall below zero); prices are ``last_close`` moved by
    those percentages. When q is unbounded (too few residuals for the rank) nothing is corrected.
    """
    kept = list(residuals)[-settings.buffer_size :]
    samples = {"conformal_samples": len(kept), "conformal_scope": scope if kept else None}
    if len(kept) < settings.min_samples:
        return forecast.model_copy(update=samples)
    half_width = conformal_quantile(kept, settings.alpha)
    if not math.isfinite(half_width):
        return forecast.model_copy(update=samples)
    low = max(forecast.expected_move_pct - half_width, -100.0)
    high = forecast.expected_move_pct + half_width
    return forecast.model_copy(
        update={
            **samples,
            "conformal_half_width_pct": half_width,
            "conformal_low_move_pct": low,
            "conformal_high_move_pct": high,
            "conformal_low_price": last_close * (1.0 + low / 100.0),
            "conformal_high_price": last_close * (1.0 + high / 100.0),
        }
    )
