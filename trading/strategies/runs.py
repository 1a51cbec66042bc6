"""Strategy runs: a pipeline run per instrument of the universe, then HOLD or REBALANCE.

Live, the runs are queued to the workers and the decision is taken when the last one finishes.
A history replay runs the same loop in process, one day at a time, strictly as of each day, and
decides approvals by a stated policy instead of a person.

Before its pipeline runs start, a strategy run is announced (``strategy_run_opened``) to the
critique in the layer above. When a critique fires, a live run waits for it at most the configured
deadline and then goes on under the directives in force, so a slow or failed critique never stalls
trading. A directive's gate is data trading owns (``StrategyDirective``): while one blocks, the
decision is HOLD, whatever the agents proposed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import logging
from typing import TYPE_CHECKING, cast

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from agents.clients import PROVIDERS, require_priced
from trading.audit import audit_record
from trading.book.approvals import directives_in_force, gate_reason
from trading.models import DailyBar, PipelineRun, Strategy, StrategyRun, Thesis
from trading.models.strategies import schedule_of
from trading.pipeline.orchestrator import pipeline_run_create
from trading.strategies.signals import strategy_run_opened

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


def _provider_for(strategy: Strategy, provider: str) -> str:
    """The run's provider, refused before anything is written (the same checks as each pipeline run)."""
    from django.conf import settings

    chosen = provider or strategy.provider or str(settings.LLM["PROVIDER"])
    if chosen not in PROVIDERS:
        raise ValueError(f"unknown provider {chosen!r}; choose one of {', '.join(PROVIDERS)}")
    require_priced(chosen)
    return chosen


def _deadline_seconds() -> float:
    from django.conf import settings

    # A float (config/env.py's env_float); the checker sees settings.CRITIQUE's values only as objects.
    return float(cast(float, settings.CRITIQUE["DEADLINE_SECONDS"]))


def strategy_run_open(strategy_run: StrategyRun, *, replay: bool) -> StrategyRun:
    """Announce a new strategy run to the critique (the layer above) and read back what it decided.

    A receiver that breaks must not stop trading: its error is logged and audited, and the run goes
    on as if the critique had not fired (under the directives already in force)."""
    for receiver, result in strategy_run_opened.send_robust(
        sender=StrategyRun, strategy_run=strategy_run, replay=replay
    ):
        if isinstance(result, Exception):
            logger.error("critique pre-step of strategy run %s failed: %r", strategy_run.pk, result)
            audit_record(
                action="critique_trigger_failed",
                target=f"strategy run {strategy_run.pk}",
                reason=f"{type(result).__name__}: {result}",
                details={"receiver": getattr(receiver, "__qualname__", str(receiver))},
            )
    strategy_run.refresh_from_db()
    return strategy_run


def strategy_run_start(
    *, strategy: Strategy, as_of: dt.date | None = None, provider: str = "", user: User | AnonymousUser | None = None
) -> StrategyRun:
    """Live: create the run (once per day), let the critique pre-step decide, then queue a pipeline
    run per instrument after commit: at once, or, when a critique fired, when it ends or its deadline
    passes (``strategy_run_proceed``), whichever comes first."""
    as_of = as_of or _latest_session(strategy)
    if as_of is None:
        raise ValueError(f"{strategy.name}: no bars for its universe")
    provider = _provider_for(strategy, provider)
    with transaction.atomic():
        strategy_run, created = StrategyRun.objects.get_or_create(strategy=strategy, as_of=as_of, is_replay=False)
        if not created:
            return strategy_run
        Strategy.objects.filter(pk=strategy.pk).update(run_count=F("run_count") + 1)
        audit_record(
            actor=user,
            action="strategy_run_started",
            target=f"strategy {strategy.name}",
            details={"as_of": as_of.isoformat(), "strategy_run": strategy_run.pk},
        )
        strategy_run = strategy_run_open(strategy_run, replay=False)
        if strategy_run.critique_state == StrategyRun.CritiqueState.PENDING:
            user_id = user.pk if user is not None and user.is_authenticated else None
            transaction.on_commit(functools.partial(_proceed_at_deadline, strategy_run.pk, provider, user_id))
        else:
            strategy_run_proceed(strategy_run.pk, provider=provider, user=user, reason="no critique to wait for")
    return strategy_run


def _proceed_at_deadline(strategy_run_id: int, provider: str, user_id: int | None) -> None:
    """The deadline: a task that proceeds the run however its critique is doing. When it cannot be
    sent, the run proceeds now: a broker that is down must not leave trading waiting forever."""
    from celery import current_app

    try:
        current_app.send_task(
            "trading.strategy_run_proceed",
            args=[strategy_run_id],
            kwargs={"provider": provider, "user_id": user_id, "reason": "the critique's deadline passed"},
            countdown=_deadline_seconds(),
        )
    except Exception as error:
        logger.warning("strategy run %s: deadline not scheduled (%s); proceeding now", strategy_run_id, error)
        strategy_run_proceed(strategy_run_id, provider=provider, reason=f"the deadline could not be scheduled: {error}")


def _directives_seen(strategy_run: StrategyRun) -> list[int]:
    directives = directives_in_force(
        strategy_run.strategy_id, is_replay=strategy_run.is_replay, as_of=strategy_run.as_of
    )
    return [directive.pk for directive in directives]


