from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.domain.performance import (
    BenchmarkPoint,
    BenchmarkRow,
    Drawdown,
    EquityPoint,
    TradeResult,
    against_benchmark,
    average_r,
    daily_returns,
    max_drawdown,
    performance,
    profit_factor,
    sharpe,
    sortino,
    win_rate_pct,
)

START = dt.date(2025, 1, 6)


def D(value: str) -> Decimal:
    return Decimal(value)


def curve(*values: str) -> list[EquityPoint]:
    return [EquityPoint(START + dt.timedelta(days=i), D(value)) for i, value in enumerate(values)]


def levels(*values: str, first: dt.date = START) -> list[BenchmarkPoint]:
    return [BenchmarkPoint(first + dt.timedelta(days=i), D(value)) for i, value in enumerate(values)]


def result(pnl: str, *, entry: str = "100", stop: str = "95", quantity: int = 10) -> TradeResult:
    # Risk |100 − 95| x 10 = ₹50 unless said otherwise.
    return TradeResult(realised_pnl=D(pnl), entry_price=D(entry), stop=D(stop), quantity=quantity)


# --- A small curve by hand: 100 → 110 → 99 → 108.90 ----------------------------------------------
#   returns: 110/100 − 1 = 0.1, 99/110 − 1 = −0.1, 108.9/99 − 1 = 0.1
#   mean = 0.1/3 = 1/30
#   sample variance = ((1/15)² + (−2/15)² + (1/15)²) / 2 = (6/225) / 2 = 1/75; deviation = 1/(5√3)
#   Sharpe = (1/30) x 5√3 x √252 = (√3/6) x √252 = √756/6 = √21 = 4.5826 → 4.58
#   downside deviation = √((0 + 0.01 + 0) / 3) = 1/(10√3)
#   Sortino = (1/30) x 10√3 x √252 = (√3/3) x √252 = √756/3 = √84 = 9.1652 → 9.17
#   drawdown: peak 110, trough 99 → ₹11.00, 11/110 = 10.00%; total return 8.90%
SMALL = curve("100", "110", "99", "108.90")


def test_daily_returns_of_the_small_curve() -> None:
    assert daily_returns(SMALL) == [D("0.1"), D("-0.1"), D("0.1")]


def test_sharpe_and_sortino_of_the_small_curve() -> None:
    returns = daily_returns(SMALL)
    assert sharpe(returns) == D("4.58")
    assert sortino(returns) == D("9.17")


def test_max_drawdown_of_the_small_curve() -> None:
    assert max_drawdown(SMALL) == Drawdown(amount=D("11.00"), pct=D("10.00"))


def test_the_largest_fall_in_rupees_and_in_percent_may_be_different_falls() -> None:
    # 100 → 50: ₹50, 50%.  1,000 → 900: ₹100, 10%.  The ₹ maximum is 100.00, the % maximum 50.00.
    assert max_drawdown(curve("100", "50", "1000", "900")) == Drawdown(amount=D("100.00"), pct=D("50.00"))


def test_a_drawdown_is_measured_from_the_running_peak_not_the_start() -> None:
    # 100 → 120 → 90 → 130: peak 120, trough 90: ₹30, 30/120 = 25.00%.
    assert max_drawdown(curve("100", "120", "90", "130")) == Drawdown(amount=D("30.00"), pct=D("25.00"))


def test_a_drawdown_percentage_rounds_half_up() -> None:
    # 300 → 299.985: fall 0.015 → ₹0.02 (half up); 0.015/300 x 100 = 0.005% → 0.01.
    assert max_drawdown(curve("300", "299.985")) == Drawdown(amount=D("0.02"), pct=D("0.01"))


# --- Trades by hand ------------------------------------------------------------------------------
# Wins +100, +50; losses −40, −20; one at 0. Risk ₹50 each.
#   win rate 2/5 = 40.00%; profit factor 150 / 60 = 2.50
#   R: 2, 1, −0.8, −0.4, 0 → sum 1.8 / 5 = 0.36
MIXED = [result("100"), result("50"), result("-40"), result("-20"), result("0")]


def test_the_trade_statistics_of_a_mixed_set() -> None:
    assert win_rate_pct(MIXED) == D("40.00")
    assert profit_factor(MIXED) == D("2.50")
    assert average_r(MIXED) == D("0.36")


def test_r_uses_the_distance_to_the_stop_whatever_the_side() -> None:
    # A SHORT from 200 with its stop at 210, 5 shares: risk |200 − 210| x 5 = ₹50; +75 is 1.5R.
    assert average_r([result("75", entry="200", stop="210", quantity=5)]) == D("1.50")
    # Two trades of different risk average their R, not their rupees: (1 + (−0.5)) / 2 = 0.25.
    assert average_r([result("50"), result("-50", entry="100", stop="90")]) == D("0.25")


def test_all_wins_have_no_profit_factor_and_a_full_win_rate() -> None:
    wins = [result("10"), result("25")]
    assert profit_factor(wins) is None
    assert win_rate_pct(wins) == D("100.00")
    assert average_r(wins) == D("0.35")  # (0.2 + 0.5) / 2


