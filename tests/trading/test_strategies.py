from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from trading.models import PipelineRun, Strategy, StrategyRun
from trading.pipeline.orchestrator import pipeline_run_execute
from trading.strategies.runs import strategies_due, strategy_run_decide, strategy_run_start


@pytest.fixture
def strategy(instrument_with_bars):
    strategy = Strategy.objects.create(name="swing", philosophy="Trend swings.", schedule="0 16 * * 1-5")
    strategy.universe.set([instrument_with_bars])
    return strategy


def test_a_live_strategy_run_queues_one_run_per_instrument_once_per_day(
    strategy, approver, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        first = strategy_run_start(strategy=strategy, user=approver)
        again = strategy_run_start(strategy=strategy, user=approver)

    assert first == again and len(callbacks) == 1
    assert first.pipeline_runs.count() == 1 and first.decision == StrategyRun.Decision.PENDING
    strategy.refresh_from_db()
    assert strategy.run_count == 1


def test_the_decision_waits_for_every_run_then_says_hold_or_rebalance(strategy, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        strategy_run = strategy_run_start(strategy=strategy)
    assert strategy_run_decide(strategy_run).decision == StrategyRun.Decision.PENDING

    pipeline_run_execute(PipelineRun.objects.get(strategy_run=strategy_run).pk)
    decided = strategy_run_decide(strategy_run)

    assert decided.decision in {StrategyRun.Decision.HOLD, StrategyRun.Decision.REBALANCE}
    assert decided.decision_reason


def test_a_strategy_is_due_by_its_cron_schedule(strategy):
    Strategy.objects.filter(pk=strategy.pk).update(created_at=dt.datetime(2026, 11, 23, 9, tzinfo=dt.UTC))

    # 16:00 in the desk's time zone (IST) is 10:30 UTC.
    assert strategies_due(now=dt.datetime(2026, 11, 23, 10, 0, tzinfo=dt.UTC)) == []
    assert strategies_due(now=dt.datetime(2026, 11, 23, 10, 45, tzinfo=dt.UTC)) == [strategy]


def test_the_strategies_page_lists_strategies_and_hides_the_button_from_viewers(client, viewer, strategy):
    client.force_login(viewer)

    body = client.get(reverse("strategy_list")).content.decode()
    forged = client.post(reverse("strategy_start", args=[strategy.pk]))

    assert "swing" in body and "Run now" not in body
    assert forged.status_code == 403
