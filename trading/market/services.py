"""Writes and computations on market data. Views, commands and tasks call these; they hold no logic."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import transaction

from trading.market import selectors
from trading.market.domain.features import BundleSettings, ensure_feature_bundle
from trading.models import FeatureSnapshot, Instrument
from vocabulary.features import FeatureBundle, bundle_digest


def bundle_settings() -> BundleSettings:
    # settings.DESK mixes ints and floats, so the checker sees every value as a float; the counts
    # are ints (config/env.py's env_int), and int() says so without changing them.
    desk = settings.DESK
    return BundleSettings(
        news_lookback_days=int(desk["NEWS_LOOKBACK_DAYS"]),
        news_half_life_days=desk["NEWS_HALF_LIFE_DAYS"],
        forecast_horizon_sessions=int(desk["FORECAST_HORIZON_SESSIONS"]),
    )


def feature_bundle_for(*, instrument: Instrument, as_of: dt.date) -> FeatureBundle:
    """Stage 1 for one instrument: every input is read strictly as of ``as_of``.

    Raises ``NoPriceData`` when the instrument has no bar on or before that date."""
    config = bundle_settings()
    return ensure_feature_bundle(
        symbol=instrument.symbol,
        as_of=as_of,
        bars=selectors.bars_frame(instrument, as_of=as_of, limit=int(settings.DESK["FEATURE_LOOKBACK_BARS"])),
        news=selectors.news_inputs(instrument, as_of=as_of, lookback_days=config.news_lookback_days),
        fundamentals=selectors.fundamentals_input(instrument, as_of=as_of),
        macro=selectors.macro_readings(as_of=as_of, limit=int(settings.DESK["MACRO_LIMIT"])),
        tz=selectors.desk_tz(),
        config=config,
    )


def feature_snapshot_keep(*, instrument: Instrument, as_of: dt.date, bundle: FeatureBundle) -> FeatureSnapshot:
    """The row holding exactly ``bundle`` for the instrument's day: found by its digest, or written."""
    stored = bundle.model_dump(mode="json")
    snapshot, _ = FeatureSnapshot.objects.get_or_create(
        instrument=instrument,
        as_of=as_of,
        digest=bundle_digest(stored),
        defaults={"bundle": stored, "fallback": bundle.fallback},
    )
    return snapshot


@transaction.atomic
def feature_snapshot_store(*, instrument: Instrument, as_of: dt.date) -> FeatureSnapshot:
    """Compute the day's bundle and keep it (an unchanged recomputation reuses its row)."""
    bundle = feature_bundle_for(instrument=instrument, as_of=as_of)
    return feature_snapshot_keep(instrument=instrument, as_of=as_of, bundle=bundle)
