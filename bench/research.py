"""Walk-forward throughput: parameter evaluations per second on one core, against vectorbt and
backtesting.py on the same grid, in the same run.

Run from the project root:

    .venv/bin/python bench/research.py                 # ours; peers print "not installed"
    /tmp/benchvenv/bin/python bench/research.py        # with the peers (bench/requirements-peers.txt)
    .venv/bin/python bench/research.py --peer-folds 2  # backtesting.py on 2 folds only (it is slow)

The workload is the issue's: a 100-point SMA-crossover grid (fast 5..50 step 5 x slow 60..150 step
10) x 10 rolling walk-forward folds on 2,520 synthetic daily bars (a seeded random walk, ten
years). Each fold is an in-sample window of 415 bars, a purge gap of 5, and an out-of-sample window
of 210; every configuration is backtested and scored (per-period Sharpe) on both windows, the best
in-sample one is picked, and all configurations' out-of-sample returns are kept (the matrix the
overfitting estimate reads). One *evaluation* is one configuration on one fold (its in-sample and
out-of-sample windows both), so the workload is 1,000 evaluations. Target: >= 100,000 a second.

Ours is ``SmaCrossover.positions_grid`` + ``research.backtest.grid_returns`` (long/flat, the desk's
slippage onto the tick and NSE costs as fractions of turnover) + ``research.metrics.sharpe_ratios``.
The peers get the same bars, the same grid, the same folds, long/flat, the same proportional cost
(fees) and slippage: vectorbt through ``Portfolio.from_signals`` with one column per configuration
per fold window (its vectorised path), backtesting.py through one ``Backtest.run`` per
configuration per window (its only way; ``optimize`` runs the same loop). Their numbers are
close to ours, not equal (each has its own cost and fill model); the throughput is the point.

One core: BLAS/OpenMP threads are pinned to 1 before numpy loads, and the process is pinned to
one CPU where the OS allows. Each figure is the best of ``--repeat`` timings of the whole workload.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

import numpy as np  # noqa: E402

from research.backtest import BacktestConfig, cost_rate, grid_returns  # noqa: E402
from research.metrics import probability_of_backtest_overfitting, sharpe_ratios  # noqa: E402
from research.signals import Bars, SmaCrossover  # noqa: E402

N_BARS = 2_520
FOLDS = 10
IN_SAMPLE = 415
PURGE = 5
OUT_OF_SAMPLE = 210
TARGET = 100_000
GRID = [{"fast": fast, "slow": slow} for fast in range(5, 55, 5) for slow in range(60, 160, 10)]


def synthetic_bars(seed: int = 7) -> Bars:
    """Ten years of a seeded random walk on the NSE tick (0.05), with opens, highs and lows."""
    rng = np.random.default_rng(seed)
    close = 1_000.0 * np.exp(np.cumsum(rng.normal(0.0003, 0.016, N_BARS)))
    gap = rng.normal(0.0, 0.004, N_BARS)
    open_ = np.concatenate(([close[0]], close[:-1])) * (1.0 + gap)
    high = np.maximum(open_, close) * (1.0 + np.abs(rng.normal(0.0, 0.006, N_BARS)))
    low = np.minimum(open_, close) * (1.0 - np.abs(rng.normal(0.0, 0.006, N_BARS)))
    on_tick = [np.round(values / 0.05) * 0.05 for values in (open_, high, low, close)]
    open_, high, low, close = on_tick
    high = np.maximum.reduce([open_, high, close])
    low = np.minimum.reduce([open_, low, close])
    dates = np.busday_offset("2016-01-01", np.arange(N_BARS), roll="forward")
    return Bars("SYNTH", dates, open_, high, low, close, rng.integers(100_000, 2_000_000, N_BARS).astype(float))


def folds() -> list[tuple[slice, slice]]:
    """(in-sample, out-of-sample) index windows, rolling, with the purge gap between them."""
    windows = []
    for fold in range(FOLDS):
        start = fold * OUT_OF_SAMPLE
        in_sample = slice(start, start + IN_SAMPLE)
        out_start = in_sample.stop + PURGE
        windows.append((in_sample, slice(out_start, out_start + OUT_OF_SAMPLE)))
    assert windows[-1][1].stop == N_BARS
    return windows


def ours(bars: Bars, config: BacktestConfig, *, keep_returns: bool = False) -> dict[str, Any]:
    """The walk-forward as ``research.walkforward`` runs it: the grid's positions once over all
    bars (a position at bar t reads bars up to t only, so each window carries its warm-up and
    never the future), then per fold each window backtested from flat on the vectorised path,
    every configuration scored on both, the best in-sample one picked. ``keep_returns`` also
    keeps every configuration's out-of-sample returns (for the overfitting estimate, untimed)."""
    positions = SmaCrossover.positions_grid(bars, GRID)
    chosen, oos_sharpes, oos_columns = [], [], []
    for in_sample, out_of_sample in folds():
        is_returns = grid_returns(bars.window(in_sample.start, in_sample.stop), positions[:, in_sample], config)
        oos_returns = grid_returns(
            bars.window(out_of_sample.start, out_of_sample.stop), positions[:, out_of_sample], config
        )
        chosen.append(int(np.argmax(sharpe_ratios(is_returns))))
        oos_sharpes.append(sharpe_ratios(oos_returns))
        if keep_returns:
            oos_columns.append(oos_returns)
    result: dict[str, Any] = {"chosen": chosen, "oos_sharpes": np.array(oos_sharpes)}
    if keep_returns:
        stitched = np.concatenate([oos_columns[fold][best] for fold, best in enumerate(chosen)])
        result["oos_sharpe"] = float(sharpe_ratios(stitched[np.newaxis, :], 252)[0])
        result["oos"] = np.concatenate(oos_columns, axis=1)
    return result


