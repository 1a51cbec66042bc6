"""The research loop: out-of-sample fitness only, keep/discard against the incumbent, the hygiene
gate, n_trials across the session, the budgets and the dryness stop, and the finish."""

from __future__ import annotations

import numpy as np
import pytest

import research.loop as loop
from research.holdout import reserve
from research.loop import Gates, finish, run_search
from research.proposers import FixedProposer
from research.walkforward import WalkForwardResult
from tests.research.loop_support import CONFIG, spec, synthetic_bars, tune

STRICT = Gates(min_dsr=0.95, min_trades=10, max_drawdown=0.25, drawdown_guard=0.05)


@pytest.fixture(scope="module")
def data():
    search, _ = reserve({"AAA": synthetic_bars(600), "BBB": synthetic_bars(600, seed=2, symbol="BBB")}, 0.2, CONFIG)
    return search


# A cheat only a test may write: for each fold k, a parameter value that is long before every
# up-move of fold k's in-sample segment and before every down-move everywhere else (it peeks at the
# next close). Optimised per fold, each fold picks its own perfect in-sample config, which then
# meets the next window: perfect in sample, ruinous out of sample.
ORACLE = '''
import numpy as np
from research.signals.base import ParamRange, SignalStrategy


class InSampleOracle(SignalStrategy):
    """Peeks at the next close: right inside one segment, wrong everywhere else."""

    key = "in_sample_oracle"
    PARAM_RANGES = {"segment": ParamRange(0, 3, 1)}

    def positions(self, bars):
        size = len(bars) // 5
        index = np.arange(len(bars))
        ahead = np.zeros(len(bars), dtype=bool)
        ahead[:-1] = bars.close[1:] > bars.close[:-1]
        start = self.params["segment"] * size - 1
        inside = (index >= start) & (index < start + size)
        return np.where(inside, ahead, ~ahead).astype(np.int8)
'''


def test_a_config_great_in_sample_and_bad_out_of_sample_is_not_kept(data):
    oracle = {"kind": "code", "strategy": "InSampleOracle", "code": ORACLE, "rationale": "knows the segment"}
    proposer = FixedProposer([tune("sma_crossover", fast=10, slow=50), oracle])
    result = run_search(spec(allow_code_gen=True), data, proposer)
    sma, cheat = result.trials
    assert sma.decision == "kept"
    assert [fold["params"]["segment"] for fold in cheat.result.folds] == [0, 1, 2, 3]
    cheat_is = [fold["is_metrics"]["sharpe_per_period"] for fold in cheat.result.folds]
    sma_is = [fold["is_metrics"]["sharpe_per_period"] for fold in sma.result.folds]
    assert min(cheat_is) > 0.5 > max(sma_is)  # far better in sample, in every fold
    assert cheat.oos_sharpe < min(0.0, sma.oos_sharpe)
    assert cheat.decision == "discarded" and "does not beat" in cheat.reason
    assert result.incumbent == sma.number
    # Alone, under the desk's gates, it is not promotable either.
    alone = run_search(spec(gates=STRICT, allow_code_gen=True), data, FixedProposer([oracle]))
    assert alone.trials[0].decision == "discarded" and not alone.trials[0].promotable


def _result(sharpe: float, drawdown: float, *, trades: int = 20, dsr: float = 0.99) -> WalkForwardResult:
    return WalkForwardResult(
        folds=[],
        oos_returns=np.zeros(10),
        oos_metrics={},
        oos_sharpe=sharpe,
        dsr=dsr,
        n_trials=0,
        trades=trades,
        max_drawdown=drawdown,
    )


def test_keep_or_discard_against_the_incumbent_with_the_drawdown_guard(data, monkeypatch):
    figures = iter(
        [
            _result(0.05, -0.10),  # 1 first promotable: kept
            _result(0.04, -0.05),  # 2 lower OOS Sharpe: discarded
            _result(0.06, -0.20),  # 3 better Sharpe, drawdown 0.10 worse than the incumbent's: discarded
            _result(0.07, -0.14),  # 4 better Sharpe, drawdown within the guard: kept
            _result(0.10, -0.30),  # 5 drawdown beyond the gate: not promotable
            _result(0.10, -0.10, dsr=0.5),  # 6 deflated Sharpe below the gate
            _result(0.10, -0.10, trades=3),  # 7 too few trades
        ]
    )

    def fake_evaluate(strategy, params, bars, settings, config, *, n_trials_offset, prior_sharpes):
        result = next(figures)
        result.n_trials = n_trials_offset + 1
        return result

    monkeypatch.setattr(loop, "evaluate_config", fake_evaluate)
    proposals = [tune("sma_crossover", fast=5 + 5 * index, slow=100) for index in range(7)]
    result = run_search(spec(gates=STRICT), data, FixedProposer(proposals))
    decisions = [(trial.decision, trial.promotable) for trial in result.trials]
    assert decisions == [
        ("kept", True),
        ("discarded", True),
        ("discarded", True),
        ("kept", True),
        ("discarded", False),
        ("discarded", False),
        ("discarded", False),
    ]
    reasons = [trial.reason for trial in result.trials]
    assert "does not beat the incumbent's (trial 1" in reasons[1]
    assert "worse than the incumbent's -0.100 by more than 0.05" in reasons[2]
    assert "replaces trial 1" in reasons[3]
    assert "drawdown -0.300 is worse than -0.25" in reasons[4]
    assert "DSR 0.500 is below 0.95" in reasons[5]
    assert "3 OOS trades are fewer than 10" in reasons[6]
    assert result.incumbent == 4


