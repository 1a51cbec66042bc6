"""The universe indicators against the ``ta`` library and against the written definitions."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import ta

from trading.market.domain.indicators import (
    ALL_SERIES,
    LEVEL_SERIES,
    PRICE_SERIES,
    ROWS_PER_CHUNK,
    compute_series,
    prepare_universe,
    universe_indicators,
)

TOLERANCE = 1e-9
START_PRICES = (120.0, 900.0, 4_800.0)

# Bars each indicator needs before its first value (ta's warm-up with fillna=False).
BARS_NEEDED = {
    "rsi_14": 14,
    "macd_line": 26,
    "macd_signal": 34,
    "macd_hist": 34,
    "sma_20": 20,
    "sma_50": 50,
    "sma_200": 200,
    "ema_20": 20,
    "atr_14": 14,
    "bb_upper": 20,
    "bb_middle": 20,
    "bb_lower": 20,
}


def random_walk_bars(n_bars: int, start_price: float, seed: int) -> dict[str, np.ndarray]:
    """Daily bars with calm and wild regimes, overnight gaps and the odd jump."""
    rng = np.random.default_rng(seed)
    regime_volatility = np.where((np.arange(n_bars) // 120) % 2 == 0, 0.008, 0.03)
    jumps = rng.normal(0.0, 0.06, n_bars) * (rng.random(n_bars) < 0.02)
    returns = rng.normal(0.0003, regime_volatility) + jumps
    close = start_price * np.exp(np.cumsum(returns))
    gaps = rng.normal(0.0, regime_volatility / 2) * (rng.random(n_bars) < 0.3)
    previous_close = np.concatenate([[start_price], close[:-1]])
    open_ = previous_close * np.exp(gaps)
    wick = np.abs(rng.normal(0.0, regime_volatility / 2, (2, n_bars)))
    high = np.maximum(open_, close) * np.exp(wick[0])
    low = np.minimum(open_, close) * np.exp(-wick[1])
    volume = rng.lognormal(13.0, 0.5, n_bars).round()
    return {"open": open_, "high": high, "low": low, "close": close, "volume": volume}


def stacked(rows: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {name: np.vstack([row[name] for row in rows]) for name in rows[0]}


def ta_indicators(high: np.ndarray, low: np.ndarray, close: np.ndarray) -> dict[str, np.ndarray]:
    high_series, low_series, close_series = pd.Series(high), pd.Series(low), pd.Series(close)
    macd = ta.trend.MACD(close_series, window_slow=26, window_fast=12, window_sign=9)
    bands = ta.volatility.BollingerBands(close_series, window=20, window_dev=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ta's ATR loop triggers pandas deprecation warnings
        atr = ta.volatility.AverageTrueRange(high_series, low_series, close_series, window=14)
        atr_values = atr.average_true_range()
    series = {
        "rsi_14": ta.momentum.RSIIndicator(close_series, window=14).rsi(),
        "macd_line": macd.macd(),
        "macd_signal": macd.macd_signal(),
        "macd_hist": macd.macd_diff(),
        "sma_20": ta.trend.SMAIndicator(close_series, window=20).sma_indicator(),
        "sma_50": ta.trend.SMAIndicator(close_series, window=50).sma_indicator(),
        "sma_200": ta.trend.SMAIndicator(close_series, window=200).sma_indicator(),
        "ema_20": ta.trend.EMAIndicator(close_series, window=20).ema_indicator(),
        "atr_14": atr_values,
        "bb_upper": bands.bollinger_hband(),
        "bb_middle": bands.bollinger_mavg(),
        "bb_lower": bands.bollinger_lband(),
    }
    return {name: values.to_numpy(dtype=np.float64) for name, values in series.items()}


def assert_matches_ta(ours: np.ndarray, reference: np.ndarray, bars_needed: int) -> None:
    """NaN exactly during warm-up, within TOLERANCE of ta after it."""
    warm = min(bars_needed - 1, len(ours))
    assert np.isnan(ours[:warm]).all()
    assert np.isfinite(ours[warm:]).all()
    np.testing.assert_allclose(ours[warm:], reference[warm:], rtol=0.0, atol=TOLERANCE)


@pytest.fixture(scope="module")
def universe() -> dict[str, np.ndarray]:
    return stacked([random_walk_bars(600, start, seed) for seed, start in enumerate(START_PRICES, start=11)])


@pytest.fixture(scope="module")
def universe_series(universe: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return universe_indicators(**universe)


@pytest.mark.parametrize("name", PRICE_SERIES)
def test_indicator_matches_ta_after_warm_up_and_is_nan_during_it(
    name: str, universe: dict[str, np.ndarray], universe_series: dict[str, np.ndarray]
) -> None:
    for row in range(len(START_PRICES)):
        reference = ta_indicators(universe["high"][row], universe["low"][row], universe["close"][row])
        assert_matches_ta(universe_series[name][row], reference[name], BARS_NEEDED[name])


def test_atr_is_nan_where_ta_shows_zero_for_lack_of_history(
    universe: dict[str, np.ndarray], universe_series: dict[str, np.ndarray]
) -> None:
    reference = ta_indicators(universe["high"][0], universe["low"][0], universe["close"][0])
    assert (reference["atr_14"][:13] == 0).all()
    assert np.isnan(universe_series["atr_14"][0, :13]).all()


def test_rsi_is_100_while_a_series_has_only_risen() -> None:
    bars = random_walk_bars(60, 100.0, seed=3)
    bars["close"] = 100.0 + np.arange(60.0)
    series = universe_indicators(**{name: values[np.newaxis, :] for name, values in bars.items()})
    assert (series["rsi_14"][0, 13:] == 100.0).all()


def test_rows_with_different_histories_each_equal_ta_on_their_own_bars() -> None:
    n_bars = 600
    rows = [random_walk_bars(n_bars, start, seed) for seed, start in enumerate((300.0, 2_500.0, 60.0, 4_000.0, 150.0))]
    # (first, last) valid bar of each row: full, listed late, listed very late, delisted
    # early, and listed late and delisted early.
    spans = [(0, n_bars - 1), (150, n_bars - 1), (560, n_bars - 1), (0, 470), (100, 399)]
    for row, (first, last) in zip(rows, spans, strict=True):
        for name in row:
            row[name][:first] = np.nan
            row[name][last + 1 :] = np.nan
    series = universe_indicators(**stacked(rows))

    for index, (row, (first, last)) in enumerate(zip(rows, spans, strict=True)):
        span = slice(first, last + 1)
        reference = ta_indicators(row["high"][span], row["low"][span], row["close"][span])
        for name in PRICE_SERIES:
            assert np.isnan(series[name][index, :first]).all(), name
            assert np.isnan(series[name][index, last + 1 :]).all(), name
            assert_matches_ta(series[name][index, span], reference[name], BARS_NEEDED[name])


def test_a_row_without_any_history_gives_only_nan() -> None:
    rows = [random_walk_bars(80, 100.0, seed=1), random_walk_bars(80, 100.0, seed=2)]
    for values in rows[1].values():
        values[:] = np.nan
    series = universe_indicators(**stacked(rows))
    for name in ALL_SERIES:
        assert np.isnan(series[name][1]).all(), name
    assert np.isfinite(series["rsi_14"][0, 13:]).all()


def test_a_gap_inside_a_rows_history_is_rejected() -> None:
    bars = stacked([random_walk_bars(100, 100.0, seed=1)])
    bars["close"][0, 50] = np.nan
    with pytest.raises(ValueError, match="close has a missing or non-finite value inside the history of row 0"):
        universe_indicators(**bars)


def test_a_missing_high_where_the_close_exists_is_rejected() -> None:
    bars = stacked([random_walk_bars(100, 100.0, seed=1)])
    bars["high"][0, 0] = np.nan
    with pytest.raises(ValueError, match="high has a missing"):
        universe_indicators(**bars)


def test_non_positive_prices_and_negative_volume_are_rejected() -> None:
    bars = stacked([random_walk_bars(100, 100.0, seed=1)])
    bars["low"][0, 10] = 0.0
    with pytest.raises(ValueError, match="low prices must be positive"):
        universe_indicators(**bars)
    bars = stacked([random_walk_bars(100, 100.0, seed=1)])
    bars["volume"][0, 10] = -1.0
    with pytest.raises(ValueError, match="volume must not be negative"):
        universe_indicators(**bars)


def test_arrays_of_the_wrong_shape_are_rejected() -> None:
    bars = random_walk_bars(100, 100.0, seed=1)
    with pytest.raises(ValueError, match="2-D arrays"):
        universe_indicators(**bars)
    uneven = stacked([bars])
    uneven["volume"] = uneven["volume"][:, :-1]
    with pytest.raises(ValueError, match="same shape"):
        universe_indicators(**uneven)


def test_unknown_series_names_are_rejected() -> None:
    bars = prepare_universe(**stacked([random_walk_bars(30, 100.0, seed=1)]))
    with pytest.raises(ValueError, match="unknown series"):
        compute_series(bars, ("rsi_14", "vwap"))


def test_a_subset_of_series_equals_the_same_series_from_the_full_set(
    universe: dict[str, np.ndarray], universe_series: dict[str, np.ndarray]
) -> None:
    subset = compute_series(prepare_universe(**universe), ("atr_14", "support"))
    assert set(subset) == {"atr_14", "support"}
    np.testing.assert_array_equal(subset["atr_14"], universe_series["atr_14"])
    np.testing.assert_array_equal(subset["support"], universe_series["support"])


def test_the_inputs_are_left_untouched() -> None:
    rows = stacked([random_walk_bars(100, 100.0, seed=5), random_walk_bars(100, 100.0, seed=6)])
    rows["close"][1, :40] = np.nan
    before = {name: values.copy() for name, values in rows.items()}
    universe_indicators(**rows)
    for name, values in rows.items():
        np.testing.assert_array_equal(values, before[name])


def test_a_universe_of_several_chunks_equals_its_rows_computed_one_by_one() -> None:
    rows = [random_walk_bars(260, 50.0 + 40 * seed, seed) for seed in range(2 * ROWS_PER_CHUNK + 5)]
    for seed, row in enumerate(rows):
        if seed % 4 == 1:  # every fourth symbol listed late
            for values in row.values():
                values[: 3 * seed] = np.nan
    together = universe_indicators(**stacked(rows))
    for index, row in enumerate(rows):
        alone = universe_indicators(**{name: values[np.newaxis, :] for name, values in row.items()})
        for name in ALL_SERIES:
            np.testing.assert_array_equal(together[name][index], alone[name][0], err_msg=name)


def test_session_series_follow_their_definitions(
    universe: dict[str, np.ndarray], universe_series: dict[str, np.ndarray]
) -> None:
    close = pd.Series(universe["close"][1])
    volume = pd.Series(universe["volume"][1])
    previous = close.shift(1)
    np.testing.assert_array_equal(universe_series["prev_close"][1], previous.to_numpy())
    gap = (universe["open"][1] - previous.to_numpy()) / previous.to_numpy() * 100
    np.testing.assert_allclose(universe_series["gap_pct"][1], gap, rtol=1e-12, equal_nan=True)
    ratio = (volume / volume.rolling(20).mean()).to_numpy()
    np.testing.assert_allclose(universe_series["volume_vs_avg"][1], ratio, rtol=1e-12, equal_nan=True)
    assert np.isnan(universe_series["volume_vs_avg"][1, :19]).all()


def levels_by_definition(high: np.ndarray, low: np.ndarray, close: np.ndarray) -> dict[str, np.ndarray]:
    """The level series read bar by bar, straight from the definitions in the docstrings."""
    n_bars = len(close)
    result = {name: np.full(n_bars, np.nan) for name in LEVEL_SERIES}

    def is_pivot_low(bar: int) -> bool:
        before, after = low[bar - 5 : bar], low[bar + 1 : bar + 6]
        return bool((low[bar] < before).all() and (low[bar] <= after).all())

    def is_pivot_high(bar: int) -> bool:
        before, after = high[bar - 5 : bar], high[bar + 1 : bar + 6]
        return bool((high[bar] > before).all() and (high[bar] >= after).all())

    for today in range(n_bars):
        if today >= 19:
            result["swing_high"][today] = high[today - 19 : today + 1].max()
            result["swing_low"][today] = low[today - 19 : today + 1].min()
        candidates = range(max(5, today - 119), today - 4)  # confirmed: 5 bars after exist
        below = [low[bar] for bar in candidates if is_pivot_low(bar) and low[bar] < close[today]]
        above = [high[bar] for bar in candidates if is_pivot_high(bar) and high[bar] > close[today]]
        support = max(below) if below else result["swing_low"][today]
        resistance = min(above) if above else result["swing_high"][today]
        result["support"][today] = support
        result["resistance"][today] = resistance
        result["support_distance_pct"][today] = (close[today] - support) / close[today] * 100
        result["resistance_distance_pct"][today] = (resistance - close[today]) / close[today] * 100
    return result


def tick_rounded(bars: dict[str, np.ndarray], tick: float) -> dict[str, np.ndarray]:
    """Prices on a tick grid, so equal highs and lows (ties between pivots) really occur."""
    rounded = {name: np.round(values / tick) * tick for name, values in bars.items()}
    rounded["high"] = np.maximum.reduce([rounded["high"], rounded["open"], rounded["close"]])
    rounded["low"] = np.minimum.reduce([rounded["low"], rounded["open"], rounded["close"]])
    return rounded


def test_levels_match_a_bar_by_bar_reading_of_their_definition() -> None:
    rows = [tick_rounded(random_walk_bars(400, start, seed), tick=0.5) for seed, start in ((7, 40.0), (8, 900.0))]
    rows.append(random_walk_bars(400, 2_000.0, seed=9))
    first_bars = (0, 0, 130)
    for row, first in zip(rows, first_bars, strict=True):
        for values in row.values():
            values[:first] = np.nan
    series = universe_indicators(**stacked(rows))

    for index, (row, first) in enumerate(zip(rows, first_bars, strict=True)):
        expected = levels_by_definition(row["high"][first:], row["low"][first:], row["close"][first:])
        for name in LEVEL_SERIES:
            assert np.isnan(series[name][index, :first]).all(), name
            np.testing.assert_array_equal(series[name][index, first:], expected[name], err_msg=name)


def test_ties_produce_one_pivot_per_run_of_equal_lows() -> None:
    # A flat floor of equal lows: only the first bar of the run counts as a pivot, and it
    # becomes support once confirmed.
    close = np.array([110, 109, 108, 107, 106, 105, 104, 101, 101, 101, 102, 103, 104, 105, 106, 107, 108], float)
    low = close - 1
    high = close + 1
    expected = levels_by_definition(high, low, close)
    series = universe_indicators(*(values[np.newaxis, :] for values in (close, high, low, close, np.ones_like(close))))
    assert expected["support"][-1] == 100.0
    np.testing.assert_array_equal(series["support"][0], expected["support"])


def test_every_series_at_a_bar_depends_only_on_bars_up_to_it() -> None:
    bars = stacked([random_walk_bars(500, start, seed) for seed, start in ((21, 80.0), (22, 3_000.0))])
    full = universe_indicators(**bars)
    rng = np.random.default_rng(0)
    for cut in (1, 15, 60, 210, 333):
        altered = {name: values.copy() for name, values in bars.items()}
        shock = np.exp(rng.normal(0.0, 0.2, altered["close"][:, cut:].shape))
        for name in ("open", "high", "low", "close"):
            altered[name][:, cut:] *= shock
        altered["volume"][:, cut:] *= 3
        prefix = universe_indicators(**{name: values[:, :cut] for name, values in bars.items()})
        after_change = universe_indicators(**altered)
        for name in ALL_SERIES:
            np.testing.assert_array_equal(after_change[name][:, :cut], full[name][:, :cut], err_msg=name)
            np.testing.assert_array_equal(prefix[name], full[name][:, :cut], err_msg=name)


def test_precision_holds_over_ten_years_of_bars_at_high_prices() -> None:
    # Long series near 5,000 are where running sums lose digits; compare with ta to 1e-9.
    bars = random_walk_bars(2_520, 4_900.0, seed=99)
    series = universe_indicators(**{name: values[np.newaxis, :] for name, values in bars.items()})
    reference = ta_indicators(bars["high"], bars["low"], bars["close"])
    for name in PRICE_SERIES:
        assert_matches_ta(series[name][0], reference[name], BARS_NEEDED[name])
    assert math.isfinite(series["support"][0, -1])
