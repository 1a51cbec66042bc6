"""A retrospective's narrative: the model's reading of the hard part, checked and settled by code.

``narrate`` asks the retrospective role (``agents.roles.retrospective``) on the review's tier (quick
for daily, weekly, position and loss reviews; deep for epochs and testaments, as
``RETROSPECTIVE["REVIEW_TIER"]``/``["EPOCH_TIER"]`` say) and the provider of what is reviewed (a
position's own run, a strategy's, else the desk's). Then code decides:

- the confidence is capped by the horizon (``agents.roles.retrospective.CONFIDENCE_CAPS``);
- every number the narrative quotes is looked up in the hard part
  (``reviews.domain.grounding``); those it does not hold are listed in ``ungrounded``;
- a model that gives no valid narrative after one repair, or a spent budget, never blocks the
  review: the narrative stays empty and ``error`` says why, the hard part is the report.

``propose`` turns the narrative's playbook proposals into candidate heuristics a person activates
(``agents.playbook.propose_candidate``; the same text twice is the same candidate).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.conf import settings
from django.db.models import Sum
from django.utils import timezone

from agents import recording
from agents.clients import model_choice
from agents.domain.llm import BudgetExceeded, StageFailed, Tier
from agents.domain.pricing import FREE_PROVIDERS, PriceTable
from agents.models import Heuristic, ModelCall
from agents.roles.retrospective import write_narrative
from reviews.domain.grounding import ungrounded
from reviews.models import RetrospectiveReport
from trading.audit import audit_record

__all__ = ["NarrativeOutcome", "narrate", "propose", "provider_for", "tier_for"]

DEEP_HORIZONS = frozenset({RetrospectiveReport.Horizon.EPOCH, RetrospectiveReport.Horizon.TESTAMENT})
CONFIDENCE_PLACES = Decimal("0.0001")


@dataclass(frozen=True)
class NarrativeOutcome:
    """What the narrator left: the narrative (empty when it failed), the numbers it quoted that
    the hard part does not hold, the capped confidence, who wrote it on which tier, and why there
    is none when there is none."""

    narrative: dict[str, Any] = field(default_factory=dict)
    ungrounded: list[dict[str, str]] = field(default_factory=list)
    confidence: Decimal | None = None
    model_used: str = ""
    tier: str = ""
    error: str = ""


def tier_for(horizon: str) -> str:
    """The settings' tier for a horizon: epochs and testaments deep, the rest quick (by default)."""
    key = "EPOCH_TIER" if horizon in DEEP_HORIZONS else "REVIEW_TIER"
    return str(settings.RETROSPECTIVE[key])


def _llm_tier(tier: str) -> Tier:
    return "deep" if tier == "deep" else "default"


def provider_for(report: RetrospectiveReport) -> str:
    """Who writes the narrative: the provider of the position's own run, the strategy's, or the desk's."""
    if report.position_id is not None and report.position is not None:
        return report.position.thesis.run.provider
    if report.strategy is not None and report.strategy.provider:
        return report.strategy.provider
    return str(settings.LLM["PROVIDER"])


class DayBudget:
    """The desk's daily cost budget for paid providers (``LLM["DAILY_COST_BUDGET"]``): a review's
    call is refused once today's recorded spend and its own reach it."""

    def __init__(self, recorder: recording.BufferedRecorder, provider: str) -> None:
        self.recorder = recorder
        self.limit = Decimal(str(settings.LLM["DAILY_COST_BUDGET"]))
        self.paid = provider not in FREE_PROVIDERS
        self.spent = self._spent_today() if self.paid else Decimal(0)

    @staticmethod
    def _spent_today() -> Decimal:
        midnight = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
        today = ModelCall.objects.filter(created_at__gte=midnight, created_at__lt=midnight + dt.timedelta(days=1))
        return Decimal(today.aggregate(total=Sum("cost"))["total"] or 0)

    def check(self) -> None:
        spent = self.spent + self.recorder.cost
        if self.paid and self.limit and spent >= self.limit:
            raise BudgetExceeded(f"daily cost budget spent ({spent:.4f} of {self.limit:.2f})")


def _symbol(report: RetrospectiveReport) -> str:
    return report.position.instrument.symbol if report.position is not None else ""


def narrate(report: RetrospectiveReport, hard: dict[str, Any]) -> NarrativeOutcome:
    """The narrative of ``report`` from its ``hard`` part (see the module). Never raises for a
    model's failure: the outcome's ``error`` carries it."""
    tier = tier_for(report.horizon)
    provider = provider_for(report)
    prices = PriceTable.from_mapping(settings.LLM["PRICES"])
    recorder = recording.BufferedRecorder(run_id=None, prices=prices)
    try:
        narrative, model = write_narrative(
            model_choice(provider, symbol=_symbol(report)),
            horizon=report.horizon,
            hard=hard,
            known_codes=set(Heuristic.objects.values_list("code", flat=True)),
            tier=_llm_tier(tier),
            symbol=_symbol(report),
            recorder=recorder,
            budget=DayBudget(recorder, provider),
        )
    except (StageFailed, ValueError) as failure:
        reason = failure.reason if isinstance(failure, StageFailed) else str(failure)
        return NarrativeOutcome(tier=tier, error=f"the narrative was not written ({' '.join(reason.split())})")
    finally:
        recorder.flush()
    written = narrative.model_dump(mode="json")
    return NarrativeOutcome(
        narrative=written,
        ungrounded=ungrounded(written, hard),
        confidence=Decimal(str(narrative.confidence)).quantize(CONFIDENCE_PLACES, rounding=ROUND_HALF_UP),
        model_used=model,
        tier=tier,
    )


def propose(report: RetrospectiveReport) -> list[str]:
    """Each playbook proposal of the report's narrative as a candidate heuristic; the candidate's
    code is written beside its proposal (``candidate``). Returns the codes, in the proposals' order."""
    from agents.playbook import propose_candidate

    narrative = dict(report.narrative or {})
    proposals = [dict(proposal) for proposal in narrative.get("proposals") or [] if isinstance(proposal, dict)]
    codes: list[str] = []
    for proposal in proposals:
        text = str(proposal.get("text") or "").strip()
        if not text:
            continue
        origin = f"retrospective #{report.pk} ({report.horizon})"
        if proposal.get("heuristic"):
            origin += f", revising {proposal['heuristic']}"
        candidate = propose_candidate(
            text=text, origin=origin, factor=str(proposal.get("factor") or ""), audit=audit_record
        )
        proposal["candidate"] = candidate.code
        codes.append(candidate.code)
    if codes:
        narrative["proposals"] = proposals
        RetrospectiveReport.objects.filter(pk=report.pk).update(narrative=narrative)
        report.narrative = narrative
    return codes
