"""A baseline price forecast: recent drift plus a volatility band, nothing cleverer.

It is evidence for the technical analyst and the trader only. Risk, sizing and execution never
read it. A better model can replace ``price_forecast`` behind the same signature.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from vocabulary.features import PriceForecast

__all__ = ["MIN_RETURNS", "price_forecast"]

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
