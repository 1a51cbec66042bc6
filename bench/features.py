"""How fast the universe indicators are, against ``ta`` and TA-Lib, and how closely they agree.

Run from the project root:

    .venv/bin/python bench/features.py [--symbols 500] [--bars 2520] [--ta-symbols 50]

Builds a seeded synthetic universe (mean-reverting random walks between roughly 100 and 5,000
with calm and wild regimes and overnight gaps; one symbol in ten listed part-way through), then
times the same indicator set three ways: the universe path (all symbols at once), ``ta`` called
symbol by symbol (on a subset, scaled), and TA-Lib symbol by symbol (bench-only dependency, see
bench/requirements.txt). ``ta`` and TA-Lib compute the twelve ``ta`` indicators; the universe
path is timed both on those twelve and on the whole technical set (plus swing, support and
resistance, gap, volume and previous-close series).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import ta
from scipy.signal import lfilter

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

from trading.market.domain.indicators import (  # noqa: E402 - needs the project root on sys.path
    PRICE_SERIES,
    compute_series,
    prepare_universe,
    universe_indicators,
)

# Bars each ta indicator needs before its first value; the agreement check starts there.
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

Bars = dict[str, np.ndarray]


def synthetic_universe(n_symbols: int, n_bars: int, seed: int) -> Bars:
    """Daily bars for ``n_symbols`` symbols; rows listed late start with NaN."""
    rng = np.random.default_rng(seed)
    start = np.exp(rng.uniform(np.log(150.0), np.log(3_500.0), (n_symbols, 1)))
    calm = (np.arange(n_bars) // rng.integers(60, 250, (n_symbols, 1))) % 2 == 0
    volatility = np.where(calm, 0.01, 0.025)
    shocks = rng.normal(0.0, 1.0, (n_symbols, n_bars)) * volatility
    # An AR(1) log price keeps ten years of random walk inside a realistic price band.
    log_deviation = lfilter([1.0], [1.0, -0.995], shocks, axis=1)
    close = start * np.exp(log_deviation)
    previous = np.concatenate([start, close[:, :-1]], axis=1)
    open_ = previous * np.exp(rng.normal(0.0, 1.0, close.shape) * volatility / 3)
    wicks = np.abs(rng.normal(0.0, 1.0, (2, n_symbols, n_bars))) * volatility / 2
    high = np.maximum(open_, close) * np.exp(wicks[0])
    low = np.minimum(open_, close) * np.exp(-wicks[1])
    volume = rng.lognormal(13.0, 0.6, close.shape).round()
    bars = {"open": open_, "high": high, "low": low, "close": close, "volume": volume}
    late = rng.random(n_symbols) < 0.1
    listed = np.where(late, rng.integers(0, n_bars // 2, n_symbols), 0)
    for row in np.flatnonzero(late):
        for values in bars.values():
            values[row, : listed[row]] = np.nan
    return bars


def history(bars: Bars, row: int) -> dict[str, np.ndarray]:
    """One symbol's bars, cut to its listed history."""
    listed = np.isfinite(bars["close"][row])
    return {name: values[row][listed] for name, values in bars.items()}


