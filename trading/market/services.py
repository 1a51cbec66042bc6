"""Writes and computations on market data. Views, commands and tasks call these; they hold no logic."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import transaction

from trading.market import selectors
from trading.market.domain.features import BundleSettings, ensure_feature_bundle
from trading.models import FeatureSnapshot, Instrument
from vocabulary.features import FeatureBundle


def bundle_settings() -> BundleSettings:
    desk = settings.DESK
    return BundleSettings(
        news_lookback_days=desk["NEWS_LOOKBACK_DAYS"],
        news_half_life_days=desk["NEWS_HALF_LIFE_DAYS"],
        forecast_horizon_sessions=desk["FORECAST_HORIZON_SESSIONS"],
    )


def feature_bundle_for(*, instrument: Instrument, as_of: dt.date) -> FeatureBundle:
    """Stage 1 for one instrument: every input is read strictly as of ``as_of``.

    Raises ``NoPriceData`` when the instrument has no bar on or before that date."""
    config = bundle_settings()
    return ensure_feature_bundle(
        symbol=instrument.symbol,
        as_of=as_of,
        bars=selectors.bars_frame(instrument, as_of=as_of, limit=settings.DESK["FEATURE_LOOKBACK_BARS"]),
        news=selectors.news_inputs(instrument, as_of=as_of, lookback_days=config.news_lookback_days),
        fundamentals=selectors.fundamentals_input(instrument, as_of=as_of),
        macro=selectors.macro_readings(as_of=as_of, limit=settings.DESK["MACRO_LIMIT"]),
        tz=selectors.desk_tz(),
        config=config,
    )


@transaction.atomic
def feature_snapshot_store(*, instrument: Instrument, as_of: dt.date) -> FeatureSnapshot:
    """Compute the bundle and keep it, replacing an earlier computation for the same day."""
    bundle = feature_bundle_for(instrument=instrument, as_of=as_of)
    snapshot, _ = FeatureSnapshot.objects.update_or_create(
        instrument=instrument,
        as_of=as_of,
        defaults={"bundle": bundle.model_dump(mode="json"), "fallback": bundle.fallback},
    )
    return snapshot
