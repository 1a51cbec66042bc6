"""The price forecast reaches the technical analyst and the trader only: never the researchers or
the manager, even when a technical note keeps repeating it."""

from __future__ import annotations

import json

from agents.domain.llm import ModelRequest
from agents.roles import (
    ANALYST_ROLES,
    AnalystNote,
    BearCase,
    BullCase,
    DebateResult,
    OfflineModel,
    anchors_from_bundle,
    build_cases,
    judge,
    rebut_cases,
    run_analysts,
    successful_notes,
)
from agents.roles.analysts import analyst_request, self_critique_request
from agents.roles.manager import manager_request
from agents.roles.researchers import bear_rebuttal_request, bear_request, bull_rebuttal_request, bull_request
from agents.roles.trader import trader_request
from tests.agents.roles.builders import (
    BULLISH,
    FUNDAMENTALS,
    GOOD_NEWS,
    SYMBOL,
    Recording,
    ask,
    choose,
    full_bundle,
    make_bundle,
    note,
    rebutted_cases,
)
from vocabulary.features import FeatureBundle

FORECAST_MARKS = ("forecast", "expected_move", "expected move", "baseline drift", "761.25", "714.35", "804.4")


def _mentions_forecast(request: ModelRequest) -> bool:
    text = f"{request.system}\n{request.prompt}\n{json.dumps(request.evidence)}".lower()
    return any(mark in text for mark in FORECAST_MARKS)


def _every_request(bundle: FeatureBundle, notes: list[AnalystNote]) -> dict[str, ModelRequest]:
    bull, bear = ask(bull_request(notes, bundle)), ask(bear_request(notes, bundle))
    assert isinstance(bull, BullCase) and isinstance(bear, BearCase)
    anchors = anchors_from_bundle(bundle)
    manager = manager_request(notes, bull, bear, anchors=anchors)
    debate = ask(manager)
    assert isinstance(debate, DebateResult)
    news_note = next(item for item in notes if item.role == "news")
    return {
        **{role: analyst_request(role, bundle) for role in ANALYST_ROLES},
        "bull": bull_request(notes, bundle),
        "bear": bear_request(notes, bundle),
        "bull_rebuttal": bull_rebuttal_request(bull, bear),
        "bear_rebuttal": bear_rebuttal_request(bear, bull),
        "manager": manager,
        "trader": trader_request(debate, notes, anchors),
        "news_self_critique": self_critique_request(analyst_request("news", bundle), news_note),
    }


def test_only_the_technical_analyst_and_the_trader_are_handed_the_forecast() -> None:
    bundle = make_bundle(BULLISH, items=GOOD_NEWS, fundamentals=FUNDAMENTALS)
    notes = [note(analyst_request(role, bundle)) for role in ANALYST_ROLES]
    assert any("forecast" in point for point in next(n for n in notes if n.role == "technical").key_points)
    requests = _every_request(bundle, notes)
    mentioning = {role for role, request in requests.items() if _mentions_forecast(request)}
    assert mentioning == {"technical", "trader"}


def test_a_technical_note_that_keeps_repeating_the_forecast_does_not_carry_it_into_the_debate() -> None:
    bundle = make_bundle(BULLISH, items=GOOD_NEWS, fundamentals=FUNDAMENTALS)
    chatty = AnalystNote(
        role="technical",
        symbol=SYMBOL,
        stance=0.6,
        confidence=0.7,
        summary="Trend up above SMA50. The forecast expected move of +1.50% to 761.25 seals it; buy.",
        key_points=["Trend up: close 750.00 > SMA50 720.00", "Baseline drift: forecast says +1.50%"],
        subscores={"trend": 1.0, "forecast": 0.3},
        evidence=["RSI(14)=58.00", "forecast expected move +1.50% (band -4.75% to +7.25%)"],
    )
    notes = [note(analyst_request(role, bundle)) for role in ("news", "fundamental")] + [chatty]
    requests = _every_request(bundle, notes)
    for role in ("bull", "bear", "manager"):
        assert not _mentions_forecast(requests[role]), role
    manager_notes = {item["role"]: item for item in requests["manager"].evidence["notes"]}
    assert manager_notes["technical"]["summary"] == "Trend up above SMA50. buy."  # clause by clause
    assert manager_notes["technical"]["subscores"] == {"trend": 1.0}


def test_the_judge_drops_the_forecast_anchors_it_is_handed() -> None:
    notes, bull, bear = rebutted_cases()
    client = Recording()
    judge(choose(client), notes, bull, bear, anchors=anchors_from_bundle(full_bundle()))
    [request] = client.requests
    assert not _mentions_forecast(request)
    assert "last_price=750.00" in request.prompt and request.evidence["anchors"]["atr_14"] == 12.5


def test_the_offline_chain_still_reaches_a_thesis_without_the_forecast_in_the_debate() -> None:
    choice = choose(OfflineModel())
    bundle = full_bundle()
    notes = successful_notes(run_analysts(choice, bundle))
    bull, bear = rebut_cases(choice, *build_cases(choice, notes, bundle))
    debate = judge(choice, notes, bull, bear, anchors=anchors_from_bundle(bundle))
    assert debate.winner == "LONG" and not any("forecast" in line for line in debate.falsifiers)
