"""Technical indicators for a whole universe of symbols at once.

Every function works on 2-D float64 arrays shaped ``(n_symbols, n_bars)``, one row per symbol,
bars in ascending time order, and returns arrays of that shape holding the full series. The
maths runs across all symbols together, so the cost is a fixed number of array passes rather
than a Python loop per symbol:

- exponential recursions (EMA, MACD, RSI, ATR) go through ``scipy.signal.lfilter``, which
  performs the same multiply-adds as pandas' ``ewm(adjust=False)`` (bit for bit in our tests);
- rolling sums and extremes use a doubling ladder (windows of 1, 2, 4, 8, ... bars, each the
  combination of two halves), which costs a few passes and, unlike a running cumulative sum,
  never adds thousands of prices together, so it loses no precision;
- support and resistance come from a search over fixed windows of bars in exact integer
  arithmetic on the prices' bit patterns (see ``_nearest_above``);
- the Bollinger standard deviation is the square root of pandas' rolling variance, as in
  ``ta``. An exact variance would be cheaper, but pandas' online algorithm drifts from the
  exact value by up to ~3e-9 over 2,520 bars near 5,000, more than the 1e-9 we promise to
  agree with ``ta``, and only the same algorithm reproduces that drift.

The values equal the ``ta`` library (0.11.0, ``fillna=False``) once past warm-up, and are NaN
during warm-up (ATR too, where ``ta`` returns 0). A row may start late and stop early (leading
and trailing NaN closes, for a symbol listed after the first bar or delisted before the last);
each row's warm-up counts from its own first valid bar, exactly as if ``ta`` were called on
that row's valid span. A gap inside a row's span is an error: the recursions would have to
guess what it means.

Every value at bar ``t`` depends only on bars ``<= t``: there is no look-ahead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.signal import lfilter

RSI_WINDOW = 14
MACD_FAST = 12
MACD_SLOW = 26
MACD_SIGNAL = 9
SMA_WINDOWS = (20, 50, 200)
EMA_WINDOW = 20
ATR_WINDOW = 14
BOLLINGER_WINDOW = 20
BOLLINGER_DEVIATIONS = 2.0
SWING_WINDOW = 20
VOLUME_WINDOW = 20
PIVOT_SPAN = 5
LEVEL_LOOKBACK = 120

# Rows are processed in chunks: the maths makes a few hundred passes over ~40 temporaries, and
# small temporaries stay in the CPU caches and are recycled by the allocator, while arrays of a
# whole universe spill to main memory and cost fresh page faults on every call.
ROWS_PER_CHUNK = 32

PRICE_SERIES = (
    "rsi_14",
    "macd_line",
    "macd_signal",
    "macd_hist",
    "sma_20",
    "sma_50",
    "sma_200",
    "ema_20",
    "atr_14",
    "bb_upper",
    "bb_middle",
    "bb_lower",
)
LEVEL_SERIES = (
    "swing_high",
    "swing_low",
    "support",
    "resistance",
    "support_distance_pct",
    "resistance_distance_pct",
)
SESSION_SERIES = ("prev_close", "gap_pct", "volume_vs_avg")
ALL_SERIES = PRICE_SERIES + LEVEL_SERIES + SESSION_SERIES

# Positive finite float64 values sort like their bit patterns read as unsigned integers, which
# lets the support/resistance search use exact, branch-free integer arithmetic (see
# ``_nearest_above``). Every such key is below the key of +inf.
_INFINITY_KEY = np.float64(np.inf).view(np.uint64)
_NOT_FOUND = np.uint64(1 << 63)

Combine = Callable[..., np.ndarray]


@dataclass(frozen=True)
class UniverseBars:
    """A universe's bars, one row per symbol, and where each row's history lies.

    Rows keep their NaN head and tail; ``filled`` gives the arrays the maths runs on.
    """

    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray
    first: np.ndarray  # column of each row's first valid bar (n_bars for an empty row)
    last: np.ndarray  # column of each row's last valid bar (-1 for an empty row)

    @property
    def n_bars(self) -> int:
        return self.close.shape[1]

    @property
    def ragged_rows(self) -> np.ndarray:
        """Rows whose history does not cover every column."""
        return np.flatnonzero((self.first > 0) | (self.last < self.n_bars - 1))

    def rows(self, start: int, stop: int) -> UniverseBars:
        return UniverseBars(
            open=self.open[start:stop],
            high=self.high[start:stop],
            low=self.low[start:stop],
            close=self.close[start:stop],
            volume=self.volume[start:stop],
            first=self.first[start:stop],
            last=self.last[start:stop],
        )

    def filled(self) -> UniverseBars:
        """These bars with each row's head filled with its first bar and its tail with its last.

        Every array is then finite, so the vectorised recursions never meet a NaN, and a
        constant head brings them to the first real bar in exactly the state ``ta`` starts in;
        warm-up masks later blank whatever is not backed by enough real bars.
        """
        ragged = self.ragged_rows
        if not ragged.size:
            return self
        arrays = [values.copy() for values in (self.open, self.high, self.low, self.close, self.volume)]
        for row in ragged:
            start, stop = self.first[row], self.last[row]
            for values in arrays:
                if stop < 0:
                    values[row] = 1.0  # an empty row: any valid value, every output is blanked
                else:
                    values[row, :start] = values[row, start]
                    values[row, stop + 1 :] = values[row, stop]
        opens, highs, lows, closes, volumes = arrays
        return UniverseBars(opens, highs, lows, closes, volumes, first=self.first, last=self.last)


def universe_indicators(
    open: np.ndarray,
    high: np.ndarray,
    low: np.ndarray,
    close: np.ndarray,
    volume: np.ndarray,
) -> dict[str, np.ndarray]:
    """Every technical series for every symbol, keyed by the ``TechnicalFeatures`` field names.

    Inputs are ``(n_symbols, n_bars)`` arrays. A row's history is where its close is finite; it
    must be contiguous, with open, high, low and volume finite over it, prices positive and
    volume non-negative. Returns the keys of ``ALL_SERIES``, each an array of the input shape,
    NaN where there is not yet enough history and outside the row's history. The definitions
    are in ``_price_indicators``, ``_level_features`` and ``_session_features``.
    """
    return compute_series(prepare_universe(open, high, low, close, volume))


def prepare_universe(
    open: np.ndarray,
    high: np.ndarray,
    low: np.ndarray,
    close: np.ndarray,
    volume: np.ndarray,
) -> UniverseBars:
    """Check the arrays and locate each row's history. Raises ``ValueError`` on bad input."""
    arrays = [np.asarray(values, dtype=np.float64) for values in (open, high, low, close, volume)]
    shape = arrays[3].shape
    if len(shape) != 2:
        raise ValueError(f"bars must be 2-D arrays shaped (n_symbols, n_bars), got shape {shape}")
    if any(values.shape != shape for values in arrays):
        raise ValueError("open, high, low, close and volume must all have the same shape")
    n_bars = shape[1]
    has_close = np.isfinite(arrays[3])
    any_close = has_close.any(axis=1)
    first = np.where(any_close, has_close.argmax(axis=1), n_bars)
    last = np.where(any_close, n_bars - 1 - has_close[:, ::-1].argmax(axis=1), -1)
    opens, highs, lows, closes, volumes = arrays
    bars = UniverseBars(opens, highs, lows, closes, volumes, first=first, last=last)
    for name, values in zip(("open", "high", "low", "close", "volume"), arrays, strict=True):
        _check_history(bars, name, values)
    return bars


