"""A paid model must be priced before it runs, and the day's spend is read between stages."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.domain.llm import BudgetExceeded
from agents.domain.pricing import PriceTable
from agents.models import ModelCall
from agents.recording import BufferedRecorder, RunBudget
from trading.models import PipelineRun
from trading.pipeline.orchestrator import pipeline_run_create


def test_a_paid_model_without_a_price_refuses_to_start_and_says_how_to_price_it(instrument_with_bars, settings):
    settings.LLM = {**settings.LLM, "DEFAULT_MODEL": "claude-unreleased-9", "PRICES": {}}

    with pytest.raises(ValueError, match=r"claude-unreleased-9 has no price.*LLM_PRICES"):
        pipeline_run_create(
            instrument=instrument_with_bars, as_of=instrument_with_bars.bars.last().date, provider="anthropic"
        )
    assert not PipelineRun.objects.exists()


def test_a_priced_paid_model_or_a_fallback_price_may_start(instrument_with_bars, settings):
    day = instrument_with_bars.bars.last().date
    settings.LLM = {**settings.LLM, "DEFAULT_MODEL": "claude-unreleased-9", "PRICES": {"*": {"input": 5, "output": 25}}}
    assert pipeline_run_create(instrument=instrument_with_bars, as_of=day, provider="anthropic").pk


def _call(cost: str, run=None) -> ModelCall:
    return ModelCall.objects.create(
        run=run,
        role="news",
        symbol="RELIANCE",
        tier="default",
        provider="anthropic",
        model="claude-sonnet-4-5",
        prompt_key="k",
        system="",
        prompt="",
        ok=True,
        cost=Decimal(cost),
    )


def test_other_runs_spending_is_seen_at_the_next_stage(instrument_with_bars, settings):
    settings.LLM = {**settings.LLM, "DAILY_COST_BUDGET": 1.0, "RUN_TOKEN_BUDGET": 0}
    run = pipeline_run_create(
        instrument=instrument_with_bars, as_of=instrument_with_bars.bars.last().date, provider="offline"
    )
    recorder = BufferedRecorder(run_id=run.pk, prices=PriceTable())
    budget = RunBudget(run_id=run.pk, recorder=recorder, provider="anthropic")
    budget.check()  # nothing spent yet

    _call("0.60")  # another run, concurrently
    _call("0.50")
    budget.check()  # not seen until the next stage starts
    budget.refresh()

    with pytest.raises(BudgetExceeded, match="daily cost budget spent"):
        budget.check()


def test_a_runs_own_flushed_calls_are_not_counted_twice(instrument_with_bars, settings):
    from agents.domain.llm import CallRecord

    settings.LLM = {**settings.LLM, "DAILY_COST_BUDGET": 1.0, "RUN_TOKEN_BUDGET": 0}
    run = pipeline_run_create(
        instrument=instrument_with_bars, as_of=instrument_with_bars.bars.last().date, provider="offline"
    )
    recorder = BufferedRecorder(run_id=run.pk, prices=PriceTable())
    budget = RunBudget(run_id=run.pk, recorder=recorder, provider="anthropic")
    # 100k input tokens of claude-sonnet-4-5 at $3 per million: $0.30.
    recorder.record(
        CallRecord(
            role="news",
            symbol="RELIANCE",
            tier="default",
            provider="anthropic",
            model="claude-sonnet-4-5",
            system="",
            prompt="",
            reply="{}",
            input_tokens=100_000,
            output_tokens=0,
            latency_ms=1.0,
            ok=True,
            error="",
            attempt=1,
        )
    )
    recorder.flush()
    budget.refresh()

    assert budget.day_cost_before + recorder.cost == Decimal("0.3")


def test_a_replay_started_again_still_counts_what_its_deleted_runs_spent_today(instrument_with_bars, settings):
    """Starting a replay again deletes the previous replay's runs; the money their calls spent was
    spent all the same, so the day's budget must not get it back (it would let a paid replay be run
    again and again past the daily cap)."""
    from trading.models import Strategy, StrategyRun
    from trading.strategies.replay import replay_clear

    settings.LLM = {**settings.LLM, "DAILY_COST_BUDGET": 1.0, "RUN_TOKEN_BUDGET": 0}
    day = instrument_with_bars.bars.last().date
    strategy = Strategy.objects.create(name="paid swing", philosophy="Trend swings.", provider="anthropic")
    strategy.universe.set([instrument_with_bars])
    strategy_run = StrategyRun.objects.create(strategy=strategy, as_of=day, is_replay=True)
    run = pipeline_run_create(
        instrument=instrument_with_bars, as_of=day, provider="offline", strategy_run=strategy_run, is_replay=True
    )
    spent = _call("0.80", run=run)
    free = _call("0", run=run)  # a call that cost nothing has nothing to count: it goes with its run

    replay_clear(strategy)

    assert not PipelineRun.objects.filter(pk=run.pk).exists()
    spent.refresh_from_db()
    assert spent.run_id is None and spent.cost == Decimal("0.80")
    assert not ModelCall.objects.filter(pk=free.pk).exists()
    later = pipeline_run_create(instrument=instrument_with_bars, as_of=day, provider="offline")
    budget = RunBudget(
        run_id=later.pk, recorder=BufferedRecorder(run_id=later.pk, prices=PriceTable()), provider="anthropic"
    )
    assert budget.day_cost_before == Decimal("0.80")
    _call("0.25")
    budget.refresh()
    with pytest.raises(BudgetExceeded, match="daily cost budget spent"):
        budget.check()
