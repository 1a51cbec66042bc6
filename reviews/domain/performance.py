"""How an account performed: its realised and unrealised result, the trades' statistics, the
equity curve's drawdown and risk-adjusted returns, and the curve against a benchmark. Pure; no Django.

Conventions, so every figure on a page can be checked by hand:

- Money stays Decimal, to the paisa (ROUND_HALF_UP). Ratios (profit factor, average R, Sharpe,
  Sortino) are Decimal to 0.01, and percentages are percent (12.50 means 12.5%) to 0.01.
- A trade is a win when its realised PnL (net of costs) is above zero and a loss when below;
  a trade at exactly zero is neither, but counts in the win rate's denominator.
- Daily returns are ``equity_t / equity_{t-1} − 1`` between consecutive points of the series.
- Sharpe is the mean daily return over its sample standard deviation (n − 1), Sortino the mean
  over the downside deviation ``sqrt(Σ min(r, 0)² / n)``; both times sqrt(252) sessions a year,
  with a risk-free rate of 0 (the definitions empyrical uses). None under two returns or when the
  deviation is zero, where the ratio means nothing.
- The maximum drawdown in rupees and in percent are each the largest of their kind over the curve;
  they may come from different falls (₹100 off a ₹1,000 peak is a bigger amount but a smaller
  percentage than ₹50 off a ₹100 peak).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from itertools import pairwise

from vocabulary.performance import sharpe_ratio, sortino_ratio

__all__ = [
    "SESSIONS_PER_YEAR",
    "BenchmarkComparison",
    "BenchmarkPoint",
    "BenchmarkRow",
    "Drawdown",
    "EquityPoint",
    "Performance",
    "TradeResult",
    "against_benchmark",
    "average_r",
    "daily_returns",
    "max_drawdown",
    "performance",
    "profit_factor",
    "sharpe",
    "sortino",
    "win_rate_pct",
]

SESSIONS_PER_YEAR = 252
PAISE = Decimal("0.01")
HUNDREDTH = Decimal("0.01")
HUNDRED = Decimal(100)
ZERO = Decimal("0.00")


@dataclass(frozen=True)
class EquityPoint:
    """The account's equity (cash plus open positions at their marks) at one session's close."""

    date: dt.date
    equity: Decimal

    def __post_init__(self) -> None:
        if not isinstance(self.equity, Decimal) or not self.equity.is_finite() or self.equity <= 0:
            raise ValueError(f"equity on {self.date} must be a positive, finite Decimal, got {self.equity!r}")


@dataclass(frozen=True)
class BenchmarkPoint:
    """A benchmark's level (an index close) at one session's close."""

    date: dt.date
    level: Decimal

    def __post_init__(self) -> None:
        if not isinstance(self.level, Decimal) or not self.level.is_finite() or self.level <= 0:
            raise ValueError(
                f"the benchmark level on {self.date} must be a positive, finite Decimal, got {self.level!r}"
            )


@dataclass(frozen=True)
class TradeResult:
    """A closed trade as the statistics need it: its realised PnL (net of costs) and the risk it
    was opened with, ``|entry − stop| × quantity``."""

    realised_pnl: Decimal
    entry_price: Decimal
    stop: Decimal
    quantity: int

    def __post_init__(self) -> None:
        if not isinstance(self.realised_pnl, Decimal) or not self.realised_pnl.is_finite():
            raise ValueError(f"realised_pnl must be a finite Decimal, got {self.realised_pnl!r}")
        if isinstance(self.quantity, bool) or not isinstance(self.quantity, int) or self.quantity <= 0:
            raise ValueError(f"quantity must be a positive whole number, got {self.quantity!r}")
        for label, price in (("entry_price", self.entry_price), ("stop", self.stop)):
            if not isinstance(price, Decimal) or not price.is_finite() or price <= 0:
                raise ValueError(f"{label} must be a positive, finite Decimal, got {price!r}")
        if self.entry_price == self.stop:
            raise ValueError(
                f"the stop {self.stop} sits at the entry {self.entry_price}: the trade had no risk to measure R by"
            )

    @property
    def initial_risk(self) -> Decimal:
        return abs(self.entry_price - self.stop) * self.quantity


@dataclass(frozen=True)
class Drawdown:
    amount: Decimal  # the largest fall from a running peak, ₹ (0 when the curve never fell)
    pct: Decimal  # the largest fall as a percentage of its peak


@dataclass(frozen=True)
class BenchmarkRow:
    date: dt.date
    equity: Decimal
    benchmark: Decimal  # the benchmark rebased to the equity's first value: what that money would be worth in it


@dataclass(frozen=True)
class BenchmarkComparison:
    rows: tuple[BenchmarkRow, ...]
    equity_return_pct: Decimal
    benchmark_return_pct: Decimal
    excess_return_pct: Decimal  # the two returns above, as shown, subtracted


@dataclass(frozen=True)
class Performance:
    realised: Decimal
    unrealised: Decimal
    trades: int
    wins: int
    losses: int
    win_rate_pct: Decimal | None
    profit_factor: Decimal | None
    average_r: Decimal | None
    max_drawdown: Drawdown
    total_return_pct: Decimal | None
    sharpe: Decimal | None
    sortino: Decimal | None


def performance(
    equity: Sequence[EquityPoint], trades: Sequence[TradeResult], *, open_unrealised: Iterable[Decimal] = ()
) -> Performance:
    """Every figure of the account's performance over ``equity``'s span: ``trades`` are the trades
    closed in it, ``open_unrealised`` the unrealised PnL of each position still open at its end."""
    returns = daily_returns(equity)
    return Performance(
        realised=_money(sum((trade.realised_pnl for trade in trades), start=ZERO)),
        unrealised=_money(sum(open_unrealised, start=ZERO)),
        trades=len(trades),
        wins=sum(1 for trade in trades if trade.realised_pnl > 0),
        losses=sum(1 for trade in trades if trade.realised_pnl < 0),
        win_rate_pct=win_rate_pct(trades),
        profit_factor=profit_factor(trades),
        average_r=average_r(trades),
        max_drawdown=max_drawdown(equity),
        total_return_pct=_total_return_pct(equity),
        sharpe=sharpe(returns),
        sortino=sortino(returns),
    )


def daily_returns(equity: Sequence[EquityPoint]) -> list[Decimal]:
    """The return from each point to the next; dates must rise strictly."""
    _check_dates([point.date for point in equity], "equity")
    return [after.equity / before.equity - 1 for before, after in pairwise(equity)]


def win_rate_pct(trades: Sequence[TradeResult]) -> Decimal | None:
    """Winning trades as a percentage of all; None without trades."""
    if not trades:
        return None
    wins = sum(1 for trade in trades if trade.realised_pnl > 0)
    return _hundredths(Decimal(wins) * HUNDRED / len(trades))


def profit_factor(trades: Sequence[TradeResult]) -> Decimal | None:
    """Gross wins over the absolute gross losses; None when nothing lost (no ratio to take)."""
    gross_wins = sum((trade.realised_pnl for trade in trades if trade.realised_pnl > 0), start=ZERO)
    gross_losses = sum((trade.realised_pnl for trade in trades if trade.realised_pnl < 0), start=ZERO)
    if gross_losses == 0:
        return None
    return _hundredths(gross_wins / abs(gross_losses))


def average_r(trades: Sequence[TradeResult]) -> Decimal | None:
    """The mean of each trade's PnL as a multiple of its initial risk; None without trades."""
    if not trades:
        return None
    multiples = [trade.realised_pnl / trade.initial_risk for trade in trades]
    return _hundredths(sum(multiples, start=Decimal(0)) / len(multiples))


