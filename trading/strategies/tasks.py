from __future__ import annotations

from celery import shared_task
from django.contrib.auth import get_user_model
from django.db import OperationalError

from trading.strategies import runs

# Two days: far beyond the longest replay (the desk's task limit of minutes would cut one short).
REPLAY_TIME_LIMIT = 48 * 3600


@shared_task(name="trading.run_due_strategies")
def run_due_strategies() -> list[int]:
    """Beat calls this every few minutes; each strategy starts when its own schedule says so. Runs
    left waiting for a critique long past its deadline (a lost deadline message) proceed here too."""
    started = []
    for strategy in runs.strategies_due():
        try:
            started.append(runs.strategy_run_start(strategy=strategy).pk)
        except ValueError:
            continue  # no bars for its universe yet: nothing to run on
    runs.strategy_runs_overdue_proceed()
    return started


@shared_task(
    name="trading.strategy_run_proceed",
    autoretry_for=(OperationalError,),
    retry_backoff=5,
    retry_backoff_max=60,
    max_retries=5,
    acks_late=True,
)
def strategy_run_proceed(
    strategy_run_id: int, provider: str = "", user_id: int | None = None, reason: str = "the critique ended"
) -> bool:
    """Start a strategy run's pipeline runs once its critique has ended or its deadline has passed,
    whichever comes first: both send this, and only the first proceeds (the others find it done)."""
    user = get_user_model().objects.filter(pk=user_id).first() if user_id is not None else None
    return runs.strategy_run_proceed(strategy_run_id, provider=provider, user=user, reason=reason)


@shared_task(
    name="trading.replay_job_run",
    ignore_result=True,
    acks_late=True,
    # A replay of years runs for many minutes: no task time limit cuts it; it stops between days
    # when cancelled, and a resume continues after its last finished day.
    soft_time_limit=REPLAY_TIME_LIMIT,
    time_limit=REPLAY_TIME_LIMIT + 60,
)
def replay_job_run(job_id: int) -> dict:
    """Run or resume a replay job. Safe to deliver twice: the job is claimed once (queued → running)."""
    from trading.strategies.replay_jobs import replay_job_run as run

    job = run(job_id)
    if job is None:
        return {"status": "not-queued", "job_id": job_id}
    return {"status": job.status, "job_id": job_id, "days_done": job.days_done}
