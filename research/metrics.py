"""How good a backtest is, and how much of that is luck from having tried many.

The performance figures (Sharpe, Sortino, drawdown, CAGR, ...) are the desk's shared definitions
in ``vocabulary.performance``, re-exported here with their conventions (per-period returns, 252
periods a year, drawdown from an equity base of 1). On top of them, the corrections a search needs:

- ``expected_max_sharpe``: the best Sharpe ratio we would expect among ``n_trials`` strategies
  with no skill at all, given how much their Sharpe ratios vary (the False Strategy theorem,
  Bailey and López de Prado 2014): sqrt(V) x ((1 - g) Z(1 - 1/N) + g Z(1 - 1/(N e))), with g the
  Euler-Mascheroni constant and Z the standard normal quantile.
- ``probabilistic_sharpe_ratio``: the probability that the true Sharpe ratio exceeds a benchmark,
  given the observed one, the sample length and the returns' skewness and kurtosis:
  Phi((SR - SR*) sqrt(n - 1) / sqrt(1 - skew SR + (kurtosis - 1) / 4 SR^2)).
- ``deflated_sharpe_ratio``: that probability against the expected maximum of the trials, so a
  Sharpe ratio only counts if it beats what the search would have found by chance.
- ``probability_of_backtest_overfitting``: combinatorially symmetric cross-validation (Bailey,
  Borwein, López de Prado and Zhu 2017) over a periods x configurations matrix of returns.

All Sharpe ratios in the corrections are PER PERIOD (not annualised), and the kurtosis is RAW
(a normal distribution has 3), as in the papers' formulas. Undefined figures fail closed: a
probability that cannot be computed is 0.0, so a promotion gate never passes on it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from vocabulary.performance import (
    PERIODS_PER_YEAR,
    annualised_volatility,
    cagr,
    calmar_ratio,
    downside_deviation,
    equity_curve,
    exposure,
    max_drawdown,
    performance_summary,
    profit_factor,
    sharpe_ratio,
    sortino_ratio,
    total_return,
    win_rate,
)

__all__ = [
    "EULER_MASCHERONI",
    "PERIODS_PER_YEAR",
    "annualised_volatility",
    "cagr",
    "calmar_ratio",
    "cscv_logits",
    "deflated_sharpe_ratio",
    "downside_deviation",
    "equity_curve",
    "expected_max_sharpe",
    "exposure",
    "kurtosis",
    "max_drawdown",
    "performance_summary",
    "probabilistic_sharpe_ratio",
    "probability_of_backtest_overfitting",
    "profit_factor",
    "sharpe_ratio",
    "sharpe_ratios",
    "skewness",
    "sortino_ratio",
    "total_return",
    "win_rate",
]

EULER_MASCHERONI = 0.5772156649015329
_NORMAL = NormalDist()


def sharpe_ratios(matrix: np.ndarray, periods_per_year: int | None = None) -> np.ndarray:
    """Row-wise Sharpe ratios of a configs x periods matrix of returns: mean / std (ddof = 1),
    per period unless ``periods_per_year`` is given; 0.0 for a row with no spread or under two
    periods (as ``sharpe_ratio``)."""
    values = np.asarray(matrix, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"sharpe_ratios takes a 2-D configs x periods matrix, got shape {values.shape}")
    if values.shape[1] < 2:
        return np.zeros(values.shape[0])
    mean = values.mean(axis=1)
    centred = values - mean[:, np.newaxis]
    spread = np.sqrt(np.einsum("ij,ij->i", centred, centred) / (values.shape[1] - 1))
    # A spread of rounding noise (a constant row whose mean is not exactly representable) is none.
    ratios = np.divide(mean, spread, out=np.zeros_like(mean), where=spread > 1e-12 * np.abs(mean))
    if periods_per_year is not None:
        ratios *= math.sqrt(periods_per_year)
    return ratios


def skewness(returns: Sequence[float] | np.ndarray) -> float:
    """Sample skewness m3 / m2^1.5 (population moments); 0.0 without spread."""
    values = np.asarray(returns, dtype=np.float64)
    if values.size < 2:
        return 0.0
    centred = values - values.mean()
    m2 = float(np.mean(centred**2))
    return float(np.mean(centred**3)) / m2**1.5 if m2 > 0.0 else 0.0


def kurtosis(returns: Sequence[float] | np.ndarray) -> float:
    """RAW kurtosis m4 / m2^2 (a normal sample is near 3, not 0); 3.0 without spread."""
    values = np.asarray(returns, dtype=np.float64)
    if values.size < 2:
        return 3.0
    centred = values - values.mean()
    m2 = float(np.mean(centred**2))
    return float(np.mean(centred**4)) / m2**2 if m2 > 0.0 else 3.0


def expected_max_sharpe(n_trials: int, trials_sr_variance: float) -> float:
    """E[max SR] of ``n_trials`` skill-less trials whose (per-period) Sharpe ratios have variance
    ``trials_sr_variance``: sqrt(V) ((1 - g) Z(1 - 1/N) + g Z(1 - 1/(N e))). One trial (or none,
    or no variance) has no selection to correct for: 0.0."""
    if n_trials < 0:
        raise ValueError(f"n_trials must not be negative, got {n_trials}")
    if trials_sr_variance < 0 or not math.isfinite(trials_sr_variance):
        raise ValueError(f"the trials' Sharpe variance must be a finite, non-negative number, got {trials_sr_variance}")
    if n_trials <= 1 or trials_sr_variance == 0.0:
        return 0.0
    first = _NORMAL.inv_cdf(1.0 - 1.0 / n_trials)
    second = _NORMAL.inv_cdf(1.0 - 1.0 / (n_trials * math.e))
    return math.sqrt(trials_sr_variance) * ((1.0 - EULER_MASCHERONI) * first + EULER_MASCHERONI * second)


def probabilistic_sharpe_ratio(sr: float, sr_benchmark: float, n_obs: int, skew: float, kurtosis: float) -> float:
    """P(true SR > ``sr_benchmark``) from an observed per-period ``sr`` over ``n_obs`` returns
    with ``skew`` and RAW ``kurtosis``. 0.0 when undefined (under two observations, or a
    skew and kurtosis that make the variance term non-positive)."""
    if n_obs < 2:
        return 0.0
    variance_term = 1.0 - skew * sr + (kurtosis - 1.0) / 4.0 * sr * sr
    if not variance_term > 0.0 or not math.isfinite(variance_term):
        return 0.0
    z = (sr - sr_benchmark) * math.sqrt(n_obs - 1) / math.sqrt(variance_term)
    return _NORMAL.cdf(z)


def deflated_sharpe_ratio(
    sr: float, trials_sr_variance: float, n_trials: int, n_obs: int, skew: float, kurtosis: float
) -> float:
    """The probabilistic Sharpe ratio against the expected maximum Sharpe of ``n_trials`` trials
    (all per period; RAW kurtosis)."""
    benchmark = expected_max_sharpe(n_trials, trials_sr_variance)
    return probabilistic_sharpe_ratio(sr, benchmark, n_obs, skew, kurtosis)


def cscv_logits(performance_matrix: np.ndarray, n_splits: int) -> np.ndarray:
    """One logit per combination of CSCV: the rows (periods) are cut into ``n_splits`` contiguous
    blocks; each way of choosing half the blocks is an in-sample set and the other half its
    out-of-sample set. The configuration with the best in-sample Sharpe ratio is ranked out of
    sample (1 = worst .. N = best, ties at their mean rank), w = rank / (N + 1), and its logit is
    ln(w / (1 - w)): positive when it stays above the median out of sample."""
    values = _checked_matrix(performance_matrix, n_splits)
    blocks = np.array_split(np.arange(values.shape[0]), n_splits)
    counts = np.array([len(block) for block in blocks], dtype=np.float64)
    sums = np.stack([values[block].sum(axis=0) for block in blocks])
    squares = np.stack([(values[block] ** 2).sum(axis=0) for block in blocks])
    n_configs = values.shape[1]
    logits = []
    for chosen in itertools.combinations(range(n_splits), n_splits // 2):
        in_sample = np.zeros(n_splits, dtype=bool)
        in_sample[list(chosen)] = True
        is_sharpe = _pooled_sharpe(sums, squares, counts, in_sample)
        oos_sharpe = _pooled_sharpe(sums, squares, counts, ~in_sample)
        best = int(np.argmax(is_sharpe))
        below = float(np.sum(oos_sharpe < oos_sharpe[best]))
        level = float(np.sum(oos_sharpe == oos_sharpe[best])) - 1.0
        rank = 1.0 + below + level / 2.0
        relative = rank / (n_configs + 1.0)
        logits.append(math.log(relative / (1.0 - relative)))
    return np.array(logits)


def probability_of_backtest_overfitting(performance_matrix: np.ndarray, n_splits: int) -> float:
    """The share of CSCV combinations whose in-sample best configuration falls to or below the
    median out of sample (a logit <= 0; zero counts as overfit). ``performance_matrix`` is
    periods x configurations of per-period returns; ``n_splits`` even, at least 2, at most the
    number of periods. Near 0: the search's winner keeps winning; near 0.5 or above: its
    in-sample rank says nothing about its future."""
    logits = cscv_logits(performance_matrix, n_splits)
    return float(np.mean(logits <= 0.0))


def _checked_matrix(performance_matrix: np.ndarray, n_splits: int) -> np.ndarray:
    values = np.asarray(performance_matrix, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"the performance matrix must be periods x configurations, got shape {values.shape}")
    if n_splits < 2 or n_splits % 2:
        raise ValueError(f"n_splits must be an even number of at least 2, got {n_splits}")
    if values.shape[0] < 2 * n_splits:
        raise ValueError(f"{values.shape[0]} periods cannot fill {n_splits} blocks of at least two periods")
    if values.shape[1] < 2:
        raise ValueError("overfitting needs at least two configurations to choose between")
    if not np.isfinite(values).all():
        raise ValueError("the performance matrix must hold finite returns")
    return values


def _pooled_sharpe(sums: np.ndarray, squares: np.ndarray, counts: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """Per-period Sharpe ratio of each configuration over the chosen blocks, from the blocks'
    sums and sums of squares (0.0 without spread)."""
    n = counts[chosen].sum()
    total = sums[chosen].sum(axis=0)
    mean = total / n
    variance = np.maximum((squares[chosen].sum(axis=0) - n * mean * mean) / (n - 1.0), 0.0)
    spread = np.sqrt(variance)
    return np.divide(mean, spread, out=np.zeros_like(mean), where=spread > 1e-15)
