"""Walk-forward validation: folds and their purge gaps, OOS-only aggregates, no look-ahead, and the
deflated Sharpe's n_trials and variance from the session."""

from __future__ import annotations

import numpy as np
import pytest

from research.signals import SIGNALS
from research.walkforward import (
    WalkForwardSettings,
    evaluate_config,
    make_folds,
    param_grid,
    walk_forward,
)
from tests.research.loop_support import CONFIG, synthetic_bars

SMA = SIGNALS["sma_crossover"]


def test_rolling_folds_leave_a_purge_gap_and_score_the_next_window():
    folds = make_folds(600, WalkForwardSettings(window="rolling", folds=5, purge_bars=5))
    assert len(folds) == 5
    for index, fold in enumerate(folds):
        assert (fold.is_start, fold.is_stop) == (index * 100, (index + 1) * 100 - 5)
        assert (fold.oos_start, fold.oos_stop) == ((index + 1) * 100, (index + 2) * 100)
        assert fold.purge == 5 and fold.is_stop < fold.oos_start
    # The OOS windows are contiguous, never overlap, and cover everything after the first segment.
    assert [fold.oos_start for fold in folds[1:]] == [fold.oos_stop for fold in folds[:-1]]
    assert folds[-1].oos_stop == 600


def test_anchored_folds_grow_from_the_first_bar():
    folds = make_folds(601, WalkForwardSettings(window="anchored", folds=5, purge_bars=3))
    assert all(fold.is_start == 0 for fold in folds)
    assert [fold.is_stop for fold in folds] == [97, 197, 297, 397, 497]
    assert folds[-1].oos_stop == 601  # the remainder goes to the last OOS window


def test_it_refuses_windows_too_short_to_judge():
    with pytest.raises(ValueError, match="too few"):
        make_folds(100, WalkForwardSettings(folds=5, purge_bars=5))
    with pytest.raises(ValueError, match="rolling"):
        WalkForwardSettings(window="expanding")  # type: ignore[arg-type]


def test_settings_come_from_the_research_mapping():
    settings = WalkForwardSettings.from_mapping({"WINDOW": "anchored", "FOLDS": 3, "PURGE_BARS": 2})
    assert settings == WalkForwardSettings(window="anchored", folds=3, purge_bars=2)


def test_a_fixed_config_is_scored_on_the_concatenated_oos_windows_only():
    bars = {"AAA": synthetic_bars(600)}
    settings = WalkForwardSettings(folds=4, purge_bars=5)
    result = evaluate_config(SMA, {"fast": 10, "slow": 50}, bars, settings, CONFIG)
    folds = make_folds(600, settings)
    assert result.oos_returns.size == sum(fold.oos_stop - fold.oos_start for fold in folds) == 480
    assert [record["params"] for record in result.folds] == [{"fast": 10, "slow": 50}] * 4
    assert result.oos_metrics["bars"] == 480
    assert result.trades == sum(record["oos_metrics"]["trades"] for record in result.folds)
    for record in result.folds:
        assert record["in_sample"]["end"] < record["out_of_sample"]["start"]
        assert record["is_metrics"]["bars"] == 115 and record["oos_metrics"]["bars"] == 120


def test_future_bars_never_change_a_folds_figures():
    """Perturb every bar after fold 1's OOS window: folds 0 and 1 are identical."""
    bars = synthetic_bars(600)
    settings = WalkForwardSettings(folds=4, purge_bars=5)
    cut = make_folds(600, settings)[1].oos_stop
    changed = synthetic_bars(600, seed=99)
    mixed = type(bars)(
        symbol=bars.symbol,
        dates=bars.dates,
        **{
            name: np.r_[getattr(bars, name)[:cut], getattr(changed, name)[cut:]]
            for name in ("open", "high", "low", "close", "volume")
        },
    )
    grid = param_grid(SMA, 30)
    before = walk_forward(SMA, grid, {"AAA": bars}, settings, CONFIG)
    after = walk_forward(SMA, grid, {"AAA": mixed}, settings, CONFIG)
    assert before.folds[:2] == after.folds[:2]
    assert before.folds[2:] != after.folds[2:]


def test_a_grid_is_optimised_in_sample_per_fold():
    bars = {"AAA": synthetic_bars(600, seed=3)}
    settings = WalkForwardSettings(folds=4, purge_bars=5)
    grid = param_grid(SMA, 40)
    result = walk_forward(SMA, grid, bars, settings, CONFIG)
    for record in result.folds:
        # The chosen parameters have the best in-sample Sharpe among the grid in that fold.
        chosen_sharpe = record["is_metrics"]["sharpe_per_period"]
        best = max(
            evaluate_config(SMA, point, bars, settings, CONFIG).folds[record["fold"]]["is_metrics"]["sharpe_per_period"]
            for point in grid
        )
        assert chosen_sharpe == pytest.approx(best, abs=2e-3)
        assert record["params"] in grid


def test_n_trials_accumulates_and_raises_the_bar():
    bars = {"AAA": synthetic_bars(600, seed=5)}
    settings = WalkForwardSettings(folds=4, purge_bars=5)
    params = {"fast": 10, "slow": 50}
    prior = [0.02, -0.03, 0.05, 0.0]
    first = evaluate_config(SMA, params, bars, settings, CONFIG, n_trials_offset=0, prior_sharpes=prior)
    later = evaluate_config(SMA, params, bars, settings, CONFIG, n_trials_offset=40, prior_sharpes=prior)
    assert (first.n_trials, later.n_trials) == (1, 41)
    assert first.oos_sharpe == later.oos_sharpe
    assert later.dsr < first.dsr


def test_param_grid_leaves_out_points_the_strategy_refuses():
    grid = param_grid(SMA)
    assert grid and all(point["fast"] < point["slow"] for point in grid)
