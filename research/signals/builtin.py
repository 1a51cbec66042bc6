"""The five built-in signal strategies, on the desk's own indicator arithmetic.

Each reads the same moving sums, exponential averages, RSI, rolling extremes and Bollinger
deviation the technical analyst sees (``trading.market.domain.indicators``), only with tunable
windows, so a rule found here is judged on the numbers the desk would compute for it.

Every series at bar ``t`` uses bars up to ``t`` only, and a rule that has not warmed up is flat.

The reversion and breakout rules hold a position until an exit condition, which makes them
stateful. They are still vectorised: each side (long, short) is a latch set by its entry
condition and reset by its exit, and the latch's state on a bar is whichever event came last,
found with one running maximum over the event indices. The rules are built so that entering
one side is always an exit of the other (an RSI below the lower bound is below the exit level
too), so at most one latch is set at a time and the position is long latch minus short latch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from research.signals.base import Bars, ParamRange, SignalStrategy
from trading.market.domain.indicators import (
    _ewm,
    _hold_before,
    _ladder,
    _rolling_std,
    _rolling_sums,
    _rsi,
    _value_at,
    _window_extreme,
    prepare_universe,
)

# Configurations evaluated together by a vectorised grid (see ``SmaCrossover.positions_grid``).
GRID_CHUNK = 16


def rolling_means(close: np.ndarray, windows: Sequence[int]) -> dict[int, np.ndarray]:
    """Simple moving averages of ``close`` (1-D) for each window, NaN before a full window.
    The desk's pairwise rolling sums, so an SMA here is the SMA of the technical features."""
    unique = tuple(sorted({int(window) for window in windows}))
    sums = _rolling_sums(close[np.newaxis, :], unique)
    means = {}
    for window in unique:
        mean = sums[window][0] / window
        mean[: window - 1] = np.nan
        means[window] = mean
    return means


def ema(close: np.ndarray, span: int) -> np.ndarray:
    """Exponential average with alpha = 2 / (span + 1), started at the first close (pandas
    ``ewm(adjust=False)``, as the desk's EMA and MACD)."""
    return _ewm(close[np.newaxis, :], 2.0 / (span + 1))[0]


def rsi(close: np.ndarray, window: int) -> np.ndarray:
    """Wilder's RSI over ``window`` bars (the desk's ``rsi_14`` with another window); NaN before
    bar ``window``."""
    values = _rsi(close[np.newaxis, :], window)[0]
    values[: window - 1] = np.nan
    return values


def rolling_extreme(values: np.ndarray, window: int, *, highest: bool) -> np.ndarray:
    """Highest (or lowest) of the last ``window`` values, today included; NaN before a full window."""
    combine = np.maximum if highest else np.minimum
    top = 1 << (window.bit_length() - 1)
    extreme = _window_extreme(_ladder(values[np.newaxis, :], top, combine), window, combine)[0]
    extreme[: window - 1] = np.nan
    return extreme


def previous(values: np.ndarray) -> np.ndarray:
    """The series one bar later: each bar sees the value of the bar before (NaN on the first)."""
    shifted = np.empty_like(values)
    shifted[..., :1] = np.nan
    shifted[..., 1:] = values[..., :-1]
    return shifted


def bollinger_std(bars: Bars, window: int) -> np.ndarray:
    """The population standard deviation of the last ``window`` closes, exactly as the desk's
    Bollinger bands compute it; NaN before a full window."""
    universe = prepare_universe(
        *(getattr(bars, name)[np.newaxis, :] for name in ("open", "high", "low", "close", "volume"))
    )
    return _rolling_std(universe, window)[0]


def latch(enter: np.ndarray, leave: np.ndarray) -> np.ndarray:
    """True from each ``enter`` bar until the next ``leave`` bar (exclusive), along the last axis.
    A bar that is both counts as ``leave``: holding on an ambiguous bar is the riskier reading."""
    enter = enter & ~leave
    events = enter | leave
    index = np.arange(enter.shape[-1])
    last = np.where(events, index, -1)
    np.maximum.accumulate(last, axis=-1, out=last)
    state = np.take_along_axis(enter, np.maximum(last, 0), axis=-1)
    return state & (last >= 0)


def long_short(long_on: np.ndarray, short_on: np.ndarray) -> np.ndarray:
    return long_on.astype(np.int8) - short_on.astype(np.int8)


