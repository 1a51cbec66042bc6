"""Synthetic daily bars and small helpers for the research loop's tests (walk-forward, holdout,
loop, proposers, journal): seeded random walks on the tick grid, so every test is deterministic."""

from __future__ import annotations

from decimal import Decimal

import numpy as np

from research.backtest import BacktestConfig
from research.loop import Budgets, Gates, SearchSpec
from research.signals import SIGNALS, Bars
from research.walkforward import WalkForwardSettings

CONFIG = BacktestConfig(capital=Decimal("1000000"))
LENIENT = Gates(min_dsr=0.0, min_trades=0, max_drawdown=1.0, drawdown_guard=1.0)


def synthetic_bars(count: int = 600, *, seed: int = 1, symbol: str = "AAA", drift: float = 0.0004) -> Bars:
    rng = np.random.default_rng(seed)
    close = 100 * np.exp(np.cumsum(rng.normal(drift, 0.015, count)))
    open_ = np.r_[close[0], close[:-1]] * (1 + rng.normal(0, 0.003, count))
    high = np.maximum(open_, close) * (1 + np.abs(rng.normal(0, 0.005, count)))
    low = np.minimum(open_, close) * (1 - np.abs(rng.normal(0, 0.005, count)))
    dates = np.busday_offset(np.datetime64("2023-01-02"), np.arange(count), roll="forward")

    def on_tick(values: np.ndarray) -> np.ndarray:
        return np.round(np.round(values / 0.05) * 0.05, 2)

    return Bars(
        symbol=symbol,
        dates=dates,
        open=on_tick(open_),
        high=on_tick(high),
        low=on_tick(low),
        close=on_tick(close),
        volume=rng.integers(100_000, 1_000_000, count).astype(float),
    )


def spec(
    *,
    goal: str = "find a trend-following edge",
    strategies: dict | None = None,
    gates: Gates = LENIENT,
    max_trials: int = 10,
    max_tokens: int = 1_000_000,
    dry_rounds: int = 50,
    allow_code_gen: bool = False,
    folds: int = 4,
) -> SearchSpec:
    return SearchSpec(
        goal=goal,
        strategies=strategies if strategies is not None else dict(SIGNALS),
        walkforward=WalkForwardSettings(window="rolling", folds=folds, purge_bars=5),
        backtest=CONFIG,
        gates=gates,
        budgets=Budgets(max_trials=max_trials, max_tokens=max_tokens, dry_rounds=dry_rounds),
        allow_code_gen=allow_code_gen,
        shortlist_size=3,
        pbo_splits=4,
    )


def tune(strategy: str, rationale: str = "a hypothesis worth testing", **params: int | float) -> dict:
    return {"kind": "tune", "strategy": strategy, "params": params, "rationale": rationale}
