"""The trader: follows the debate with placeholder levels, escalates to the deep model at high
conviction, and a thesis for another instrument fails closed."""

from __future__ import annotations

from typing import Any

import pytest

from agents.domain.llm import ModelRequest, StageFailed
from agents.roles import DebateResult, TradeThesis, anchors_from_bundle, propose_thesis
from agents.roles.trader import trader_request
from tests.agents.roles.builders import (
    BULLISH,
    FUNDAMENTALS,
    GOOD_NEWS,
    SYMBOL,
    FakeClient,
    ask,
    choose,
    full_bundle,
    make_bundle,
    offline_debate,
    panel_notes,
    wrong_ticker,
)


def test_the_trader_follows_the_debate_with_atr_placeholder_levels() -> None:
    bundle = make_bundle(BULLISH, items=GOOD_NEWS, fundamentals=FUNDAMENTALS)
    notes, debate = offline_debate(bundle)
    thesis = ask(trader_request(debate, notes, anchors_from_bundle(bundle)))
    assert isinstance(thesis, TradeThesis)
    assert (thesis.direction, thesis.conviction) == (debate.winner, debate.conviction)
    assert (thesis.entry, thesis.stop, thesis.target) == (750.0, 725.0, 800.0)  # 2×ATR 12.50 stop, 2R target
    assert thesis.horizon_sessions == 10
    assert thesis.invalidation_conditions == debate.falsifiers


def _debate(conviction: float) -> DebateResult:
    return DebateResult(symbol=SYMBOL, winner="LONG", conviction=conviction, manager_rationale="Trend and news agree.")


@pytest.mark.parametrize(("conviction", "model"), [(0.75, "deep-model"), (0.9, "deep-model"), (0.74, "default-model")])
def test_the_trader_escalates_to_the_deep_model_at_high_conviction(conviction: float, model: str) -> None:
    client = FakeClient()
    thesis = propose_thesis(choose(client), _debate(conviction), panel_notes(), anchors_from_bundle(full_bundle()))
    assert client.calls == [("trader", model)]
    assert (thesis.direction, thesis.conviction, thesis.entry) == ("LONG", conviction, 750.0)


def test_a_thesis_for_another_ticker_fails_closed() -> None:
    client = FakeClient(patch=wrong_ticker("trader"))
    with pytest.raises(StageFailed):
        propose_thesis(choose(client), _debate(0.6), panel_notes(), anchors_from_bundle(full_bundle()))
    assert client.roles() == ["trader", "trader"]


def test_a_thesis_naming_another_universe_symbol_fails_closed_when_the_universe_is_given() -> None:
    def peer(request: ModelRequest, answer: dict[str, Any]) -> dict[str, Any]:
        return answer | {"rationale": "Buy TCS instead."} if request.role == "trader" else answer

    anchors = anchors_from_bundle(full_bundle())
    with pytest.raises(StageFailed):
        propose_thesis(choose(FakeClient(patch=peer)), _debate(0.6), panel_notes(), anchors, other_symbols=["TCS"])
    assert propose_thesis(choose(FakeClient(patch=peer)), _debate(0.6), panel_notes(), anchors).symbol == SYMBOL