def vectorbt_run(bars: Bars, config: BacktestConfig) -> dict[str, Any]:
    import pandas as pd
    import vectorbt as vbt

    fees = (float(cost_rate("BUY", config.costs)) + float(cost_rate("SELL", config.costs))) / 2.0
    slippage = float(config.slippage_bps) / 10_000.0
    fast = [params["fast"] for params in GRID]
    slow = [params["slow"] for params in GRID]
    index = pd.DatetimeIndex(bars.dates.astype("datetime64[ns]"))
    close_all = pd.Series(bars.close, index=index)
    open_all = pd.Series(bars.open, index=index)
    chosen = []
    for in_sample, out_of_sample in folds():
        scores = []
        for window in (in_sample, out_of_sample):
            # The averages on the fold's bars from the in-sample start, as ours.
            span = slice(in_sample.start, window.stop)
            close = close_all.iloc[span]
            fast_ma = vbt.MA.run(close, fast, short_name="fast").ma
            slow_ma = vbt.MA.run(close, slow, short_name="slow").ma
            above = fast_ma.to_numpy() > slow_ma.to_numpy()
            target = pd.DataFrame(above, index=close.index).iloc[window.start - in_sample.start :]
            held = target.shift(1, fill_value=False).astype(bool)
            entries = held & ~held.shift(1, fill_value=False).astype(bool)
            exits = ~held & held.shift(1, fill_value=False).astype(bool)
            portfolio = vbt.Portfolio.from_signals(
                close.iloc[window.start - in_sample.start :],
                entries,
                exits,
                price=open_all.iloc[window],
                fees=fees,
                slippage=slippage,
                init_cash=float(config.capital),
                freq="1D",
            )
            returns = portfolio.returns().to_numpy().T
            scores.append(sharpe_ratios(returns))
        chosen.append(int(np.argmax(scores[0])))
    return {"chosen": chosen}


def _backtesting_strategy() -> type:
    """backtesting.py's face of the same rule: long while the fast average is above the slow one,
    flat otherwise; orders placed on a bar fill at the next open (``trade_on_close=False``)."""
    import pandas as pd
    from backtesting import Strategy

    def sma(values: np.ndarray, window: int) -> np.ndarray:
        return pd.Series(values).rolling(window).mean().to_numpy()

    class Crossover(Strategy):  # type: ignore[misc]
        fast = 10
        slow = 50
        start = 0  # bars of warm-up before the scored window: no trading before it

        def init(self) -> None:
            self.fast_ma = self.I(sma, self.data.Close, self.fast)
            self.slow_ma = self.I(sma, self.data.Close, self.slow)

        def next(self) -> None:
            if len(self.data) <= self.start:
                return
            if self.fast_ma[-1] > self.slow_ma[-1]:
                if not self.position:
                    self.buy()
            elif self.position:
                self.position.close()

    return Crossover


def backtesting_run(bars: Bars, config: BacktestConfig, peer_folds: int) -> dict[str, Any]:
    import warnings

    import backtesting.backtesting as engine
    import pandas as pd
    from backtesting import Backtest

    engine._tqdm = lambda sequence, **_: sequence  # no progress bar per run on the console
    warnings.filterwarnings("ignore", module="backtesting")
    fees = (float(cost_rate("BUY", config.costs)) + float(cost_rate("SELL", config.costs))) / 2.0
    slippage = float(config.slippage_bps) / 10_000.0
    frame = pd.DataFrame(
        {"Open": bars.open, "High": bars.high, "Low": bars.low, "Close": bars.close, "Volume": bars.volume},
        index=pd.DatetimeIndex(bars.dates.astype("datetime64[ns]")),
    )
    crossover = _backtesting_strategy()
    chosen = []
    for in_sample, out_of_sample in folds()[:peer_folds]:
        scores = []
        for window in (in_sample, out_of_sample):
            # The fold's bars from the in-sample start (the averages' warm-up), trading from the
            # window's start, as ours.
            offset = window.start - in_sample.start
            test = Backtest(
                frame.iloc[in_sample.start : window.stop],
                crossover,
                cash=float(config.capital),
                commission=fees + slippage,
                trade_on_close=False,
                finalize_trades=True,
            )
            rows = []
            for params in GRID:
                equity = test.run(start=offset, **params)["_equity_curve"]["Equity"].to_numpy()[offset:]
                rows.append(np.diff(equity) / equity[:-1])
            scores.append(sharpe_ratios(np.array(rows)))
        chosen.append(int(np.argmax(scores[0])))
    return {"chosen": chosen, "folds": peer_folds}