def ta_indicators(symbol: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    high, low, close = (pd.Series(symbol[name]) for name in ("high", "low", "close"))
    macd = ta.trend.MACD(close, window_slow=26, window_fast=12, window_sign=9)
    bands = ta.volatility.BollingerBands(close, window=20, window_dev=2)
    series = {
        "rsi_14": ta.momentum.RSIIndicator(close, window=14).rsi(),
        "macd_line": macd.macd(),
        "macd_signal": macd.macd_signal(),
        "macd_hist": macd.macd_diff(),
        "sma_20": ta.trend.SMAIndicator(close, window=20).sma_indicator(),
        "sma_50": ta.trend.SMAIndicator(close, window=50).sma_indicator(),
        "sma_200": ta.trend.SMAIndicator(close, window=200).sma_indicator(),
        "ema_20": ta.trend.EMAIndicator(close, window=20).ema_indicator(),
        "atr_14": ta.volatility.AverageTrueRange(high, low, close, window=14).average_true_range(),
        "bb_upper": bands.bollinger_hband(),
        "bb_middle": bands.bollinger_mavg(),
        "bb_lower": bands.bollinger_lband(),
    }
    return {name: values.to_numpy() for name, values in series.items()}


def talib_indicators(talib: object, symbol: dict[str, np.ndarray]) -> None:
    high, low, close = symbol["high"], symbol["low"], symbol["close"]
    talib.RSI(close, timeperiod=14)
    talib.MACD(close, fastperiod=12, slowperiod=26, signalperiod=9)
    for window in (20, 50, 200):
        talib.SMA(close, timeperiod=window)
    talib.EMA(close, timeperiod=20)
    talib.ATR(high, low, close, timeperiod=14)
    talib.BBANDS(close, timeperiod=20, nbdevup=2, nbdevdn=2, matype=0)


def best_time(run: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` runs: the least disturbed by the rest of the machine."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def largest_differences(series: dict[str, np.ndarray], bars: Bars, rows: range) -> dict[str, float]:
    """Per indicator, the largest |universe - ta| once past ta's warm-up, over ``rows``."""
    largest = dict.fromkeys(PRICE_SERIES, 0.0)
    for row in rows:
        listed = np.isfinite(bars["close"][row])
        reference = ta_indicators(history(bars, row))
        for name in PRICE_SERIES:
            warm = BARS_NEEDED[name] - 1
            ours = series[name][row][listed][warm:]
            difference = np.abs(ours - reference[name][warm:])
            difference[np.isnan(difference)] = np.inf  # a value on one side only is a failure
            largest[name] = max(largest[name], float(np.max(difference, initial=0.0)))
    return largest


def print_profile(bars: Bars) -> None:
    profiler = cProfile.Profile()
    profiler.runcall(universe_indicators, **bars)
    print("\nProfile of one universe call (top 15 by own time):")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--symbols", type=int, default=500)
    parser.add_argument("--bars", type=int, default=2_520)
    parser.add_argument("--ta-symbols", type=int, default=50, help="symbols timed with ta, then scaled")
    parser.add_argument("--repeats", type=int, default=5, help="runs per timing; the fastest counts")
    parser.add_argument("--seed", type=int, default=20_240_601)
    parser.add_argument("--profile", action="store_true", help="also profile one universe call")
    return parser.parse_args()


def load_talib() -> object | None:
    try:
        import talib
    except ImportError:
        print("TA-Lib is unavailable (pip install -r bench/requirements.txt); skipping it.")
        return None
    return talib


def main() -> None:
    args = parse_arguments()
    warnings.simplefilter("ignore")  # ta's ATR loop trips pandas deprecation warnings
    bars = synthetic_universe(args.symbols, args.bars, args.seed)
    symbols = [history(bars, row) for row in range(args.symbols)]
    listed_bars = sum(len(symbol["close"]) for symbol in symbols)
    ta_rows = range(min(args.ta_symbols, args.symbols))
    ta_bars = sum(len(symbols[row]["close"]) for row in ta_rows)
    print(
        f"Universe: {args.symbols} symbols x {args.bars} bars (seed {args.seed}), {listed_bars:,} listed "
        f"bars, prices {np.nanmin(bars['low']):.0f} to {np.nanmax(bars['high']):.0f}"
    )

    series = universe_indicators(**bars)
    whole = listed_bars / best_time(lambda: universe_indicators(**bars), args.repeats)
    price_only = listed_bars / best_time(
        lambda: compute_series(prepare_universe(**bars), PRICE_SERIES), args.repeats
    )
    ta_runs = max(1, args.repeats // 3)
    ta_speed = ta_bars / best_time(lambda: [ta_indicators(symbols[row]) for row in ta_rows], ta_runs)
    talib = load_talib()
    talib_speed = None
    if talib is not None:
        talib_time = best_time(lambda: [talib_indicators(talib, symbol) for symbol in symbols], args.repeats)
        talib_speed = listed_bars / talib_time

    print("\nSpeed in bars per second (a bar: every indicator of one symbol on one day):")
    print(f"  universe, whole technical set                    {whole:>14,.0f}")
    print(f"  universe, the 12 ta indicators only              {price_only:>14,.0f}")
    print(f"  ta, symbol by symbol ({len(ta_rows)} symbols timed, scaled) {ta_speed:>14,.0f}")
    if talib_speed is not None:
        print(f"  TA-Lib, symbol by symbol (12 indicators)         {talib_speed:>14,.0f}")
    print("\nRatios (above 1: the universe path is faster):")
    print(f"  universe whole set / ta         {whole / ta_speed:7.1f}x   (target: at least 20x)")
    print(f"  universe 12 indicators / ta     {price_only / ta_speed:7.1f}x")
    if talib_speed is not None:
        print(f"  universe whole set / TA-Lib     {whole / talib_speed:7.2f}x")
        print(f"  universe 12 indicators / TA-Lib {price_only / talib_speed:7.2f}x")

    differences = largest_differences(series, bars, ta_rows)
    print(f"\nLargest |universe - ta| past warm-up over the {len(ta_rows)} ta symbols (target: 1e-9):")
    for name, difference in differences.items():
        print(f"  {name:<12} {difference:.2e}")
    print(f"  {'all':<12} {max(differences.values()):.2e}")

    if args.profile:
        print_profile(bars)


if __name__ == "__main__":
    main()