def test_hygiene_rejects_unevaluated_and_n_trials_counts_only_evaluated_trials(data):
    proposals = [
        tune("sma_crossover", fast=10, slow=50),
        tune("sma_crossover", rationale="", fast=20, slow=60),
        {**tune("sma_crossover"), "params": {f"p{index}": index for index in range(7)}},
        tune("sma_crossover", fast=500, slow=50),
        tune("no_such_strategy", fast=10),
        {"kind": "code", "strategy": "Anything", "code": "class X: pass", "rationale": "new idea"},
        tune("macd_momentum", fast=12, slow=26, signal=9),
        tune("sma_crossover", fast=10, slow=50),
    ]
    result = run_search(spec(), data, FixedProposer(proposals))
    assert [trial.decision for trial in result.trials[1:6]] == ["rejected"] * 5
    reasons = [trial.reason for trial in result.trials[1:6]]
    assert "no rationale" in reasons[0]
    assert "7 parameters proposed; at most 5" in reasons[1]
    assert "fast=500 lies outside its range" in reasons[2]
    assert "unknown strategy 'no_such_strategy'" in reasons[3]
    assert "--allow-code-gen" in reasons[4]
    assert all(trial.result is None for trial in result.trials[1:6])
    assert [trial.n_trials_at_eval for trial in result.trials] == [1, 0, 0, 0, 0, 0, 2, 3]
    assert result.n_trials == 3
    first, last = result.trials[0], result.trials[-1]
    assert first.oos_sharpe == last.oos_sharpe  # the same config, the same OOS figures
    assert last.dsr < first.dsr  # but three trials in, the bar is higher


def test_the_trial_budget_stops_the_loop(data):
    proposals = [tune("sma_crossover", fast=5 * index, slow=100) for index in range(1, 10)]
    result = run_search(spec(max_trials=3), data, FixedProposer(proposals))
    assert len(result.trials) == 3
    assert result.stop_reason == "trial budget: 3 trials"


def test_the_token_budget_stops_a_proposer_that_spends_tokens(data):
    proposals = [tune("sma_crossover", fast=5 * index, slow=100) for index in range(1, 10)]
    proposer = FixedProposer(proposals, tokens=[600] * 9)
    result = run_search(spec(max_tokens=1000), data, proposer)
    assert len(result.trials) == 2  # 600 spent < 1000: one more proposal; 1200 spent: stop
    assert result.tokens_used == 1200
    assert result.stop_reason.startswith("token budget: 1200 of 1000")


def test_k_rounds_without_an_improvement_stop_the_loop(data):
    proposals = [tune("sma_crossover", fast=5 * index, slow=100) for index in range(1, 10)]
    impossible = Gates(min_dsr=1.01, min_trades=0, max_drawdown=1.0, drawdown_guard=1.0)
    result = run_search(spec(gates=impossible, dry_rounds=3), data, FixedProposer(proposals))
    assert len(result.trials) == 3
    assert result.stop_reason == "dry: 3 rounds in a row without an OOS improvement"


def test_an_exhausted_proposer_or_a_cancel_stops_the_loop(data):
    result = run_search(spec(), data, FixedProposer([tune("sma_crossover", fast=10, slow=50)]))
    assert result.stop_reason == "the proposer has nothing more to propose" and len(result.trials) == 1
    calls = iter([False, False, True])
    proposals = [tune("sma_crossover", fast=5 * index, slow=100) for index in range(1, 10)]
    cancelled = run_search(spec(), data, FixedProposer(proposals), should_stop=lambda: next(calls))
    assert cancelled.stop_reason == "cancelled" and len(cancelled.trials) == 2


def test_finish_scores_the_shortlist_once_and_stamps_each_candidate():
    bars = {"AAA": synthetic_bars(600), "BBB": synthetic_bars(600, seed=2, symbol="BBB")}
    search, holdout = reserve(bars, 0.2, CONFIG)
    session = spec()
    proposals = [
        tune("macd_momentum", fast=12, slow=26, signal=9),
        tune("sma_crossover", fast=10, slow=50),
        tune("donchian_breakout", entry=20, exit=10),
    ]
    result = run_search(session, search, FixedProposer(proposals))
    events: list[dict] = []
    outcome = finish(session, result, holdout, provenance={"session": 7}, on_event=events.append)
    assert holdout.scored
    assert outcome.pbo is not None and 0.0 <= outcome.pbo <= 1.0
    kept = [trial.number for trial in result.trials if trial.decision == "kept"]
    assert [record.number for record in outcome.shortlist] == sorted(
        kept, key=lambda number: -result.trial(number).oos_sharpe
    )
    first = outcome.candidates[0]
    assert first["rank"] == 1
    assert first["provenance"]["session"] == 7
    assert set(first["provenance"]) >= {"trial", "proposer", "rationale"}
    assert first["holdout_metrics"]["bars"] == 120
    assert first["dsr"] == outcome.shortlist[0].dsr
    assert first["oos_metrics"]["sharpe_per_period"] == outcome.shortlist[0].oos_sharpe
    assert events[-1]["event"] == "holdout"


def test_a_code_proposal_is_loaded_through_the_sandbox_and_optimised_per_fold(data):
    from tests.research.test_sandbox import EMA_CROSSOVER

    code = {"kind": "code", "strategy": "EmaCrossover", "code": EMA_CROSSOVER, "rationale": "EMAs react faster."}
    result = run_search(spec(allow_code_gen=True), data, FixedProposer([code]))
    trial = result.trials[0]
    assert trial.decision == "kept", trial.reason
    assert len(trial.result.folds) == 4
    assert all(fold["params"]["fast"] < fold["params"]["slow"] for fold in trial.result.folds)
    assert trial.strategy_class is not None and trial.strategy_class.__name__ == "EmaCrossover"
