"""Walk-forward validation: a strategy judged only on bars it was not tuned on.

The search data is cut into ``folds + 1`` equal segments. Fold k optimises in-sample on segment k
(``rolling``) or on segments 0..k (``anchored``), leaves a purge gap of ``purge_bars`` sessions, and
is scored out of sample on segment k+1, the next window. The out-of-sample windows never overlap and
together cover the data after the first segment; their returns, concatenated, are the trial's only
fitness. In-sample figures are recorded for each fold so a person can see the gap between the two,
but nothing selects on them except the per-fold choice of parameters inside the in-sample window.

Two ways in:
- ``evaluate_config``: a ``tune`` proposal's fixed parameters, walked forward as they are;
- ``walk_forward``: a grid (a ``code`` proposal's ``PARAM_RANGES``), optimised per fold in-sample on
  the vectorised float path (``positions_grid`` and ``grid_returns``), the chosen parameters then
  backtested exactly on the out-of-sample window.

Positions are computed once over the whole search data (a position at bar t reads bars up to t
only, so a window's positions carry their warm-up and never the future) and each window is
backtested on its own from flat, with the full capital. With several symbols the windows' per-period
returns are averaged across symbols (an equal-weight book rebalanced daily) and their trades summed.

The deflated Sharpe takes the session's count of trials so far (``n_trials_offset``) plus this one,
and the variance of the Sharpe ratios the session's trials really had. Pure: no Django.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import numpy as np

from research.backtest import BacktestConfig, backtest, grid_returns
from research.metrics import (
    deflated_sharpe_ratio,
    kurtosis,
    max_drawdown,
    performance_summary,
    sharpe_ratio,
    skewness,
    total_return,
)
from research.signals import Bars
from research.signals.base import SignalStrategy

__all__ = [
    "Fold",
    "WalkForwardResult",
    "WalkForwardSettings",
    "evaluate_config",
    "make_folds",
    "param_grid",
    "walk_forward",
]

# The fewest bars a window may hold: fewer and a Sharpe ratio says nothing.
MIN_WINDOW_BARS = 20
Window = Literal["rolling", "anchored"]


@dataclass(frozen=True)
class WalkForwardSettings:
    window: Window = "rolling"
    folds: int = 5
    purge_bars: int = 5

    def __post_init__(self) -> None:
        if self.window not in ("rolling", "anchored"):
            raise ValueError(f"walk-forward window must be 'rolling' or 'anchored', not {self.window!r}")
        if self.folds < 1:
            raise ValueError("walk-forward needs at least one fold")
        if self.purge_bars < 0:
            raise ValueError("the purge gap cannot be negative")

    @classmethod
    def from_mapping(cls, research: Mapping[str, Any]) -> WalkForwardSettings:
        """From ``settings.RESEARCH`` (its WINDOW, FOLDS and PURGE_BARS)."""
        return cls(
            window=cast(Window, str(research.get("WINDOW", "rolling"))),
            folds=int(research.get("FOLDS", 5)),
            purge_bars=int(research.get("PURGE_BARS", 5)),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"window": self.window, "folds": self.folds, "purge_bars": self.purge_bars}


@dataclass(frozen=True)
class Fold:
    """Index bounds (stop exclusive) of one fold's in-sample and out-of-sample windows."""

    index: int
    is_start: int
    is_stop: int
    oos_start: int
    oos_stop: int

    @property
    def purge(self) -> int:
        return self.oos_start - self.is_stop


def make_folds(n_bars: int, settings: WalkForwardSettings) -> list[Fold]:
    """The folds over ``n_bars`` bars; ``ValueError`` when a window would be too short to judge."""
    segment = n_bars // (settings.folds + 1)
    if segment < MIN_WINDOW_BARS + settings.purge_bars:
        raise ValueError(
            f"{n_bars} bars are too few for {settings.folds} folds with a purge of {settings.purge_bars}: each "
            f"window needs at least {MIN_WINDOW_BARS} bars after the purge (have {segment} a segment)"
        )
    folds = []
    for index in range(settings.folds):
        oos_start = (index + 1) * segment
        oos_stop = n_bars if index == settings.folds - 1 else oos_start + segment
        is_start = 0 if settings.window == "anchored" else index * segment
        folds.append(Fold(index, is_start, oos_start - settings.purge_bars, oos_start, oos_stop))
    return folds


