"""Performance metrics and the multiple-testing corrections against examples worked by hand.

Every expected value below is derived in the comments from the formula it checks, so a reader can
redo the arithmetic on paper; the assertions use the intermediate numbers written there, not the
code under test. Pure: no database.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest

from research import metrics
from research.metrics import (
    annualised_volatility,
    cagr,
    calmar_ratio,
    cscv_logits,
    deflated_sharpe_ratio,
    expected_max_sharpe,
    exposure,
    kurtosis,
    max_drawdown,
    performance_summary,
    probabilistic_sharpe_ratio,
    probability_of_backtest_overfitting,
    profit_factor,
    sharpe_ratio,
    sharpe_ratios,
    skewness,
    sortino_ratio,
    total_return,
    win_rate,
)
from vocabulary import performance

# The worked series: five daily returns.
RETURNS = [0.01, -0.02, 0.03, -0.01, 0.02]
SQRT_252 = 15.874507866387544  # sqrt(252)


def test_research_metrics_expose_the_shared_vocabulary():
    for name in ("sharpe_ratio", "sortino_ratio", "max_drawdown", "cagr", "calmar_ratio", "performance_summary"):
        assert getattr(metrics, name) is getattr(performance, name)


def test_sharpe_of_the_worked_series():
    # mean = (0.01 - 0.02 + 0.03 - 0.01 + 0.02) / 5 = 0.03 / 5 = 0.006
    # deviations from the mean: 0.004, -0.026, 0.024, -0.016, 0.014
    # squares: 0.000016 + 0.000676 + 0.000576 + 0.000256 + 0.000196 = 0.00172
    # sample variance (ddof = 1): 0.00172 / 4 = 0.00043; std = sqrt(0.00043) = 0.0207364413...
    # Sharpe = 0.006 / 0.0207364413 x sqrt(252) = 0.289345 x 15.874508 = 4.59322
    assert sharpe_ratio(RETURNS) == pytest.approx(4.59322, abs=1e-5)
    # Per period (periods_per_year = 1): 0.289345
    assert sharpe_ratio(RETURNS, periods_per_year=1) == pytest.approx(0.289345, abs=1e-6)


def test_sortino_counts_the_downside_over_every_period():
    # min(r, 0): 0, -0.02, 0, -0.01, 0; squares 0.0004 and 0.0001 sum to 0.0005
    # over ALL five periods: mean 0.0001, downside deviation sqrt(0.0001) = 0.01
    # Sortino = 0.006 / 0.01 x sqrt(252) = 0.6 x 15.874508 = 9.524705
    assert performance.downside_deviation(RETURNS) == pytest.approx(0.01, abs=1e-12)
    assert sortino_ratio(RETURNS) == pytest.approx(9.524705, abs=1e-6)


def test_drawdown_equity_cagr_and_calmar_of_the_worked_series():
    # equity from 1: 1.01; 1.01 x 0.98 = 0.9898; x 1.03 = 1.019494; x 0.99 = 1.00929906;
    # x 1.02 = 1.0294850412
    assert performance.equity_curve(RETURNS) == pytest.approx([1.01, 0.9898, 1.019494, 1.00929906, 1.0294850412])
    assert total_return(RETURNS) == pytest.approx(0.0294850412, abs=1e-12)
    # drawdowns: 0.9898 / 1.01 - 1 = -0.02 (from the peak 1.01); 1.00929906 / 1.019494 - 1 = -0.01
    assert max_drawdown(RETURNS) == pytest.approx(-0.02, abs=1e-12)
    # CAGR over 5 / 252 years: 1.0294850412 ^ (252 / 5) - 1 = exp(50.4 x ln 1.0294850412) - 1
    #   ln 1.0294850412 = 0.0290584...; x 50.4 = 1.464546...; exp(...) - 1 = 3.325637
    assert cagr(RETURNS) == pytest.approx(3.325637, abs=1e-5)
    # Calmar = 3.325637 / |-0.02| = 166.28
    assert calmar_ratio(RETURNS) == pytest.approx(3.325637 / 0.02, abs=1e-3)
    # volatility = 0.0207364413 x sqrt(252) = 0.329180
    assert annualised_volatility(RETURNS) == pytest.approx(0.0207364413 * SQRT_252, abs=1e-8)


def test_a_first_period_loss_is_a_drawdown_from_the_base_of_one():
    # equity 0.9 then 0.945: the peak is the base 1, so the drawdown is 0.9 - 1 = -10%
    assert max_drawdown([-0.1, 0.05]) == pytest.approx(-0.1)
    # a straight rise never draws down
    assert max_drawdown([0.01, 0.02]) == 0.0


def test_degenerate_series_are_defined():
    assert performance_summary([]) == {
        "n_periods": 0,
        "total_return": 0.0,
        "cagr": 0.0,
        "annualised_volatility": 0.0,
        "sharpe": 0.0,
        "sortino": 0.0,
        "max_drawdown": 0.0,
        "calmar": 0.0,
        "win_rate": 0.0,
        "profit_factor": 0.0,
        "n_trades": 0,
        "exposure": 0.0,
    }
    constant = [0.001] * 10
    # no spread: Sharpe 0.0 (not infinite); no loss: Sortino 0.0; no drawdown: Calmar 0.0
    assert sharpe_ratio(constant) == 0.0
    assert sortino_ratio(constant) == 0.0
    assert calmar_ratio(constant) == 0.0
    # ten periods of +0.1% over 10 / 252 years: 1.001 ^ 10 ^ (252 / 10) - 1 = 1.001 ^ 252 - 1
    assert cagr(constant) == pytest.approx(1.001**252 - 1.0)
    assert sharpe_ratio([0.05]) == 0.0
    assert annualised_volatility([0.05]) == 0.0
    # wiped out: CAGR -100%
    assert cagr([0.1, -1.0]) == -1.0


def test_a_missing_return_is_refused():
    with pytest.raises(ValueError, match="finite"):
        sharpe_ratio([0.01, float("nan")])
    with pytest.raises(ValueError, match="flat sequence"):
        sharpe_ratio(np.zeros((2, 2)))


def test_trade_figures():
    pnl = [Decimal("100"), Decimal("-50"), Decimal("0"), Decimal("200"), Decimal("-25")]
    # wins: 100 and 200 (a break-even trade is no win) -> 2 / 5
    assert win_rate(pnl) == pytest.approx(0.4)
    # gross profit 300, gross loss 75 -> 4.0
    assert profit_factor(pnl) == pytest.approx(4.0)
    assert profit_factor([10.0, 5.0]) == 0.0  # no losing trade: undefined, 0.0
    assert exposure([0, 1, 1, -1, 0]) == pytest.approx(0.6)
    summary = performance_summary(RETURNS, pnl, [0, 1, 1, -1, 0])
    assert summary["n_trades"] == 5
    assert summary["exposure"] == pytest.approx(0.6)
    assert summary["sharpe"] == pytest.approx(4.59322, abs=1e-5)


def test_row_wise_sharpe_ratios_match_the_single_series():
    rng = np.random.default_rng(3)
    matrix = rng.normal(0.001, 0.01, (6, 50))
    matrix[2] = 0.002  # constant row: 0.0
    expected = [sharpe_ratio(row, periods_per_year=1) for row in matrix]
    assert sharpe_ratios(matrix) == pytest.approx(expected, abs=1e-12)
    assert sharpe_ratios(matrix, periods_per_year=252)[0] == pytest.approx(sharpe_ratio(matrix[0]), abs=1e-12)
    assert sharpe_ratios(matrix)[2] == 0.0


def test_moments_are_raw():
    # r = -1, 0, 1: mean 0, m2 = 2/3, m3 = 0, m4 = 2/3 -> skew 0, kurtosis (2/3) / (4/9) = 1.5
    assert skewness([-1.0, 0.0, 1.0]) == 0.0
    assert kurtosis([-1.0, 0.0, 1.0]) == pytest.approx(1.5)
    normal = np.random.default_rng(0).normal(size=200_000)
    assert kurtosis(normal) == pytest.approx(3.0, abs=0.05)  # raw: a normal is 3, not 0


def test_expected_max_sharpe_by_the_euler_mascheroni_form():
    # N = 100 trials, Sharpe variance V = 0.0025 (sd 0.05), g = 0.5772156649
    # Z(1 - 1/100) = Z(0.99) = 2.3263479
    # Z(1 - 1/(100 e)) = Z(1 - 0.0036788) = Z(0.9963212) = 2.6802104
    # E[max] = 0.05 x ((1 - g) x 2.3263479 + g x 2.6802104)
    #        = 0.05 x (0.9835728 + 1.5470646) = 0.05 x 2.5306374 = 0.1265319
    assert expected_max_sharpe(100, 0.0025) == pytest.approx(0.1265301, abs=2e-6)
    # one trial (or none, or no spread between trials) selects nothing: no correction
    assert expected_max_sharpe(1, 0.0025) == 0.0
    assert expected_max_sharpe(100, 0.0) == 0.0
    with pytest.raises(ValueError):
        expected_max_sharpe(10, -0.1)


def test_probabilistic_sharpe_ratio_worked():
    # SR = 0.1 per period, benchmark 0, n = 101, skew 0, raw kurtosis 3 (normal)
    # variance term = 1 - 0 x 0.1 + (3 - 1) / 4 x 0.1^2 = 1 + 0.5 x 0.01 = 1.005
    # z = (0.1 - 0) x sqrt(100) / sqrt(1.005) = 1 / 1.0024969 = 0.9975093
    # PSR = Phi(0.9975093) = 0.84074
    assert probabilistic_sharpe_ratio(0.1, 0.0, 101, 0.0, 3.0) == pytest.approx(0.84074, abs=1e-5)
    # at the benchmark: one half
    assert probabilistic_sharpe_ratio(0.1, 0.1, 101, 0.0, 3.0) == pytest.approx(0.5)
    # undefined inputs fail closed
    assert probabilistic_sharpe_ratio(0.1, 0.0, 1, 0.0, 3.0) == 0.0
    assert probabilistic_sharpe_ratio(1.0, 0.0, 100, 5.0, 3.0) == 0.0  # 1 - 5 + 0.5 < 0


def test_deflated_sharpe_ratio_worked():
    # SR = 0.2 per period over 252 returns, skew -0.5, raw kurtosis 4, after 100 trials with
    # Sharpe variance 0.0025: the benchmark is E[max] = 0.1265301 (above)
    # variance term = 1 - (-0.5)(0.2) + (4 - 1) / 4 x 0.2^2 = 1 + 0.1 + 0.03 = 1.13
    # z = (0.2 - 0.1265301) x sqrt(251) / sqrt(1.13) = 0.0734699 x 15.842980 / 1.0630146 = 1.0949816
    # DSR = Phi(1.0949816) = 0.86324
    assert deflated_sharpe_ratio(0.2, 0.0025, 100, 252, -0.5, 4.0) == pytest.approx(0.86324, abs=1e-5)
    # the more trials, the higher the bar
    assert deflated_sharpe_ratio(0.2, 0.0025, 1000, 252, -0.5, 4.0) < deflated_sharpe_ratio(
        0.2, 0.0025, 100, 252, -0.5, 4.0
    )


def test_pbo_worked_on_two_configurations():
    # Two blocks of two periods, two configurations:
    #   A = 0.03, 0.01 | -0.01, -0.03   block Sharpe: mean 0.02 / sd 0.0141421 = 1.414 | -1.414
    #   B = 0.00, 0.01 |  0.00,  0.01   block Sharpe: 0.005 / 0.0070711 = 0.707 | 0.707
    # In-sample block 1: A is best (1.414), out of sample A (-1.414) is below B: rank 1 of 2,
    #   w = 1 / 3, logit ln((1/3) / (2/3)) = -ln 2.
    # In-sample block 2: B is best (0.707 > -1.414), out of sample B (0.707) is below A (1.414):
    #   again rank 1, logit -ln 2. Both combinations overfit: PBO = 1.
    matrix = np.array([[0.03, 0.00], [0.01, 0.01], [-0.01, 0.00], [-0.03, 0.01]])
    assert cscv_logits(matrix, 2) == pytest.approx([-math.log(2), -math.log(2)])
    assert probability_of_backtest_overfitting(matrix, 2) == 1.0


def test_pbo_is_zero_when_one_configuration_dominates_everywhere():
    rng = np.random.default_rng(1)
    matrix = rng.normal(0.0, 0.01, (240, 12))
    matrix[:, 4] += 0.02  # far better in every block
    assert probability_of_backtest_overfitting(matrix, 8) == 0.0


def test_pbo_of_pure_noise_is_near_one_half():
    values = [
        probability_of_backtest_overfitting(np.random.default_rng(seed).normal(0.0, 0.01, (240, 20)), 8)
        for seed in range(30)
    ]
    assert 0.35 < float(np.mean(values)) < 0.65


def test_a_logit_of_zero_counts_as_overfit():
    # Three identical configurations: the in-sample best ties with every other out of sample,
    # mean rank 2 of 3, w = 2 / 4 = 0.5, logit 0: overfit.
    matrix = np.tile(np.array([[0.01], [-0.01], [0.02], [0.0]]), (1, 3))
    assert cscv_logits(matrix, 2) == pytest.approx([0.0, 0.0])
    assert probability_of_backtest_overfitting(matrix, 2) == 1.0


def test_pbo_refuses_bad_shapes():
    with pytest.raises(ValueError, match="even"):
        probability_of_backtest_overfitting(np.zeros((40, 3)), 3)
    with pytest.raises(ValueError, match="two configurations"):
        probability_of_backtest_overfitting(np.zeros((40, 1)), 4)
    with pytest.raises(ValueError, match="blocks"):
        probability_of_backtest_overfitting(np.zeros((6, 3)), 4)


@pytest.mark.parametrize("seed", range(5))
def test_the_summary_agrees_with_each_function(seed):
    rng = np.random.default_rng(seed)
    returns = rng.normal(0.0005, 0.02, 50 + seed * 40)
    pnl = rng.normal(0.0, 100.0, 7)
    held = rng.integers(-1, 2, returns.size)
    summary = performance_summary(returns, pnl, held)
    assert summary["n_periods"] == returns.size
    assert summary["total_return"] == pytest.approx(total_return(returns), abs=1e-12)
    assert summary["cagr"] == pytest.approx(cagr(returns), abs=1e-12)
    assert summary["annualised_volatility"] == pytest.approx(annualised_volatility(returns), abs=1e-12)
    assert summary["sharpe"] == pytest.approx(sharpe_ratio(returns), abs=1e-12)
    assert summary["sortino"] == pytest.approx(sortino_ratio(returns), abs=1e-12)
    assert summary["max_drawdown"] == pytest.approx(max_drawdown(returns), abs=1e-12)
    assert summary["calmar"] == pytest.approx(calmar_ratio(returns), abs=1e-12)
    assert summary["win_rate"] == win_rate(pnl)
    assert summary["profit_factor"] == pytest.approx(profit_factor(pnl))
    assert summary["exposure"] == exposure(held)