def test_all_losses_have_a_profit_factor_of_zero() -> None:
    losses = [result("-10"), result("-40")]
    assert profit_factor(losses) == D("0.00")
    assert win_rate_pct(losses) == D("0.00")
    assert average_r(losses) == D("-0.50")  # (−0.2 − 0.8) / 2


def test_no_trades_have_no_statistics() -> None:
    assert win_rate_pct([]) is None
    assert profit_factor([]) is None
    assert average_r([]) is None


def test_a_scratch_alone_is_no_win_and_no_loss() -> None:
    assert win_rate_pct([result("0")]) == D("0.00")
    assert profit_factor([result("0")]) is None


def test_a_win_rate_rounds_half_up() -> None:
    # 1 win in 8 = 12.5%; 2 in 3 = 66.666…% → 66.67.
    assert win_rate_pct([result("1")] + [result("-1")] * 7) == D("12.50")
    assert win_rate_pct([result("1"), result("1"), result("-1")]) == D("66.67")


# --- Ratios at their edges -----------------------------------------------------------------------


def test_sharpe_and_sortino_need_two_returns() -> None:
    assert sharpe([]) is None and sortino([]) is None
    assert sharpe([D("0.01")]) is None and sortino([D("-0.01")]) is None


def test_sharpe_of_two_returns() -> None:
    # 0.02 and 0: mean 0.01; sample deviation √((0.01² + 0.01²)/1) = 0.01√2; ratio 1/√2
    #   x √252 = √126 = 11.2250 → 11.22.  Downside: no day below zero → no Sortino.
    assert sharpe([D("0.02"), D("0")]) == D("11.22")
    assert sortino([D("0.02"), D("0")]) is None


def test_a_constant_return_has_no_sharpe() -> None:
    assert sharpe([D("0.01"), D("0.01"), D("0.01")]) is None


def test_sortino_of_a_losing_series_is_negative() -> None:
    # −0.01, −0.03: mean −0.02; downside √((0.0001 + 0.0009)/2) = √0.0005 = 0.0223607
    #   −0.02 / 0.0223607 = −0.894427 x √252 (15.874508) = −14.1986 → −14.20
    #   Sharpe: deviation √((0.01² + 0.01²)/1) = 0.0141421; −0.02/0.0141421 = −√2 x √252 = −√504 = −22.45
    assert sortino([D("-0.01"), D("-0.03")]) == D("-14.20")
    assert sharpe([D("-0.01"), D("-0.03")]) == D("-22.45")


# --- The whole summary, and its edges ------------------------------------------------------------


def test_the_summary_of_the_small_curve_and_the_mixed_trades() -> None:
    summary = performance(SMALL, MIXED, open_unrealised=[D("12.50"), D("-2.25")])
    assert summary.realised == D("90.00")  # 100 + 50 − 40 − 20 + 0
    assert summary.unrealised == D("10.25")
    assert (summary.trades, summary.wins, summary.losses) == (5, 2, 2)
    assert (summary.win_rate_pct, summary.profit_factor, summary.average_r) == (D("40.00"), D("2.50"), D("0.36"))
    assert summary.max_drawdown == Drawdown(D("11.00"), D("10.00"))
    assert summary.total_return_pct == D("8.90")
    assert (summary.sharpe, summary.sortino) == (D("4.58"), D("9.17"))


def test_one_point_has_no_returns_and_no_drawdown() -> None:
    summary = performance(curve("100000"), [])
    assert daily_returns(curve("100000")) == []
    assert summary.max_drawdown == Drawdown(D("0.00"), D("0.00"))
    assert summary.total_return_pct == D("0.00")
    assert (summary.sharpe, summary.sortino) == (None, None)
    assert (summary.realised, summary.unrealised, summary.trades) == (D("0.00"), D("0.00"), 0)


def test_no_points_have_no_return() -> None:
    summary = performance([], [])
    assert summary.total_return_pct is None
    assert summary.max_drawdown == Drawdown(D("0.00"), D("0.00"))


def test_flat_equity_has_no_drawdown_and_no_ratios() -> None:
    flat = curve("500000", "500000", "500000", "500000")
    summary = performance(flat, [])
    assert daily_returns(flat) == [D(0)] * 3
    assert summary.max_drawdown == Drawdown(D("0.00"), D("0.00"))
    assert summary.total_return_pct == D("0.00")
    assert (summary.sharpe, summary.sortino) == (None, None)


def test_a_rising_curve_has_a_sharpe_but_no_sortino() -> None:
    # 100 → 110 → 121 → 121: returns 0.1, 0.1, 0; mean 0.2/3 = 1/15
    #   deviations 1/30, 1/30, −2/30: squares sum 6/900, / 2 = 1/300; deviation 1/√300 = 0.0577350
    #   ratio (1/15) x √300 = 1.154701 x √252 (15.874508) = 18.3303 → 18.33; no day below zero
    summary = performance(curve("100", "110", "121", "121"), [])
    assert summary.sharpe == D("18.33")
    assert summary.sortino is None
    assert summary.max_drawdown == Drawdown(D("0.00"), D("0.00"))


