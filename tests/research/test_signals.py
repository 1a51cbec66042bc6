"""Signal strategies: parameters checked, at most five, the desk's own indicators, no look-ahead.

Pure: no database. Bars are a seeded random walk built here.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import ClassVar

import numpy as np
import pytest

from research.signals import MAX_PARAMS, SIGNALS, Bars, ParamRange, SignalStrategy, SmaCrossover
from trading.market.domain.indicators import universe_indicators


def random_bars(n: int = 400, seed: int = 5, symbol: str = "TEST") -> Bars:
    rng = np.random.default_rng(seed)
    close = 500.0 * np.exp(np.cumsum(rng.normal(0.0002, 0.02, n)))
    open_ = np.concatenate(([close[0]], close[:-1])) * (1.0 + rng.normal(0.0, 0.004, n))
    high = np.maximum(open_, close) * (1.0 + np.abs(rng.normal(0.0, 0.005, n)))
    low = np.minimum(open_, close) * (1.0 - np.abs(rng.normal(0.0, 0.005, n)))
    dates = np.datetime64("2022-01-03") + np.arange(n)
    return Bars(symbol, dates, open_, high, low, close, rng.integers(1_000, 100_000, n).astype(float))


def perturbed_after(bars: Bars, cut: int, seed: int) -> Bars:
    """The same bars up to ``cut`` (inclusive), a different future after it."""
    rng = np.random.default_rng(seed)
    arrays = {}
    future = slice(cut + 1, None)
    scale = np.exp(rng.normal(0.0, 0.2, len(bars) - cut - 1))
    for name in ("open", "high", "low", "close", "volume"):
        values = getattr(bars, name).copy()
        values[future] = values[future] * scale
        arrays[name] = values
    return Bars(bars.symbol, bars.dates, **arrays, tick=bars.tick, lot_size=bars.lot_size)


def test_the_five_builtins_are_registered_by_key():
    assert set(SIGNALS) == {
        "sma_crossover",
        "rsi_reversion",
        "donchian_breakout",
        "bollinger_reversion",
        "macd_momentum",
    }
    for key, strategy in SIGNALS.items():
        assert strategy.key == key
        assert 1 <= len(strategy.PARAM_RANGES) <= MAX_PARAMS
        assert strategy.__doc__ and strategy.__doc__.strip()
        assert all(isinstance(bounds, ParamRange) for bounds in strategy.PARAM_RANGES.values())
        strategy()  # every default set is valid


@pytest.mark.parametrize("key", sorted(SIGNALS))
def test_no_look_ahead_future_bars_never_move_past_positions(key):
    bars = random_bars()
    strategy = SIGNALS[key]()
    positions = strategy.positions(bars)
    assert positions.dtype == np.int8
    assert positions.shape == (len(bars),)
    assert set(np.unique(positions)) <= {-1, 0, 1}
    assert (positions != 0).any(), "the test bars should make every rule trade"
    for cut in (60, 150, 260, 398):
        changed = strategy.positions(perturbed_after(bars, cut, seed=cut))
        assert np.array_equal(changed[: cut + 1], positions[: cut + 1]), f"{key} looked past bar {cut}"


@pytest.mark.parametrize("key", sorted(SIGNALS))
def test_positions_grid_equals_one_strategy_at_a_time(key):
    strategy = SIGNALS[key]
    bars = random_bars(seed=9)
    names = list(strategy.PARAM_RANGES)
    defaults = strategy().params
    grid = [defaults]
    # vary the first parameter across its range where the rules between parameters allow
    for value in strategy.PARAM_RANGES[names[0]].values()[:6]:
        try:
            grid.append(strategy(**{**defaults, names[0]: value}).params)
        except ValueError:
            continue
    matrix = strategy.positions_grid(bars, grid)
    assert matrix.shape == (len(grid), len(bars))
    for row, params in zip(matrix, grid, strict=True):
        assert np.array_equal(row, strategy(**params).positions(bars))


def test_sma_grid_is_vectorised_and_validates_every_config():
    bars = random_bars()
    grid = [{"fast": fast, "slow": slow} for fast in (5, 10, 20) for slow in (30, 60)]
    matrix = SmaCrossover.positions_grid(bars, grid)
    for row, params in zip(matrix, grid, strict=True):
        means = {w: np.convolve(bars.close, np.ones(w) / w, mode="full")[: len(bars)] for w in params.values()}
        spread = means[params["fast"]] - means[params["slow"]]
        expected = np.sign(spread).astype(np.int8)
        expected[: params["slow"] - 1] = 0
        assert np.array_equal(row, expected)
    with pytest.raises(ValueError, match="shorter than slow"):
        SmaCrossover.positions_grid(bars, [{"fast": 10, "slow": 50}, {"fast": 50, "slow": 50}])
    with pytest.raises(ValueError, match="fast must be"):
        SmaCrossover.positions_grid(bars, [{"fast": 10.5, "slow": 50}])
    with pytest.raises(ValueError, match="no parameter"):
        SmaCrossover.positions_grid(bars, [{"fast": 10, "slow": 50, "stop": 3}])


def test_default_indicators_are_the_desks_technical_series():
    bars = random_bars(n=300, seed=2)
    desk = universe_indicators(
        *(getattr(bars, name)[np.newaxis, :] for name in ("open", "high", "low", "close", "volume"))
    )
    sma = SIGNALS["sma_crossover"](fast=20, slow=50).indicators(bars)
    np.testing.assert_array_equal(sma["fast_sma"], desk["sma_20"][0])
    np.testing.assert_array_equal(sma["slow_sma"], desk["sma_50"][0])
    rsi = SIGNALS["rsi_reversion"](window=14).indicators(bars)
    np.testing.assert_array_equal(rsi["rsi"], desk["rsi_14"][0])
    bands = SIGNALS["bollinger_reversion"](window=20, deviations=2.0).indicators(bars)
    for name in ("bb_lower", "bb_middle", "bb_upper"):
        np.testing.assert_allclose(bands[name], desk[name][0], rtol=0, atol=1e-9)
    macd = SIGNALS["macd_momentum"](fast=12, slow=26, signal=9).indicators(bars)
    np.testing.assert_array_equal(macd["macd_line"], desk["macd_line"][0])
    np.testing.assert_allclose(macd["macd_signal"], desk["macd_signal"][0], rtol=0, atol=1e-12)
    channel = SIGNALS["donchian_breakout"](entry=20, exit=10).indicators(bars)
    # the entry channel on bar t is the swing high/low of the 20 bars before it
    np.testing.assert_array_equal(channel["entry_high"][1:], desk["swing_high"][0][:-1])
    np.testing.assert_array_equal(channel["entry_low"][1:], desk["swing_low"][0][:-1])


@pytest.mark.parametrize(
    ("key", "params", "message"),
    [
        ("sma_crossover", {"fast": 60, "slow": 50}, "fast must be a whole number from 5 to 50"),
        ("sma_crossover", {"fast": 30, "slow": 20}, "shorter than slow"),
        ("sma_crossover", {"fast": True}, "fast must be"),
        ("sma_crossover", {"fast": "10"}, "fast must be"),
        ("sma_crossover", {"speed": 3}, "no parameter speed"),
        ("rsi_reversion", {"lower": 40, "exit_level": 40}, "lower < exit_level < upper"),
        ("donchian_breakout", {"entry": 10, "exit": 20}, "must not be longer than entry"),
        ("bollinger_reversion", {"deviations": 3.5}, "deviations must be a number from 1.0 to 3.0"),
        ("bollinger_reversion", {"deviations": float("nan")}, "deviations must be"),
        ("macd_momentum", {"fast": 24, "slow": 20}, "shorter than slow"),
    ],
)
def test_bad_parameters_are_refused_with_a_clear_message(key, params, message):
    with pytest.raises(ValueError, match=message):
        SIGNALS[key](**params)


def test_defaults_fill_missing_parameters_and_values_are_coerced():
    strategy = SIGNALS["bollinger_reversion"](window=30)
    assert strategy.params == {"window": 30, "deviations": 2.0}
    assert SIGNALS["sma_crossover"](fast=10.0, slow=60).params == {"fast": 10, "slow": 60}
    assert isinstance(SIGNALS["sma_crossover"](fast=10.0, slow=60).params["fast"], int)


def test_more_than_five_parameters_is_refused():
    class Greedy(SignalStrategy):
        """Six knobs: one too many."""

        key: ClassVar[str] = "greedy"
        PARAM_RANGES: ClassVar[dict[str, ParamRange]] = {f"p{i}": ParamRange(1, 5, 1) for i in range(6)}

        def positions(self, bars: Bars) -> np.ndarray:
            return np.zeros(len(bars), dtype=np.int8)

    with pytest.raises(ValueError, match="at most 5"):
        Greedy()


def test_param_range_grid_and_membership():
    ints = ParamRange(5, 50, 5)
    assert ints.values() == [5, 10, 15, 20, 25, 30, 35, 40, 45, 50]
    assert ints.contains(7) and ints.contains(7.0)
    assert not ints.contains(7.5) and not ints.contains(55) and not ints.contains(True) and not ints.contains("7")
    floats = ParamRange(1.0, 3.0, 0.25, "float")
    assert floats.values()[:3] == [1.0, 1.25, 1.5] and floats.values()[-1] == 3.0
    assert floats.contains(1.1)
    assert ParamRange(1, 9, 2).default_value() == 5
    with pytest.raises(ValueError, match="above its high"):
        ParamRange(5, 1, 1)
    with pytest.raises(ValueError, match="whole-number"):
        ParamRange(1, 5, 0.5, "int")
    with pytest.raises(ValueError, match="kind"):
        ParamRange(1, 5, 1, "bool")  # type: ignore[arg-type]


def test_reading_gives_the_latest_position_and_values():
    bars = random_bars()
    strategy = SIGNALS["sma_crossover"](fast=10, slow=50)
    reading = strategy.reading(bars)
    assert reading["strategy"] == "sma_crossover"
    assert reading["params"] == {"fast": 10, "slow": 50}
    assert reading["as_of"] == str(bars.dates[-1])
    assert reading["position"] == int(strategy.positions(bars)[-1])
    assert set(reading["values"]) == {"fast_sma", "slow_sma"}
    short = bars.window(0, 5)
    assert SIGNALS["sma_crossover"]().reading(short)["values"] == {"fast_sma": None, "slow_sma": None}


def test_bars_from_rows_window_and_checks():
    rows = [
        {
            "date": dt.date(2025, 1, 6) + dt.timedelta(days=i),
            "open": 100 + i,
            "high": 102 + i,
            "low": 99 + i,
            "close": Decimal("101.05") + i,
            "volume": 1000,
        }
        for i in range(5)
    ]
    bars = Bars.from_rows("ABC", rows, tick=Decimal("0.05"), lot_size=1)
    assert len(bars) == 5 and bars.symbol == "ABC"
    assert bars.price("close", 0) == Decimal("101.05")
    assert bars.date(4) == dt.date(2025, 1, 10)
    window = bars.window(1, 3)
    assert len(window) == 2 and window.close[0] == bars.close[1]
    window.close[0] = 1.0
    assert bars.close[1] == pytest.approx(102.05)  # a window is a copy
    with pytest.raises(ValueError, match="ascending"):
        Bars.from_rows("ABC", list(reversed(rows)))
    with pytest.raises(ValueError, match="positive"):
        Bars.from_rows("ABC", [{**rows[0], "low": 0}])
