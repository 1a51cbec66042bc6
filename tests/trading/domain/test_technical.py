"""technical_features: the last bar's figures, input validation and the absence of look-ahead."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
import ta

from trading.market.domain.indicators import universe_indicators
from trading.market.domain.technical import BAR_COLUMNS, technical_features, technical_features_each

# A hand-built month: a slide to a clear low on bar 8, a rally to a clear high on bar 15, then a
# drift lower. Last bar: opens at 106 above the previous close of 104, closes at 105.
HAND_CLOSES = [
    110, 109, 108, 107, 106, 105, 104, 103,  # bars 0-7: sliding
    100,  # bar 8: the low (low 99)
    102, 104, 106, 108, 110, 112,  # bars 9-14: rallying
    120,  # bar 15: the high (high 121)
    118, 116, 114, 112, 111, 110, 109, 108, 107, 106, 105, 105, 104,  # bars 16-28
    105,  # bar 29: the last bar
]  # fmt: skip


def hand_frame() -> pd.DataFrame:
    close = np.array(HAND_CLOSES, dtype=float)
    open_ = np.concatenate([[close[0]], close[:-1]])  # no gaps ...
    open_[-1] = 106.0  # ... except on the last bar
    volume = np.full(len(close), 1_000.0)
    volume[-1] = 3_000.0
    dates = [dt.date(2024, 1, 1) + dt.timedelta(days=day) for day in range(len(close))]
    return pd.DataFrame(
        {
            "open": open_,
            "high": np.maximum(open_, close) + 1.0,
            "low": np.minimum(open_, close) - 1.0,
            "close": close,
            "volume": volume,
        },
        index=pd.Index(dates, name="date"),
    )


def random_walk_frame(n_bars: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    volatility = np.where((np.arange(n_bars) // 100) % 2 == 0, 0.01, 0.025)
    close = 250.0 * np.exp(np.cumsum(rng.normal(0.0, volatility)))
    open_ = np.concatenate([[250.0], close[:-1]]) * np.exp(rng.normal(0.0, volatility / 3))
    wick = np.abs(rng.normal(0.0, volatility / 2, (2, n_bars)))
    return pd.DataFrame(
        {
            "open": open_,
            "high": np.maximum(open_, close) * np.exp(wick[0]),
            "low": np.minimum(open_, close) * np.exp(-wick[1]),
            "close": close,
            "volume": rng.lognormal(12.0, 0.4, n_bars).round(),
        },
        index=pd.bdate_range("2015-01-02", periods=n_bars),
    )


def test_session_figures_of_the_last_bar() -> None:
    features = technical_features(hand_frame())
    assert features.as_of == dt.date(2024, 1, 30)
    assert features.bars_used == 30
    assert features.last_close == 105.0
    assert features.prev_close == 104.0
    assert features.last_volume == 3_000.0
    assert features.gap_pct == pytest.approx((106 - 104) / 104 * 100)
    # 19 bars of 1,000 and today's 3,000: a mean of 1,100.
    assert features.volume_vs_avg == pytest.approx(3_000 / 1_100)


def test_swing_levels_span_the_last_20_bars() -> None:
    features = technical_features(hand_frame())
    # Bars 10-29: the highest high is the peak's 121; the lowest low is bar 10's 101 (it
    # opened at bar 9's close of 102; lows sit 1 below the lower of open and close).
    assert features.swing_high == 121.0
    assert features.swing_low == 101.0


def test_support_and_resistance_are_the_confirmed_pivots_around_the_close() -> None:
    features = technical_features(hand_frame())
    assert features.support == 99.0  # the bar-8 low, below the close of 105
    assert features.resistance == 121.0  # the bar-15 high, above it
    assert features.support_distance_pct == pytest.approx((105 - 99) / 105 * 100)
    assert features.resistance_distance_pct == pytest.approx((121 - 105) / 105 * 100)


def test_a_pivot_is_not_support_until_five_bars_have_followed_it() -> None:
    frame = hand_frame()
    # Bar 8 is a pivot low from bar 13 on; on bar 12 nothing qualifies and there are not yet
    # 20 bars for the swing low to stand in.
    assert technical_features(frame.iloc[:13]).support is None
    assert technical_features(frame.iloc[:14]).support == 99.0


def test_support_falls_back_to_the_swing_low_without_a_pivot_below() -> None:
    rising = 100.0 + np.arange(40.0)
    frame = pd.DataFrame(
        {"open": rising, "high": rising + 1, "low": rising - 1, "close": rising, "volume": 1.0},
        index=pd.bdate_range("2024-01-01", periods=40),
    )
    features = technical_features(frame)
    assert features.support == features.swing_low == rising[-20] - 1
    assert features.resistance == features.swing_high == rising[-1] + 1


def test_indicators_equal_ta_on_the_last_bar() -> None:
    frame = random_walk_frame(260, seed=4)
    features = technical_features(frame)
    close, high, low = frame["close"], frame["high"], frame["low"]
    macd = ta.trend.MACD(close)
    bands = ta.volatility.BollingerBands(close, window=20, window_dev=2)
    expected = {
        "rsi_14": ta.momentum.RSIIndicator(close).rsi(),
        "macd_line": macd.macd(),
        "macd_signal": macd.macd_signal(),
        "macd_hist": macd.macd_diff(),
        "sma_20": ta.trend.SMAIndicator(close, 20).sma_indicator(),
        "sma_50": ta.trend.SMAIndicator(close, 50).sma_indicator(),
        "sma_200": ta.trend.SMAIndicator(close, 200).sma_indicator(),
        "ema_20": ta.trend.EMAIndicator(close, 20).ema_indicator(),
        "atr_14": ta.volatility.AverageTrueRange(high, low, close, 14).average_true_range(),
        "bb_upper": bands.bollinger_hband(),
        "bb_middle": bands.bollinger_mavg(),
        "bb_lower": bands.bollinger_lband(),
    }
    for name, series in expected.items():
        assert getattr(features, name) == pytest.approx(series.iloc[-1], abs=1e-9), name


def test_indicators_without_enough_history_are_none() -> None:
    features = technical_features(hand_frame())  # 30 bars
    assert features.rsi_14 is not None
    assert features.macd_line is not None
    assert features.macd_signal is None  # needs 34 bars
    assert features.macd_hist is None
    assert features.sma_20 == pytest.approx(sum(HAND_CLOSES[-20:]) / 20)
    assert features.sma_50 is None
    assert features.sma_200 is None


def test_a_single_bar_gives_only_the_bar_itself() -> None:
    features = technical_features(hand_frame().iloc[:1])
    assert features.bars_used == 1
    assert features.last_close == 110.0
    assert features.prev_close is None
    assert features.gap_pct is None
    assert features.rsi_14 is None
    assert features.support is None


def test_no_field_is_ever_nan() -> None:
    frame = random_walk_frame(240, seed=8)
    for bars in (1, 2, 13, 14, 20, 26, 34, 50, 200, 240):
        values = technical_features(frame.iloc[:bars]).model_dump().values()
        assert not any(isinstance(value, float) and math.isnan(value) for value in values)


def test_a_timestamp_index_gives_a_date() -> None:
    frame = random_walk_frame(30, seed=1)
    features = technical_features(frame)
    assert type(features.as_of) is dt.date
    assert features.as_of == frame.index[-1].date()


def test_features_of_a_prefix_ignore_everything_after_it() -> None:
    frame = random_walk_frame(400, seed=5)
    rng = np.random.default_rng(1)
    for cut in (30, 150, 260, 399):
        altered = frame.copy()
        shock = np.exp(rng.normal(0.0, 0.3, len(frame) - cut))
        for column in ("open", "high", "low", "close"):
            altered.iloc[cut:, altered.columns.get_loc(column)] *= shock
        altered.iloc[cut:, altered.columns.get_loc("volume")] *= 5
        assert technical_features(altered.iloc[:cut]) == technical_features(frame.iloc[:cut])


def test_features_of_a_prefix_equal_the_full_series_on_that_bar() -> None:
    frame = random_walk_frame(400, seed=6)
    series = universe_indicators(*(frame[name].to_numpy()[np.newaxis, :] for name in BAR_COLUMNS))
    for cut in (1, 14, 34, 120, 250, 400):
        features = technical_features(frame.iloc[:cut]).model_dump()
        for name, values in series.items():
            expected = values[0, cut - 1]
            if math.isnan(expected):
                assert features[name] is None, (cut, name)
            else:
                assert features[name] == expected, (cut, name)


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (lambda frame: frame.iloc[:0], "empty"),
        (lambda frame: frame.drop(columns=["volume", "low"]), "missing columns: low, volume"),
        (lambda frame: frame.iloc[::-1], "sorted by date"),
        (lambda frame: pd.concat([frame.iloc[:5], frame.iloc[4:]]), "duplicate dates"),
        (lambda frame: frame.reset_index(drop=True), "must hold dates"),
    ],
    ids=["empty", "missing-columns", "unsorted", "duplicate-dates", "not-dates"],
)
def test_a_malformed_frame_is_rejected(broken: Callable[[pd.DataFrame], pd.DataFrame], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        technical_features(broken(hand_frame()))


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("close", np.nan, "close has a missing or non-finite value"),
        ("high", np.inf, "high has a missing or non-finite value"),
        ("open", 0.0, "open prices must be positive"),
        ("low", -1.0, "low prices must be positive"),
        ("volume", -5.0, "volume must not be negative"),
        ("volume", np.nan, "volume has a missing or non-finite value"),
    ],
)
def test_bad_values_are_rejected(column: str, value: float, message: str) -> None:
    frame = hand_frame()
    frame.iloc[7, frame.columns.get_loc(column)] = value
    with pytest.raises(ValueError, match=message):
        technical_features(frame)


def test_non_numeric_values_are_rejected() -> None:
    frame = hand_frame().astype({"close": object})
    frame.iloc[3, frame.columns.get_loc("close")] = "n/a"
    with pytest.raises(ValueError, match="close must be numeric"):
        technical_features(frame)


def test_many_frames_in_one_pass_give_each_frame_its_own_features_exactly() -> None:
    # A replay's window: every day's frame of the same lookback (one length), frames of the
    # early days (shorter), one frame cut through a gap in the history, and one that is refused.
    history = random_walk_frame(500, seed=3)
    frames = [history.iloc[max(0, stop - 300) : stop] for stop in range(60, 501, 7)]
    broken = history.iloc[:80].copy()
    broken.iloc[40, broken.columns.get_loc("close")] = math.nan
    frames += [history.iloc[:1], broken]

    each = technical_features_each(frames)

    assert each[-1] is None  # technical_features refuses it: the caller computes (and degrades) alone
    assert len({len(frame) for frame in frames[:-1]}) > 2
    for frame, features in zip(frames[:-1], each[:-1], strict=True):
        assert features is not None
        assert features.model_dump() == technical_features(frame).model_dump()  # equal, not close