class SmaCrossover(SignalStrategy):
    """Trend following: long while the fast simple moving average of closes is above the slow
    one, short (where allowed) while it is below; flat until both averages exist (and on a tie)."""

    key: ClassVar[str] = "sma_crossover"
    PARAM_RANGES: ClassVar[dict[str, ParamRange]] = {
        "fast": ParamRange(5, 50, 5, "int", default=10),
        "slow": ParamRange(20, 200, 10, "int", default=50),
    }
    ALLOWS_SHORT: ClassVar[bool] = True

    def check_params(self) -> None:
        if self.params["fast"] >= self.params["slow"]:
            raise ValueError(f"fast ({self.params['fast']}) must be shorter than slow ({self.params['slow']})")

    def indicators(self, bars: Bars) -> dict[str, np.ndarray]:
        means = rolling_means(bars.close, (int(self.params["fast"]), int(self.params["slow"])))
        return {"fast_sma": means[int(self.params["fast"])], "slow_sma": means[int(self.params["slow"])]}

    def positions(self, bars: Bars) -> np.ndarray:
        return self.positions_grid(bars, [self.params])[0]

    @classmethod
    def positions_grid(cls, bars: Bars, grid: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """All configs at once: each distinct window's average is computed once, then each
        config is one comparison of two rows."""
        values = cls.grid_values(grid)
        fast = values["fast"].astype(np.intp) if grid else np.zeros(0, dtype=np.intp)
        slow = values["slow"].astype(np.intp) if grid else np.zeros(0, dtype=np.intp)
        crossed = np.flatnonzero(fast >= slow)
        if crossed.size:
            cls(**grid[int(crossed[0])])  # raises the message for the first bad config
        if not len(grid) or not len(bars):
            return np.zeros((len(grid), len(bars)), dtype=np.int8)
        means = rolling_means(bars.close, np.concatenate((fast, slow)).tolist())
        windows = sorted(means)
        table = np.stack([means[window] for window in windows])
        row_of = np.zeros(max(windows) + 1, dtype=np.intp)
        row_of[windows] = np.arange(len(windows))
        matrix = np.empty((len(grid), len(bars)), dtype=np.int8)
        fast_rows, slow_rows = row_of[fast], row_of[slow]
        # A few configs at a time: small temporaries stay in cache and are recycled by the
        # allocator, where whole-grid ones cost fresh pages on every call.
        for start in range(0, len(grid), GRID_CHUNK):
            chunk = slice(start, start + GRID_CHUNK)
            spread = table[fast_rows[chunk]]
            spread -= table[slow_rows[chunk]]
            # The sign of the spread; NaN (an average still warming up) compares false both ways: flat.
            signs = matrix[chunk]
            np.greater(spread, 0.0, out=signs.view(np.bool_))
            signs -= np.less(spread, 0.0).view(np.int8)
        return matrix


class RsiReversion(SignalStrategy):
    """Mean reversion on Wilder's RSI: long when the RSI falls below ``lower`` until it climbs
    back to ``exit_level``; short when it rises above ``upper`` until it falls back to
    ``exit_level``."""

    key: ClassVar[str] = "rsi_reversion"
    PARAM_RANGES: ClassVar[dict[str, ParamRange]] = {
        "window": ParamRange(2, 30, 1, "int", default=14),
        "lower": ParamRange(10, 40, 5, "int", default=30),
        "upper": ParamRange(60, 90, 5, "int", default=70),
        "exit_level": ParamRange(40, 60, 5, "int", default=50),
    }
    ALLOWS_SHORT: ClassVar[bool] = True

    def check_params(self) -> None:
        lower, upper, exit_level = self.params["lower"], self.params["upper"], self.params["exit_level"]
        if not lower < exit_level < upper:
            raise ValueError(f"need lower < exit_level < upper, got {lower}, {exit_level}, {upper}")

    def indicators(self, bars: Bars) -> dict[str, np.ndarray]:
        return {"rsi": rsi(bars.close, int(self.params["window"]))}

    def positions(self, bars: Bars) -> np.ndarray:
        value = self.indicators(bars)["rsi"]
        lower, upper, exit_level = self.params["lower"], self.params["upper"], self.params["exit_level"]
        with np.errstate(invalid="ignore"):
            long_on = latch(value < lower, value >= exit_level)
            short_on = latch(value > upper, value <= exit_level)
        return long_short(long_on, short_on)


class DonchianBreakout(SignalStrategy):
    """Breakout: long when the close beats the highest high of the previous ``entry`` bars, out
    when it falls below the lowest low of the previous ``exit`` bars; short mirrors it."""

    key: ClassVar[str] = "donchian_breakout"
    PARAM_RANGES: ClassVar[dict[str, ParamRange]] = {
        "entry": ParamRange(10, 120, 5, "int", default=20),
        "exit": ParamRange(5, 60, 5, "int", default=10),
    }
    ALLOWS_SHORT: ClassVar[bool] = True

    def check_params(self) -> None:
        # With the exit channel no wider than the entry one, a breakout up is always an exit of a
        # short (and down of a long), which keeps the two latches exclusive.
        if self.params["exit"] > self.params["entry"]:
            raise ValueError(f"exit ({self.params['exit']}) must not be longer than entry ({self.params['entry']})")

    def indicators(self, bars: Bars) -> dict[str, np.ndarray]:
        entry, exit_ = int(self.params["entry"]), int(self.params["exit"])
        return {
            "entry_high": previous(rolling_extreme(bars.high, entry, highest=True)),
            "entry_low": previous(rolling_extreme(bars.low, entry, highest=False)),
            "exit_high": previous(rolling_extreme(bars.high, exit_, highest=True)),
            "exit_low": previous(rolling_extreme(bars.low, exit_, highest=False)),
        }

    def positions(self, bars: Bars) -> np.ndarray:
        channel = self.indicators(bars)
        close = bars.close
        with np.errstate(invalid="ignore"):
            long_on = latch(close > channel["entry_high"], close < channel["exit_low"])
            short_on = latch(close < channel["entry_low"], close > channel["exit_high"])
        return long_short(long_on, short_on)


class BollingerReversion(SignalStrategy):
    """Mean reversion on Bollinger bands: long when the close falls below the lower band
    (``deviations`` population standard deviations under the ``window``-bar average) until it is
    back at the average; short above the upper band until back at the average."""

    key: ClassVar[str] = "bollinger_reversion"
    PARAM_RANGES: ClassVar[dict[str, ParamRange]] = {
        "window": ParamRange(10, 60, 5, "int", default=20),
        "deviations": ParamRange(1.0, 3.0, 0.25, "float", default=2.0),
    }
    ALLOWS_SHORT: ClassVar[bool] = True

    def indicators(self, bars: Bars) -> dict[str, np.ndarray]:
        window = int(self.params["window"])
        middle = rolling_means(bars.close, (window,))[window]
        width = float(self.params["deviations"]) * bollinger_std(bars, window)
        return {"bb_lower": middle - width, "bb_middle": middle, "bb_upper": middle + width}

    def positions(self, bars: Bars) -> np.ndarray:
        bands = self.indicators(bars)
        close = bars.close
        with np.errstate(invalid="ignore"):
            long_on = latch(close < bands["bb_lower"], close >= bands["bb_middle"])
            short_on = latch(close > bands["bb_upper"], close <= bands["bb_middle"])
        return long_short(long_on, short_on)


class MacdMomentum(SignalStrategy):
    """Momentum: long while the MACD line (fast EMA minus slow EMA) is above its signal line (an
    EMA of the line started where the slow EMA has warmed up), short while below; flat during
    warm-up."""

    key: ClassVar[str] = "macd_momentum"
    PARAM_RANGES: ClassVar[dict[str, ParamRange]] = {
        "fast": ParamRange(4, 24, 2, "int", default=12),
        "slow": ParamRange(20, 60, 2, "int", default=26),
        "signal": ParamRange(3, 15, 1, "int", default=9),
    }
    ALLOWS_SHORT: ClassVar[bool] = True

    def check_params(self) -> None:
        if self.params["fast"] >= self.params["slow"]:
            raise ValueError(f"fast ({self.params['fast']}) must be shorter than slow ({self.params['slow']})")

    def indicators(self, bars: Bars) -> dict[str, np.ndarray]:
        fast, slow, signal = (int(self.params[name]) for name in ("fast", "slow", "signal"))
        line = ema(bars.close, fast) - ema(bars.close, slow)
        # As the desk's MACD: the signal EMA starts on the line's first warmed-up value.
        start = np.array([slow - 1])
        held = _hold_before(line[np.newaxis, :].copy(), start, _value_at(line[np.newaxis, :], start))
        signal_line = _ewm(held, 2.0 / (signal + 1))[0]
        line = line.copy()
        line[: slow - 1] = np.nan
        signal_line[: slow + signal - 2] = np.nan
        return {"macd_line": line, "macd_signal": signal_line, "macd_hist": line - signal_line}

    def positions(self, bars: Bars) -> np.ndarray:
        series = self.indicators(bars)
        histogram = np.nan_to_num(series["macd_hist"], nan=0.0)
        return np.sign(histogram).astype(np.int8)


BUILTIN: tuple[type[SignalStrategy], ...] = (
    SmaCrossover,
    RsiReversion,
    DonchianBreakout,
    BollingerReversion,
    MacdMomentum,
)