# --- Against a benchmark -------------------------------------------------------------------------


def test_equity_against_a_benchmark_rebased_to_the_same_start() -> None:
    # Equity 1,000 → 1,100 → 1,050 (+5.00%); the index 200 → 210 → 220 (+10.00%).
    # Rebased: 1,000 x 200/200, 1,000 x 210/200, 1,000 x 220/200 = 1,000.00, 1,050.00, 1,100.00.
    comparison = against_benchmark(curve("1000", "1100", "1050"), levels("200", "210", "220"))
    assert comparison is not None
    assert comparison.rows == (
        BenchmarkRow(START, D("1000"), D("1000.00")),
        BenchmarkRow(START + dt.timedelta(days=1), D("1100"), D("1050.00")),
        BenchmarkRow(START + dt.timedelta(days=2), D("1050"), D("1100.00")),
    )
    assert (comparison.equity_return_pct, comparison.benchmark_return_pct) == (D("5.00"), D("10.00"))
    assert comparison.excess_return_pct == D("-5.00")


def test_the_comparison_starts_at_the_first_date_both_series_have() -> None:
    # The index starts a day late: the start is day 2 (equity 1,100, index 300); on day 3 the index
    # is 330 → rebased 1,100 x 330/300 = 1,210.00 (+10.00%); equity 1,100 → 1,155 = +5.00%.
    equity = curve("1000", "1100", "1155")
    comparison = against_benchmark(equity, levels("300", "330", first=START + dt.timedelta(days=1)))
    assert comparison is not None
    assert [row.benchmark for row in comparison.rows] == [D("1100.00"), D("1210.00")]
    assert comparison.excess_return_pct == D("-5.00")


def test_a_rebased_benchmark_rounds_to_the_paisa_and_the_excess_is_the_shown_returns_subtracted() -> None:
    # 1,000 x 301/300 = 1,003.3333 → 1,003.33 (+0.33%); equity +1.00%: excess 1.00 − 0.33 = 0.67.
    comparison = against_benchmark(curve("1000", "1010"), levels("300", "301"))
    assert comparison is not None
    assert comparison.rows[-1].benchmark == D("1003.33")
    assert (comparison.benchmark_return_pct, comparison.excess_return_pct) == (D("0.33"), D("0.67"))


def test_series_with_no_common_date_have_no_comparison() -> None:
    assert against_benchmark(curve("1000"), levels("200", first=START + dt.timedelta(days=9))) is None
    assert against_benchmark([], []) is None


# --- Refusals ------------------------------------------------------------------------------------


def test_bad_points_and_trades_are_refused() -> None:
    with pytest.raises(ValueError, match="equity on 2025-01-06 must be a positive"):
        EquityPoint(START, D("0"))
    with pytest.raises(ValueError, match="benchmark level"):
        BenchmarkPoint(START, D("-1"))
    with pytest.raises(ValueError, match="had no risk"):
        result("10", entry="100", stop="100")
    with pytest.raises(ValueError, match="quantity must be a positive whole number"):
        result("10", quantity=0)
    with pytest.raises(ValueError, match="stop must be a positive"):
        result("10", stop="0")
    with pytest.raises(ValueError, match="realised_pnl must be a finite Decimal"):
        result("NaN")


def test_a_series_out_of_date_order_is_refused() -> None:
    backwards = [EquityPoint(START, D("100")), EquityPoint(START, D("101"))]
    with pytest.raises(ValueError, match="must rise strictly: 2025-01-06 follows 2025-01-06"):
        daily_returns(backwards)
    with pytest.raises(ValueError, match="benchmark series"):
        against_benchmark(curve("100"), list(reversed(levels("1", "2"))))


# --- Properties ----------------------------------------------------------------------------------

equities = st.lists(st.integers(min_value=1, max_value=10_000_000), min_size=1, max_size=40).map(
    lambda values: [EquityPoint(START + dt.timedelta(days=i), Decimal(v) / 100) for i, v in enumerate(values)]
)


@settings(max_examples=200, deadline=None)
@given(equities)
def test_a_drawdown_is_never_negative_nor_more_than_the_peak(equity: list[EquityPoint]) -> None:
    drawdown = max_drawdown(equity)
    assert 0 <= drawdown.amount <= max(point.equity for point in equity)
    assert 0 <= drawdown.pct <= 100  # 100.00 only by rounding: equity stays above zero
    # A curve that only rises never draws down.
    rising = sorted(equity, key=lambda point: point.equity)
    dated = [EquityPoint(START + dt.timedelta(days=i), point.equity) for i, point in enumerate(rising)]
    assert max_drawdown(dated) == Drawdown(D("0.00"), D("0.00"))


@settings(max_examples=200, deadline=None)
@given(equities)
def test_a_benchmark_identical_to_the_curve_has_no_excess(equity: list[EquityPoint]) -> None:
    same = [BenchmarkPoint(point.date, point.equity) for point in equity]
    comparison = against_benchmark(equity, same)
    assert comparison is not None
    assert comparison.excess_return_pct == D("0.00")
    assert [row.benchmark for row in comparison.rows] == [point.equity.quantize(D("0.01")) for point in equity]