def max_drawdown(equity: Sequence[EquityPoint]) -> Drawdown:
    """The largest fall from a running peak, in ₹ and as a percentage of that peak (each its own
    maximum); zero for a curve that never fell, a single point or none."""
    peak: Decimal | None = None
    amount = pct = Decimal(0)
    for point in equity:
        peak = point.equity if peak is None else max(peak, point.equity)
        fall = peak - point.equity
        amount = max(amount, fall)
        pct = max(pct, fall * HUNDRED / peak)
    return Drawdown(amount=_money(amount), pct=_hundredths(pct))


def sharpe(returns: Sequence[Decimal]) -> Decimal | None:
    """Annualised Sharpe ratio of daily ``returns`` (risk-free 0, sample deviation; the desk's one
    definition, ``vocabulary.performance.sharpe_ratio``); None under two returns or with no deviation."""
    if len(returns) < 2 or len(set(returns)) == 1:
        return None
    return _hundredths(Decimal(repr(sharpe_ratio([float(r) for r in returns], SESSIONS_PER_YEAR))))


def sortino(returns: Sequence[Decimal]) -> Decimal | None:
    """Annualised Sortino ratio of daily ``returns`` (target 0; ``vocabulary.performance.sortino_ratio``);
    None under two returns or with no day below zero."""
    if len(returns) < 2 or all(r >= 0 for r in returns):
        return None
    return _hundredths(Decimal(repr(sortino_ratio([float(r) for r in returns], SESSIONS_PER_YEAR))))


def against_benchmark(equity: Sequence[EquityPoint], benchmark: Sequence[BenchmarkPoint]) -> BenchmarkComparison | None:
    """The equity curve beside the benchmark rebased to the same start, on the dates both have
    (the first common date is the start), with both returns and the excess; None when they share
    no date."""
    _check_dates([point.date for point in equity], "equity")
    _check_dates([point.date for point in benchmark], "benchmark")
    levels = {point.date: point.level for point in benchmark}
    common = [point for point in equity if point.date in levels]
    if not common:
        return None
    start_equity, start_level = common[0].equity, levels[common[0].date]
    rows = tuple(
        BenchmarkRow(point.date, point.equity, _money(start_equity * levels[point.date] / start_level))
        for point in common
    )
    equity_return = _return_pct(start_equity, common[-1].equity)
    benchmark_return = _return_pct(start_level, levels[common[-1].date])
    return BenchmarkComparison(
        rows=rows,
        equity_return_pct=equity_return,
        benchmark_return_pct=benchmark_return,
        excess_return_pct=equity_return - benchmark_return,
    )


def _total_return_pct(equity: Sequence[EquityPoint]) -> Decimal | None:
    if not equity:
        return None
    return _return_pct(equity[0].equity, equity[-1].equity)


def _return_pct(start: Decimal, end: Decimal) -> Decimal:
    return _hundredths((end / start - 1) * HUNDRED)


def _money(amount: Decimal) -> Decimal:
    return amount.quantize(PAISE, rounding=ROUND_HALF_UP)


def _hundredths(value: Decimal) -> Decimal:
    return value.quantize(HUNDREDTH, rounding=ROUND_HALF_UP)


def _check_dates(dates: Sequence[dt.date], series: str) -> None:
    for before, after in pairwise(dates):
        if after <= before:
            raise ValueError(f"the {series} series' dates must rise strictly: {after} follows {before}")