def _check_history(bars: UniverseBars, name: str, values: np.ndarray) -> None:
    """Finite over each row's history, and positive (volume: non-negative)."""
    if not values.size:
        return
    ragged = bars.ragged_rows
    # Row sums and minima are single cheap passes that turn NaN for any missing value; rows
    # with a NaN head or tail are then checked over their history alone.
    finite = np.isfinite(values.sum(axis=1))
    lowest = values.min(axis=1)
    for row in ragged:
        history = values[row, bars.first[row] : bars.last[row] + 1]
        finite[row] = np.isfinite(history).all()
        lowest[row] = history.min(initial=np.inf)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        raise ValueError(
            f"{name} has a missing or non-finite value inside the history of row {row}; "
            "only leading and trailing gaps are allowed"
        )
    if name == "volume":
        if (lowest < 0).any():
            raise ValueError(f"volume must not be negative (row {int(np.flatnonzero(lowest < 0)[0])})")
    elif (lowest <= 0).any():
        raise ValueError(f"{name} prices must be positive (row {int(np.flatnonzero(lowest <= 0)[0])})")


def compute_series(bars: UniverseBars, names: tuple[str, ...] = ALL_SERIES) -> dict[str, np.ndarray]:
    """The named series (any subset of ``ALL_SERIES``), computed chunk by chunk of rows."""
    unknown = set(names) - set(ALL_SERIES)
    if unknown:
        raise ValueError(f"unknown series: {sorted(unknown)}")
    n_rows = bars.close.shape[0]
    if bars.close.size == 0:
        return {name: np.full(bars.close.shape, np.nan) for name in names}
    if n_rows <= ROWS_PER_CHUNK:
        return _chunk_series(bars.filled(), names)
    result = {name: np.empty(bars.close.shape) for name in names}
    for start in range(0, n_rows, ROWS_PER_CHUNK):
        chunk_series = _chunk_series(bars.rows(start, start + ROWS_PER_CHUNK).filled(), names)
        for name in names:
            result[name][start : start + ROWS_PER_CHUNK] = chunk_series[name]
    return result


