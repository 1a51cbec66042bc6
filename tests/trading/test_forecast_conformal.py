"""The forecast band corrected by the split-conformal quantile of its own past misses: strictly as
of the run's date, only once enough residuals exist, from the universe when the instrument has too
few, stored beside the raw band and shown on the instrument page."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
from django.urls import reverse

from tests.factories import InstrumentFactory, bars_for, wandering
from trading.market import services
from trading.market.domain.forecast import (
    ConformalSettings,
    conformal_forecast,
    dated_forecast_residuals,
    forecast_residuals,
    price_forecast,
)
from trading.models import DailyBar
from vocabulary.conformal import conformal_quantile

HORIZON = 10
SETTINGS = ConformalSettings(quantile=0.90, buffer_size=200, min_samples=30)


def random_walk(count: int, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 100.0 * np.exp(np.cumsum(rng.normal(0.0005, 0.015, count)))


def test_a_residual_is_the_realised_move_less_the_forecast_made_back_then() -> None:
    closes = random_walk(80)
    residuals = forecast_residuals(closes, horizon_sessions=HORIZON, limit=500)

    newest = len(closes) - 1 - HORIZON
    made = price_forecast(closes[: newest + 1], horizon_sessions=HORIZON)
    assert made is not None
    realised = (closes[newest + HORIZON] / closes[newest] - 1) * 100
    assert residuals[-1] == pytest.approx(realised - made.expected_move_pct)
    assert len(residuals) == len(closes) - 30  # sessions 20 (the first forecast) to 69 (the last resolved)


def test_no_look_ahead_future_closes_change_no_past_residual() -> None:
    closes = random_walk(120)
    as_of = 90
    past = forecast_residuals(closes[: as_of + 1], horizon_sessions=HORIZON, limit=500)
    perturbed = closes.copy()
    perturbed[as_of + 1 :] *= 3.0

    assert forecast_residuals(perturbed[: as_of + 1], horizon_sessions=HORIZON, limit=500) == past
    # Every residual known by as_of was resolved by a close at or before it.
    dates = list(range(len(closes)))
    assert max(day for day, _ in dated_forecast_residuals(closes[: as_of + 1], dates[: as_of + 1])) == as_of


def test_the_buffer_keeps_the_most_recent_residuals() -> None:
    closes = random_walk(300)
    every = forecast_residuals(closes, horizon_sessions=HORIZON, limit=1000)

    assert forecast_residuals(closes, horizon_sessions=HORIZON, limit=50) == every[-50:]


@pytest.mark.parametrize(("bars", "corrected"), [(59, False), (60, True)])
def test_the_correction_starts_at_the_minimum_number_of_residuals(bars: int, corrected: bool) -> None:
    closes = random_walk(bars)
    forecast = price_forecast(closes, horizon_sessions=HORIZON)
    assert forecast is not None
    residuals = forecast_residuals(closes, horizon_sessions=HORIZON, limit=200)

    result = conformal_forecast(forecast, residuals, last_close=float(closes[-1]), settings=SETTINGS)

    assert result.conformal_samples == bars - 30  # 29 or 30
    assert result.corrected is corrected
    # The raw band is kept either way.
    assert (result.low_move_pct, result.high_move_pct) == (forecast.low_move_pct, forecast.high_move_pct)


def test_the_corrected_band_is_the_forecast_plus_minus_the_conformal_quantile() -> None:
    closes = random_walk(260)
    forecast = price_forecast(closes, horizon_sessions=HORIZON)
    assert forecast is not None
    residuals = forecast_residuals(closes, horizon_sessions=HORIZON, limit=200)

    result = conformal_forecast(forecast, residuals, last_close=float(closes[-1]), settings=SETTINGS)

    q = conformal_quantile(residuals, 0.1)
    assert result.conformal_half_width_pct == q
    assert result.conformal_low_move_pct == pytest.approx(forecast.expected_move_pct - q)
    assert result.conformal_high_move_pct == pytest.approx(forecast.expected_move_pct + q)
    assert result.conformal_high_price == pytest.approx(closes[-1] * (1 + (forecast.expected_move_pct + q) / 100))
    assert result.conformal_samples == 200 and result.conformal_scope == "instrument"


def test_misses_wider_than_the_z_band_widen_it_and_narrower_ones_narrow_it() -> None:
    closes = random_walk(260)
    forecast = price_forecast(closes, horizon_sessions=HORIZON)
    assert forecast is not None
    raw_half = (forecast.high_move_pct - forecast.low_move_pct) / 2
    wide = conformal_forecast(forecast, [3 * raw_half] * 40, last_close=float(closes[-1]), settings=SETTINGS)
    narrow = conformal_forecast(forecast, [raw_half / 3] * 40, last_close=float(closes[-1]), settings=SETTINGS)

    assert wide.conformal_half_width_pct == pytest.approx(3 * raw_half)
    assert narrow.conformal_half_width_pct == pytest.approx(raw_half / 3)


def test_the_low_end_never_goes_below_minus_one_hundred_percent() -> None:
    closes = random_walk(60)
    forecast = price_forecast(closes, horizon_sessions=HORIZON)
    assert forecast is not None

    result = conformal_forecast(forecast, [500.0] * 40, last_close=float(closes[-1]), settings=SETTINGS)

    assert result.conformal_low_move_pct == -100.0 and result.conformal_low_price == 0.0


def test_an_unbounded_quantile_corrects_nothing() -> None:
    closes = random_walk(60)
    forecast = price_forecast(closes, horizon_sessions=HORIZON)
    assert forecast is not None
    few = ConformalSettings(quantile=0.99, buffer_size=200, min_samples=5)  # rank ⌈11 · 0.99⌉ = 11 > 10

    result = conformal_forecast(forecast, [1.0] * 10, last_close=float(closes[-1]), settings=few)

    assert not result.corrected and result.conformal_samples == 10


# --- through the service, with stored bars ---------------------------------------------------------


@pytest.mark.django_db
def test_the_bundle_stores_the_raw_and_the_corrected_band_strictly_as_of_the_date() -> None:
    instrument = InstrumentFactory()
    bars = bars_for(instrument, wandering(100, 160, seed=3))
    as_of = bars[120].date
    before = services.feature_bundle_for(instrument=instrument, as_of=as_of).forecast
    assert before is not None and before.corrected
    assert before.conformal_scope == "instrument" and before.conformal_samples == 121 - 30

    DailyBar.objects.filter(instrument=instrument, date__gt=as_of).update(
        open=Decimal("5000"), high=Decimal("5000"), low=Decimal("5000"), close=Decimal("5000")
    )

    assert services.feature_bundle_for(instrument=instrument, as_of=as_of).forecast == before
    stored = services.feature_snapshot_store(instrument=instrument, as_of=as_of).bundle["forecast"]
    assert stored["conformal_low_move_pct"] == pytest.approx(before.conformal_low_move_pct)
    assert stored["low_move_pct"] == pytest.approx(before.low_move_pct)
    assert stored["conformal_samples"] == 91


@pytest.mark.django_db
def test_an_instrument_with_too_few_residuals_borrows_the_universes(settings) -> None:
    young = InstrumentFactory()
    old = InstrumentFactory()
    old_bars = bars_for(old, wandering(100, 200, seed=5))
    young_bars = bars_for(young, wandering(50, 45, seed=6), start=old_bars[150].date)
    as_of = young_bars[-1].date

    forecast = services.feature_bundle_for(instrument=young, as_of=as_of).forecast

    assert forecast is not None and forecast.corrected
    assert forecast.conformal_scope == "universe"
    # The old instrument's closes up to as_of are its sessions 0..194: 195 - 30 residuals resolved.
    assert forecast.conformal_samples == 150 + 45 - 30
    # The universe is read strictly as of the date too.
    DailyBar.objects.filter(instrument=old, date__gt=as_of).update(
        open=Decimal("1"), high=Decimal("1"), low=Decimal("1"), close=Decimal("1")
    )
    assert services.feature_bundle_for(instrument=young, as_of=as_of).forecast == forecast
    settings.RETROSPECTIVE = {**settings.RETROSPECTIVE, "RESIDUAL_MIN_SAMPLES": 15}
    own = services.feature_bundle_for(instrument=young, as_of=as_of).forecast
    assert own is not None and own.conformal_scope == "instrument" and own.conformal_samples == 15


@pytest.mark.django_db
def test_the_instrument_page_shows_the_corrected_band(client, viewer) -> None:
    instrument = InstrumentFactory()
    bars_for(instrument, wandering(100, 120, seed=2))
    client.force_login(viewer)

    body = client.get(reverse("instrument_detail", args=[instrument.symbol])).content.decode()

    assert "Band (conformal)" in body and 'data-band="raw"' in body
    assert "90 past misses (its own)" in body


@pytest.mark.parametrize("seed", range(6))
def test_the_vectorised_residuals_are_the_baseline_forecast_replayed_session_by_session(seed) -> None:
    """The residuals are computed for all sessions at once; each must be what ``price_forecast``
    says at that session from the closes up to it, with gaps and bad closes skipped alike."""
    from trading.market.domain.forecast import forecast_residuals, price_forecast

    rng = np.random.default_rng(seed)
    closes = np.cumprod(1 + rng.normal(0, 0.015, 160)) * 100
    closes[rng.integers(0, 160, 3)] = np.nan
    closes[rng.integers(0, 160)] = -1.0
    horizon, lookback = 5, 30

    expected = []
    for session in range(20, len(closes) - horizon):
        made = price_forecast(closes[: session + 1], horizon_sessions=horizon, lookback_sessions=lookback)
        outcome = closes[session + horizon]
        if made is not None and np.isfinite(outcome):
            expected.append((outcome / closes[session] - 1) * 100 - made.expected_move_pct)

    got = forecast_residuals(closes, horizon_sessions=horizon, lookback_sessions=lookback, limit=1000)
    assert got == pytest.approx(expected, abs=1e-9)
