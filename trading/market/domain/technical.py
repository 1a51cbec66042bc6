"""Technical features of one instrument as of its last bar.

A thin wrapper over the universe code in ``indicators``: the frame becomes a one-row universe,
so a single symbol and the whole market go through exactly the same maths.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import pandas as pd

from trading.market.domain.indicators import universe_indicators
from vocabulary.features import TechnicalFeatures

BAR_COLUMNS = ("open", "high", "low", "close", "volume")
PRICE_COLUMNS = ("open", "high", "low", "close")


def technical_features(bars: pd.DataFrame) -> TechnicalFeatures:
    """Indicators, levels and session figures for the last bar of ``bars``.

    ``bars`` has columns open, high, low, close and volume (others are ignored), one row per
    session, indexed by date in strictly ascending order (``datetime.date`` values or a
    ``DatetimeIndex``). Every figure uses only the bars in the frame, so the features of a
    prefix never change when later bars arrive. ``None`` means not enough history, never NaN.

    - ``as_of``: the last bar's date; ``bars_used``: how many bars the frame holds.
    - ``last_close``, ``last_volume``: the last bar's; ``prev_close``: the bar before's.
    - ``rsi_14``, ``macd_*``, ``sma_*``, ``ema_20``, ``atr_14``, ``bb_*``: equal to the ``ta``
      library's indicators of the same names and parameters (RSI 14, MACD 12/26/9, SMA
      20/50/200, EMA 20, ATR 14, Bollinger 20 with 2 population standard deviations); they need
      14, 26 (signal and histogram 34), 20/50/200, 20, 14 and 20 bars.
    - ``swing_high`` / ``swing_low``: the highest high / lowest low of the last 20 bars, the
      last one included (needs 20 bars).
    - ``support`` / ``resistance``: from pivots, confirmed turning points. A pivot low is a bar
      whose low is below each of the 5 lows before it and at or below each of the 5 after it
      (the first of equal lows counts); pivot highs mirror it. A pivot is only confirmed once
      its 5 following bars exist, so the candidates are pivots on the last 120 bars except the
      newest 5. ``support`` is the highest candidate pivot low strictly below the last close,
      ``resistance`` the lowest candidate pivot high strictly above it; without one, the swing
      low (swing high) stands in.
    - ``support_distance_pct`` = (last close - support) / last close * 100;
      ``resistance_distance_pct`` = (resistance - last close) / last close * 100.
    - ``gap_pct`` = (last open - previous close) / previous close * 100.
    - ``volume_vs_avg`` = last volume / mean volume of the last 20 bars, the last one included
      (needs 20 bars; ``None`` if all 20 are zero).

    Raises ``ValueError`` for an empty frame, missing columns, an index that is not strictly
    ascending or not dates, non-numeric or non-finite values, non-positive prices or negative
    volume.
    """
    columns = _validated_columns(bars)
    series = universe_indicators(*(columns[name][np.newaxis, :] for name in BAR_COLUMNS))
    return _features_of_row(bars, columns, series, 0)


def technical_features_each(frames: Sequence[pd.DataFrame]) -> list[TechnicalFeatures | None]:
    """``technical_features`` of each frame, or None for one it would refuse (``ValueError``).

    The frames of one length go through the universe code together, one row each: the same maths
    row by row, so each result is the one its frame alone gives (a replay's sameness test holds
    them to it), at a fraction of the cost of one call per frame."""
    valid: dict[int, dict[str, np.ndarray]] = {}
    for index, frame in enumerate(frames):
        try:
            valid[index] = _validated_columns(frame)
        except ValueError:
            continue
    by_length: dict[int, list[int]] = defaultdict(list)
    for index, columns in valid.items():
        by_length[len(columns["close"])].append(index)
    features: list[TechnicalFeatures | None] = [None] * len(frames)
    for indexes in by_length.values():
        series = universe_indicators(*(np.stack([valid[index][name] for index in indexes]) for name in BAR_COLUMNS))
        for row, index in enumerate(indexes):
            features[index] = _features_of_row(frames[index], valid[index], series, row)
    return features


def _features_of_row(
    bars: pd.DataFrame, columns: dict[str, np.ndarray], series: dict[str, np.ndarray], row: int
) -> TechnicalFeatures:
    return TechnicalFeatures(
        as_of=_as_date(bars.index[-1]),
        bars_used=len(bars),
        last_close=float(columns["close"][-1]),
        last_volume=float(columns["volume"][-1]),
        **{name: _number_or_none(values[row, -1]) for name, values in series.items()},
    )


def _validated_columns(bars: pd.DataFrame) -> dict[str, np.ndarray]:
    _check_frame(bars)
    _check_index(bars.index)
    columns = {name: _numeric_column(bars, name) for name in BAR_COLUMNS}
    _check_values(columns, bars.index)
    return columns


def _check_frame(bars: pd.DataFrame) -> None:
    if not isinstance(bars, pd.DataFrame):
        raise ValueError(f"bars must be a pandas DataFrame, got {type(bars).__name__}")
    if len(bars) == 0:
        raise ValueError("bars is empty: need at least one bar")
    missing = [name for name in BAR_COLUMNS if name not in bars.columns]
    if missing:
        raise ValueError(f"bars is missing columns: {', '.join(missing)}")


def _check_index(index: pd.Index) -> None:
    _as_date(index[-1])
    if not index.is_unique:
        duplicates = index[index.duplicated()].unique()
        raise ValueError(f"bars has duplicate dates in its index: {list(duplicates[:5])}")
    try:
        ascending = index.is_monotonic_increasing
    except TypeError as error:  # labels of types that do not compare, e.g. dates and strings
        raise ValueError(f"bars index must hold comparable dates: {error}") from error
    if not ascending:
        raise ValueError("bars index must be sorted by date, oldest first")


def _check_values(columns: dict[str, np.ndarray], index: pd.Index) -> None:
    for name, values in columns.items():
        bad = ~np.isfinite(values)
        if bad.any():
            raise ValueError(f"{name} has a missing or non-finite value on {index[int(bad.argmax())]}")
    for name in PRICE_COLUMNS:
        bad = columns[name] <= 0
        if bad.any():
            where = int(bad.argmax())
            raise ValueError(f"{name} prices must be positive, got {columns[name][where]} on {index[where]}")
    negative = columns["volume"] < 0
    if negative.any():
        raise ValueError(f"volume must not be negative, got one on {index[int(negative.argmax())]}")


def _numeric_column(bars: pd.DataFrame, name: str) -> np.ndarray:
    try:
        return bars[name].to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be numeric: {error}") from error


def _as_date(label: object) -> dt.date:
    # datetime (and so pandas Timestamp) is a subclass of date: test it first.
    if isinstance(label, dt.datetime):
        return label.date()
    if isinstance(label, dt.date):
        return label
    if isinstance(label, np.datetime64):
        return pd.Timestamp(label).date()
    raise ValueError(f"bars index must hold dates, got {type(label).__name__}")


def _number_or_none(value: float) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None
