"""Writes and computations on market data. Views, commands and tasks call these; they hold no logic."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import transaction

from trading.market import selectors
from trading.market.domain.features import BundleSettings, ensure_feature_bundle
from trading.market.domain.forecast import ConformalSettings, dated_forecast_residuals
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
        conformal=conformal_settings(),
    )


def conformal_settings() -> ConformalSettings:
    """The forecast band's split-conformal correction, as ``RETROSPECTIVE`` configures it."""
    retro = settings.RETROSPECTIVE
    return ConformalSettings(
        quantile=float(str(retro["CONFORMAL_QUANTILE"])),
        buffer_size=int(str(retro["RESIDUAL_BUFFER_SIZE"])),
        min_samples=int(str(retro["RESIDUAL_MIN_SAMPLES"])),
    )


def universe_residuals(
    *, instrument: Instrument, as_of: dt.date, config: BundleSettings, source: Any = None
) -> list[float]:
    """The most recent past forecast residuals of every other active instrument, pooled by the
    date each became known, strictly as of ``as_of`` (each instrument's bars are cut there), at
    most the buffer's size. Read only when ``instrument`` has too few residuals of its own."""
    conformal = config.conformal
    if conformal is None:
        return []
    source = source or selectors
    limit = int(settings.DESK["FEATURE_LOOKBACK_BARS"])
    pooled: list[tuple[dt.date, str, float]] = []
    if source is selectors:
        others = list(Instrument.objects.filter(is_active=True).exclude(pk=instrument.pk).order_by("symbol"))
    else:
        others = source.active_others(instrument)
    for other in others:
        frame = source.bars_frame(other, as_of=as_of, limit=limit)
        if frame.empty or "close" not in frame:
            continue
        dates = [day.date() if hasattr(day, "date") else day for day in frame.index]
        points = dated_forecast_residuals(
            frame["close"].to_numpy(dtype=float),
            dates,
            horizon_sessions=config.forecast_horizon_sessions,
            limit=conformal.buffer_size,
        )
        pooled.extend((day, other.symbol, residual) for day, residual in points if day <= as_of)
    pooled.sort(key=lambda point: (point[0], point[1]))
    return [residual for _, _, residual in pooled[-conformal.buffer_size :]]


def feature_bundle_for(*, instrument: Instrument, as_of: dt.date, source: Any = None) -> FeatureBundle:
    """Stage 1 for one instrument: every input is read strictly as of ``as_of``.

    ``source`` answers the selectors' questions (``bars_frame``, ``news_inputs``,
    ``fundamentals_input``, ``macro_readings``, ``desk_tz``) with their signatures and answers: by
    default the selectors themselves; a replay passes its ``ReplayCache``, which read the window's
    data once. Raises ``NoPriceData`` when the instrument has no bar on or before that date."""
    source = source or selectors
    config = bundle_settings()
    limit = int(settings.DESK["FEATURE_LOOKBACK_BARS"])
    # A replay's cache computes the technical features of its whole window in one pass.
    computed = getattr(source, "technical_features", None)
    return ensure_feature_bundle(
        symbol=instrument.symbol,
        as_of=as_of,
        technical=computed(instrument, as_of=as_of, limit=limit) if computed is not None else None,
        bars=source.bars_frame(instrument, as_of=as_of, limit=limit),
        news=source.news_inputs(instrument, as_of=as_of, lookback_days=config.news_lookback_days),
        fundamentals=source.fundamentals_input(instrument, as_of=as_of),
        macro=source.macro_readings(as_of=as_of, limit=int(settings.DESK["MACRO_LIMIT"])),
        tz=source.desk_tz(),
        config=config,
        universe_residuals=lambda: universe_residuals(instrument=instrument, as_of=as_of, config=config, source=source),
    )


DayRows = dict[tuple[int, str], FeatureSnapshot]


def feature_snapshots_on(as_of: dt.date, instruments: Iterable[Instrument]) -> DayRows:
    """The stored bundles of the instruments' day, by instrument id and digest, in one read."""
    rows = FeatureSnapshot.objects.filter(as_of=as_of, instrument__in=list(instruments))
    return {(row.instrument_id, row.digest): row for row in rows}


def feature_snapshot_keep(
    *, instrument: Instrument, as_of: dt.date, bundle: FeatureBundle, day_rows: DayRows | None = None
) -> FeatureSnapshot:
    """The row holding exactly ``bundle`` for the instrument's day: found by its digest, or written.

    ``day_rows``: the day's rows as ``feature_snapshots_on`` read them, inside a transaction in
    which nobody else adds them (a replay day's): looked up there, and a new row is inserted
    without the savepoint that guards against a concurrent insert, and added to them."""
    stored = bundle.model_dump(mode="json")
    digest = bundle_digest(stored)
    if day_rows is not None:
        if (found := day_rows.get((instrument.pk, digest))) is None:
            found = FeatureSnapshot.objects.create(
                instrument=instrument, as_of=as_of, digest=digest, bundle=stored, fallback=bundle.fallback
            )
            day_rows[(instrument.pk, digest)] = found
        return found
    snapshot, _ = FeatureSnapshot.objects.get_or_create(
        instrument=instrument,
        as_of=as_of,
        digest=digest,
        defaults={"bundle": stored, "fallback": bundle.fallback},
    )
    return snapshot


@transaction.atomic
def feature_snapshot_store(*, instrument: Instrument, as_of: dt.date) -> FeatureSnapshot:
    """Compute the day's bundle and keep it (an unchanged recomputation reuses its row)."""
    bundle = feature_bundle_for(instrument=instrument, as_of=as_of)
    return feature_snapshot_keep(instrument=instrument, as_of=as_of, bundle=bundle)