# --- one window ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowResult:
    returns: np.ndarray
    trades: int
    trade_pnls: tuple[float, ...]


def _window(
    bars: Mapping[str, Bars], positions: Mapping[str, np.ndarray], start: int, stop: int, config: BacktestConfig
) -> WindowResult:
    """The exact backtest of one window per symbol, from flat; returns averaged across symbols."""
    returns: list[np.ndarray] = []
    trades = 0
    pnls: list[float] = []
    for symbol, symbol_bars in bars.items():
        result = backtest(symbol_bars.window(start, stop), positions[symbol][start:stop], config)
        returns.append(np.asarray(result.returns, dtype=float))
        trades += len(result.trades)
        pnls.extend(float(pnl) for pnl in result.trades_pnl)
    return WindowResult(np.mean(np.vstack(returns), axis=0), trades, tuple(pnls))


def _finite(value: Any, default: float = 0.0) -> float:
    number = float(value) if value is not None else default
    return number if math.isfinite(number) else default


def window_metrics(result: WindowResult) -> dict[str, Any]:
    """A window's figures: the performance summary, the per-period Sharpe the DSR and the
    selection use, and the trade count the gates use."""
    summary = {key: _plain(value) for key, value in performance_summary(result.returns, result.trade_pnls).items()}
    summary.update(
        bars=int(result.returns.size),
        trades=result.trades,
        sharpe_per_period=_finite(sharpe_ratio(result.returns, periods_per_year=1)),
        max_drawdown=_finite(max_drawdown(result.returns)),
        total_return=_finite(total_return(result.returns)),
    )
    return summary


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# --- the trial -----------------------------------------------------------------------------------


@dataclass
class WalkForwardResult:
    """A trial's validation: per-fold records, the OOS aggregate's figures and its deflated Sharpe."""

    folds: list[dict[str, Any]]
    oos_returns: np.ndarray
    oos_metrics: dict[str, Any]
    oos_sharpe: float
    dsr: float
    n_trials: int
    trades: int
    max_drawdown: float
    chosen: list[dict[str, Any]] = field(default_factory=list)


def _date(bars: Mapping[str, Bars], index: int) -> str:
    first = next(iter(bars.values()))
    return str(first.dates[min(index, len(first) - 1)])


def _fold_record(
    fold: Fold, bars: Mapping[str, Bars], params: Mapping[str, Any], in_sample: WindowResult, oos: WindowResult
) -> dict[str, Any]:
    return {
        "fold": fold.index,
        "in_sample": {"start": _date(bars, fold.is_start), "end": _date(bars, fold.is_stop - 1)},
        "out_of_sample": {"start": _date(bars, fold.oos_start), "end": _date(bars, fold.oos_stop - 1)},
        "purge_bars": fold.purge,
        "params": dict(params),
        "is_metrics": window_metrics(in_sample),
        "oos_metrics": window_metrics(oos),
    }


def _positions(
    strategy: type[SignalStrategy], params: Mapping[str, Any], bars: Mapping[str, Bars]
) -> dict[str, np.ndarray]:
    instance = strategy(**params)
    return {symbol: np.asarray(instance.positions(symbol_bars)) for symbol, symbol_bars in bars.items()}


def _best_in_sample(
    strategy: type[SignalStrategy],
    grid: Sequence[Mapping[str, Any]],
    matrices: Mapping[str, np.ndarray],
    bars: Mapping[str, Bars],
    fold: Fold,
    config: BacktestConfig,
) -> int:
    """The grid row with the best in-sample per-period Sharpe (the first on a tie), on the float path."""
    per_symbol = [
        grid_returns(
            symbol_bars.window(fold.is_start, fold.is_stop), matrices[symbol][:, fold.is_start : fold.is_stop], config
        )
        for symbol, symbol_bars in bars.items()
    ]
    returns = np.mean(np.stack(per_symbol), axis=0)
    mean = returns.mean(axis=1)
    spread = returns.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        sharpe = np.where(spread > 0, mean / spread, -np.inf)
    return int(np.argmax(sharpe))


def _dsr(returns: np.ndarray, sharpe: float, n_trials: int, prior_sharpes: Sequence[float]) -> float:
    sharpes = [value for value in (*prior_sharpes, sharpe) if math.isfinite(value)]
    variance = float(np.var(sharpes, ddof=1)) if len(sharpes) > 1 else 0.0
    value = deflated_sharpe_ratio(sharpe, variance, n_trials, int(returns.size), skewness(returns), kurtosis(returns))
    return _finite(value)