def _chunk_series(bars: UniverseBars, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    wanted = set(names)
    series: dict[str, np.ndarray] = {}
    if wanted & set(PRICE_SERIES):
        series |= _price_indicators(bars)
    if wanted & set(LEVEL_SERIES):
        series |= _level_features(bars)
    if wanted & set(SESSION_SERIES):
        series |= _session_features(bars)
    return {name: series[name] for name in names}


def _price_indicators(bars: UniverseBars) -> dict[str, np.ndarray]:
    """The ``ta`` indicators.

    - ``rsi_14``: ``ta.momentum.RSIIndicator(close, 14)``; first value on a row's 14th bar.
    - ``macd_line`` / ``macd_signal`` / ``macd_hist``: ``ta.trend.MACD(close, 26, 12, 9)``;
      the line from bar 26, the signal (an EMA9 started on the line's first value) and the
      histogram from bar 34.
    - ``sma_20`` / ``sma_50`` / ``sma_200``: ``ta.trend.SMAIndicator``; from bar 20 / 50 / 200.
    - ``ema_20``: ``ta.trend.EMAIndicator(close, 20)``; from bar 20.
    - ``atr_14``: ``ta.volatility.AverageTrueRange(high, low, close, 14)``; from bar 14 (``ta``
      shows 0 before).
    - ``bb_upper`` / ``bb_middle`` / ``bb_lower``: ``ta.volatility.BollingerBands(close, 20, 2)``
      (population standard deviation); from bar 20.
    """
    close = bars.close
    sums = _rolling_sums(close, SMA_WINDOWS)
    sma = {window: sums[window] / window for window in SMA_WINDOWS}
    macd_line, macd_signal = _macd(bars)
    deviation = BOLLINGER_DEVIATIONS * _rolling_std(bars, BOLLINGER_WINDOW)
    series = {
        "rsi_14": (_rsi(close, RSI_WINDOW), RSI_WINDOW),
        "macd_line": (macd_line, MACD_SLOW),
        "macd_signal": (macd_signal, MACD_SLOW + MACD_SIGNAL - 1),
        "macd_hist": (macd_line - macd_signal, MACD_SLOW + MACD_SIGNAL - 1),
        "sma_20": (sma[20], 20),
        "sma_50": (sma[50], 50),
        "sma_200": (sma[200], 200),
        "ema_20": (_ewm(close, 2.0 / (EMA_WINDOW + 1)), EMA_WINDOW),
        "atr_14": (_atr(bars, ATR_WINDOW), ATR_WINDOW),
        "bb_upper": (sma[20] + deviation, BOLLINGER_WINDOW),
        "bb_middle": (sma[20].copy(), BOLLINGER_WINDOW),
        "bb_lower": (sma[20] - deviation, BOLLINGER_WINDOW),
    }
    for values, bars_needed in series.values():
        _blank(values, bars, bars_needed)
    return {name: values for name, (values, _) in series.items()}


def _level_features(bars: UniverseBars) -> dict[str, np.ndarray]:
    """Swing high/low, support/resistance and their distances from the close.

    - ``swing_high`` / ``swing_low``: highest high / lowest low of the last 20 bars, today
      included; from bar 20.
    - A pivot high is a bar whose high is above each of the 5 highs before it and at or above
      each of the 5 after it (strict on the left, so only the first of a run of equal highs
      counts and pivots are at least 6 bars apart); pivot lows mirror it. A pivot needs 5 real
      bars on its left and is only known 5 bars after it happens, so on bar ``t`` the candidates
      are the pivots on bars ``t-119 .. t-5`` (the last 120 bars, minus the unconfirmed 5).
    - ``support``: the highest candidate pivot low strictly below the close; ``resistance``:
      the lowest candidate pivot high strictly above it. Without one, the swing low (swing
      high) stands in, so both are NaN only before bar 20 when no pivot qualifies.
    - ``support_distance_pct`` = (close - support) / close * 100;
      ``resistance_distance_pct`` = (resistance - close) / close * 100.
    """
    close = bars.close
    highs = _ladder(bars.high, 16, np.maximum)
    lows = _ladder(bars.low, 16, np.minimum)
    swing_high = _window_extreme(highs, SWING_WINDOW, np.maximum)
    swing_low = _window_extreme(lows, SWING_WINDOW, np.minimum)
    _blank(swing_high, bars, SWING_WINDOW)
    _blank(swing_low, bars, SWING_WINDOW)
    close_keys = close.view(np.uint64)
    high_pivots = _pivots(bars.high, _window_extreme(highs, PIVOT_SPAN, np.maximum), np.greater)
    low_pivots = _pivots(bars.low, _window_extreme(lows, PIVOT_SPAN, np.minimum), np.less)
    resistance_keys = _pivot_keys(bars, bars.high.view(np.uint64), high_pivots)
    resistance = _level_or(resistance_keys, close_keys, swing_high, complemented=False)
    # Complementing the keys turns "highest below" into "lowest above".
    support_keys = _pivot_keys(bars, _INFINITY_KEY - bars.low.view(np.uint64), low_pivots)
    support = _level_or(support_keys, _INFINITY_KEY - close_keys, swing_low, complemented=True)
    _blank(support, bars, 1)
    _blank(resistance, bars, 1)
    return {
        "swing_high": swing_high,
        "swing_low": swing_low,
        "support": support,
        "resistance": resistance,
        "support_distance_pct": (close - support) / close * 100.0,
        "resistance_distance_pct": (resistance - close) / close * 100.0,
    }


def _session_features(bars: UniverseBars) -> dict[str, np.ndarray]:
    """Previous close, opening gap and today's volume against its 20-bar mean.

    - ``prev_close``: the close of the bar before; from bar 2.
    - ``gap_pct`` = (open - previous close) / previous close * 100; from bar 2.
    - ``volume_vs_avg`` = volume / mean volume of the last 20 bars, today included; from bar
      20, NaN while all 20 volumes are zero.
    """
    prev_close = np.empty_like(bars.close)
    prev_close[:, 1:] = bars.close[:, :-1]
    prev_close[:, :1] = np.nan
    _blank(prev_close, bars, 2)
    average_volume = _rolling_sums(bars.volume, (VOLUME_WINDOW,))[VOLUME_WINDOW] / VOLUME_WINDOW
    with np.errstate(divide="ignore", invalid="ignore"):
        volume_vs_avg = bars.volume / average_volume
    _blank(volume_vs_avg, bars, VOLUME_WINDOW)
    return {
        "prev_close": prev_close,
        "gap_pct": (bars.open - prev_close) / prev_close * 100.0,
        "volume_vs_avg": volume_vs_avg,
    }


def _rsi(close: np.ndarray, window: int) -> np.ndarray:
    """Wilder's RSI as ``ta`` computes it: EWMs (alpha = 1/window) of gains and losses, 100
    while there has been no loss. Not warm-up masked."""
    change = np.empty_like(close)
    change[:, 0] = 0.0  # ta's first change is NaN, which it counts as neither gain nor loss
    np.subtract(close[:, 1:], close[:, :-1], out=change[:, 1:])
    gains = _ewm(np.maximum(change, 0.0), 1.0 / window)
    losses = np.maximum(np.negative(change, out=change), 0.0, out=change)
    losses = _ewm(losses, 1.0 / window)
    with np.errstate(divide="ignore", invalid="ignore"):
        strength = gains / losses
        strength += 1.0
        rsi = np.divide(100.0, strength, out=strength)
        np.subtract(100.0, rsi, out=rsi)
    # Without losses gains/losses is inf (RSI 100) or, with no gains either, NaN; ta says 100
    # for both. fmin maps that NaN to 100 and leaves every real RSI (never above 100) alone.
    return np.fmin(rsi, 100.0, out=rsi)


def _macd(bars: UniverseBars) -> tuple[np.ndarray, np.ndarray]:
    """MACD line and signal as ``ta.trend.MACD`` (12, 26, 9). Not warm-up masked.

    ``ta`` starts the signal EMA on the first defined line value (each row's bar 26); holding
    the line at that value before it makes the recursion arrive there unchanged.
    """
    close = bars.close
    line = np.subtract(_ewm(close, 2.0 / (MACD_FAST + 1)), _ewm(close, 2.0 / (MACD_SLOW + 1)))
    start = bars.first + MACD_SLOW - 1
    held = _hold_before(line.copy(), start, _value_at(line, start))
    signal = _ewm(held, 2.0 / (MACD_SIGNAL + 1))
    return line, signal


def _atr(bars: UniverseBars, window: int) -> np.ndarray:
    """Wilder's ATR as ``ta.volatility.AverageTrueRange``. Not warm-up masked.

    The first value (each row's bar ``window``) is the plain mean of the first ``window`` true
    ranges, then ``atr = (atr_prev * (window - 1) + true_range) / window``.
    """
    true_range = _true_ranges(bars)
    seed_columns = np.clip(bars.first[:, None] + np.arange(window), 0, bars.n_bars - 1)
    seed = np.take_along_axis(true_range, seed_columns, axis=1).mean(axis=1)
    # Held through the seed's own column: the recursion proper starts on the bar after it.
    return _ewm(_hold_before(true_range, bars.first + window, seed), 1.0 / window)


def _true_ranges(bars: UniverseBars) -> np.ndarray:
    """max(high, previous close) - min(low, previous close), which is the usual
    max(high - low, |high - previous close|, |low - previous close|) in one subtraction, so it
    rounds identically. On a row's first bar there is no previous close: high - low (as ``ta``,
    whose max skips the missing value)."""
    high, low, close = bars.high, bars.low, bars.close
    true_range = np.empty_like(close)
    true_range[:, 0] = high[:, 0] - low[:, 0]
    top = np.maximum(high[:, 1:], close[:, :-1], out=true_range[:, 1:])
    np.subtract(top, np.minimum(low[:, 1:], close[:, :-1]), out=top)
    rows = np.flatnonzero(bars.first < bars.n_bars)
    columns = bars.first[rows]
    true_range[rows, columns] = high[rows, columns] - low[rows, columns]
    return true_range


def _rolling_std(bars: UniverseBars, window: int) -> np.ndarray:
    """Population standard deviation of the last ``window`` closes, by pandas' rolling var.

    This is what ``ta`` runs, and only the same online algorithm reproduces its rounding (see
    the module docstring). The rows' missing head and tail are cut back out of the filled close
    so that pandas skips them as ``ta`` would. Its square root, with the same clip at zero, is
    pandas' std to the bit, without pandas' per-column overhead.
    """
    close = bars.close
    ragged = bars.ragged_rows
    if ragged.size:
        close = close.copy()
        for row in ragged:
            close[row, : bars.first[row]] = np.nan
            close[row, bars.last[row] + 1 :] = np.nan
    frame = pd.DataFrame(close.T, copy=False)
    variance = frame.rolling(window, min_periods=window).var(ddof=0).to_numpy().T
    return np.sqrt(np.maximum(variance, 0.0))


def _ewm(values: np.ndarray, alpha: float) -> np.ndarray:
    """Exponential average along each row, started at the row's first value:
    ``y[0] = x[0]``, ``y[t] = (1 - alpha) * y[t-1] + alpha * x[t]`` (pandas ``adjust=False``)."""
    decay = 1.0 - alpha
    smoothed, _ = lfilter([alpha], [1.0, -decay], values, axis=1, zi=decay * values[:, :1])
    return smoothed


def _hold_before(values: np.ndarray, start: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``values``, changed in place and returned, with each row's columns before ``start``
    replaced by that row's ``value``.

    Feeding a constant into ``_ewm`` keeps it at that constant, so this starts the recursion at
    column ``start`` with ``value`` while still filtering every row in one call.
    """
    if start.size and np.all(start == start[0]):
        values[:, : start[0]] = value[:, None]
        return values
    for row, column in enumerate(start):
        values[row, :column] = value[row]
    return values


def _value_at(values: np.ndarray, column: np.ndarray) -> np.ndarray:
    """Each row's value at its own column (clipped into range for rows too short to reach it)."""
    column = np.clip(column, 0, values.shape[1] - 1)
    return values[np.arange(values.shape[0]), column]


def _ladder(values: np.ndarray, top: int, combine: Combine) -> dict[int, np.ndarray]:
    """``combine`` over the last 1, 2, 4, ... ``top`` values of each row, keyed by width.

    Each width is two copies of the one below, the second shifted by half a width. The first
    columns, which lack a full window, hold the combination of what there is.
    """
    levels = {1: values}
    width = 1
    while width * 2 <= top:
        current = levels[width]
        doubled = np.empty_like(current)
        doubled[:, :width] = current[:, :width]
        combine(current[:, width:], current[:, :-width], out=doubled[:, width:])
        width *= 2
        levels[width] = doubled
    return levels


def _rolling_sums(values: np.ndarray, windows: tuple[int, ...]) -> dict[int, np.ndarray]:
    """Sums of the last ``window`` values of each row, for each window, from one ladder.

    A window is cut into its binary parts (200 = 128 + 64 + 8), each a ladder level, so every
    sum is a short pairwise sum of the window's own values: accurate to a few ulps of the sum.
    Meaningless before column ``window - 1``.
    """
    top = 1 << (max(windows).bit_length() - 1)
    levels = _ladder(values, top, np.add)
    n_bars = values.shape[1]
    sums = {}
    for window in windows:
        parts = [1 << bit for bit in range(window.bit_length() - 1, -1, -1) if window >> bit & 1]
        total = levels[parts[0]].copy()
        offset = parts[0]
        for part in parts[1:]:
            if offset < n_bars:
                total[:, offset:] += levels[part][:, : n_bars - offset]
            offset += part
        sums[window] = total
    return sums


def _window_extreme(levels: dict[int, np.ndarray], window: int, combine: Combine) -> np.ndarray:
    """``combine`` (max or min) over the last ``window`` values, from a ladder: the two
    overlapping power-of-two windows that together cover it exactly."""
    width = 1 << (window.bit_length() - 1)
    widest = levels[width]
    extreme = widest.copy()
    shift = window - width
    if shift:
        combine(widest[:, shift:], widest[:, :-shift], out=extreme[:, shift:])
    return extreme


def _pivots(values: np.ndarray, recent: np.ndarray, beats: Combine, span: int = PIVOT_SPAN) -> np.ndarray:
    """Where each bar is a pivot: it ``beats`` (strictly) the ``span`` values before it and is
    not beaten by the ``span`` after it. ``recent`` is the extreme of the last ``span`` values.
    False where either side is incomplete."""
    n_bars = values.shape[1]
    is_pivot = np.zeros(values.shape, dtype=bool)
    if n_bars < 2 * span + 1:
        return is_pivot
    centre = values[:, span : n_bars - span]
    before = recent[:, span - 1 : n_bars - span - 1]
    after = recent[:, 2 * span :]
    inner = is_pivot[:, span : n_bars - span]
    beats(centre, before, out=inner)
    inner &= ~beats(after, centre)
    return is_pivot


def _pivot_keys(bars: UniverseBars, keys: np.ndarray, is_pivot: np.ndarray) -> np.ndarray:
    """``keys`` on pivot bars, 0 elsewhere; bars without ``PIVOT_SPAN`` real bars on their left
    (or past the row's history) are not pivots."""
    pivot_keys = keys * is_pivot
    _blank(pivot_keys, bars, PIVOT_SPAN + 1, fill=0)
    return pivot_keys


def _level_or(
    pivot_keys: np.ndarray, close_keys: np.ndarray, fallback: np.ndarray, *, complemented: bool
) -> np.ndarray:
    """The price of the nearest pivot key above each close key, or ``fallback`` without one."""
    threshold = close_keys + np.uint64(1)
    distance = _nearest_above(pivot_keys, threshold)
    found = distance < _NOT_FOUND
    keys = np.add(distance, threshold, out=distance)  # garbage where not found, never read
    if complemented:
        np.subtract(_INFINITY_KEY, keys, out=keys)
    return np.where(found, keys.view(np.float64), fallback)


def _nearest_above(
    pivot_keys: np.ndarray,
    threshold: np.ndarray,
    span: int = PIVOT_SPAN,
    lookback: int = LEVEL_LOOKBACK,
) -> np.ndarray:
    """For each bar ``t``, how far the smallest pivot key at or above ``threshold`` (the close's
    key + 1) lies above it, among pivots on bars ``t-lookback+1 .. t-span``; ``_NOT_FOUND``
    or more where there is none.

    Pivots are at least ``span + 1`` bars apart, so a window of ``span + 1`` bars holds at most
    one: its maximum key is that pivot (non-pivots are 0). A handful of such windows, each a
    plain column shift, tile the candidate range. For each, ``key - threshold`` in unsigned
    arithmetic is the distance, and wraps to 2**63 or more for keys below the threshold, so
    one subtraction and one minimum per window do the whole search exactly.
    """
    block = span + 1
    n_bars = pivot_keys.shape[1]
    window_keys = _window_extreme(_ladder(pivot_keys, block, np.maximum), block, np.maximum)
    nearest = np.full_like(threshold, np.iinfo(np.uint64).max)
    distance = np.empty_like(threshold)
    for delay in _window_delays(span, lookback):
        if delay >= n_bars:
            break
        width = n_bars - delay
        np.subtract(window_keys[:, :width], threshold[:, delay:], out=distance[:, :width])
        np.minimum(nearest[:, delay:], distance[:, :width], out=nearest[:, delay:])
    return nearest


def _window_delays(span: int, lookback: int) -> list[int]:
    """How far back each ``span + 1``-bar window ends so that together they cover bars
    ``t-lookback+1 .. t-span`` and nothing else (the oldest may overlap its neighbour)."""
    block = span + 1
    oldest = lookback - block  # the window starting exactly at t - lookback + 1
    delays = list(range(span, oldest, block))
    return [*delays, oldest]


def _blank(values: np.ndarray, bars: UniverseBars, bars_needed: int, fill: float = np.nan) -> None:
    """Set to ``fill``, in place, every value backed by fewer than ``bars_needed`` real bars of
    its row, and every value after the row's history."""
    values[:, : bars_needed - 1] = fill
    for row in bars.ragged_rows:
        values[row, : bars.first[row] + bars_needed - 1] = fill
        values[row, bars.last[row] + 1 :] = fill
