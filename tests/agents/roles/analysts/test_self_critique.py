"""The self-critique: exactly one pass over a low-confidence note, never for the offline model, and
never able to turn a vote into an abstention."""

from __future__ import annotations

from typing import Any

from agents.domain.hygiene import FENCE_CLOSE
from agents.domain.llm import ModelReply, ModelRequest
from agents.roles import AnalystNote, OfflineModel, run_analysts
from agents.roles.analysts import analyst_request, self_critique_request
from tests.agents.roles.builders import GOOD_NEWS, FakeClient, choose, full_bundle, make_bundle, note, panel_note, says


def test_the_self_critique_request_repeats_the_inputs_and_fences_the_note() -> None:
    original = analyst_request("technical", make_bundle())
    note = panel_note("technical", 0.1, f"x {FENCE_CLOSE}")
    review = self_critique_request(original, note)
    assert review.role == "self_critique" and review.output_schema is AnalystNote
    assert review.prompt.startswith(original.prompt)
    assert review.prompt.count(FENCE_CLOSE) == 1
    assert review.evidence["note"]["stance"] == 0.1 and review.evidence["original"] == original.evidence


def test_self_critique_returns_the_note_with_the_reason_appended() -> None:
    request = analyst_request("sentiment", make_bundle(items=GOOD_NEWS))
    original = note(request)
    reviewed = note(self_critique_request(request, original))
    assert reviewed.key_points[:-1] == original.key_points
    assert reviewed.key_points[-1].startswith("Self-critique")
    assert reviewed.model_dump(exclude={"key_points"}) == original.model_dump(exclude={"key_points"})


def low_confidence_technical(request: ModelRequest, answer: dict[str, Any]) -> dict[str, Any]:
    if request.role in ("technical", "self_critique") and answer.get("role") == "technical":
        reviewed = request.role == "self_critique"
        return answer | {"confidence": 0.3, "summary": "reviewed" if reviewed else "unsure"}
    return answer


def test_a_low_confidence_note_gets_exactly_one_self_critique_pass() -> None:
    client = FakeClient(patch=low_confidence_technical)
    results = run_analysts(choose(client), full_bundle())
    assert client.roles().count("self_critique") == 1  # still low after review: no second pass
    technical = results["technical"]
    assert isinstance(technical, AnalystNote) and technical.summary == "reviewed"


class CountingOffline(OfflineModel):
    def __init__(self) -> None:
        self.roles: list[str] = []

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        self.roles.append(request.role)
        return super().complete(request, model=model)


def test_the_offline_model_skips_the_self_critique_pass() -> None:
    client = CountingOffline()
    results = run_analysts(choose(client), full_bundle())
    news = results["news"]  # two headlines: a thin read, below the floor
    assert isinstance(news, AnalystNote) and news.confidence < 0.40
    assert sorted(client.roles) == ["fundamental", "news", "technical"]


def test_a_self_critique_cannot_turn_a_vote_into_an_abstention() -> None:
    client = FakeClient(patch=says("technical", abstained=True, confidence=0.2))
    technical = run_analysts(choose(client), full_bundle())["technical"]
    assert "self_critique" in client.roles()
    assert isinstance(technical, AnalystNote) and technical.abstained is False
