"""Strategy runs: a pipeline run per instrument of the universe, then HOLD or REBALANCE.

Live, the runs are queued to the workers and the decision is taken when the last one finishes.
A history replay runs the same loop in process, one day at a time, strictly as of each day, and
decides approvals by a stated policy instead of a person.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import logging
from typing import TYPE_CHECKING

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from trading.audit import audit_record
from trading.models import DailyBar, PipelineRun, Strategy, StrategyRun, Thesis
from trading.models.strategies import schedule_of
from trading.pipeline.orchestrator import pipeline_run_create

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

logger = logging.getLogger(__name__)


def strategies_due(now: dt.datetime | None = None) -> list[Strategy]:
    now = now or timezone.now()
    due = []
    for strategy in Strategy.objects.filter(is_active=True):
        try:
            schedule = schedule_of(strategy, now=now)
        except ValueError:
            logger.warning("strategy %s has an invalid schedule %r; skipped", strategy.name, strategy.schedule)
            continue
        last = (
            strategy.runs.filter(is_replay=False).order_by("-created_at").values_list("created_at", flat=True).first()
        )
        is_due, _ = schedule.is_due(last or strategy.created_at)
        if is_due:
            due.append(strategy)
    return due


def _latest_session(strategy: Strategy) -> dt.date | None:
    return (
        DailyBar.objects.filter(instrument__in=strategy.universe.all())
        .order_by("-date")
        .values_list("date", flat=True)
        .first()
    )


def strategy_run_start(
    *, strategy: Strategy, as_of: dt.date | None = None, provider: str = "", user: User | AnonymousUser | None = None
) -> StrategyRun:
    """Live: create the run (once per day) and queue a pipeline run per instrument after commit."""
    from django.conf import settings

    as_of = as_of or _latest_session(strategy)
    if as_of is None:
        raise ValueError(f"{strategy.name}: no bars for its universe")
    with transaction.atomic():
        strategy_run, created = StrategyRun.objects.get_or_create(strategy=strategy, as_of=as_of, is_replay=False)
        if not created:
            return strategy_run
        Strategy.objects.filter(pk=strategy.pk).update(run_count=F("run_count") + 1)
        for instrument in strategy.universe.filter(is_active=True).order_by("symbol"):
            run = pipeline_run_create(
                instrument=instrument,
                as_of=as_of,
                provider=provider or strategy.provider or str(settings.LLM["PROVIDER"]),
                user=user,
            )
            PipelineRun.objects.filter(pk=run.pk).update(strategy_run=strategy_run)
            transaction.on_commit(functools.partial(_queue_run, run.pk))
        audit_record(
            actor=user,
            action="strategy_run_started",
            target=f"strategy {strategy.name}",
            details={"as_of": as_of.isoformat(), "strategy_run": strategy_run.pk},
        )
    return strategy_run


def _queue_run(run_id: int) -> None:
    from trading.pipeline.dispatch import QueueUnavailable, run_send

    # A refused send is kept unsent (and audited) for the outbox sweep; nobody waits on this one.
    with contextlib.suppress(QueueUnavailable):
        run_send(run_id, fail_fast=True)


def strategy_run_decide(strategy_run: StrategyRun) -> StrategyRun:
    """HOLD or REBALANCE once every pipeline run of the strategy run has finished."""
    runs = list(strategy_run.pipeline_runs.all())
    if not runs or any(not run.is_finished for run in runs):
        return strategy_run
    sent = Thesis.objects.filter(run__in=runs, risk_approved=True).count()
    decision = StrategyRun.Decision.REBALANCE if sent else StrategyRun.Decision.HOLD
    reason = (
        f"{sent} thesis(es) sent for approval"
        if sent
        else f"no risk-approved thesis from {len(runs)} run(s) ({', '.join(sorted({r.status for r in runs}))})"
    )
    updated = StrategyRun.objects.filter(pk=strategy_run.pk, decision=StrategyRun.Decision.PENDING).update(
        decision=decision, decision_reason=reason, finished_at=timezone.now()
    )
    if updated:
        audit_record(
            action="strategy_decided",
            target=f"strategy run {strategy_run.pk}",
            reason=reason,
            details={"decision": decision},
        )
    strategy_run.refresh_from_db()
    return strategy_run
