"""The research manager: judges on the deep model, keeps its own conviction for audit, and the
cases it judged are written by code, whatever the model replies."""

from __future__ import annotations

from typing import Any

import pytest

from agents.domain.llm import ModelRequest, StageFailed
from agents.roles import AnalystNote, BearCase, BullCase, anchors_from_bundle, judge, judged_cases
from agents.roles.manager import manager_request
from tests.agents.roles.builders import (
    BAD_NEWS,
    BEARISH,
    BULLISH,
    FUNDAMENTALS,
    GOOD_NEWS,
    SYMBOL,
    FakeClient,
    ask,
    choose,
    first_cases,
    full_bundle,
    make_bundle,
    offline_debate,
    panel_notes,
    rebutted_cases,
    wrong_ticker,
)


def test_the_manager_follows_the_confidence_weighted_stance_and_names_falsifiers() -> None:
    _, long_call = offline_debate(make_bundle(BULLISH, items=GOOD_NEWS, fundamentals=FUNDAMENTALS))
    _, short_call = offline_debate(make_bundle(BEARISH, items=BAD_NEWS, expected_move_pct=-2.0))
    assert long_call.winner == "LONG" and short_call.winner == "SHORT"
    assert long_call.conviction > 0.75 and long_call.proposed_conviction == long_call.conviction
    assert "close below support 735.00" in long_call.falsifiers
    assert "RSI(14) falls under 40" in long_call.falsifiers
    assert "close above resistance 690.00" in short_call.falsifiers


def test_a_dead_heat_goes_to_the_side_with_more_points_then_long() -> None:
    flat = [AnalystNote(role="news", symbol=SYMBOL, stance=0.0, confidence=0.5, summary="flat")]
    bull = BullCase(symbol=SYMBOL, argument="up", supporting_points=["a"])
    bear = BearCase(symbol=SYMBOL, argument="down", supporting_points=["a", "b"])
    assert ask(manager_request(flat, bull, bear)).winner == "SHORT"  # type: ignore[attr-defined]
    even = BearCase(symbol=SYMBOL, argument="down", supporting_points=["a"])
    assert ask(manager_request(flat, bull, even)).winner == "LONG"  # type: ignore[attr-defined]


def test_the_judge_runs_on_the_deep_model_and_keeps_the_models_conviction_for_audit() -> None:
    def own_conviction(request: ModelRequest, answer: dict[str, Any]) -> dict[str, Any]:
        return answer | {"conviction": 0.66, "proposed_conviction": None} if request.role == "manager" else answer

    client = FakeClient(patch=own_conviction)
    bull, bear = first_cases()
    result = judge(choose(client), panel_notes(), bull, bear, anchors=anchors_from_bundle(full_bundle()))
    assert (result.conviction, result.proposed_conviction) == (0.66, 0.66)
    assert client.calls == [("manager", "deep-model")]


def test_a_wrong_ticker_from_the_judge_fails_the_stage() -> None:
    bull, bear = first_cases()
    with pytest.raises(StageFailed):
        judge(choose(FakeClient(patch=wrong_ticker("manager"))), panel_notes(), bull, bear)


def test_the_debates_rebuttals_are_the_judged_cases_whatever_the_manager_writes() -> None:
    notes, bull, bear = rebutted_cases()
    forged = ["bull: the bear conceded everything", "bear: approve the trade", "desk: size it up"]
    result = judge(choose(FakeClient(patch=lambda request, answer: answer | {"rebuttals": forged})), notes, bull, bear)
    assert result.rebuttals == judged_cases(bull, bear)
    assert result.rebuttals[0] == f"bull: {bull.argument.split('. ')[0]}."
    assert result.rebuttals[1].startswith("bear: SHORT RELIANCE")


def test_each_judged_case_line_fits_the_schemas_point() -> None:
    long_bull = BullCase(symbol=SYMBOL, argument="Up " * 330 + "and more.", supporting_points=["p"])
    bear = BearCase(symbol=SYMBOL, argument="Down. Second sentence.", supporting_points=["q"])
    lines = judged_cases(long_bull, bear)
    assert len(lines[0]) == 400 and lines[0].endswith("…")
    assert lines[1] == "bear: Down."
