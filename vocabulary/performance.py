"""Performance of a series of per-period returns: one set of definitions for the whole desk.

The research agent ranks strategies with these numbers and the retrospective summarises a book
with them, so they live here, once, with their conventions spelled out:

- Input: simple per-period returns (0.01 is +1% in that period), one per session, oldest first.
- A year is ``periods_per_year`` periods, 252 by default (trading sessions).
- Sharpe = mean / sample standard deviation (ddof = 1) x sqrt(periods a year). No risk-free rate:
  callers who want an excess Sharpe pass excess returns.
- Sortino = mean / downside deviation x sqrt(periods a year), where the downside deviation is
  sqrt(mean(min(r, 0)^2)) over ALL periods (ddof = 0: the gains count as zero downside, they are
  not dropped), the target being 0.
- Equity starts at 1 before the first return and compounds: E_t = prod(1 + r_1..r_t). The
  drawdown at t is E_t / max(1, E_1..E_t) - 1, so a loss on the first period is a drawdown;
  ``max_drawdown`` is the deepest, a negative fraction (-0.25 is 25% off the peak), 0.0 without one.
- CAGR = E_n ^ (1 / years) - 1 with years = n / periods a year; Calmar = CAGR / |max drawdown|.
- Annualised volatility = sample standard deviation (ddof = 1) x sqrt(periods a year).

Degenerate inputs are defined, never an exception or a NaN, so a ranking can always be made:

- no returns: every figure is 0.0; one return: Sharpe and volatility are 0.0 (no spread to measure);
- a ratio whose denominator is zero is 0.0 (a constant series' Sharpe, Sortino without a single
  loss, Calmar without a drawdown, profit factor without a losing trade): a risk we could not
  measure is not a reason to rank a series first;
- equity wiped out (a return of -100% or worse): CAGR is -1.0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

import numpy as np

__all__ = [
    "PERIODS_PER_YEAR",
    "annualised_volatility",
    "cagr",
    "calmar_ratio",
    "downside_deviation",
    "equity_curve",
    "exposure",
    "max_drawdown",
    "performance_summary",
    "profit_factor",
    "sharpe_ratio",
    "sortino_ratio",
    "total_return",
    "win_rate",
]

PERIODS_PER_YEAR = 252

Returns = Sequence[float] | np.ndarray


def _as_returns(returns: Returns | Iterable[float]) -> np.ndarray:
    values = np.asarray(list(returns) if not isinstance(returns, np.ndarray) else returns, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"returns must be a flat sequence, got shape {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError("returns must be finite numbers (a NaN or infinity is missing data, not a return)")
    return values


def equity_curve(returns: Returns) -> np.ndarray:
    """E_1..E_n with E_0 = 1 before the first return (E_0 itself is not included)."""
    return np.cumprod(1.0 + _as_returns(returns))


def total_return(returns: Returns) -> float:
    """E_n - 1: the compounded return over the whole series."""
    values = _as_returns(returns)
    return float(np.prod(1.0 + values) - 1.0) if values.size else 0.0


def sharpe_ratio(returns: Returns, periods_per_year: int = PERIODS_PER_YEAR) -> float:
    """mean / std (ddof = 1) x sqrt(periods_per_year); 0.0 with fewer than two returns or no spread."""
    values = _as_returns(returns)
    if values.size < 2:
        return 0.0
    spread = float(np.std(values, ddof=1))
    mean = float(np.mean(values))
    # A spread of rounding noise (a constant series whose mean is not exactly representable) is none.
    if spread <= 1e-12 * abs(mean):
        return 0.0
    return mean / spread * math.sqrt(periods_per_year)


def downside_deviation(returns: Returns) -> float:
    """sqrt(mean(min(r, 0)^2)) over every period (ddof = 0), the target return being 0."""
    values = _as_returns(returns)
    if not values.size:
        return 0.0
    losses = np.minimum(values, 0.0)
    return float(np.sqrt(np.mean(losses * losses)))


def sortino_ratio(returns: Returns, periods_per_year: int = PERIODS_PER_YEAR) -> float:
    """mean / downside deviation x sqrt(periods_per_year); 0.0 without any loss (or returns)."""
    values = _as_returns(returns)
    downside = downside_deviation(values)
    if downside == 0.0:
        return 0.0
    return float(np.mean(values)) / downside * math.sqrt(periods_per_year)


def annualised_volatility(returns: Returns, periods_per_year: int = PERIODS_PER_YEAR) -> float:
    """std (ddof = 1) x sqrt(periods_per_year); 0.0 with fewer than two returns."""
    values = _as_returns(returns)
    if values.size < 2:
        return 0.0
    return float(np.std(values, ddof=1)) * math.sqrt(periods_per_year)


def max_drawdown(returns: Returns) -> float:
    """The deepest fall of equity from its running peak, the base of 1 included: a fraction <= 0."""
    equity = equity_curve(returns)
    if not equity.size:
        return 0.0
    peaks = np.maximum.accumulate(np.maximum(equity, 1.0))
    return float(min(0.0, np.min(equity / peaks - 1.0)))


def cagr(returns: Returns, periods_per_year: int = PERIODS_PER_YEAR) -> float:
    """E_n ^ (periods_per_year / n) - 1; 0.0 without returns, -1.0 when equity is wiped out."""
    values = _as_returns(returns)
    if not values.size:
        return 0.0
    growth = float(np.prod(1.0 + values))
    if growth <= 0.0:
        return -1.0
    years = values.size / periods_per_year
    return float(growth ** (1.0 / years) - 1.0)


def calmar_ratio(returns: Returns, periods_per_year: int = PERIODS_PER_YEAR) -> float:
    """CAGR / |max drawdown|; 0.0 without a drawdown."""
    drawdown = max_drawdown(returns)
    if drawdown == 0.0:
        return 0.0
    return cagr(returns, periods_per_year) / abs(drawdown)


def _as_pnl(trades_pnl: Iterable[float | Decimal]) -> np.ndarray:
    values = np.array([float(pnl) for pnl in trades_pnl], dtype=np.float64)
    if not np.isfinite(values).all():
        raise ValueError("trade results must be finite numbers")
    return values


def win_rate(trades_pnl: Iterable[float | Decimal]) -> float:
    """The share of trades with a positive result (a break-even trade is not a win); 0.0 without trades."""
    values = _as_pnl(trades_pnl)
    return float(np.mean(values > 0.0)) if values.size else 0.0


def profit_factor(trades_pnl: Iterable[float | Decimal]) -> float:
    """Gross profit / gross loss over the trades; 0.0 without a losing trade."""
    values = _as_pnl(trades_pnl)
    losses = float(-values[values < 0.0].sum())
    if losses == 0.0:
        return 0.0
    return float(values[values > 0.0].sum()) / losses


def exposure(positions: Sequence[int] | np.ndarray) -> float:
    """The share of periods with a position held (long or short); 0.0 without periods."""
    held = np.asarray(positions)
    return float(np.mean(held != 0)) if held.size else 0.0


def performance_summary(
    returns: Returns,
    trades_pnl: Iterable[float | Decimal] = (),
    positions: Sequence[int] | np.ndarray | None = None,
    periods_per_year: int = PERIODS_PER_YEAR,
) -> dict[str, Any]:
    """Every figure above for one series, JSON-friendly (plain floats and ints).

    ``trades_pnl`` are the trades' results (money or fractions: only signs and ratios are used);
    ``positions`` the position held in each period, for the exposure (None: not reported, 0.0).
    The same definitions as the functions above, with the series checked and compounded once.
    """
    values = _as_returns(returns)
    pnl = _as_pnl(trades_pnl)
    n = int(values.size)
    equity = np.cumprod(1.0 + values)
    growth = float(equity[-1]) if n else 1.0
    mean = float(values.mean()) if n else 0.0
    spread = float(values.std(ddof=1)) if n > 1 else 0.0
    losses = np.minimum(values, 0.0)
    downside = float(np.sqrt(np.mean(losses * losses))) if n else 0.0
    drawdown = float(min(0.0, np.min(equity / np.maximum.accumulate(np.maximum(equity, 1.0)) - 1.0))) if n else 0.0
    if not n:
        growth_rate = 0.0
    elif growth <= 0.0:
        growth_rate = -1.0
    else:
        growth_rate = float(growth ** (periods_per_year / n) - 1.0)
    root_year = math.sqrt(periods_per_year)
    return {
        "n_periods": n,
        "total_return": growth - 1.0,
        "cagr": growth_rate,
        "annualised_volatility": spread * root_year,
        "sharpe": mean / spread * root_year if spread > 1e-12 * abs(mean) else 0.0,
        "sortino": mean / downside * root_year if downside > 0.0 else 0.0,
        "max_drawdown": drawdown,
        "calmar": growth_rate / abs(drawdown) if drawdown < 0.0 else 0.0,
        "win_rate": win_rate(pnl),
        "profit_factor": profit_factor(pnl),
        "n_trades": int(pnl.size),
        "exposure": exposure(positions) if positions is not None else 0.0,
    }
