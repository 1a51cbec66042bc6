"""The technical analyst: its prompt prints every indicator in one format, it abstains by code
without the indicators it needs, and its offline rules read them into a stance."""

from __future__ import annotations

from agents.roles import TECHNICAL_MINIMUM, AnalystNote, run_analysts
from agents.roles.analysts import analyst_request
from tests.agents.roles.builders import (
    BEARISH,
    BULLISH,
    CONFLICTING,
    FakeClient,
    choose,
    full_bundle,
    make_bundle,
    note,
)


def test_the_technical_prompt_shows_every_indicator_in_one_fixed_format() -> None:
    prompt = analyst_request("technical", make_bundle(BEARISH)).prompt
    for needle in ("rsi_14=35.00", "macd_hist=-2.00", "sma_200=700.00", "support_distance_pct=-0.77", "atr_14=12.50"):
        assert needle in prompt
    assert "forecast (evidence only" in prompt and "expected_move_pct=1.50" in prompt


def test_the_technical_analyst_abstains_on_a_fallback_bundle() -> None:
    bundle = full_bundle().model_copy(update={"fallback": True})
    client = FakeClient()
    technical = run_analysts(choose(client), bundle)["technical"]
    assert "technical" not in client.roles()
    assert isinstance(technical, AnalystNote) and technical.abstained and "fallback" in technical.summary


def test_the_technical_analyst_abstains_when_an_indicator_it_needs_has_not_warmed_up() -> None:
    for missing in TECHNICAL_MINIMUM:
        short = make_bundle({**BULLISH, missing: None, "sma_50": None, "sma_200": None})
        technical = run_analysts(choose(FakeClient()), short)["technical"]
        assert isinstance(technical, AnalystNote) and technical.abstained, missing
        assert f"{missing}=n/a" in technical.evidence
    without_long_averages = make_bundle({**BULLISH, "sma_50": None, "sma_200": None})
    technical = run_analysts(choose(FakeClient()), without_long_averages)["technical"]
    assert isinstance(technical, AnalystNote) and not technical.abstained


def test_a_bullish_setup_gives_a_positive_confident_technical_stance() -> None:
    result = note(analyst_request("technical", make_bundle(BULLISH)))
    assert result.stance > 0.4
    assert result.confidence >= 0.7
    assert result.subscores["trend"] == 1.0 and result.subscores["macd"] == 1.0


def test_a_bearish_breakdown_gives_a_negative_technical_stance() -> None:
    result = note(analyst_request("technical", make_bundle(BEARISH, expected_move_pct=-2.0)))
    assert result.stance < -0.5
    assert result.subscores["levels"] < 0  # close below support is a breakdown


def test_conflicting_indicators_lower_the_confidence() -> None:
    bullish = note(analyst_request("technical", make_bundle(BULLISH)))
    conflicting = note(analyst_request("technical", make_bundle(CONFLICTING, expected_move_pct=-2.0)))
    assert conflicting.confidence < bullish.confidence - 0.3
    assert abs(conflicting.stance) < abs(bullish.stance)


def test_technical_evidence_cites_the_exact_values_it_was_handed() -> None:
    result = note(analyst_request("technical", make_bundle(BEARISH)))
    assert "RSI(14)=35.00" in result.evidence
    assert "close 650.00 < SMA200 700.00" in result.evidence
    assert "MACD hist -2.00 (line -5.00, signal -3.00)" in result.evidence
    assert "ATR(14)=12.50" in result.evidence


def test_without_any_indicator_the_technical_note_stays_neutral() -> None:
    empty = {key: None for key in BULLISH if key not in ("last_close", "prev_close")}
    result = note(analyst_request("technical", make_bundle(empty, expected_move_pct=None)))
    assert (result.stance, result.confidence) == (0.0, 0.15)
