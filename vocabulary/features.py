"""The feature bundle: the only numbers the agents are allowed to cite.

Every model here is a plain pydantic model, built by pure functions from stored data as of a
date. Nothing in this package imports Django.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

EventClass = Literal["earnings", "guidance", "rating", "regulatory", "macro", "other"]
EVENT_CLASSES: tuple[str, ...] = ("earnings", "guidance", "rating", "regulatory", "macro", "other")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TechnicalFeatures(_Frozen):
    """Indicator values on the as-of bar. ``None`` means not enough history yet."""

    as_of: dt.date
    bars_used: int
    last_close: float
    prev_close: float | None
    last_volume: float
    rsi_14: float | None
    macd_line: float | None
    macd_signal: float | None
    macd_hist: float | None
    sma_20: float | None
    sma_50: float | None
    sma_200: float | None
    ema_20: float | None
    atr_14: float | None
    bb_upper: float | None
    bb_middle: float | None
    bb_lower: float | None
    swing_high: float | None
    swing_low: float | None
    support: float | None
    resistance: float | None
    support_distance_pct: float | None = Field(
        description="(last_close - support) / last_close * 100; positive when support is below."
    )
    resistance_distance_pct: float | None = Field(
        description="(resistance - last_close) / last_close * 100; positive when resistance is above."
    )
    gap_pct: float | None = Field(description="(open - previous close) / previous close * 100")
    volume_vs_avg: float | None = Field(description="last volume / 20-bar average volume")


class NewsInput(_Frozen):
    """A stored headline as handed to the pure news features (scope: instrument or market)."""

    headline: str
    source: str
    published_at: dt.datetime
    scope: Literal["instrument", "market"] = "instrument"


class NewsItemFeature(_Frozen):
    headline: str
    source: str
    published_at: dt.datetime
    scope: Literal["instrument", "market"]
    event_class: EventClass
    sentiment: float = Field(ge=-1.0, le=1.0)
    recency_weight: float = Field(ge=0.0, le=1.0)
    duplicates: int = Field(ge=0, description="how many near-identical items were folded into this one")


class NewsFeatures(_Frozen):
    lookback_days: int
    half_life_days: float
    raw_count: int
    unique_count: int
    net_sentiment: float = Field(ge=-1.0, le=1.0, description="recency-weighted mean sentiment")
    by_class: dict[str, int]
    items: list[NewsItemFeature]
    # Defaulted so bundles stored before the injection detector existed still validate.
    flagged_headlines: list[str] = Field(
        default_factory=list,
        description="headlines in the window that carry instructions for a model; kept out of every score",
    )


class SentimentFeatures(_Frozen):
    news_sentiment: float | None
    news_items: int
    positioning_feed_wired: bool = False
    source: Literal["news", "none"]


class FundamentalFeatures(_Frozen):
    available: bool
    as_of: dt.date | None = None
    source: str | None = None
    pe: float | None = None
    pb: float | None = None
    ev_ebitda: float | None = None
    revenue_growth_pct: float | None = None
    net_margin_pct: float | None = None


class FundamentalsInput(_Frozen):
    as_of: dt.date
    source: str
    pe: float | None = None
    pb: float | None = None
    ev_ebitda: float | None = None
    revenue_growth_pct: float | None = None
    net_margin_pct: float | None = None


class PriceForecast(_Frozen):
    """A drift-plus-volatility baseline. Evidence only: never read by risk, sizing or execution."""

    method: Literal["drift-volatility-baseline"] = "drift-volatility-baseline"
    horizon_sessions: int
    lookback_sessions: int
    drift_daily_pct: float
    volatility_daily_pct: float
    expected_move_pct: float
    low_move_pct: float
    high_move_pct: float
    expected_price: float
    low_price: float
    high_price: float
    band_z: float
    # The split-conformal correction (``vocabulary.conformal``): the band the forecast's own past
    # misses call for, ``expected_move_pct ± q`` with q the CONFORMAL_QUANTILE of the absolute
    # residuals of past forecasts whose horizon had passed by the as-of date. Set once
    # ``conformal_samples`` reaches RESIDUAL_MIN_SAMPLES; the low/high fields above stay the
    # baseline's own (raw) band either way.
    conformal_samples: int = Field(default=0, description="past residuals the correction could use")
    conformal_scope: Literal["instrument", "universe"] | None = None
    conformal_half_width_pct: float | None = None
    conformal_low_move_pct: float | None = None
    conformal_high_move_pct: float | None = None
    conformal_low_price: float | None = None
    conformal_high_price: float | None = None

    @property
    def corrected(self) -> bool:
        """True when the conformal band replaces the raw one."""
        return self.conformal_low_move_pct is not None and self.conformal_high_move_pct is not None


class MacroReading(_Frozen):
    code: str
    name: str
    date: dt.date
    value: float
    unit: str
    change: float | None = Field(default=None, description="value minus the previous reading")


class FeatureBundle(_Frozen):
    symbol: str
    as_of: dt.date
    technical: TechnicalFeatures
    news: NewsFeatures
    sentiment: SentimentFeatures
    fundamentals: FundamentalFeatures
    forecast: PriceForecast | None
    macro: list[MacroReading] = Field(default_factory=list)
    fallback: bool = Field(
        default=False,
        description="True when the full path failed and the bundle was rebuilt from recent closes",
    )
    warnings: list[str] = Field(default_factory=list)


def bundle_digest(stored: Mapping[str, Any]) -> str:
    """SHA-256 of a stored bundle's canonical JSON (keys sorted, no spaces): equal bundles, equal digests."""
    canonical = json.dumps(stored, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
