"""Stage 1: the FeatureBundle, a pure function of stored data as of a date.

``build_feature_bundle`` is the full path. ``ensure_feature_bundle`` is the composition-root
wrapper the pipeline calls: if any part of the full path fails, it rebuilds a smaller bundle from
the recent closes and the news, marks it ``fallback`` and says why, so the evidence layer can never
silently switch off. Only a total absence of prices is an error.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from trading.market.domain.forecast import ConformalSettings, conformal_forecast, forecast_residuals, price_forecast
from trading.market.domain.fundamentals import fundamental_features
from trading.market.domain.news import news_features, sentiment_features
from trading.market.domain.technical import technical_features
from vocabulary.features import (
    FeatureBundle,
    FundamentalsInput,
    MacroReading,
    NewsFeatures,
    NewsInput,
    PriceForecast,
    TechnicalFeatures,
)

__all__ = [
    "BundleSettings",
    "NoPriceData",
    "build_feature_bundle",
    "ensure_feature_bundle",
    "fallback_feature_bundle",
    "technical_features",
]


class NoPriceData(ValueError):
    """There is no bar at or before the as-of date: nothing can be said about this instrument."""


class BundleSettings:
    def __init__(
        self,
        *,
        news_lookback_days: int = 14,
        news_half_life_days: float = 3.0,
        forecast_horizon_sessions: int = 10,
        conformal: ConformalSettings | None = None,
    ) -> None:
        self.news_lookback_days = news_lookback_days
        self.news_half_life_days = news_half_life_days
        self.forecast_horizon_sessions = forecast_horizon_sessions
        self.conformal = conformal  # None: the raw band only, no correction


# The universe's past residuals, asked for only when the instrument's own are too few.
UniverseResiduals = Callable[[], Sequence[float]]


def _bars_as_of(bars: pd.DataFrame, as_of: dt.date) -> pd.DataFrame:
    # The caller should already have cut the history; cutting again here makes look-ahead
    # impossible whatever the caller passed.
    index = bars.index
    if type(as_of) is dt.date and index.is_monotonic_increasing and all(type(day) is dt.date for day in index):
        # The selectors' (and a replay cache's) frames: plain dates in order, so the bars on or
        # before the day are a prefix; found by bisection instead of a Timestamp per bar.
        return bars.iloc[: index.searchsorted(as_of, side="right")].copy()
    index_dates = pd.Index([pd.Timestamp(d).date() for d in index])
    return bars.loc[index_dates <= as_of]


def _news_cutoff(as_of: dt.date, tz: dt.tzinfo) -> dt.datetime:
    return dt.datetime.combine(as_of, dt.time.max, tzinfo=tz)


def _news_block(news: Sequence[NewsInput], as_of: dt.date, tz: dt.tzinfo, config: BundleSettings) -> NewsFeatures:
    return news_features(
        news,
        _news_cutoff(as_of, tz),
        lookback_days=config.news_lookback_days,
        half_life_days=config.news_half_life_days,
    )


def _forecast(
    closes: np.ndarray, config: BundleSettings, universe_residuals: UniverseResiduals | None
) -> PriceForecast | None:
    """The baseline forecast, its band corrected by the split-conformal quantile of its past
    residuals: the instrument's own, or the universe's when it has too few (see ``forecast``)."""
    forecast = price_forecast(closes, horizon_sessions=config.forecast_horizon_sessions)
    conformal = config.conformal
    if forecast is None or conformal is None:
        return forecast
    own = forecast_residuals(closes, horizon_sessions=config.forecast_horizon_sessions, limit=conformal.buffer_size)
    residuals, scope = own, "instrument"
    if len(own) < conformal.min_samples and universe_residuals is not None:
        pooled = list(universe_residuals())
        if len(pooled) > len(own):
            residuals, scope = pooled, "universe"
    return conformal_forecast(forecast, residuals, last_close=float(closes[-1]), settings=conformal, scope=scope)


def build_feature_bundle(
    *,
    symbol: str,
    as_of: dt.date,
    bars: pd.DataFrame,
    news: Sequence[NewsInput],
    fundamentals: FundamentalsInput | None,
    macro: Sequence[MacroReading] = (),
    tz: dt.tzinfo = dt.UTC,
    config: BundleSettings | None = None,
    universe_residuals: UniverseResiduals | None = None,
    technical: TechnicalFeatures | None = None,
) -> FeatureBundle:
    """``technical``: ``technical_features`` of the history cut at the day, when the caller has
    computed it already (a replay computes every day of its window in one pass)."""
    config = config or BundleSettings()
    history = _bars_as_of(bars, as_of)
    if history.empty:
        raise NoPriceData(f"{symbol}: no bar on or before {as_of}")
    news_block = _news_block(news, as_of, tz, config)
    return FeatureBundle(
        symbol=symbol,
        as_of=as_of,
        technical=technical if technical is not None else technical_features(history),
        news=news_block,
        sentiment=sentiment_features(news_block),
        fundamentals=fundamental_features(fundamentals if fundamentals and fundamentals.as_of <= as_of else None),
        forecast=_forecast(history["close"].to_numpy(dtype=float), config, universe_residuals),
        macro=[reading for reading in macro if reading.date <= as_of],
    )


def _minimal_technical(history: pd.DataFrame) -> TechnicalFeatures:
    closes = history["close"].astype(float)
    last_date = pd.Timestamp(history.index[-1]).date()
    known = {"as_of", "bars_used", "last_close", "prev_close", "last_volume"}
    empty = dict.fromkeys(name for name in TechnicalFeatures.model_fields if name not in known)
    return TechnicalFeatures(
        as_of=last_date,
        bars_used=len(history),
        last_close=float(closes.iloc[-1]),
        prev_close=float(closes.iloc[-2]) if len(closes) > 1 else None,
        last_volume=float(history["volume"].iloc[-1]) if "volume" in history else 0.0,
        **empty,
    )


def fallback_feature_bundle(
    *,
    symbol: str,
    as_of: dt.date,
    bars: pd.DataFrame,
    news: Sequence[NewsInput],
    reason: str,
    tz: dt.tzinfo = dt.UTC,
    config: BundleSettings | None = None,
) -> FeatureBundle:
    config = config or BundleSettings()
    history = _bars_as_of(bars, as_of)
    if history.empty or "close" not in history:
        raise NoPriceData(f"{symbol}: no close on or before {as_of}")
    warnings = [f"full feature path failed: {reason}"]
    try:
        news_block = _news_block(news, as_of, tz, config)
    except Exception as error:  # the fallback itself must not fail on a bad feed
        warnings.append(f"news features failed: {error}")
        news_block = NewsFeatures(
            lookback_days=config.news_lookback_days,
            half_life_days=config.news_half_life_days,
            raw_count=0,
            unique_count=0,
            net_sentiment=0.0,
            by_class={},
            items=[],
        )
    try:
        forecast = price_forecast(
            history["close"].to_numpy(dtype=float), horizon_sessions=config.forecast_horizon_sessions
        )
    except Exception as error:
        warnings.append(f"forecast failed: {error}")
        forecast = None
    return FeatureBundle(
        symbol=symbol,
        as_of=as_of,
        technical=_minimal_technical(history),
        news=news_block,
        sentiment=sentiment_features(news_block),
        fundamentals=fundamental_features(None),
        forecast=forecast,
        fallback=True,
        warnings=warnings,
    )


def ensure_feature_bundle(
    *,
    symbol: str,
    as_of: dt.date,
    bars: pd.DataFrame,
    news: Sequence[NewsInput],
    fundamentals: FundamentalsInput | None,
    macro: Sequence[MacroReading] = (),
    tz: dt.tzinfo = dt.UTC,
    config: BundleSettings | None = None,
    universe_residuals: UniverseResiduals | None = None,
    technical: TechnicalFeatures | None = None,
) -> FeatureBundle:
    """Always return a bundle when any price exists; raise ``NoPriceData`` when none does."""
    try:
        return build_feature_bundle(
            symbol=symbol,
            as_of=as_of,
            bars=bars,
            news=news,
            fundamentals=fundamentals,
            macro=macro,
            tz=tz,
            config=config,
            universe_residuals=universe_residuals,
            technical=technical,
        )
    except NoPriceData:
        raise
    except Exception as error:  # any feed or indicator failure degrades to the fallback, visibly
        return fallback_feature_bundle(
            symbol=symbol,
            as_of=as_of,
            bars=bars,
            news=news,
            reason=f"{type(error).__name__}: {error}",
            tz=tz,
            config=config,
        )
