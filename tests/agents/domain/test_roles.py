"""The stages: abstentions, quorum, self-critique, rebuttal fallback, escalation, the ticker guard
and concurrency, driven by fake clients that count what they were asked."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from agents.domain.llm import BudgetExceeded, ModelChoice, ModelError, NullRecorder, StageFailed
from agents.domain.offline import OfflineModel
from agents.domain.prompts import ANALYST_ROLES, anchors_from_bundle
from agents.domain.roles import (
    ABSTAIN_MODEL,
    build_cases,
    judge,
    propose_thesis,
    quorum_met,
    rebut_cases,
    run_analysts,
    successful_notes,
)
from agents.domain.schemas import AnalystNote, BearCase, BullCase, DebateResult, ModelReply, ModelRequest
from tests.agents.domain.test_offline import BULLISH, FUNDAMENTALS, GOOD_NEWS, SYMBOL, make_bundle
from vocabulary.features import FeatureBundle

Patch = Callable[[ModelRequest, dict[str, Any]], dict[str, Any] | Exception]


class FakeClient:
    """Answers like the offline model, then lets a test patch or fail any role; counts every call.

    Analyst notes come back at confidence 0.6 at least, so the self-critique pass fires only where a
    test lowers a note on purpose."""

    def __init__(
        self, *, provider: str = "fake", patch: Patch | None = None, delay_s: float = 0.0, model: str = ""
    ) -> None:
        self.provider = provider
        self.patch = patch
        self.delay_s = delay_s
        self.model = model
        self.calls: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        with self._lock:
            self.calls.append((request.role, model))
        time.sleep(self.delay_s)
        answer: dict[str, Any] = json.loads(OfflineModel().complete(request, model=model).text)
        if request.role in ANALYST_ROLES:
            answer["confidence"] = max(answer["confidence"], 0.6)
        if self.patch is not None:
            patched = self.patch(request, answer)
            if isinstance(patched, Exception):
                raise patched
            answer = patched
        return ModelReply(text=json.dumps(answer), provider=self.provider, model=self.model or model)

    def roles(self) -> list[str]:
        return [role for role, _ in self.calls]


def choose(client: Any) -> ModelChoice:
    return ModelChoice(client=client, default_model="default-model", deep_model="deep-model")


def full_bundle() -> FeatureBundle:
    """Every analyst has data, so all four call the model."""
    return make_bundle(BULLISH, items=GOOD_NEWS, fundamentals=FUNDAMENTALS)


def bare_bundle() -> FeatureBundle:
    """No news and no fundamentals: news, sentiment and fundamental have nothing real to read."""
    return make_bundle(BULLISH, items=[])


def failing(*roles: str) -> Patch:
    def patch(request: ModelRequest, answer: dict[str, Any]) -> dict[str, Any] | Exception:
        return ModelError("provider said no") if request.role in roles else answer

    return patch


# --- analysts ------------------------------------------------------------------------------------


def test_analysts_with_nothing_to_read_abstain_without_a_model_call() -> None:
    client = FakeClient()
    results = run_analysts(choose(client), bare_bundle())
    assert client.roles() == ["technical"]
    for role in ("news", "sentiment", "fundamental"):
        note = results[role]
        assert isinstance(note, AnalystNote)
        assert (note.stance, note.confidence, note.model_used, note.abstained) == (0.0, 0.15, ABSTAIN_MODEL, True)
        assert note.summary.startswith("Abstaining")
    assert list(results) == ["news", "sentiment", "technical", "fundamental"]


def test_two_failed_analysts_of_four_miss_the_quorum() -> None:
    results = run_analysts(choose(FakeClient(patch=failing("news", "technical"))), full_bundle())
    assert isinstance(results["news"], StageFailed) and isinstance(results["technical"], StageFailed)
    assert not quorum_met(results)
    assert len(successful_notes(results)) == 2


def test_three_notes_with_one_abstention_meet_the_quorum() -> None:
    bundle = make_bundle(BULLISH, items=GOOD_NEWS)  # fundamentals unavailable: that analyst abstains
    results = run_analysts(choose(FakeClient(patch=failing("news"))), bundle)
    assert isinstance(results["news"], StageFailed)
    assert isinstance(results["fundamental"], AnalystNote) and results["fundamental"].abstained
    assert quorum_met(results)


def test_quorum_counts_notes_not_failures() -> None:
    note = AnalystNote(role="news", symbol=SYMBOL, stance=0.1, confidence=0.5, summary="s")
    failure = StageFailed("news: boom")
    assert quorum_met({"a": note, "b": note, "c": note, "d": failure})
    assert not quorum_met({"a": note, "b": note, "c": failure, "d": failure})


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


def test_model_used_comes_from_the_reply() -> None:
    results = run_analysts(choose(FakeClient(model="fake-model-2026-01-01")), full_bundle())
    voting = [note for note in successful_notes(results) if not note.abstained]
    assert {note.model_used for note in voting} == {"fake-model-2026-01-01"}


def wrong_ticker(*roles: str) -> Patch:
    def patch(request: ModelRequest, answer: dict[str, Any]) -> dict[str, Any]:
        return answer | {"symbol": "TCS"} if request.role in roles else answer

    return patch


def test_a_wrong_ticker_fails_the_analyst_closed_after_one_repair() -> None:
    client = FakeClient(patch=wrong_ticker("technical"))
    recorder = NullRecorder()
    results = run_analysts(choose(client), full_bundle(), recorder=recorder)
    assert isinstance(results["technical"], StageFailed)
    assert "invalid output" in results["technical"].reason
    assert client.roles().count("technical") == 2
    assert [call.ok for call in recorder.calls if call.role == "technical"] == [False, False]


def test_a_note_for_another_analyst_role_is_rejected() -> None:
    def swap_role(request: ModelRequest, answer: dict[str, Any]) -> dict[str, Any]:
        return answer | {"role": "technical"} if request.role == "news" else answer

    results = run_analysts(choose(FakeClient(patch=swap_role)), full_bundle())
    assert isinstance(results["news"], StageFailed)


def test_an_exhausted_budget_fails_the_analysts_instead_of_escaping() -> None:
    class Spent:
        def check(self) -> None:
            raise BudgetExceeded("the day's budget is spent")

    results = run_analysts(choose(FakeClient()), full_bundle(), budget=Spent())
    assert all(isinstance(results[role], StageFailed) for role in ("news", "technical", "fundamental"))


def test_the_analysts_run_concurrently() -> None:
    client = FakeClient(delay_s=0.2)
    started = time.perf_counter()
    results = run_analysts(choose(client), full_bundle())
    elapsed = time.perf_counter() - started
    assert len(client.calls) == 3 and quorum_met(results)  # sentiment abstains: no positioning feed
    assert elapsed < 0.5  # three 0.2 s calls one after another would take 0.6 s


# --- debate --------------------------------------------------------------------------------------


def _notes(client: FakeClient | None = None) -> list[AnalystNote]:
    return successful_notes(run_analysts(choose(client or FakeClient()), full_bundle()))


def _cases() -> tuple[BullCase, BearCase]:
    return build_cases(choose(FakeClient()), _notes(), full_bundle())


def test_bull_and_bear_build_concurrently_and_either_failure_fails_the_stage() -> None:
    client = FakeClient(delay_s=0.2)
    started = time.perf_counter()
    bull, bear = build_cases(choose(client), _notes(), full_bundle())
    assert time.perf_counter() - started < 0.35
    assert isinstance(bull, BullCase) and isinstance(bear, BearCase)
    with pytest.raises(StageFailed):
        build_cases(choose(FakeClient(patch=failing("bear"))), _notes(), full_bundle())


def test_a_failed_rebuttal_falls_back_to_that_sides_initial_case() -> None:
    bull, bear = _cases()
    rebutted_bull, rebutted_bear = rebut_cases(choose(FakeClient(patch=failing("bull_rebuttal"))), bull, bear)
    assert rebutted_bull == bull
    assert rebutted_bear != bear and rebutted_bear.supporting_points[0].startswith("Against the bull's")


def test_the_judge_runs_on_the_deep_model_and_keeps_the_models_conviction_for_audit() -> None:
    def own_conviction(request: ModelRequest, answer: dict[str, Any]) -> dict[str, Any]:
        return answer | {"conviction": 0.66, "proposed_conviction": None} if request.role == "manager" else answer

    client = FakeClient(patch=own_conviction)
    bull, bear = _cases()
    result = judge(choose(client), _notes(), bull, bear, anchors=anchors_from_bundle(full_bundle()))
    assert (result.conviction, result.proposed_conviction) == (0.66, 0.66)
    assert client.calls == [("manager", "deep-model")]


def test_a_wrong_ticker_from_the_judge_fails_the_stage() -> None:
    bull, bear = _cases()
    with pytest.raises(StageFailed):
        judge(choose(FakeClient(patch=wrong_ticker("manager"))), _notes(), bull, bear)


# --- trader --------------------------------------------------------------------------------------


def _debate(conviction: float) -> DebateResult:
    return DebateResult(symbol=SYMBOL, winner="LONG", conviction=conviction, manager_rationale="Trend and news agree.")


@pytest.mark.parametrize(("conviction", "model"), [(0.75, "deep-model"), (0.9, "deep-model"), (0.74, "default-model")])
def test_the_trader_escalates_to_the_deep_model_at_high_conviction(conviction: float, model: str) -> None:
    client = FakeClient()
    thesis = propose_thesis(choose(client), _debate(conviction), _notes(), anchors_from_bundle(full_bundle()))
    assert client.calls == [("trader", model)]
    assert (thesis.direction, thesis.conviction, thesis.entry) == ("LONG", conviction, 750.0)


def test_a_thesis_for_another_ticker_fails_closed() -> None:
    client = FakeClient(patch=wrong_ticker("trader"))
    with pytest.raises(StageFailed):
        propose_thesis(choose(client), _debate(0.6), _notes(), anchors_from_bundle(full_bundle()))
    assert client.roles() == ["trader", "trader"]


def test_a_thesis_naming_another_universe_symbol_fails_closed_when_the_universe_is_given() -> None:
    def peer(request: ModelRequest, answer: dict[str, Any]) -> dict[str, Any]:
        return answer | {"rationale": "Buy TCS instead."} if request.role == "trader" else answer

    anchors = anchors_from_bundle(full_bundle())
    with pytest.raises(StageFailed):
        propose_thesis(choose(FakeClient(patch=peer)), _debate(0.6), _notes(), anchors, other_symbols=["TCS"])
    assert propose_thesis(choose(FakeClient(patch=peer)), _debate(0.6), _notes(), anchors).symbol == SYMBOL


def test_the_whole_chain_runs_offline() -> None:
    choice = ModelChoice(client=OfflineModel(), default_model="offline-rules", deep_model="offline-rules")
    bundle = full_bundle()
    notes = successful_notes(run_analysts(choice, bundle))
    bull, bear = rebut_cases(choice, *build_cases(choice, notes, bundle))
    anchors = anchors_from_bundle(bundle)
    debate = judge(choice, notes, bull, bear, anchors=anchors)
    thesis = propose_thesis(choice, debate, notes, anchors)
    assert (debate.winner, thesis.direction, thesis.symbol) == ("LONG", "LONG", SYMBOL)
