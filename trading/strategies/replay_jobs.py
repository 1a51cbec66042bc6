"""Replay jobs: a history replay started from the browser or the command line, run by a worker,
watched as it goes, cancelled between days and resumed after the last finished day.

A job is claimed once (queued → running by a conditional update), records each finished day
(``days_done``, ``last_day``), checks ``cancel_requested`` between days, and ends finished (with a
summary computed from the stored book), cancelled or failed (with why). A resume continues after
``last_day`` on the account as the job left it: the days already done are neither cleared nor redone,
so a cancelled and resumed replay ends exactly as an uninterrupted one.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Callable
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from security.redaction import redact_secrets
from trading.audit import audit_record
from trading.book.accounts import replay_account
from trading.models import PipelineRun, Position, ReplayJob, Strategy, StrategyRun, Thesis
from trading.strategies.replay import ApprovalPolicy, ReplayDay, replay_sessions, replay_strategy
from vocabulary.refusals import InputRefused, StateConflict

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

logger = logging.getLogger(__name__)

ACTIVE = (ReplayJob.Status.QUEUED, ReplayJob.Status.RUNNING)
RESUMABLE = (ReplayJob.Status.CANCELLED, ReplayJob.Status.FAILED)
ENDED = (ReplayJob.Status.CANCELLED, ReplayJob.Status.FINISHED, ReplayJob.Status.FAILED)
TASK_NAME = "trading.replay_job_run"
# A running job whose worker has not finished a day for this long is taken for dead: it may resume.
STALE_AFTER = dt.timedelta(hours=1)


def _actor(user: User | AnonymousUser | None) -> User | None:
    return user if user is not None and user.is_authenticated else None


def _parsed_policy(text: str) -> ApprovalPolicy:
    try:
        return ApprovalPolicy.parse(text)
    except ValueError as error:
        raise InputRefused(str(error), {"policy": str(error)}) from None


def replay_job_create(
    *,
    strategy: Strategy,
    start: dt.date,
    end: dt.date,
    policy: str,
    provider: str,
    user: User | AnonymousUser | None,
    lessons_to_live: bool = False,
    send: bool = True,
) -> ReplayJob:
    """A queued replay of ``strategy`` over ``start``..``end``, sent to a worker once committed.
    Refused (nothing created) for a policy that does not parse, a window backwards or without
    sessions, an unknown provider, or a replay of the strategy already queued or running. ``send``
    False leaves it queued for the caller to run in process (the command)."""
    from agents.clients import PROVIDERS

    parsed = _parsed_policy(policy)
    if provider not in PROVIDERS:
        raise InputRefused(
            f"unknown provider {provider!r}; choose one of {', '.join(PROVIDERS)}",
            {"provider": f"unknown provider {provider!r}"},
        )
    if start > end:
        raise InputRefused(f"the window starts on {start}, after its end {end}", {"start": f"{start} is after {end}"})
    days = replay_sessions(strategy, start, end)
    if not days:
        raise InputRefused(
            f"{strategy.name}'s universe has no bars between {start} and {end}: no sessions to replay",
            {"start": f"no sessions between {start} and {end}"},
        )
    with transaction.atomic():
        # The strategy row is the lock: two requests at once cannot both start a replay of it.
        Strategy.objects.select_for_update().filter(pk=strategy.pk).first()
        active = ReplayJob.objects.filter(strategy=strategy, status__in=ACTIVE).first()
        if active is not None:
            raise StateConflict(
                f"a replay of {strategy.name} is already {active.status} (job {active.pk}): cancel it or wait "
                "for it to end before starting another",
                {"job": active.pk, "status": active.status},
            )
        job = ReplayJob.objects.create(
            strategy=strategy,
            start=start,
            end=end,
            policy=_policy_text(parsed, policy),
            provider=provider,
            lessons_to_live=lessons_to_live,
            days_total=len(days),
            task_id=uuid.uuid4().hex,
            created_by=_actor(user),
        )
        audit_record(
            actor=user,
            actor_label="" if _actor(user) else "system",
            action="replay_job_created",
            target=f"replay job {job.pk}",
            details={
                "strategy": strategy.name,
                "start": start.isoformat(),
                "end": end.isoformat(),
                "policy": job.policy,
                "provider": provider,
                "sessions": len(days),
                "lessons_to_live": lessons_to_live,
            },
        )
        if send:
            transaction.on_commit(partial(_send, job.pk, job.task_id))
    return job


def _policy_text(parsed: ApprovalPolicy, text: str) -> str:
    return text.strip().lower().replace(" ", "")


def _send(job_id: int, task_id: str) -> None:
    """Send the job to a worker. A broker that refuses leaves the job queued and says so in its
    error; ``manage.py replay --resume JOB_ID`` runs it in process."""
    from celery import current_app

    try:
        current_app.send_task(TASK_NAME, args=[job_id], task_id=task_id)
    except Exception as error:
        problem = redact_secrets(f"the task queue is unreachable ({error}); run it with manage.py replay --resume")
        logger.warning("replay job %s not sent: %s", job_id, problem)
        ReplayJob.objects.filter(pk=job_id, status=ReplayJob.Status.QUEUED).update(error=problem)
        audit_record(action="replay_job_enqueue_failed", target=f"replay job {job_id}", reason=problem)


def _claim(job_id: int) -> ReplayJob | None:
    now = timezone.now()
    claimed = ReplayJob.objects.filter(pk=job_id, status=ReplayJob.Status.QUEUED).update(
        status=ReplayJob.Status.RUNNING, started_at=now, updated_at=now, error=""
    )  # cancel_requested is left as it is: a cancel asked for as the worker claims it still stops it
    return ReplayJob.objects.select_related("strategy").get(pk=job_id) if claimed else None


def _half_done_day(job: ReplayJob) -> dt.date | None:
    """A day after ``last_day`` the replay wrote part of (a day that failed outside a transaction)."""
    later = StrategyRun.objects.filter(strategy=job.strategy, is_replay=True, as_of__gte=job.start)
    if job.last_day is not None:
        later = later.filter(as_of__gt=job.last_day)
    return later.order_by("as_of").values_list("as_of", flat=True).first()


def replay_job_run(
    job_id: int,
    *,
    fast: bool = True,
    on_day: Callable[[ReplayJob, ReplayDay], None] | None = None,
    workers: int = 1,
) -> ReplayJob | None:
    """Run (or resume) a queued job: exactly once (a second delivery finds it claimed and does
    nothing). Returns the job as it ended, or None when it was not this call's to run. ``on_day``
    is told of each finished day (the command's progress bar). ``workers`` > 1 runs each day's
    pipeline runs in that many processes (fast path); its days are then written in steps, not in
    one transaction, as with a model provider."""
    job = _claim(job_id)
    if job is None:
        logger.info("replay job %s is not queued: not run twice", job_id)
        return None
    if job.cancel_requested:  # cancelled as the worker claimed it: not a day is run
        return _end(job, ReplayJob.Status.CANCELLED, action="replay_job_cancelled")
    resume_after = job.last_day if job.days_done else None
    atomic = job.provider == "offline" and workers <= 1
    try:
        if resume_after is not None and not atomic and (half := _half_done_day(job)) is not None:
            raise StateConflict(
                f"the replay stopped in the middle of {half} with a model provider or worker processes, whose days "
                "are not written in one transaction: start a new replay of this window instead of resuming it"
            )
        days = replay_strategy(
            strategy=job.strategy,
            start=job.start,
            end=job.end,
            policy=ApprovalPolicy.parse(job.policy),
            provider=job.provider,
            lessons_to_live=job.lessons_to_live,
            resume_after=resume_after,
            atomic_days=atomic,
            fast=fast,
            workers=workers,
            progress=partial(_day_done, job),
        )
        for day in days:
            if on_day is not None:
                on_day(job, day)
            if ReplayJob.objects.filter(pk=job.pk, cancel_requested=True).exists():
                days.close()
                return _end(job, ReplayJob.Status.CANCELLED, action="replay_job_cancelled")
    except Exception as error:
        logger.exception("replay job %s failed", job.pk)
        reason = redact_secrets(f"{type(error).__name__}: {getattr(error, 'message', None) or error}")
        return _end(job, ReplayJob.Status.FAILED, action="replay_job_failed", error=reason)
    return _end(job, ReplayJob.Status.FINISHED, action="replay_job_finished", summary=replay_summary(job.strategy))


def _day_done(job: ReplayJob, day: ReplayDay) -> None:
    """Record a finished day, in that day's transaction (with the offline model): a resume never
    redoes a day that was stored, nor skips one that was not."""
    ReplayJob.objects.filter(pk=job.pk).update(
        days_done=job.days_done + 1, last_day=day.as_of, updated_at=timezone.now()
    )
    job.days_done += 1
    job.last_day = day.as_of


def _end(
    job: ReplayJob, status: str, *, action: str, error: str = "", summary: dict[str, Any] | None = None
) -> ReplayJob:
    now = timezone.now()
    changes: dict[str, Any] = {"status": status, "error": error, "finished_at": now, "updated_at": now}
    if summary is not None:
        changes["summary"] = summary
    ReplayJob.objects.filter(pk=job.pk).update(**changes)
    audit_record(
        actor_label="system",
        action=action,
        target=f"replay job {job.pk}",
        reason=error,
        details={"days_done": job.days_done, "last_day": job.last_day.isoformat() if job.last_day else None},
    )
    job.refresh_from_db()
    return job


def replay_summary(strategy: Strategy) -> dict[str, Any]:
    """The replay's record as stored: runs, approved theses, positions, closed ones and their
    realised PnL net of costs (a string, to the paisa)."""
    account = replay_account(strategy.name)
    positions = Position.objects.filter(account=account)
    closed = positions.filter(status=Position.Status.CLOSED)
    realised = closed.aggregate(total=Sum("realised_pnl"))["total"] or Decimal(0)
    runs = PipelineRun.objects.filter(strategy_run__strategy=strategy, is_replay=True)
    approved = Thesis.objects.filter(run__in=runs, status=Thesis.Status.APPROVED)
    return {
        "runs": runs.count(),
        "approved": approved.count(),
        "positions": positions.count(),
        "closed": closed.count(),
        "realised_pnl": str(realised.quantize(Decimal("0.01"))),
    }


def replay_job_cancel(job: ReplayJob, user: User | AnonymousUser | None, reason: str) -> ReplayJob:
    """Ask a queued or running job to stop after the day it is on. A queued job nobody has started
    is cancelled at once; a running one stops between days (its worker checks)."""
    reason = reason.strip()
    if not reason:
        raise InputRefused("say why the replay is cancelled", {"reason": "a reason is required"})
    if job.status not in ACTIVE:
        raise StateConflict(f"replay job {job.pk} is {job.status}: only a queued or running replay can be cancelled")
    ReplayJob.objects.filter(pk=job.pk, status__in=ACTIVE).update(cancel_requested=True, updated_at=timezone.now())
    now = timezone.now()
    stopped_at_once = ReplayJob.objects.filter(pk=job.pk, status=ReplayJob.Status.QUEUED).update(
        status=ReplayJob.Status.CANCELLED, finished_at=now, updated_at=now
    )
    audit_record(
        actor=user,
        actor_label="" if _actor(user) else "system",
        action="replay_job_cancel_requested",
        target=f"replay job {job.pk}",
        reason=reason,
        details={"status": job.status, "cancelled_at_once": bool(stopped_at_once)},
    )
    if stopped_at_once:
        audit_record(
            actor_label="system",
            action="replay_job_cancelled",
            target=f"replay job {job.pk}",
            reason="cancelled before a worker started it",
            details={"days_done": job.days_done, "last_day": job.last_day.isoformat() if job.last_day else None},
        )
    job.refresh_from_db()
    return job


def replay_job_resume(job: ReplayJob, user: User | AnonymousUser | None, *, send: bool = True) -> ReplayJob:
    """Queue a cancelled or failed job again; it continues after its last finished day. ``send``
    False leaves it queued for the caller to run in process (the command)."""
    with transaction.atomic():
        Strategy.objects.select_for_update().filter(pk=job.strategy_id).first()
        job.refresh_from_db()
        stale = job.status == ReplayJob.Status.RUNNING and job.updated_at < timezone.now() - STALE_AFTER
        if job.status not in RESUMABLE and not stale:
            raise StateConflict(
                f"replay job {job.pk} is {job.status}: only a cancelled or failed replay (or one whose worker has "
                f"not finished a day for {STALE_AFTER}) can resume"
            )
        other = ReplayJob.objects.filter(strategy_id=job.strategy_id, status__in=ACTIVE).exclude(pk=job.pk).first()
        if other is not None:
            raise StateConflict(
                f"another replay of this strategy is {other.status} (job {other.pk}): it ends before this one resumes",
                {"job": other.pk, "status": other.status},
            )
        newer = ReplayJob.objects.filter(strategy_id=job.strategy_id, created_at__gt=job.created_at).first()
        if newer is not None:
            raise StateConflict(
                f"job {newer.pk} replayed this strategy since and cleared its account: this job cannot resume; "
                "start a new replay"
            )
        task_id = uuid.uuid4().hex
        resumed = ReplayJob.objects.filter(pk=job.pk, status=job.status, updated_at=job.updated_at).update(
            status=ReplayJob.Status.QUEUED,
            cancel_requested=False,
            error="",
            finished_at=None,
            task_id=task_id,
            updated_at=timezone.now(),
        )
        if not resumed:
            raise StateConflict(f"replay job {job.pk} changed meanwhile: look again")
        audit_record(
            actor=user,
            actor_label="" if _actor(user) else "system",
            action="replay_job_resumed",
            target=f"replay job {job.pk}",
            details={
                "after": job.last_day.isoformat() if job.last_day else None,
                "days_done": job.days_done,
                "was": job.status,
            },
        )
        if send:
            transaction.on_commit(partial(_send, job.pk, task_id))
    job.refresh_from_db()
    return job


def replay_job_progress(job: ReplayJob) -> dict[str, Any]:
    """What the page polls: where the job stands and, while it runs, the time left estimated
    from the time each finished day took so far (None until a day has finished)."""
    job.refresh_from_db()
    percent = round(100 * job.days_done / job.days_total, 1) if job.days_total else 0.0
    eta: float | None = None
    if job.status == ReplayJob.Status.RUNNING and job.days_done and job.started_at is not None:
        elapsed = (job.updated_at - job.started_at).total_seconds()
        days_this_attempt = _days_this_attempt(job)
        if days_this_attempt > 0 and elapsed > 0:
            eta = round(elapsed / days_this_attempt * (job.days_total - job.days_done), 1)
    elif job.status == ReplayJob.Status.FINISHED:
        eta = 0.0
    return {
        "id": job.pk,
        "status": job.status,
        "days_done": job.days_done,
        "days_total": job.days_total,
        "last_day": job.last_day.isoformat() if job.last_day else None,
        "percent": percent,
        "eta_seconds": eta,
        "cancel_requested": job.cancel_requested,
        "error": job.error,
        "summary": job.summary,
    }


def _days_this_attempt(job: ReplayJob) -> int:
    """The days finished since this attempt started (a resumed job's earlier days took their time
    in an earlier attempt)."""
    if job.last_day is None or job.started_at is None:
        return 0
    started = timezone.localtime(job.started_at)
    return StrategyRun.objects.filter(
        strategy_id=job.strategy_id, is_replay=True, created_at__gte=started, as_of__lte=job.last_day
    ).count()


__all__ = [
    "replay_job_cancel",
    "replay_job_create",
    "replay_job_progress",
    "replay_job_resume",
    "replay_job_run",
    "replay_summary",
]
