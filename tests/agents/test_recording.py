from __future__ import annotations

from decimal import Decimal

import pytest

from agents.domain.llm import BudgetExceeded
from agents.domain.pricing import PriceTable
from agents.models import ModelCall
from agents.recording import BufferedRecorder, RunBudget


def _spend(amount: str) -> None:
    ModelCall.objects.create(
        role="news",
        symbol="RELIANCE",
        tier="default",
        provider="anthropic",
        model="m",
        prompt_key="k",
        system="s",
        prompt="p",
        reply="{}",
        cost=Decimal(amount),
        ok=True,
    )


def test_a_paid_provider_stops_once_the_days_spend_reaches_the_budget(db, settings):
    settings.LLM = {**settings.LLM, "DAILY_COST_BUDGET": 5.0}
    _spend("4.99")
    recorder = BufferedRecorder(run_id=None, prices=PriceTable.from_mapping({}))

    RunBudget(run_id=0, recorder=recorder, provider="anthropic").check()
    _spend("0.02")
    with pytest.raises(BudgetExceeded, match="daily cost budget spent"):
        RunBudget(run_id=0, recorder=recorder, provider="anthropic").check()


def test_a_free_provider_does_not_read_the_days_spend(db, settings, django_assert_num_queries):
    settings.LLM = {**settings.LLM, "DAILY_COST_BUDGET": 5.0}
    _spend("9.00")
    recorder = BufferedRecorder(run_id=None, prices=PriceTable.from_mapping({}))

    with django_assert_num_queries(1):  # the run's own tokens only
        budget = RunBudget(run_id=0, recorder=recorder, provider="offline")
    budget.check()