def loop_walk_forward(bars: Bars, config: BacktestConfig) -> Callable[[], dict[str, Any]] | None:
    """The research loop's own ``walk_forward`` on the same grid and bars (its folds: 11 equal
    segments, in-sample one segment less the purge, out-of-sample the next), which also re-runs
    each fold's chosen configuration on the exact Decimal path. None if it is not importable."""
    try:
        from research.walkforward import WalkForwardSettings, walk_forward
    except ImportError:
        return None
    settings = WalkForwardSettings(window="rolling", folds=FOLDS, purge_bars=PURGE)

    def run() -> dict[str, Any]:
        result = walk_forward(SmaCrossover, GRID, {bars.symbol: bars}, settings, config)
        return {"chosen": result.chosen}

    return run


def best_of(repeat: int, run: Callable[[], dict[str, Any]]) -> tuple[float, float, dict[str, Any]]:
    """The best wall time and the best CPU time (this process, one core) of ``repeat`` runs."""
    best_wall, best_cpu, result = float("inf"), float("inf"), {}
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = run()
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    return best_wall, best_cpu, result


def report(name: str, timing: tuple[float, float], evaluations: int, note: str = "") -> None:
    wall, cpu = timing
    rate = evaluations / cpu
    mark = "  target met" if rate >= TARGET else "  below target"
    print(
        f"{name:<18} wall {wall * 1000:9.1f} ms  cpu {cpu * 1000:9.1f} ms  {evaluations:5d} evaluations  "
        f"{rate:12,.0f} /s cpu ({evaluations / wall:,.0f} /s wall){mark}  {note}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="timings per engine; the best is reported")
    parser.add_argument("--peer-folds", type=int, default=FOLDS, help="folds backtesting.py runs (rate is per fold)")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    bars = synthetic_bars()
    config = BacktestConfig(capital=Decimal(1_000_000), slippage_bps=Decimal(5), allow_short=False)
    evaluations = len(GRID) * FOLDS
    print(
        f"walk-forward: {len(GRID)}-point SMA-crossover grid x {FOLDS} folds on {N_BARS} bars "
        f"(in-sample {IN_SAMPLE}, purge {PURGE}, out-of-sample {OUT_OF_SAMPLE}); one core; best of {args.repeat}"
    )
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}")
    ours(bars, config)  # warm caches and imports
    wall, cpu, _ = best_of(args.repeat, lambda: ours(bars, config))
    full = ours(bars, config, keep_returns=True)
    pbo = probability_of_backtest_overfitting(full["oos"].T, 8)
    note = f"stitched OOS Sharpe {full['oos_sharpe']:.2f}, PBO of the grid {pbo:.2f}"
    report("research (ours)", (wall, cpu), evaluations, note)
    loop = loop_walk_forward(bars, config)
    if loop is not None:
        loop()
        wall, cpu, _ = best_of(args.repeat, loop)
        report(
            "research.walkforward", (wall, cpu), evaluations, "the loop's walk_forward, exact OOS re-backtests included"
        )
    try:
        import vectorbt

        vectorbt_run(bars, config)
        wall, cpu, peer = best_of(max(1, args.repeat // 2), lambda: vectorbt_run(bars, config))
        same = sum(a == b for a, b in zip(peer["chosen"], full["chosen"], strict=True))
        report(
            f"vectorbt {vectorbt.__version__}", (wall, cpu), evaluations, f"same in-sample pick on {same}/{FOLDS} folds"
        )
    except ImportError:
        print("vectorbt         not installed (pip install -r bench/requirements-peers.txt into a throwaway venv)")
    try:
        import backtesting

        folds_run = max(1, min(args.peer_folds, FOLDS))
        wall, cpu, peer = best_of(1, lambda: backtesting_run(bars, config, folds_run))
        same = sum(a == b for a, b in zip(peer["chosen"], full["chosen"][:folds_run], strict=True))
        report(
            f"backtesting {backtesting.__version__}",
            (wall, cpu),
            len(GRID) * folds_run,
            f"{folds_run} folds; same in-sample pick on {same}/{folds_run}",
        )
    except ImportError:
        print("backtesting.py   not installed (pip install -r bench/requirements-peers.txt into a throwaway venv)")


if __name__ == "__main__":
    main()