def strategy_run_proceed(
    strategy_run_id: int, *, provider: str = "", user: User | AnonymousUser | None = None, reason: str = ""
) -> bool:
    """Start the run's pipeline runs, once: called when its critique ends, by the deadline task, or
    at once when nothing was to be waited for. Claimed by ``proceeded_at`` (update where null), so a
    critique that ends as the deadline passes starts them exactly once. Records the directives in
    force then; a critique still running is marked late. Returns whether this call proceeded."""
    strategy_run = StrategyRun.objects.select_related("strategy").filter(pk=strategy_run_id).first()
    if strategy_run is None or strategy_run.proceeded_at is not None:
        return False
    strategy = strategy_run.strategy
    with transaction.atomic():
        seen = _directives_seen(strategy_run)
        state = strategy_run.critique_state
        claimed = StrategyRun.objects.filter(pk=strategy_run.pk, proceeded_at__isnull=True).update(
            proceeded_at=timezone.now(), directives_seen=seen
        )
        if not claimed:
            return False
        late = StrategyRun.objects.filter(pk=strategy_run.pk, critique_state=StrategyRun.CritiqueState.PENDING).update(
            critique_state=StrategyRun.CritiqueState.LATE
        )
        # A replay makes its own runs, day by day; a run that has some already is never given more.
        if not strategy_run.is_replay and not strategy_run.pipeline_runs.exists():
            provider = _provider_for(strategy, provider)
            for instrument in strategy.universe.filter(is_active=True).order_by("symbol"):
                run = pipeline_run_create(instrument=instrument, as_of=strategy_run.as_of, provider=provider, user=user)
                PipelineRun.objects.filter(pk=run.pk).update(strategy_run=strategy_run)
                transaction.on_commit(functools.partial(_queue_run, run.pk))
        audit_record(
            actor=user,
            actor_label="" if user else "system",
            action="strategy_run_proceeded",
            target=f"strategy run {strategy_run.pk}",
            reason=reason + ("; the critique was still running and is now late" if late else ""),
            details={"directives_seen": seen, "critique_state": StrategyRun.CritiqueState.LATE if late else state},
        )
    return True


def _queue_run(run_id: int) -> None:
    from trading.pipeline.dispatch import QueueUnavailable, run_send

    # A refused send is kept unsent (and audited) for the outbox sweep; nobody waits on this one.
    with contextlib.suppress(QueueUnavailable):
        run_send(run_id, fail_fast=True)


def strategy_runs_overdue_proceed(*, grace: dt.timedelta = dt.timedelta(minutes=5)) -> list[int]:
    """Live runs still waiting well past their critique's deadline (the deadline message was lost):
    proceed them now. Beat's ``run_due_strategies`` calls this."""
    cutoff = timezone.now() - dt.timedelta(seconds=_deadline_seconds()) - grace
    # Only runs that waited for a critique: runs made before the critique existed have no
    # ``proceeded_at`` either, and must never be started again.
    waiting = StrategyRun.objects.filter(
        is_replay=False,
        proceeded_at__isnull=True,
        critique_state__in=[
            StrategyRun.CritiqueState.PENDING,
            StrategyRun.CritiqueState.DONE,
            StrategyRun.CritiqueState.FAILED,
        ],
        critique_decision=StrategyRun.CritiqueDecision.FIRED,
        created_at__lt=cutoff,
    )
    return [
        pk
        for pk in waiting.order_by("pk").values_list("pk", flat=True)
        if strategy_run_proceed(pk, reason="still waiting past the critique's deadline: proceeded by the sweep")
    ]


def _decision(strategy_run: StrategyRun, runs: list[PipelineRun]) -> tuple[str, str, str]:
    """(decision, reason, blocked_by). A blocking directive in force decides HOLD whatever the runs
    proposed: the gate is the directive's data, checked here in code."""
    directives = directives_in_force(
        strategy_run.strategy_id, is_replay=strategy_run.is_replay, as_of=strategy_run.as_of
    )
    blocked_by = gate_reason(directives)
    if blocked_by:
        return StrategyRun.Decision.HOLD, f"held by the critique: {blocked_by}", blocked_by
    sent = Thesis.objects.filter(run__in=runs, risk_approved=True).count()
    if sent:
        return StrategyRun.Decision.REBALANCE, f"{sent} thesis(es) sent for approval", ""
    statuses = ", ".join(sorted({r.status for r in runs}))
    return StrategyRun.Decision.HOLD, f"no risk-approved thesis from {len(runs)} run(s) ({statuses})", ""


def strategy_run_decide(strategy_run: StrategyRun) -> StrategyRun:
    """HOLD or REBALANCE once every pipeline run of the strategy run has finished; HOLD, naming the
    incomplete required actions in ``blocked_by``, while a blocking critique directive is in force."""
    runs = list(strategy_run.pipeline_runs.all())
    if not runs or any(not run.is_finished for run in runs):
        return strategy_run
    decision, reason, blocked_by = _decision(strategy_run, runs)
    updated = StrategyRun.objects.filter(pk=strategy_run.pk, decision=StrategyRun.Decision.PENDING).update(
        decision=decision, decision_reason=reason, blocked_by=blocked_by, finished_at=timezone.now()
    )
    if updated:
        audit_record(
            action="strategy_decided",
            target=f"strategy run {strategy_run.pk}",
            reason=reason,
            details={"decision": decision, "blocked": bool(blocked_by)},
        )
    strategy_run.refresh_from_db()
    return strategy_run
