"""How each account performed, live and replay books alike: the stored rows turned into the pure
``reviews.domain.performance`` inputs, and its figures with a chart of the equity against the Nifty 50.

Nothing is recomputed here: the daily equity is the portfolio's own curve
(``trading.book.selectors.equity_curve``: capital + realised PnL closed by the day + the day's marks),
closed positions become ``TradeResult`` records, and every figure comes from the pure module.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from reviews.domain.performance import (
    BenchmarkComparison,
    BenchmarkPoint,
    EquityPoint,
    Performance,
    TradeResult,
    against_benchmark,
    performance,
)
from trading.book import selectors as book_selectors
from trading.book.accounts import default_account
from trading.market.charts import MoneyLine, money_chart
from trading.models import Account, MacroIndicator, Position

__all__ = [
    "BENCHMARK_CODE",
    "BENCHMARK_NAME",
    "REPLAY_ACCOUNT_PREFIX",
    "AccountPerformance",
    "account_performance",
    "account_performances",
    "benchmark_levels",
    "benchmark_on_equity_dates",
    "equity_points",
    "is_replay_account",
    "open_unrealised",
    "trade_results",
]

BENCHMARK_CODE = "NIFTY50"  # the macro series the demo seed and the imports write
BENCHMARK_NAME = "Nifty 50"
# The Nifty series is weekly: a day's equity is set against the latest close at most this old, so
# a benchmark that stopped being imported is left out rather than drawn flat for months.
BENCHMARK_STALENESS = dt.timedelta(days=10)
REPLAY_ACCOUNT_PREFIX = "replay: "  # trading.book.accounts.replay_account names its accounts so
PAISE = Decimal("0.01")


@dataclass(frozen=True)
class AccountPerformance:
    """One account's figures, ready for a page: ``benchmark`` is None without Nifty closes over the
    equity's span, ``chart`` None without equity."""

    account: Account
    is_replay: bool
    figures: Performance
    equity: tuple[EquityPoint, ...]
    benchmark: BenchmarkComparison | None
    chart: dict[str, Any] | None

    @property
    def has_trades(self) -> bool:
        return self.figures.trades > 0


def account_performances(accounts: Sequence[Account] | None = None) -> list[AccountPerformance]:
    """Every account (or those given) in the order they were opened, with the Nifty closes read
    once for all of them."""
    if accounts is None:
        default_account()  # the desk's paper book exists from its first page, as on the portfolio
    chosen = list(accounts) if accounts is not None else list(Account.objects.order_by("id"))
    levels = benchmark_levels()
    return [account_performance(account, levels) for account in chosen]


def account_performance(account: Account, levels: Sequence[BenchmarkPoint] | None = None) -> AccountPerformance:
    """The account's figures over its whole equity curve."""
    equity = equity_points(account)
    benchmark_closes = benchmark_levels() if levels is None else levels
    comparison = against_benchmark(equity, benchmark_on_equity_dates(equity, benchmark_closes)) if equity else None
    return AccountPerformance(
        account=account,
        is_replay=is_replay_account(account),
        figures=performance(equity, trade_results(account), open_unrealised=open_unrealised(account)),
        equity=tuple(equity),
        benchmark=comparison,
        chart=_chart(account, equity, comparison),
    )


def is_replay_account(account: Account) -> bool:
    """A history replay's book: named by ``replay_account``, or holding replayed positions."""
    return account.name.startswith(REPLAY_ACCOUNT_PREFIX) or (
        Position.objects.filter(account=account, is_replay=True).exists()
    )


def equity_points(account: Account) -> list[EquityPoint]:
    """The portfolio's equity curve as Decimal points. ``equity_curve`` hands floats to the chart;
    each came from a Decimal to the paisa, which its shortest repr gives back exactly."""
    return [
        EquityPoint(dt.date.fromisoformat(day), Decimal(repr(value)).quantize(PAISE, rounding=ROUND_HALF_UP))
        for day, value in book_selectors.equity_curve(account)
    ]


def trade_results(account: Account) -> list[TradeResult]:
    """Each closed position as the statistics need it: its net realised PnL and its opening risk."""
    closed = Position.objects.filter(account=account, status=Position.Status.CLOSED, realised_pnl__isnull=False)
    return [
        TradeResult(realised_pnl=realised, entry_price=entry, stop=stop, quantity=quantity)
        for realised, entry, stop, quantity in closed.order_by("closed_on", "id").values_list(
            "realised_pnl", "entry_price", "stop", "quantity"
        )
        if realised is not None
    ]


def open_unrealised(account: Account) -> list[Decimal]:
    """The latest unrealised PnL of each position still open."""
    return list(
        Position.objects.filter(account=account, status=Position.Status.OPEN).values_list("unrealised_pnl", flat=True)
    )


def benchmark_levels() -> list[BenchmarkPoint]:
    """The Nifty 50 closes stored as macro readings, oldest first (none is no benchmark)."""
    readings = MacroIndicator.objects.filter(code=BENCHMARK_CODE, value__gt=0).order_by("date")
    return [BenchmarkPoint(date, value) for date, value in readings.values_list("date", "value")]


def benchmark_on_equity_dates(equity: Sequence[EquityPoint], levels: Sequence[BenchmarkPoint]) -> list[BenchmarkPoint]:
    """The benchmark on each equity date: the latest close on or before it, if no older than
    ``BENCHMARK_STALENESS``. The index is read weekly and the equity daily; comparing on common
    dates alone would keep one day in five."""
    carried: list[BenchmarkPoint] = []
    index, latest = 0, None
    for point in equity:
        while index < len(levels) and levels[index].date <= point.date:
            latest, index = levels[index], index + 1
        if latest is not None and point.date - latest.date <= BENCHMARK_STALENESS:
            carried.append(BenchmarkPoint(point.date, latest.level))
    return carried


def _chart(
    account: Account, equity: Sequence[EquityPoint], comparison: BenchmarkComparison | None
) -> dict[str, Any] | None:
    if not equity:
        return None
    lines = [MoneyLine("equity", [(point.date, point.equity) for point in equity], "#1d4ed8")]
    if comparison is not None:
        lines.append(
            MoneyLine(
                f"{BENCHMARK_NAME} (rebased)",
                [(row.date, row.benchmark) for row in comparison.rows],
                "#d97706",
                dash="dot",
            )
        )
    return money_chart(lines, currency=account.currency)
