from __future__ import annotations

import math

import numpy as np
import pytest

from trading.market.domain.forecast import MIN_RETURNS, price_forecast


def closes_from_log_returns(returns: list[float], first: float = 100.0) -> list[float]:
    return [first * math.exp(total) for total in np.concatenate(([0.0], np.cumsum(returns)))]


def test_it_projects_drift_and_a_volatility_band_over_the_horizon() -> None:
    # 30 returns alternating +1% and -0.5%: mean 0.25%, every deviation 0.75% either way
    closes = closes_from_log_returns([0.01, -0.005] * 15)
    forecast = price_forecast(closes, horizon_sessions=10, lookback_sessions=60, band_z=1.645)
    assert forecast is not None
    drift, volatility = 0.0025, 0.0075 * math.sqrt(30 / 29)  # sample standard deviation
    half_width = 1.645 * volatility * math.sqrt(10)
    assert forecast.lookback_sessions == 30
    assert forecast.drift_daily_pct == pytest.approx(drift * 100)
    assert forecast.volatility_daily_pct == pytest.approx(volatility * 100)
    assert forecast.expected_move_pct == pytest.approx((math.exp(0.025) - 1) * 100)
    assert forecast.low_move_pct == pytest.approx((math.exp(0.025 - half_width) - 1) * 100)
    assert forecast.high_move_pct == pytest.approx((math.exp(0.025 + half_width) - 1) * 100)
    assert forecast.expected_price == pytest.approx(closes[-1] * math.exp(0.025))
    assert forecast.low_price < closes[-1] < forecast.high_price
    assert forecast.method == "drift-volatility-baseline"


def test_it_uses_only_the_lookback_window() -> None:
    wild_past = closes_from_log_returns(list(np.random.default_rng(3).normal(0, 0.05, 200)))
    calm_recent = closes_from_log_returns([0.002] * 60, first=wild_past[-1])[1:]
    forecast = price_forecast(wild_past + calm_recent, lookback_sessions=60)
    assert forecast is not None
    assert forecast.drift_daily_pct == pytest.approx(0.2)
    assert forecast.volatility_daily_pct == pytest.approx(0.0, abs=1e-9)
    assert forecast.low_move_pct == pytest.approx(forecast.high_move_pct)


def test_a_flat_series_forecasts_no_move() -> None:
    forecast = price_forecast(np.full(40, 250.0))
    assert forecast is not None
    assert (forecast.expected_move_pct, forecast.low_move_pct, forecast.high_move_pct) == (0.0, 0.0, 0.0)
    assert forecast.expected_price == 250.0


def test_it_says_nothing_with_fewer_than_twenty_returns() -> None:
    assert MIN_RETURNS == 20
    assert price_forecast(closes_from_log_returns([0.001] * 19)) is None
    assert price_forecast(closes_from_log_returns([0.001] * 20)) is not None
    assert price_forecast([]) is None


def test_it_says_nothing_when_a_close_in_the_window_is_missing_or_not_positive() -> None:
    closes = closes_from_log_returns([0.001] * 30)
    assert price_forecast([*closes[:-5], 0.0, *closes[-4:]]) is None
    assert price_forecast([*closes[:-5], math.nan, *closes[-4:]]) is None


def test_it_is_a_pure_function_of_its_inputs() -> None:
    closes = closes_from_log_returns(list(np.random.default_rng(1).normal(0.001, 0.01, 100)))
    assert price_forecast(closes) == price_forecast(np.asarray(closes))


def test_it_refuses_a_horizon_below_one_session() -> None:
    with pytest.raises(ValueError, match="horizon_sessions"):
        price_forecast([100.0] * 30, horizon_sessions=0)
