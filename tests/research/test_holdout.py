"""The sacred holdout: reserved up front, structurally out of the search's reach, scored once."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from agents.domain.llm import ModelChoice
from agents.roles import OfflineModel
from research.holdout import HoldoutEntry, HoldoutSpent, align, reserve
from research.loop import finish, run_search
from research.proposers import LLMProposer, OptunaProposer
from research.signals import SIGNALS, Bars
from tests.research.loop_support import CONFIG, spec, synthetic_bars

FIELDS = ("open", "high", "low", "close", "volume")


def _with_new_holdout(bars: Bars, cut: int, seed: int) -> Bars:
    """The same bars before ``cut``; from ``cut`` on, a different market altogether."""
    other = synthetic_bars(len(bars), seed=seed, drift=-0.003)
    scale = bars.close[cut - 1] / other.close[cut - 1]
    arrays = {
        name: np.r_[
            getattr(bars, name)[:cut], np.round(getattr(other, name)[cut:] * (scale if name != "volume" else 1), 2)
        ]
        for name in FIELDS
    }
    return Bars(symbol=bars.symbol, dates=bars.dates, **arrays)


def test_the_search_gets_copies_of_the_bars_before_the_holdout():
    bars = synthetic_bars(600)
    search, holdout = reserve({"AAA": bars}, 0.2, CONFIG)
    assert len(search) == 480
    assert str(holdout.start) == str(bars.dates[480])
    assert search.dates[-1] < np.datetime64(holdout.start)
    assert not np.shares_memory(search.bars["AAA"].close, bars.close)


def test_the_holdout_exposes_no_bars_and_cannot_leave_the_process():
    _, holdout = reserve({"AAA": synthetic_bars(600)}, 0.2, CONFIG)
    public = {name: getattr(holdout, name) for name in dir(holdout) if not name.startswith("_")}
    assert not any(isinstance(value, Bars | np.ndarray | dict) for value in public.values())
    with pytest.raises(TypeError):
        pickle.dumps(holdout)


def test_it_is_scored_once():
    _, holdout = reserve({"AAA": synthetic_bars(600)}, 0.2, CONFIG)
    entry = HoldoutEntry(1, SIGNALS["sma_crossover"], {"fast": 10, "slow": 50})
    scores = holdout.score_once([entry])
    assert scores[0]["trial"] == 1 and scores[0]["bars"] == 120
    with pytest.raises(HoldoutSpent):
        holdout.score_once([entry])
    assert holdout.scored


def test_symbols_are_aligned_on_their_common_dates():
    first = synthetic_bars(300, symbol="AAA")
    second = synthetic_bars(310, symbol="BBB", seed=2)
    mask = np.ones(310, dtype=bool)
    mask[[5, 17, 300]] = False
    second = Bars(symbol="BBB", dates=second.dates[mask], **{name: getattr(second, name)[mask] for name in FIELDS})
    aligned = align({"AAA": first, "BBB": second})
    assert len(aligned["AAA"]) == len(aligned["BBB"]) == 298
    assert (aligned["AAA"].dates == aligned["BBB"].dates).all()


@pytest.mark.parametrize("proposer", ["optuna", "offline-llm"])
def test_changing_every_holdout_bar_leaves_the_whole_search_trajectory_identical(proposer):
    bars = {"AAA": synthetic_bars(600), "BBB": synthetic_bars(600, seed=2, symbol="BBB")}
    changed = {symbol: _with_new_holdout(symbol_bars, 480, seed=42) for symbol, symbol_bars in bars.items()}
    assert not np.array_equal(changed["AAA"].close, bars["AAA"].close)
    session = spec(max_trials=8)

    def trajectory(all_bars):
        search_data, holdout = reserve(all_bars, 0.2, CONFIG)
        chosen = (
            OptunaProposer(7, SIGNALS)
            if proposer == "optuna"
            else LLMProposer(ModelChoice(OfflineModel(), "offline-rules", "offline-rules"))
        )
        events: list[dict] = []
        result = run_search(session, search_data, chosen, on_event=events.append)
        outcome = finish(session, result, holdout)
        return events, outcome

    events, outcome = trajectory(bars)
    changed_events, changed_outcome = trajectory(changed)
    assert len(events) > 5
    assert events == changed_events  # every proposal, trial, fold and the stop
    assert [record.number for record in outcome.shortlist] == [record.number for record in changed_outcome.shortlist]
    assert outcome.shortlist, "the lenient gates keep at least the first trial"
    assert outcome.holdout != changed_outcome.holdout  # only the final exam saw the new bars