def _aggregate(
    folds: list[dict[str, Any]], oos: list[WindowResult], *, n_trials_offset: int, prior_sharpes: Sequence[float]
) -> WalkForwardResult:
    combined = WindowResult(
        np.concatenate([window.returns for window in oos]),
        sum(window.trades for window in oos),
        tuple(pnl for window in oos for pnl in window.trade_pnls),
    )
    metrics = window_metrics(combined)
    sharpe = float(metrics["sharpe_per_period"])
    n_trials = n_trials_offset + 1
    dsr = _dsr(combined.returns, sharpe, n_trials, prior_sharpes)
    metrics.update(dsr=dsr, n_trials=n_trials)
    return WalkForwardResult(
        folds=folds,
        oos_returns=combined.returns,
        oos_metrics=metrics,
        oos_sharpe=sharpe,
        dsr=dsr,
        n_trials=n_trials,
        trades=combined.trades,
        max_drawdown=float(metrics["max_drawdown"]),
        chosen=[record["params"] for record in folds],
    )


def evaluate_config(
    strategy: type[SignalStrategy],
    params: Mapping[str, Any],
    bars: Mapping[str, Bars],
    settings: WalkForwardSettings,
    config: BacktestConfig,
    *,
    n_trials_offset: int = 0,
    prior_sharpes: Sequence[float] = (),
) -> WalkForwardResult:
    """A fixed configuration walked forward: the same parameters in every fold; one trial."""
    length = len(next(iter(bars.values())))
    positions = _positions(strategy, params, bars)
    records, oos = [], []
    for fold in make_folds(length, settings):
        in_sample = _window(bars, positions, fold.is_start, fold.is_stop, config)
        out = _window(bars, positions, fold.oos_start, fold.oos_stop, config)
        records.append(_fold_record(fold, bars, params, in_sample, out))
        oos.append(out)
    return _aggregate(records, oos, n_trials_offset=n_trials_offset, prior_sharpes=prior_sharpes)


def walk_forward(
    strategy: type[SignalStrategy],
    grid: Sequence[Mapping[str, Any]],
    bars: Mapping[str, Bars],
    settings: WalkForwardSettings,
    config: BacktestConfig,
    *,
    n_trials_offset: int = 0,
    prior_sharpes: Sequence[float] = (),
) -> WalkForwardResult:
    """Per fold, the grid's best in-sample parameters, then those parameters scored exactly on the
    next window. The OOS windows' concatenated returns are the fitness; one trial."""
    if not grid:
        raise ValueError("the parameter grid is empty")
    if len(grid) == 1:
        return evaluate_config(
            strategy, grid[0], bars, settings, config, n_trials_offset=n_trials_offset, prior_sharpes=prior_sharpes
        )
    length = len(next(iter(bars.values())))
    plain_grid = [dict(point) for point in grid]
    matrices = {
        symbol: np.asarray(strategy.positions_grid(symbol_bars, plain_grid)) for symbol, symbol_bars in bars.items()
    }
    records, oos = [], []
    for fold in make_folds(length, settings):
        row = _best_in_sample(strategy, plain_grid, matrices, bars, fold, config)
        positions = {symbol: matrix[row] for symbol, matrix in matrices.items()}
        in_sample = _window(bars, positions, fold.is_start, fold.is_stop, config)
        out = _window(bars, positions, fold.oos_start, fold.oos_stop, config)
        records.append(_fold_record(fold, bars, plain_grid[row], in_sample, out))
        oos.append(out)
    return _aggregate(records, oos, n_trials_offset=n_trials_offset, prior_sharpes=prior_sharpes)


def param_grid(strategy: type[SignalStrategy], limit: int = 2000) -> list[dict[str, Any]]:
    """Every point of a strategy's ``PARAM_RANGES`` (the first ``limit``), in a fixed order; points
    the strategy refuses to construct with (e.g. a fast average not faster than the slow) left out."""
    points: list[dict[str, Any]] = [{}]
    for name, spec in strategy.PARAM_RANGES.items():
        points = [{**point, name: value} for point in points for value in spec.values()]
    valid = []
    for point in points:
        try:
            strategy(**point)
        except ValueError:
            continue
        valid.append(point)
        if len(valid) >= limit:
            break
    return valid
