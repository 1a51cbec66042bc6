"""A retrospective's narrative: the offline model writes a real one from the hard part and cites
only its figures; code caps the confidence by horizon, flags every invented figure, keeps proposals
to codes the playbook holds, and never lets a failed narrative block the report."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest

from agents.domain.hygiene import FENCE_CLOSE, FENCE_OPEN
from agents.domain.llm import ModelChoice, ModelReply, ModelRequest
from agents.models import Heuristic, ModelCall
from agents.roles import OfflineModel
from reviews.models import RetrospectiveReport
from reviews.triggers import run_review
from tests.factories import DEFAULT_START, AccountFactory, position_on_path, trending
from trading.models import HeuristicCitation, Position

pytestmark = pytest.mark.django_db

D = Decimal
END = DEFAULT_START + dt.timedelta(days=60)
GAVE_BACK = ["100", "100", "102", "105", "107", "108", "106", "104", "102", "101.5"]


class Scripted:
    """The offline model, except that the retrospective's reply is rewritten by ``rewrite`` (or
    replaced by raw text when it returns a string); every request is kept."""

    provider = "scripted"

    def __init__(self, rewrite: Any = None) -> None:
        self.rewrite = rewrite
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest, *, model: str) -> ModelReply:
        self.requests.append(request)
        reply = json.loads(OfflineModel().complete(request, model=model).text)
        if self.rewrite is not None:
            reply = self.rewrite(reply)
        text = reply if isinstance(reply, str) else json.dumps(reply)
        return ModelReply(text=text, provider=self.provider, model=model, input_tokens=10, output_tokens=10)


@pytest.fixture
def provider(monkeypatch):
    """Install a scripted provider for narratives: ``provider(rewrite)`` returns the client."""

    def install(rewrite: Any = None) -> Scripted:
        client = Scripted(rewrite)
        choice = ModelChoice(client=client, default_model="quick-model", deep_model="deep-model")
        monkeypatch.setattr("reviews.narrative.model_choice", lambda provider, *, symbol: choice)
        return client

    return install


def book() -> tuple[Any, dict[str, Position]]:
    account = AccountFactory(roomy=True)
    positions = {
        "winner": position_on_path(trending(100, 30, "1"), account=account),
        "loser": position_on_path(trending(100, 30, "-1"), account=account),
        "by_hand": position_on_path(GAVE_BACK, account=account, horizon_sessions=20, close_by_hand="gave back"),
    }
    return account, positions


def review(account: Any, horizon: str = "weekly", key: str = "weekly:test") -> RetrospectiveReport:
    return run_review(trigger_key=key, horizon=horizon, account=account, start=DEFAULT_START, end=END)


def test_the_offline_narrative_is_written_from_the_hard_part_and_cites_only_its_figures() -> None:
    account, positions = book()

    report = review(account)

    assert report.status == RetrospectiveReport.Status.READY
    assert report.model_used == "offline-rules" and report.tier == "quick" and report.error == ""
    assert report.ungrounded == []
    narrative = report.narrative
    winner = positions["winner"]
    assert any(
        winner.instrument.symbol in point and f"{winner.realised_pnl:.2f}" in point
        for point in narrative["what_worked"]
    )
    assert any(positions["loser"].instrument.symbol in point for point in narrative["what_failed"])
    assert narrative["hindsight"].startswith("With hindsight")
    assert report.confidence is not None and report.confidence <= D("0.6")


def test_a_demoted_heuristic_becomes_a_proposal_and_a_candidate_a_person_activates(settings) -> None:
    settings.RETROSPECTIVE = {**settings.RETROSPECTIVE, "HEURISTIC_MIN_CITATIONS": 1, "MONEY_UNIT": "1"}
    Heuristic.objects.create(code="H-7", text="buy every dip", status="active")
    account, positions = book()
    loser_run = positions["loser"].thesis.run
    HeuristicCitation.objects.create(run=loser_run, role="trader", code="H-7", accepted=True, cited_on=loser_run.as_of)

    report = review(account)

    proposal = next(p for p in report.narrative["proposals"] if p["heuristic"] == "H-7")
    candidate = Heuristic.objects.get(code=proposal["candidate"])
    assert candidate.status == Heuristic.Status.CANDIDATE
    assert candidate.origin.startswith(f"retrospective #{report.pk}") and "revising H-7" in candidate.origin
    assert report.ungrounded == []


def test_invented_figures_are_flagged_where_they_were_cited(provider) -> None:
    def invent(reply: dict[str, Any]) -> dict[str, Any]:
        reply["what_worked"] = ["The desk made ₹12,345.67 on RELIANCE, a 87% win rate."]
        reply["hindsight"] = "Exiting two sessions earlier would have saved ₹4,321."
        reply["proposals"] = [{"text": "Never risk more than 3.5% on a trade.", "factor": "risk", "heuristic": None}]
        return reply

    provider(invent)
    account, _ = book()

    report = review(account)

    assert report.status == RetrospectiveReport.Status.READY
    assert report.ungrounded == [
        {"number": "₹12,345.67", "where": "what_worked[0]"},
        {"number": "87%", "where": "what_worked[0]"},
        {"number": "₹4,321", "where": "hindsight"},
        {"number": "3.5%", "where": "proposals[0].text"},
    ]
    assert report.narrative["what_worked"] == ["The desk made ₹12,345.67 on RELIANCE, a 87% win rate."]


@pytest.mark.parametrize(("horizon", "cap"), [("daily", "0.4000"), ("weekly", "0.6000"), ("epoch", "0.8000")])
def test_an_overconfident_narrative_is_capped_by_its_horizon(provider, horizon: str, cap: str) -> None:
    provider(lambda reply: reply | {"confidence": 0.99})
    account, _ = book()

    report = review(account, horizon=horizon, key=f"{horizon}:test")

    assert report.confidence == D(cap)
    assert report.narrative["confidence"] == float(cap)


def test_a_proposal_may_revise_only_a_heuristic_the_playbook_holds(provider) -> None:
    Heuristic.objects.create(code="H-2", text="trend filter", status="active")

    def propose(reply: dict[str, Any]) -> dict[str, Any]:
        reply["proposals"] = [
            {"text": "Tighten the trend filter.", "factor": "trend", "heuristic": "H-2"},
            {"text": "Trade only on Tuesdays.", "factor": "", "heuristic": "H-404"},
        ]
        return reply

    provider(propose)
    account, _ = book()

    report = review(account)

    assert [p["heuristic"] for p in report.narrative["proposals"]] == ["H-2", None]
    assert Heuristic.objects.filter(status="candidate", text="Trade only on Tuesdays.").exists()


def test_a_model_that_never_gives_a_valid_narrative_leaves_the_report_ready_with_its_figures(provider) -> None:
    client = provider(lambda reply: reply | {"confidence": 7, "net_result": "12345.00"})
    account, _ = book()

    report = review(account)

    assert report.status == RetrospectiveReport.Status.READY
    assert report.narrative == {} and report.confidence is None
    assert (
        report.error.startswith("the narrative was not written") and "invalid output after one repair" in report.error
    )
    assert report.hard["attribution"]["net"]
    assert len(client.requests) == 2  # one repair, then closed
    assert ModelCall.objects.filter(role="retrospective", ok=False).count() == 2


def test_the_hard_part_reaches_the_model_fenced_as_data_on_the_horizons_tier(provider) -> None:
    client = provider()
    account, positions = book()

    weekly = review(account)
    epoch = review(account, horizon="epoch", key="epoch:test")

    weekly_request, epoch_request = client.requests
    assert weekly_request.tier == "default" and weekly.tier == "quick"
    assert epoch_request.tier == "deep" and epoch.tier == "deep"
    fenced = weekly_request.prompt.split(FENCE_OPEN, 1)[1].split(FENCE_CLOSE, 1)[0]
    assert weekly.hard["attribution"]["net"] in fenced
    assert positions["winner"].instrument.symbol in fenced
    assert weekly.model_used == "quick-model" and epoch.model_used == "deep-model"
